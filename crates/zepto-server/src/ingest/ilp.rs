//! InfluxDB line protocol: the ingestion format of the time-series world.
//!
//! `measurement[,tag=v...] field=v[,field=v...] [timestamp]`, one point per line; `#` starts a
//! comment line. Escapes as InfluxDB defines them: `\,` and `\ ` in measurements, also `\=`
//! in tag keys, tag values and field keys; `\"` and `\\` inside string field values. Field
//! values: float (`1`, `-1.5e3`), integer (`1i`), unsigned (`1u`), string (`"..."`), boolean
//! (`t`, `true`, `F`, `FALSE`, ...). The timestamp is an integer in the request's precision.
//!
//! This module only parses; `super::apply_ilp` maps points onto tables.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use std::borrow::Cow;

/// One field value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue<'a> {
    /// A float: a number without a suffix (`1`, `-1.5e3`).
    Float(f64),
    /// A signed integer (`1i`).
    Int(i64),
    /// An unsigned integer (`1u`).
    UInt(u64),
    /// A string (`"..."`), unescaped.
    Str(Cow<'a, str>),
    /// A boolean (`t`, `true`, `F`, `FALSE`, ...).
    Bool(bool),
    /// A timestamp field in nanoseconds, written in microseconds (`1700000000123456t`, as
    /// QuestDB's clients send them) or nanoseconds (`...n`).
    Timestamp(i64),
}

impl FieldValue<'_> {
    /// The type's name for error messages (`float`, `integer`, `unsigned integer`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            FieldValue::Float(_) => "float",
            FieldValue::Int(_) => "integer",
            FieldValue::UInt(_) => "unsigned integer",
            FieldValue::Str(_) => "string",
            FieldValue::Bool(_) => "boolean",
            FieldValue::Timestamp(_) => "timestamp",
        }
    }
}

/// One point; `line` is its 1-based line number in the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Point<'a> {
    /// 1-based line number in the body.
    pub line: usize,
    /// The measurement: the table the point goes to.
    pub measurement: Cow<'a, str>,
    /// Tag keys and values, in line order (stored as SYMBOL columns).
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// Field keys and values, in line order; at least one.
    pub fields: Vec<(Cow<'a, str>, FieldValue<'a>)>,
    /// In nanoseconds (already scaled by the precision).
    pub timestamp: Option<i64>,
}

/// Timestamp unit of a request (`precision=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Precision(pub i64);

impl Precision {
    /// Timestamps in nanoseconds (the default).
    pub const NANOS: Precision = Precision(1);

    /// InfluxDB v1 (`n`, `u`, `ms`, `s`, `m`, `h`) and v2 (`ns`, `us`, `ms`, `s`) spellings.
    pub fn parse(s: &str) -> Option<Precision> {
        Some(Precision(match s {
            "n" | "ns" => 1,
            "u" | "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        }))
    }
}

/// A syntax error: the 1-based line and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct IlpError {
    /// 1-based line number of the bad line.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

/// Parse a whole body; the first bad line fails it.
pub fn parse(body: &str, precision: Precision) -> Result<Vec<Point<'_>>, IlpError> {
    let mut out = Vec::new();
    for (k, raw) in body.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let p = parse_line(t, k + 1, precision).map_err(|message| IlpError { line: k + 1, message })?;
        out.push(p);
    }
    Ok(out)
}

/// Where a token ends: the first unescaped byte among `stops` (a backslash escapes the next
/// byte). Returns (end, had_escape).
fn scan(b: &[u8], mut i: usize, stops: &[u8]) -> (usize, bool) {
    let mut esc = false;
    while let Some(&c) = b.get(i) {
        if c == b'\\' && i + 1 < b.len() {
            esc = true;
            i += 2;
            continue;
        }
        if stops.contains(&c) {
            break;
        }
        i += 1;
    }
    (i.min(b.len()), esc)
}

/// Remove escapes of the given characters (`\\` too); other backslashes stay literal.
fn unescape<'a>(s: &'a str, had_escape: bool, escapable: &[u8]) -> Cow<'a, str> {
    if !had_escape {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut seg = 0;
    while let Some(&c) = b.get(i) {
        let next = b.get(i + 1).copied();
        if c == b'\\' && next.is_some_and(|n| escapable.contains(&n) || n == b'\\') {
            out.push_str(&s[seg..i]);
            seg = i + 1; // keep the escaped byte
            i += 2;
            continue;
        }
        i += 1;
    }
    out.push_str(&s[seg..]);
    Cow::Owned(out)
}

