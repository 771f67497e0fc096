//! The web console's files (`/console`): a SQL editor, a result grid paged from the server,
//! charts, the tables and the live ingest view, all in the browser, talking to the same HTTP
//! API as any client (with the same keys).
//!
//! The files are part of the binary: `build.rs` gzips them at build time, so a request costs a
//! table lookup. They hold no data, so they are served without a key; every request the page
//! makes for data carries the key the user typed. The page may only run its own scripts and
//! talk to this server (Content-Security-Policy).

use crate::body::ResponseBody;
use crate::error::ApiError;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, VARY};
use hyper::{Response, StatusCode};

/// One file of the console, as `build.rs` made it.
pub(crate) struct Asset {
    /// Its name under `/console/`.
    name: &'static str,
    /// Its content type.
    ctype: &'static str,
    /// The file as it is.
    body: &'static [u8],
    /// The file gzipped.
    gz: &'static [u8],
    /// Its version: a hash of `body`, quoted as an ETag.
    etag: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// What the page may load and where it may connect: its own files and this server only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The response to `GET /console...`: the file, gzipped if the client takes gzip, or 304 when
/// `if_none_match` names the current version.
pub fn serve(
    path: &str,
    accept_encoding: &str,
    if_none_match: Option<&str>,
) -> Result<Response<ResponseBody>, ApiError> {
    let name = match path.strip_prefix("/console").unwrap_or("") {
        "" | "/" => "index.html",
        p => p.trim_start_matches('/'),
    };
    let Some(&Asset { ctype, body, gz, etag: tag, .. }) = ASSETS.iter().find(|a| a.name == name) else {
        return Err(ApiError::not_found(format!("the console has no file '{name}'")));
    };
    let fresh = if_none_match.is_some_and(|t| t.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
    let zipped = takes_gzip(accept_encoding);
    let mut r = if fresh {
        let mut r = Response::new(ResponseBody::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(ResponseBody::full(if zipped { gz } else { body }))
    };
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(ETAG, HeaderValue::from_static(tag));
    // Revalidate every time (a 304 costs a round trip, never a stale console after an upgrade).
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(VARY, HeaderValue::from_static("accept-encoding"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    if zipped && !fresh {
        h.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if name == "index.html" {
        h.insert("content-security-policy", HeaderValue::from_static(CSP));
        h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    }
    Ok(r)
}

/// Whether an `Accept-Encoding` header takes gzip (named without `q=0`, or `*`).
fn takes_gzip(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let mut it = part.split(';');
        let coding = it.next().unwrap_or("").trim();
        let refused =
            it.any(|p| p.trim().strip_prefix("q=").is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q == 0.0)));
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_negotiation() {
        assert!(takes_gzip("gzip, deflate, br"));
        assert!(takes_gzip("br;q=1.0, gzip;q=0.8"));
        assert!(!takes_gzip("gzip;q=0"));
        assert!(!takes_gzip("identity"));
        assert!(!takes_gzip(""));
    }

    #[test]
    fn files_versions_and_not_found() {
        let r = serve("/console", "gzip", None).expect("index");
        assert_eq!(r.headers().get(CONTENT_ENCODING).map(|v| v.as_bytes()), Some(&b"gzip"[..]));
        assert!(r.headers().contains_key("content-security-policy"));
        let tag = r.headers().get(ETAG).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        assert_eq!(serve("/console/", "", Some(&tag)).expect("same").status(), StatusCode::NOT_MODIFIED);
        assert_eq!(serve("/console/app.js", "", Some(&tag)).expect("other file").status(), StatusCode::OK);
        assert_eq!(serve("/console/../x", "", None).err().map(|e| e.code), Some("NOT_FOUND"));
        for a in ASSETS {
            assert!(!a.body.is_empty() && a.gz.len() < a.body.len(), "{} is gzipped smaller", a.name);
        }
    }
}
