//! What the HTTP door decodes from a request before any SQL or rows: the URL query string
//! (percent-escapes, `+`), the parameters it names, and a JSON query body.

use zepto_server::encode::Format;
use zepto_server::ingest::{ilp::Precision, IngestFormat};
use zepto_server::router::query_params;
use zepto_server::sql::parse_json_body;

/// `data` is a URL query string, a NUL byte, and a JSON body.
pub fn run(data: &[u8]) {
    let (query, body) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    if let Ok(q) = std::str::from_utf8(query) {
        if let Ok(params) = query_params(q) {
            for (_, v) in &params {
                let _ = (Format::from_name(v), IngestFormat::from_name(v), Precision::parse(v));
            }
        }
    }
    if let Ok((sql, params, format)) = parse_json_body(body) {
        let _ = (sql.len(), params.len(), format);
    }
}