fn parse_line(s: &str, line: usize, precision: Precision) -> Result<Point<'_>, String> {
    let b = s.as_bytes();
    let at = |i: usize| b.get(i).copied();
    // Measurement.
    let (end, esc) = scan(b, 0, b", ");
    if end == 0 {
        return Err("missing measurement name".into());
    }
    let measurement = unescape(&s[..end], esc, b", ");
    let mut i = end;
    // Tags.
    let mut tags = Vec::new();
    while at(i) == Some(b',') {
        i += 1;
        let (kend, kesc) = scan(b, i, b"=, ");
        if kend == i || at(kend) != Some(b'=') {
            return Err(format!("bad tag at column {}: expected key=value", i + 1));
        }
        let key = unescape(&s[i..kend], kesc, b",= ");
        let (vend, vesc) = scan(b, kend + 1, b", ");
        if vend == kend + 1 {
            return Err(format!("tag '{key}' has no value"));
        }
        tags.push((key, unescape(&s[kend + 1..vend], vesc, b",= ")));
        i = vend;
    }
    if at(i) != Some(b' ') {
        return Err("expected a space and fields after the measurement and tags".into());
    }
    while at(i) == Some(b' ') {
        i += 1;
    }
    // Fields.
    let mut fields = Vec::new();
    loop {
        let (kend, kesc) = scan(b, i, b"=, ");
        if kend == i || at(kend) != Some(b'=') {
            return Err(format!("bad field at column {}: expected key=value", i + 1));
        }
        let key = unescape(&s[i..kend], kesc, b",= ");
        i = kend + 1;
        let (value, next) = field_value(s, i).map_err(|e| format!("field '{key}': {e}"))?;
        fields.push((key, value));
        i = next;
        if at(i) == Some(b',') {
            i += 1;
            continue;
        }
        break;
    }
    // Timestamp.
    let mut timestamp = None;
    if let Some(c) = at(i) {
        if c != b' ' {
            return Err(format!("unexpected '{}' at column {}", &s[i..].chars().next().unwrap_or(' '), i + 1));
        }
        let t = s[i..].trim();
        if !t.is_empty() {
            let v: i64 = t.parse().map_err(|_| format!("bad timestamp '{t}'"))?;
            timestamp = Some(v.checked_mul(precision.0).ok_or_else(|| format!("timestamp {v} is out of range"))?);
        }
    }
    Ok(Point { line, measurement, tags, fields, timestamp })
}

/// One field value starting at byte `i`; returns it and the index after it.
fn field_value(s: &str, i: usize) -> Result<(FieldValue<'_>, usize), String> {
    let b = s.as_bytes();
    let Some(&first) = b.get(i) else {
        return Err("missing value".into());
    };
    if first == b'"' {
        let mut j = i + 1;
        let mut esc = false;
        while let Some(&c) = b.get(j) {
            if c == b'"' {
                break;
            }
            if c == b'\\' && j + 1 < b.len() {
                esc = true;
                j += 1;
            }
            j += 1;
        }
        if j >= b.len() {
            return Err("unterminated string".into());
        }
        return Ok((FieldValue::Str(unescape(&s[i + 1..j], esc, b"\"")), j + 1));
    }
    let (end, _) = scan(b, i, b", ");
    let t = &s[i..end];
    let v = match t {
        "t" | "T" | "true" | "True" | "TRUE" => FieldValue::Bool(true),
        "f" | "F" | "false" | "False" | "FALSE" => FieldValue::Bool(false),
        // IEEE specials as QuestDB's clients write them (InfluxDB has none).
        "NaN" => FieldValue::Float(f64::NAN),
        "Infinity" | "+Infinity" => FieldValue::Float(f64::INFINITY),
        "-Infinity" => FieldValue::Float(f64::NEG_INFINITY),
        _ if is_field_timestamp(t) => FieldValue::Timestamp(field_timestamp(t)?),
        _ if t.ends_with('i') => FieldValue::Int(t[..t.len() - 1].parse().map_err(|_| format!("bad integer '{t}'"))?),
        _ if t.ends_with('u') => {
            FieldValue::UInt(t[..t.len() - 1].parse().map_err(|_| format!("bad unsigned integer '{t}'"))?)
        }
        _ => {
            let ok = t.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E'));
            let f: f64 = if ok { t.parse().map_err(|_| format!("bad number '{t}'"))? } else { f64::NAN };
            if !ok || !f.is_finite() {
                return Err(format!("bad value '{t}'"));
            }
            FieldValue::Float(f)
        }
    };
    Ok((v, end))
}

/// Whether `t` is written as a timestamp field: digits (maybe after `-`) then `t` or `n`.
fn is_field_timestamp(t: &str) -> bool {
    let Some(digits) = t.strip_suffix('t').or_else(|| t.strip_suffix('n')) else { return false };
    let digits = digits.strip_prefix('-').unwrap_or(digits);
    !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
}

