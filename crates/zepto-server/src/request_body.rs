//! Request bodies: read whole under a size limit and a time limit, gunzipped when the client
//! compressed them, each byte covered by the server's in-flight body budget
//! ([`crate::inflight`]) while it is held.

use crate::error::ApiError;
use crate::inflight::Held;
use crate::state::State;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::CONTENT_LENGTH;
use hyper::{Request, StatusCode};
use std::time::Duration;

/// How long a client may take to send a request body.
const BODY_TIMEOUT: Duration = Duration::from_secs(300);

/// The whole body, refusing more than the configured limit (413 `PAYLOAD_TOO_LARGE`), decoded
/// if it came gzip-compressed (Telegraf and InfluxDB clients compress by default), with the
/// share of the server's body budget it holds (503 `BODIES_IN_FLIGHT` when the budget is spent:
/// [`crate::inflight`]). Keep the share as long as the body, or what is made of it, lives.
pub async fn read_body(state: &State, req: Request<Incoming>, max: usize) -> Result<(Bytes, Held), ApiError> {
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!("request body is larger than the limit of {max} bytes (--max-body-mb raises it)"),
        )
    };
    let length = req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if length.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let encoding = req
        .headers()
        .get(hyper::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_ascii_lowercase());
    let gzip = match encoding.as_deref() {
        None | Some("") | Some("identity") => false,
        Some("gzip") | Some("x-gzip") => true,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UNSUPPORTED_ENCODING",
                format!("Content-Encoding '{other}' is not supported (use gzip or none)"),
            ))
        }
    };
    let mut held = state.bodies.share();
    let body = tokio::time::timeout(BODY_TIMEOUT, collect(req.into_body(), max, length, &mut held))
        .await
        .map_err(|_| ApiError::new(StatusCode::REQUEST_TIMEOUT, "BODY_TIMEOUT", "the request body took too long"))?
        .map_err(|e| if e.code == "PAYLOAD_TOO_LARGE" { too_large() } else { e })?;
    if !gzip {
        return Ok((body, held));
    }
    let out = gunzip(&body, max, &mut held)?;
    Ok((out, held))
}

/// A gzip body decoded, at most `max` bytes (else 413), each piece covered by `held` (which
/// already holds the compressed body) before it is kept: a gzip bomb draws on the budget as it
/// expands.
fn gunzip(body: &[u8], max: usize, held: &mut Held) -> Result<Bytes, ApiError> {
    use std::io::Read;
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(max));
    // Read one byte past the limit to tell "exactly at" from "over".
    let mut decoder = flate2::read::MultiGzDecoder::new(body).take(max as u64 + 1);
    let mut piece = vec![0u8; 64 << 10];
    loop {
        let n = decoder.read(&mut piece).map_err(|e| ApiError::bad_request(format!("bad gzip body: {e}")))?;
        let Some(bytes) = piece.get(..n).filter(|b| !b.is_empty()) else { break };
        if out.len() + n > max {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                format!("request body is larger than the limit of {max} bytes once decoded (--max-body-mb raises it)"),
            ));
        }
        held.cover(body.len().saturating_add(out.len()).saturating_add(n))?;
        out.extend_from_slice(bytes);
    }
    Ok(Bytes::from(out))
}

/// The body's bytes, at most `max` (else an error with code `PAYLOAD_TOO_LARGE`), each frame
/// covered by `held` before it is kept. A body that announced its `length` (at most `max`) is
/// read into a buffer reserved at that size: growing it by doubling held up to 1.5x a large
/// body at once while it was copied over. The reservation's pages are touched only as the
/// bytes arrive, so the budget still counts what was sent, not what was announced.
async fn collect(mut body: Incoming, max: usize, length: Option<u64>, held: &mut Held) -> Result<Bytes, ApiError> {
    let announced = length.and_then(|n| usize::try_from(n).ok()).filter(|&n| n <= max).unwrap_or(0);
    let mut out: Vec<u8> = Vec::with_capacity(announced);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("could not read the request body: {e}")))?;
        let Ok(data) = frame.into_data() else { continue };
        let total = out.len().saturating_add(data.len());
        if total > max {
            return Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", "too large"));
        }
        held.cover(total)?;
        out.extend_from_slice(&data);
    }
    Ok(Bytes::from(out))
}
