//! Response bodies: a whole buffer, or a stream of chunks fed by the thread that encodes a
//! large result. The stream's receiver carries a guard whose drop cancels the query, so a
//! client that disconnects mid-result stops the work behind it. A stream that cannot finish
//! (encoder failure, cancellation, a client that stopped reading) ends with an error frame:
//! hyper then aborts the connection without the final chunk, so the client sees a truncated
//! response, never a short "complete" one. A result's stream is complete only once its sender
//! said so ([`ResponseBody::answer`]): its channel closing before that is such an error too.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

pub enum ResponseBody {
    Full(Option<Bytes>),
    /// Chunks until the channel closes; `done`, when given, is set by the sender before its
    /// last chunk, and a close without it is an error (a result cut short).
    Stream {
        rx: mpsc::Receiver<Result<Bytes, std::io::Error>>,
        done: Option<Arc<AtomicBool>>,
        _guard: Box<dyn Send + Sync>,
    },
}

impl ResponseBody {
    /// A stream of chunks that ends when `rx` closes (a subscription's events).
    pub fn stream(rx: mpsc::Receiver<Result<Bytes, std::io::Error>>, guard: Box<dyn Send + Sync>) -> ResponseBody {
        ResponseBody::Stream { rx, done: None, _guard: guard }
    }

    /// A result's stream: complete only if `done` was set before `rx` closed.
    pub fn answer(
        rx: mpsc::Receiver<Result<Bytes, std::io::Error>>,
        done: Arc<AtomicBool>,
        guard: Box<dyn Send + Sync>,
    ) -> ResponseBody {
        ResponseBody::Stream { rx, done: Some(done), _guard: guard }
    }

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
            ResponseBody::Stream { rx, done, .. } => rx.poll_recv(cx).map(|o| match o {
                Some(r) => Some(r.map(Frame::data)),
                None if done.as_ref().is_some_and(|d| !d.load(Ordering::Acquire)) => {
                    Some(Err(std::io::Error::other("the result's stream ended before its last chunk")))
                }
                None => None,
            }),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The next frame of `body`, polled once (the channels here are ready or closed).
    fn next(body: &mut ResponseBody) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        Pin::new(body).poll_frame(&mut Context::from_waker(std::task::Waker::noop()))
    }

    /// A result's stream ends cleanly only if its sender marked it complete; a close before
    /// that (a cancelled or abandoned stream) is an error, so hyper cuts the connection
    /// instead of writing the final chunk. A subscription's stream ends when it closes.
    #[test]
    fn a_result_stream_closed_before_it_is_complete_ends_in_an_error() {
        for complete in [false, true] {
            let (tx, rx) = mpsc::channel(2);
            let done = Arc::new(AtomicBool::new(false));
            let mut body = ResponseBody::answer(rx, done.clone(), Box::new(()));
            tx.try_send(Ok(Bytes::from_static(b"rows"))).expect("room");
            done.store(complete, Ordering::Release);
            drop(tx);
            assert!(matches!(next(&mut body), Poll::Ready(Some(Ok(_)))), "the chunk sent");
            match next(&mut body) {
                Poll::Ready(None) => assert!(complete, "an incomplete stream ended cleanly"),
                Poll::Ready(Some(Err(_))) => assert!(!complete, "a complete stream ended in an error"),
                _ => panic!("the end of the stream"),
            }
        }
        let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let mut events = ResponseBody::stream(rx, Box::new(()));
        drop(tx);
        assert!(matches!(next(&mut events), Poll::Ready(None)));
    }
}
