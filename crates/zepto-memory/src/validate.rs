//! Checks on request fields, done before anything is stored: names, embeddings, times and
//! numbers. Each failure names its field.

use crate::api::TimeInput;
use crate::error::{MemoryError, Result};

/// Longest tenant, namespace, user, session, agent or type name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// A name field (tenant, namespace, ...): non-empty, at most [`MAX_NAME_BYTES`], no control
/// characters.
pub fn name(field: &str, v: &str) -> Result<()> {
    if v.is_empty() {
        return Err(MemoryError::bad(field, "is empty"));
    }
    if v.len() > MAX_NAME_BYTES {
        return Err(MemoryError::bad(field, format!("is {} bytes; at most {MAX_NAME_BYTES}", v.len())));
    }
    if v.chars().any(char::is_control) {
        return Err(MemoryError::bad(field, "holds a control character"));
    }
    Ok(())
}

/// An optional name field (see [`name`]).
pub fn opt_name(field: &str, v: Option<&str>) -> Result<()> {
    v.map_or(Ok(()), |v| name(field, v))
}

/// An embedding as stored: every value finite and within REAL's range, 1 to 65,535 of them,
/// and (since similarity is cosine) not all zero.
pub fn embedding(field: &str, v: &[f64]) -> Result<Vec<f32>> {
    if v.is_empty() || v.len() > usize::from(u16::MAX) {
        return Err(MemoryError::bad(field, format!("has {} values; an embedding has 1 to 65535", v.len())));
    }
    let mut out = Vec::with_capacity(v.len());
    for (i, x) in v.iter().enumerate() {
        if !x.is_finite() || x.abs() > f64::from(f32::MAX) {
            return Err(MemoryError::bad(field, format!("value {i} ({x}) is not a finite REAL")));
        }
        out.push(*x as f32);
    }
    if out.iter().all(|x| *x == 0.0) {
        return Err(MemoryError::bad(field, "is all zeros (cosine similarity is undefined for it)"));
    }
    Ok(out)
}

/// An embedding that must have `dim` values (the table's dimension).
pub fn embedding_of(field: &str, v: &[f64], dim: u16, table: &str) -> Result<Vec<f32>> {
    if v.len() != usize::from(dim) {
        return Err(MemoryError::bad(
            field,
            format!("has {} values; {table} holds FLOAT[{dim}] (fixed by its first embedding)", v.len()),
        ));
    }
    embedding(field, v)
}

/// A time field as nanoseconds since the epoch.
pub fn time(field: &str, t: &TimeInput) -> Result<i64> {
    match t {
        TimeInput::Nanos(n) => Ok(*n),
        TimeInput::Text(s) => zepto_storage::time::parse_timestamp(s.trim())
            .ok_or_else(|| MemoryError::bad(field, format!("'{s}' is not a timestamp (ISO-8601 or nanoseconds)"))),
    }
}

/// When a record expires: `expires_at`, or `ttl_seconds` from `now`; both given is an error,
/// as is a time not after `now`.
pub fn expiry(expires_at: Option<&TimeInput>, ttl_seconds: Option<f64>, now: i64) -> Result<Option<i64>> {
    let at = match (expires_at, ttl_seconds) {
        (Some(_), Some(_)) => return Err(MemoryError::bad("ttl_seconds", "give expires_at or ttl_seconds, not both")),
        (Some(t), None) => time("expires_at", t)?,
        (None, Some(s)) => {
            if !(s.is_finite() && s > 0.0 && s < 1e10) {
                return Err(MemoryError::bad("ttl_seconds", format!("{s} is not a positive number of seconds")));
            }
            now.saturating_add((s * 1e9) as i64)
        }
        (None, None) => return Ok(None),
    };
    if at <= now {
        return Err(MemoryError::bad("expires_at", "is not in the future"));
    }
    Ok(Some(at))
}

/// A number in `lo..=hi`.
pub fn in_range(field: &str, v: f64, lo: f64, hi: f64) -> Result<f64> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(MemoryError::bad(field, format!("{v} is not between {lo} and {hi}")))
    }
}

/// A count in `1..=max` (`default` when not given).
pub fn count(field: &str, v: Option<usize>, default: usize, max: usize) -> Result<usize> {
    let n = v.unwrap_or(default);
    if n == 0 || n > max {
        return Err(MemoryError::bad(field, format!("{n} is not between 1 and {max}")));
    }
    Ok(n)
}

/// The metadata as stored: JSON text, at most `max` bytes (`{}` when not given).
pub fn metadata(v: Option<&serde_json::Value>, max: usize) -> Result<String> {
    let text = match v {
        None | Some(serde_json::Value::Null) => return Ok("{}".into()),
        Some(v) => serde_json::to_string(v).map_err(|e| MemoryError::bad("metadata", e.to_string()))?,
    };
    if text.len() > max {
        return Err(MemoryError::bad("metadata", format!("is {} bytes as JSON; at most {max}", text.len())));
    }
    Ok(text)
}

/// Text content (content, prompt, response): present and at most `max` bytes.
pub fn text<'a>(field: &str, v: Option<&'a str>, max: usize) -> Result<&'a str> {
    let v = v.ok_or_else(|| MemoryError::bad(field, "is required"))?;
    if v.len() > max {
        return Err(MemoryError::bad(field, format!("is {} bytes; at most {max}", v.len())));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings() {
        assert_eq!(embedding("e", &[1.0, -0.5]).expect("ok"), vec![1.0f32, -0.5]);
        assert!(embedding("e", &[]).is_err());
        assert!(embedding("e", &[0.0, 0.0]).is_err());
        assert!(embedding("e", &[1e39]).is_err(), "beyond REAL");
        assert!(embedding("e", &[f64::NAN]).is_err());
        let e = embedding_of("embedding", &[1.0; 3], 4, "ai_memories").expect_err("dim");
        assert!(e.to_string().contains("has 3 values; ai_memories holds FLOAT[4]"), "{e}");
    }

    #[test]
    fn expiries() {
        let now = 1_000_000_000_000;
        assert_eq!(expiry(None, None, now).expect("none"), None);
        assert_eq!(expiry(None, Some(2.0), now).expect("ttl"), Some(now + 2_000_000_000));
        assert!(expiry(None, Some(-1.0), now).is_err());
        assert!(expiry(Some(&TimeInput::Nanos(now)), None, now).is_err(), "not in the future");
        assert!(expiry(Some(&TimeInput::Nanos(now + 1)), Some(1.0), now).is_err(), "both");
        let t = expiry(Some(&TimeInput::Text("2100-01-01T00:00:00Z".into())), None, now).expect("iso");
        assert!(t.is_some_and(|t| t > now));
        assert!(time("x", &TimeInput::Text("tomorrow".into())).is_err());
    }

    #[test]
    fn names_and_metadata() {
        assert!(name("namespace", "a").is_ok());
        assert!(name("namespace", "").is_err());
        assert!(name("namespace", "a\u{0}b").is_err());
        assert!(name("namespace", &"x".repeat(257)).is_err());
        assert_eq!(metadata(None, 10).expect("empty"), "{}");
        assert_eq!(metadata(Some(&serde_json::json!({"a": 1})), 100).expect("obj"), r#"{"a":1}"#);
        assert!(metadata(Some(&serde_json::json!({"a": "long text"})), 5).is_err());
    }
}