/// A timestamp field (`<digits>t` in microseconds, `<digits>n` in nanoseconds) in nanoseconds.
fn field_timestamp(t: &str) -> Result<i64, String> {
    let (digits, scale) = match (t.strip_suffix('t'), t.strip_suffix('n')) {
        (Some(d), _) => (d, 1_000),
        (_, Some(d)) => (d, 1),
        _ => return Err(format!("bad timestamp '{t}'")),
    };
    let v: i64 = digits.parse().map_err(|_| format!("bad timestamp '{t}'"))?;
    v.checked_mul(scale).ok_or_else(|| format!("timestamp '{t}' is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_protocol() {
        let body = "# comment\n\
                    trades,sym=AAPL,venue=X price=189.5,size=100i,ok=t,note=\"a \\\"b\\\" c, d\" 1704187800000\n\
                    \n\
                    cpu\\,x,host=a\\ b\\=c value=1 \r\n\
                    m f=-1.5e3,u=7u,s=\"\",b=FALSE 17";
        let pts = parse(body, Precision::parse("ms").expect("ms")).expect("parses");
        assert_eq!(pts.len(), 3);
        let p = &pts[0];
        assert_eq!((p.line, p.measurement.as_ref()), (2, "trades"));
        assert_eq!(p.tags, vec![("sym".into(), "AAPL".into()), ("venue".into(), "X".into())]);
        assert_eq!(p.fields[0], ("price".into(), FieldValue::Float(189.5)));
        assert_eq!(p.fields[1], ("size".into(), FieldValue::Int(100)));
        assert_eq!(p.fields[2], ("ok".into(), FieldValue::Bool(true)));
        assert_eq!(p.fields[3], ("note".into(), FieldValue::Str("a \"b\" c, d".into())));
        assert_eq!(p.timestamp, Some(1_704_187_800_000 * 1_000_000));
        let p = &pts[1];
        assert_eq!((p.line, p.measurement.as_ref()), (4, "cpu,x"));
        assert_eq!(p.tags, vec![("host".into(), "a b=c".into())]);
        assert_eq!(p.timestamp, None);
        let specials = parse("q ts=1700000000123456t,tn=-5n,a=NaN,b=-Infinity,c=Infinity 1", Precision::NANOS)
            .expect("QuestDB's client's values");
        let f: Vec<&FieldValue<'_>> = specials[0].fields.iter().map(|(_, v)| v).collect();
        assert_eq!((f[0], f[1]), (&FieldValue::Timestamp(1_700_000_000_123_456_000), &FieldValue::Timestamp(-5)));
        assert!(matches!(f[2], FieldValue::Float(x) if x.is_nan()));
        assert_eq!((f[3], f[4]), (&FieldValue::Float(f64::NEG_INFINITY), &FieldValue::Float(f64::INFINITY)));
        for bad in ["q x=9223372036854775807t", "q x=12.5t", "q x=nan", "q x=inf", "q x=tt", "q x=-t"] {
            assert!(parse(bad, Precision::NANOS).is_err(), "{bad}");
        }
        let p = &pts[2];
        assert_eq!(p.fields[0].1, FieldValue::Float(-1500.0));
        assert_eq!(p.fields[1].1, FieldValue::UInt(7));
        assert_eq!(p.fields[2].1, FieldValue::Str("".into()));
        assert_eq!(p.fields[3].1, FieldValue::Bool(false));
        assert_eq!(p.timestamp, Some(17_000_000));
    }

    #[test]
    fn errors_name_the_line() {
        for (body, line, want) in [
            ("m v=1\nm", 2, "expected a space"),
            ("m v=1\n\nm,t v=1", 3, "bad tag"),
            ("m v=abc", 1, "bad value 'abc'"),
            ("m v=1x", 1, "bad value"),
            ("m v=\"open", 1, "unterminated string"),
            ("m v=1 12x", 1, "bad timestamp"),
            ("m v=1i2", 1, "bad value"),
            ("m v=nan", 1, "bad value"),
            ("m v=", 1, "missing value"),
            ("m ", 1, "bad field"),
            (",t=1 v=1", 1, "missing measurement"),
            ("m v=1 9223372036854775807", 1, "out of range"),
        ] {
            let p = if want == "out of range" { Precision::parse("s").expect("s") } else { Precision::NANOS };
            let e = parse(body, p).expect_err(body);
            assert_eq!(e.line, line, "{body}: {e:?}");
            assert!(e.message.contains(want), "{body}: {e:?}");
        }
    }

    /// Mutated lines (bytes dropped, duplicated, swapped for protocol characters, cut at any
    /// UTF-8 boundary) never panic the parser: they parse or fail with a line number.
    #[test]
    fn mutations_never_panic() {
        let seeds = [
            "trades,sym=AAPL,venue=X price=189.5,size=100i,ok=t,note=\"a \\\"b\\\" c\" 1704187800000",
            "cpu\\,x,host=a\\ b\\=c value=1",
            "m f=-1.5e3,u=7u,s=\"é😀\",b=FALSE 17",
        ];
        let specials = [b',', b'=', b' ', b'"', b'\\', b'i', b'u', b'-', b'.', b'#', b'\n', b'e'];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let mut b = seeds[round % seeds.len()].as_bytes().to_vec();
            for _ in 0..(next() % 4 + 1) {
                let i = (next() as usize) % b.len().max(1);
                match next() % 4 {
                    0 if !b.is_empty() => {
                        b.remove(i);
                    }
                    1 => b.insert(i, specials[(next() as usize) % specials.len()]),
                    2 if !b.is_empty() => b[i] = specials[(next() as usize) % specials.len()],
                    _ => b.truncate(i),
                }
            }
            let Ok(text) = std::str::from_utf8(&b) else { continue };
            let p = if round % 2 == 0 { Precision::NANOS } else { Precision(1_000_000_000) };
            if let Err(e) = parse(text, p) {
                assert!(e.line >= 1, "{text:?}: {e:?}");
            }
        }
    }
}
