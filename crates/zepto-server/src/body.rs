//! Response bodies: a whole buffer, or a stream of chunks fed by the thread that encodes a
//! large result. The stream's receiver carries a guard whose drop cancels the query, so a
//! client that disconnects mid-result stops the work behind it. A stream that cannot finish
//! (encoder failure, cancellation) ends with an error frame: hyper then aborts the connection
//! without the final chunk, so the client sees a truncated response, never a short "complete"
//! one.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

pub enum ResponseBody {
    Full(Option<Bytes>),
    Stream { rx: mpsc::Receiver<Result<Bytes, std::io::Error>>, _guard: Box<dyn Send + Sync> },
}

impl ResponseBody {
    pub fn full(b: impl Into<Bytes>) -> ResponseBody {
        ResponseBody::Full(Some(b.into()))
    }

    pub fn empty() -> ResponseBody {
        ResponseBody::Full(None)
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            ResponseBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ResponseBody::Stream { rx, .. } => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ResponseBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            ResponseBody::Full(None) => SizeHint::with_exact(0),
            ResponseBody::Stream { .. } => SizeHint::default(),
        }
    }
}
