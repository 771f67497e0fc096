//! InfluxDB line protocol: the ingestion format of the time-series world.
//!
//! `measurement[,tag=v...] field=v[,field=v...] [timestamp]`, one point per line; `#` starts a
//! comment line. Escapes as InfluxDB defines them: `\,` and `\ ` in measurements, also `\=`
//! in tag keys, tag values and field keys; `\"` and `\\` inside string field values. Field
//! values: float (`1`, `-1.5e3`), integer (`1i`), unsigned (`1u`), string (`"..."`), boolean
//! (`t`, `true`, `F`, `FALSE`, ...), timestamp (`1700000000123456t` in microseconds, `...n` in
//! nanoseconds). The line's timestamp is an integer in the request's precision, or with one of
//! those suffixes. QuestDB's protocol version 2 adds binary values after `==`: doubles, and
//! arrays of doubles (1-dimensional ones fill vector columns).
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
    /// A 1-dimensional array of doubles (protocol version 2), as a vector's 32-bit floats.
    Vector(Vec<f32>),
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
            FieldValue::Vector(_) => "array",
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
    /// Where the point's text is in the body: from its measurement to the end of its last
    /// field or its timestamp (no line end, no trailing blanks; binary values included).
    pub span: std::ops::Range<usize>,
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

/// What the tokenizer hands over, line by line and token by token: [`parse`] collects
/// [`Point`]s, `super::lines::Decoder` types values straight into column builders. A sink's
/// error ends the body; `syntax` makes one of a bad line's [`IlpError`].
pub trait LineSink<'a> {
    /// Why a body is refused.
    type Error;
    /// The error for a line the tokenizer cannot read.
    fn syntax(&mut self, e: IlpError) -> Self::Error;
    /// Whether the sink is offered each line's series ([`LineSink::series`]).
    fn wants_series(&self) -> bool {
        false
    }
    /// Line `line` starts with the series `raw` (its measurement and tags as written, without
    /// escapes). `true`: the sink knows the series (its measurement and tags are the sink's
    /// to take, by [`LineSink::known_rest`] at the latest), and only the fields and timestamp
    /// follow; `false`: they follow as for any line.
    fn series(&mut self, _line: usize, _raw: &'a [u8]) -> Result<bool, Self::Error> {
        Ok(false)
    }
    /// The fields and timestamp of the current line, its measurement and tags known (by
    /// [`LineSink::series`]) or handed over one by one, from `body[at..]` (just after the
    /// space that ends the series), read by the sink's own faster path (`super::fast`) when
    /// the line has the form it expects: where the next line starts, or `None` for the general
    /// path to hand over the fields and timestamp (the measurement and tags taken by then).
    fn known_rest(&mut self, _body: &'a [u8], _at: usize, _precision: Precision) -> Result<Option<usize>, Self::Error> {
        Ok(None)
    }
    /// Line `line` (1-based) starts, with its measurement.
    fn measurement(&mut self, line: usize, name: Cow<'a, str>) -> Result<(), Self::Error>;
    /// One tag of the current line, in line order.
    fn tag(&mut self, key: Cow<'a, str>, value: Cow<'a, str>) -> Result<(), Self::Error>;
    /// One field of the current line, in line order.
    fn field(&mut self, key: Cow<'a, str>, value: FieldValue<'a>) -> Result<(), Self::Error>;
    /// The current line ends: its timestamp (in nanoseconds) if it has one, and where its
    /// text is in the body (see [`Point::span`]).
    fn end(&mut self, timestamp: Option<i64>, span: std::ops::Range<usize>) -> Result<(), Self::Error>;
}

/// Parse a whole body; the first bad line fails it. Lines end at `\n` (a `\r` before it and
/// trailing blanks are dropped) except inside a binary value, whose bytes are counted, not
/// scanned; text must be UTF-8.
pub fn parse(body: &[u8], precision: Precision) -> Result<Vec<Point<'_>>, IlpError> {
    let mut points = Points::default();
    tokenize(body, precision, true, &mut points)?;
    Ok(points.out)
}

/// Whether `body` reads as text-only line protocol (version 1): the first bad line, if any (a
/// binary value, `==`, is one). Line protocol over TCP splits its lines at every `\n` byte
/// before they are parsed, so a binary value cannot be read there.
pub fn check_text(body: &[u8], precision: Precision) -> Result<(), IlpError> {
    tokenize(body, precision, false, &mut Skip)
}

/// Read `body` line by line into `sink`. `binary`: whether binary values (protocol version
/// 2) are read.
pub fn tokenize<'a, S: LineSink<'a>>(
    body: &'a [u8],
    precision: Precision,
    binary: bool,
    sink: &mut S,
) -> Result<(), S::Error> {
    let src = Body { b: body, text: std::str::from_utf8(body).ok(), binary };
    let (mut pos, mut line) = (0, 0);
    while pos < body.len() {
        line += 1;
        let start = skip_blanks(body, pos);
        if let Some(next) = line_end(body, start) {
            pos = next;
            continue;
        }
        if body.get(start) == Some(&b'#') {
            pos = memchr::memchr(b'\n', body.get(start..).unwrap_or_default()).map_or(body.len(), |k| start + k + 1);
            continue;
        }
        let known = match series_end(body, start).filter(|_| sink.wants_series()) {
            Some(end) => sink.series(line, body.get(start..end).unwrap_or_default())?.then_some(end),
            None => None,
        };
        let read = match known {
            Some(end) => match sink.known_rest(body, end + 1, precision)? {
                Some(next) => Ok(next),
                None => line_rest(&src, start, end, precision, sink),
            },
            None => parse_line(&src, start, line, precision, sink),
        };
        pos = match read {
            Ok(next) => next,
            Err(Bad::Syntax(message)) => return Err(sink.syntax(IlpError { line, message })),
            Err(Bad::Sink(e)) => return Err(e),
        };
    }
    Ok(())
}

/// Why a line was not read: the tokenizer's own message, or the sink's error.
enum Bad<E> {
    Syntax(String),
    Sink(E),
}

impl<E> From<String> for Bad<E> {
    fn from(m: String) -> Self {
        Bad::Syntax(m)
    }
}

impl<E> From<&str> for Bad<E> {
    fn from(m: &str) -> Self {
        Bad::Syntax(m.to_string())
    }
}

/// The sink of [`parse`]: every line as a [`Point`].
#[derive(Default)]
struct Points<'a> {
    out: Vec<Point<'a>>,
}

impl<'a> LineSink<'a> for Points<'a> {
    type Error = IlpError;
    fn syntax(&mut self, e: IlpError) -> IlpError {
        e
    }
    fn measurement(&mut self, line: usize, measurement: Cow<'a, str>) -> Result<(), IlpError> {
        let (tags, fields) = (Vec::new(), Vec::new());
        self.out.push(Point { line, measurement, tags, fields, timestamp: None, span: 0..0 });
        Ok(())
    }
    fn tag(&mut self, key: Cow<'a, str>, value: Cow<'a, str>) -> Result<(), IlpError> {
        if let Some(p) = self.out.last_mut() {
            p.tags.push((key, value));
        }
        Ok(())
    }
    fn field(&mut self, key: Cow<'a, str>, value: FieldValue<'a>) -> Result<(), IlpError> {
        if let Some(p) = self.out.last_mut() {
            p.fields.push((key, value));
        }
        Ok(())
    }
    fn end(&mut self, timestamp: Option<i64>, span: std::ops::Range<usize>) -> Result<(), IlpError> {
        if let Some(p) = self.out.last_mut() {
            (p.timestamp, p.span) = (timestamp, span);
        }
        Ok(())
    }
}

/// The sink of [`check_text`]: takes everything.
struct Skip;

impl<'a> LineSink<'a> for Skip {
    type Error = IlpError;
    fn syntax(&mut self, e: IlpError) -> IlpError {
        e
    }
    fn measurement(&mut self, _: usize, _: Cow<'a, str>) -> Result<(), IlpError> {
        Ok(())
    }
    fn tag(&mut self, _: Cow<'a, str>, _: Cow<'a, str>) -> Result<(), IlpError> {
        Ok(())
    }
    fn field(&mut self, _: Cow<'a, str>, _: FieldValue<'a>) -> Result<(), IlpError> {
        Ok(())
    }
    fn end(&mut self, _: Option<i64>, _: std::ops::Range<usize>) -> Result<(), IlpError> {
        Ok(())
    }
}

/// The index after spaces and tabs from `i`.
fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

/// If only blanks and a line end (`\n`, `\r\n`, or the body's end) follow `i`: where the next
/// line starts.
pub(super) fn line_end(b: &[u8], i: usize) -> Option<usize> {
    let mut i = skip_blanks(b, i);
    if b.get(i) == Some(&b'\r') {
        i += 1;
    }
    match b.get(i) {
        None => Some(b.len()),
        Some(b'\n') => Some(i + 1),
        Some(_) => None,
    }
}

/// A body's bytes, and the same as text when the whole body is UTF-8 (a text body, as
/// protocol version 1 always is): then a token is a slice of it, checked once for all.
struct Body<'a> {
    b: &'a [u8],
    text: Option<&'a str>,
    /// Whether binary values (protocol version 2) are read.
    binary: bool,
}

impl std::ops::Deref for Body<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.b
    }
}

/// Bytes `a..e` of the body as text (tokens end at ASCII bytes: at char boundaries).
#[inline]
fn text<'a>(b: &Body<'a>, a: usize, e: usize) -> Result<&'a str, String> {
    if let Some(t) = b.text {
        return t.get(a..e).ok_or_else(|| format!("bytes {}..{} of the body are no text", a + 1, e));
    }
    let bytes = b.b.get(a..e).ok_or("a token past the end of the body")?;
    std::str::from_utf8(bytes).map_err(|_| format!("bytes {}..{} of the body are not UTF-8", a + 1, e))
}

/// A set of bytes that end a token, as a table by byte value.
type Stops = [bool; 256];

/// The stop set of `bytes` and a newline (a token never spans lines).
#[allow(clippy::indexing_slicing)] // u8 values index a 256-entry table; const fns have no get()
const fn stops(bytes: &[u8]) -> Stops {
    let mut t = [false; 256];
    t[b'\n' as usize] = true;
    let mut k = 0;
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    t
}

/// What ends a measurement name.
const MEASUREMENT: &Stops = &stops(b", ");
/// What ends a tag or field key.
const KEY: &Stops = &stops(b"=, ");
/// What ends a tag value.
const TAG_VALUE: &Stops = &stops(b", ");
/// What ends a field value written as text (not a string).
const FIELD_VALUE: &Stops = &stops(b", \r");
/// What ends a line's timestamp.
const TIMESTAMP: &Stops = &stops(b" \t\r");

/// Where a token ends: the first unescaped byte among `stops` (a line end always is one; a
/// backslash escapes the next byte, but never a newline). Returns (end, had_escape).
#[inline]
fn scan(b: &[u8], mut i: usize, stops: &Stops) -> (usize, bool) {
    let mut esc = false;
    while let Some(&c) = b.get(i) {
        if c == b'\\' && b.get(i + 1).is_some_and(|&n| n != b'\n') {
            esc = true;
            i += 2;
            continue;
        }
        if stops.get(usize::from(c)).copied().unwrap_or(true) {
            break;
        }
        i += 1;
    }
    (i.min(b.len()), esc)
}

/// Remove escapes of the given characters (`\\` too); other backslashes stay literal.
#[inline]
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

/// Hand the line starting at `l0` (not blank, no comment) to `sink`; returns where the next
/// line starts. Columns in messages count from `l0`.
fn parse_line<'a, S: LineSink<'a>>(
    b: &Body<'a>,
    l0: usize,
    line: usize,
    precision: Precision,
    sink: &mut S,
) -> Result<usize, Bad<S::Error>> {
    let at = |i: usize| b.get(i).copied();
    let col = |i: usize| i - l0 + 1;
    // Measurement.
    let (end, esc) = scan(b, l0, MEASUREMENT);
    if end == l0 {
        return Err("missing measurement name".into());
    }
    sink.measurement(line, unescape(text(b, l0, end)?, esc, b", ")).map_err(Bad::Sink)?;
    let mut i = end;
    // Tags.
    while at(i) == Some(b',') {
        i += 1;
        let (kend, kesc) = scan(b, i, KEY);
        if kend == i || at(kend) != Some(b'=') {
            return Err(format!("bad tag at column {}: expected key=value", col(i)).into());
        }
        let key = unescape(text(b, i, kend)?, kesc, b",= ");
        let (vend, vesc) = scan(b, kend + 1, TAG_VALUE);
        if vend == kend + 1 {
            return Err(format!("tag '{key}' has no value").into());
        }
        let value = unescape(text(b, kend + 1, vend)?, vesc, b",= ");
        sink.tag(key, value).map_err(Bad::Sink)?;
        i = vend;
    }
    if at(i) != Some(b' ') {
        return Err("expected a space and fields after the measurement and tags".into());
    }
    if let Some(next) = sink.known_rest(b.b, i + 1, precision).map_err(Bad::Sink)? {
        return Ok(next);
    }
    line_rest(b, l0, i, precision, sink)
}

/// Where a line's series (its measurement and tags) ends, at the space before its fields, when
/// it has no escapes: the bytes a sink may know ([`LineSink::series`]).
fn series_end(b: &[u8], l0: usize) -> Option<usize> {
    let rest = b.get(l0..)?;
    let k = memchr::memchr2(b' ', b'\n', rest).filter(|&k| k > 0 && rest.get(k) == Some(&b' '))?;
    memchr::memchr(b'\\', rest.get(..k)?).is_none().then_some(l0 + k)
}

/// The rest of the line starting at `l0` from the space after its series (at `i`): its fields
/// and timestamp handed to `sink`; returns where the next line starts.
fn line_rest<'a, S: LineSink<'a>>(
    b: &Body<'a>,
    l0: usize,
    i: usize,
    precision: Precision,
    sink: &mut S,
) -> Result<usize, Bad<S::Error>> {
    let at = |i: usize| b.get(i).copied();
    let col = |i: usize| i - l0 + 1;
    let i = fields(b, skip_blanks(b, i), l0, sink)?;
    // Timestamp, then the line's end.
    if let Some(next) = line_end(b, i) {
        sink.end(None, l0..i).map_err(Bad::Sink)?;
        return Ok(next);
    }
    if at(i) != Some(b' ') {
        let c = text(b, i, i + 1).unwrap_or("?");
        return Err(format!("unexpected '{c}' at column {}", col(i)).into());
    }
    let t0 = skip_blanks(b, i);
    let (tend, _) = scan(b, t0, TIMESTAMP);
    let t = b.get(t0..tend).unwrap_or_default();
    let next =
        line_end(b, tend).ok_or_else(|| format!("unexpected text after the timestamp at column {}", col(tend)))?;
    let timestamp = match digits(t) {
        Some(v) => v.checked_mul(precision.0).ok_or_else(|| format!("timestamp {v} is out of range"))?,
        None => {
            let t = text(b, t0, tend)?;
            if is_field_timestamp(t) {
                field_timestamp(t)?
            } else {
                let v: i64 = t.parse().map_err(|_| format!("bad timestamp '{t}'"))?;
                v.checked_mul(precision.0).ok_or_else(|| format!("timestamp {v} is out of range"))?
            }
        }
    };
    sink.end(Some(timestamp), l0..tend).map_err(Bad::Sink)?;
    Ok(next)
}

/// The fields from byte `i` (`key=value[,key=value...]`) handed to `sink`; the index after
/// them.
fn fields<'a, S: LineSink<'a>>(b: &Body<'a>, mut i: usize, l0: usize, sink: &mut S) -> Result<usize, Bad<S::Error>> {
    loop {
        let (kend, kesc) = scan(b, i, KEY);
        if kend == i || b.get(kend) != Some(&b'=') {
            return Err(format!("bad field at column {}: expected key=value", i - l0 + 1).into());
        }
        let key = unescape(text(b, i, kend)?, kesc, b",= ");
        let (value, next) = field_value(b, kend + 1).map_err(|e| format!("field '{key}': {e}"))?;
        sink.field(key, value).map_err(Bad::Sink)?;
        i = next;
        if b.get(i) != Some(&b',') {
            return Ok(i);
        }
        i += 1;
    }
}

/// `t` as a decimal integer (`-?[0-9]+`, in range), else `None` (the caller reads it the
/// slow way, and says what is wrong).
#[inline]
pub(super) fn digits(t: &[u8]) -> Option<i64> {
    let (neg, d) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t),
    };
    if d.is_empty() || d.len() > 19 {
        return None;
    }
    // Accumulated negative: i64::MIN has no positive twin.
    let mut v: i64 = 0;
    for &c in d {
        let x = c.wrapping_sub(b'0');
        if x > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(x))?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// One field value starting at byte `i`; returns it and the index after it.
#[inline]
fn field_value<'a>(b: &Body<'a>, i: usize) -> Result<(FieldValue<'a>, usize), String> {
    let Some(&first) = b.get(i) else {
        return Err("missing value".into());
    };
    if first == b'=' && !b.binary {
        return Err("a binary value (protocol version 2) where only text is read (version 1)".into());
    }
    if first == b'=' {
        return binary_value(b, i + 1);
    }
    if first == b'"' {
        let mut j = i + 1;
        let mut esc = false;
        while let Some(&c) = b.get(j) {
            if c == b'"' || c == b'\n' {
                break;
            }
            if c == b'\\' && b.get(j + 1).is_some_and(|&n| n != b'\n') {
                esc = true;
                j += 1;
            }
            j += 1;
        }
        if b.get(j) != Some(&b'"') {
            return Err("unterminated string".into());
        }
        return Ok((FieldValue::Str(unescape(text(b, i + 1, j)?, esc, b"\"")), j + 1));
    }
    let (end, _) = scan(b, i, FIELD_VALUE);
    let t = text(b, i, end)?;
    if t.is_empty() {
        return Err("missing value".into());
    }
    Ok((text_value(t)?, end))
}

/// A field value written as text (not a string): boolean, number, timestamp.
#[inline]
fn text_value(t: &str) -> Result<FieldValue<'static>, String> {
    // The common case first: a plain integer (`42i`).
    if let Some((&b'i', d)) = t.as_bytes().split_last() {
        if let Some(v) = digits(d) {
            return Ok(FieldValue::Int(v));
        }
    }
    Ok(match t {
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
    })
}

/// QuestDB's protocol version 2 binary field value (after `==`, at its type byte): a double
/// (type 16, 8 bytes little-endian) or an array of doubles (type 14, element type 10, the
/// dimension count, each dimension as a little-endian u32, then the values in row-major
/// order). A 1-dimensional array is a vector (FLOAT[n], its values as 32-bit floats).
fn binary_value(b: &[u8], i: usize) -> Result<(FieldValue<'static>, usize), String> {
    let f64_at = |k: usize| -> Result<f64, String> {
        let bytes: [u8; 8] = b.get(k..k + 8).and_then(|s| s.try_into().ok()).ok_or("a binary double cut short")?;
        Ok(f64::from_le_bytes(bytes))
    };
    match b.get(i).copied() {
        Some(16) => return Ok((FieldValue::Float(f64_at(i + 1)?), i + 9)),
        Some(14) => {}
        Some(t) => return Err(format!("binary value of unknown type {t} (16: double, 14: array)")),
        None => return Err("missing binary value type".into()),
    }
    match (b.get(i + 1).copied(), b.get(i + 2).copied()) {
        (Some(10), Some(1)) => {}
        (Some(10), Some(d)) => {
            return Err(format!("a {d}-dimensional array: only 1-dimensional ones (vectors, FLOAT[n]) are taken"))
        }
        (Some(e), Some(_)) => return Err(format!("an array of element type {e}: only double arrays (10) are taken")),
        _ => return Err("an array header cut short".into()),
    }
    let len: [u8; 4] = b.get(i + 3..i + 7).and_then(|s| s.try_into().ok()).ok_or("an array length cut short")?;
    let n = u32::from_le_bytes(len) as usize;
    if n == 0 || n > usize::from(u16::MAX) {
        return Err(format!("an array of {n} values: a vector has 1 to {} dimensions", u16::MAX));
    }
    let data = i + 7;
    let bytes = b.get(data..data + n * 8).ok_or("an array's values cut short")?;
    let mut v = Vec::with_capacity(n);
    for c in bytes.chunks_exact(8) {
        let x = f64::from_le_bytes(c.try_into().map_err(|_| "an array value cut short")?);
        if x.is_finite() && !(x as f32).is_finite() {
            return Err(format!("array value {x} is out of FLOAT range"));
        }
        v.push(x as f32);
    }
    Ok((FieldValue::Vector(v), data + n * 8))
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
        let pts = parse(body.as_bytes(), Precision::parse("ms").expect("ms")).expect("parses");
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
        let specials = parse(b"q ts=1700000000123456t,tn=-5n,a=NaN,b=-Infinity,c=Infinity 1", Precision::NANOS)
            .expect("QuestDB's client's values");
        let f: Vec<&FieldValue<'_>> = specials[0].fields.iter().map(|(_, v)| v).collect();
        assert_eq!((f[0], f[1]), (&FieldValue::Timestamp(1_700_000_000_123_456_000), &FieldValue::Timestamp(-5)));
        assert!(matches!(f[2], FieldValue::Float(x) if x.is_nan()));
        assert_eq!((f[3], f[4]), (&FieldValue::Float(f64::NEG_INFINITY), &FieldValue::Float(f64::INFINITY)));
        for bad in ["q x=9223372036854775807t", "q x=12.5t", "q x=nan", "q x=inf", "q x=tt", "q x=-t"] {
            assert!(parse(bad.as_bytes(), Precision::NANOS).is_err(), "{bad}");
        }
        let p = &pts[2];
        assert_eq!(p.fields[0].1, FieldValue::Float(-1500.0));
        assert_eq!(p.fields[1].1, FieldValue::UInt(7));
        assert_eq!(p.fields[2].1, FieldValue::Str("".into()));
        assert_eq!(p.fields[3].1, FieldValue::Bool(false));
        assert_eq!(p.timestamp, Some(17_000_000));
    }

    /// The digit loop reads what `str::parse` reads, or leaves it to it.
    #[test]
    fn digits_agree_with_parse() {
        for t in [
            "0",
            "-0",
            "7",
            "-42",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999",
            "",
            "-",
            "+5",
            "12a",
            "1451606400000000000",
        ] {
            match digits(t.as_bytes()) {
                Some(v) => assert_eq!(Ok(v), t.parse::<i64>(), "{t}"),
                None => assert!(t.parse::<i64>().is_err() || t.starts_with('+'), "{t}"),
            }
        }
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
            let e = parse(body.as_bytes(), p).expect_err(body);
            assert_eq!(e.line, line, "{body}: {e:?}");
            assert!(e.message.contains(want), "{body}: {e:?}");
        }
    }

    /// QuestDB's protocol version 2, as its Python client (6.0) writes it: binary doubles,
    /// double arrays (whose header holds a newline byte: counted, not a line end), and line
    /// timestamps with a unit suffix.
    #[test]
    fn protocol_version_2_binary_values() {
        let body = b"t,sym=A px==\x10\0\0\0\0\0\0\xf8?,n=3i,arr==\x0e\n\x01\x03\0\0\0\0\0\0\0\0\0\xf0?\0\0\0\0\0\0\0@\0\0\0\0\0\0\x08@ 1700000000000000000n\n\
                     t px==\x10\0\0\0\0\0\0\xf8\x7f 17t\n";
        let pts = parse(body, Precision(1_000)).expect("protocol 2");
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].fields[0].1, FieldValue::Float(1.5));
        assert_eq!(pts[0].fields[1].1, FieldValue::Int(3));
        assert_eq!(pts[0].fields[2].1, FieldValue::Vector(vec![1.0, 2.0, 3.0]));
        assert_eq!(pts[0].timestamp, Some(1_700_000_000_000_000_000));
        assert!(matches!(pts[1].fields[0].1, FieldValue::Float(x) if x.is_nan()));
        assert_eq!((pts[1].line, pts[1].timestamp), (2, Some(17_000)));
        // Each point's span is its own text, binary values whole, without the line end.
        assert_eq!(pts[0].span, 0..84);
        assert!(body[..84].ends_with(b" 1700000000000000000n"));
        assert_eq!(&body[pts[1].span.clone()], &b"t px==\x10\0\0\0\0\0\0\xf8\x7f 17t"[..]);
        for (bad, want) in [
            (&b"m a==\x0e\n\x02\x01\0\0\0\x01\0\0\0\0\0\0\0\0\0\xf0?"[..], "2-dimensional"),
            (b"m a==\x0e\x05\x01\x01\0\0\0\x01", "element type 5"),
            (b"m a==\x0e\n\x01\x02\0\0\0\0\0\0\0\0\0\xf0?", "cut short"),
            (b"m a==\x10\0\0\0", "cut short"),
            (b"m a==\x07\0", "unknown type 7"),
            (b"m a==\x0e\n\x01\0\0\0\0", "0 values"),
            (b"m a==\x0e\n\x01\x01\0\0\0\0\0\0\0\0\0\xf0\x7f", ""),
            (b"m a=\"\xff\"", "not UTF-8"),
        ] {
            match parse(bad, Precision::NANOS) {
                Err(e) => assert!(e.message.contains(want) && e.line == 1, "{bad:?}: {e:?}"),
                // The parser reads an infinite double as any other; the decoder then refuses
                // it for a FLOAT[n] column (`lines.rs`, `finite_vector`).
                Ok(p) => assert_eq!((want, &p[0].fields[0].1), ("", &FieldValue::Vector(vec![f32::INFINITY]))),
            }
        }
        let big = b"m a==\x0e\n\x01\x01\0\0\0\0\0\0\0\0\0\xf0\x48";
        assert!(parse(big, Precision::NANOS).expect_err("2^144 is no FLOAT").message.contains("out of FLOAT range"));
    }

    /// Mutated lines (bytes dropped, duplicated, swapped for protocol characters, cut
    /// anywhere, binary values included) never panic the parser: they parse or fail with a
    /// line number.
    #[test]
    fn mutations_never_panic() {
        let seeds: [&[u8]; 4] = [
            "trades,sym=AAPL,venue=X price=189.5,size=100i,ok=t,note=\"a \\\"b\\\" c\" 1704187800000".as_bytes(),
            "cpu\\,x,host=a\\ b\\=c value=1".as_bytes(),
            "m f=-1.5e3,u=7u,s=\"é😀\",b=FALSE 17".as_bytes(),
            b"v2,s=a d==\x10\0\0\0\0\0\0\xf8?,a==\x0e\n\x01\x02\0\0\0\0\0\0\0\0\0\xf0?\0\0\0\0\0\0\0@ 1n",
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
            let mut b = seeds[round % seeds.len()].to_vec();
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
            let p = if round % 2 == 0 { Precision::NANOS } else { Precision(1_000_000_000) };
            if let Err(e) = parse(&b, p) {
                assert!(e.line >= 1, "{b:?}: {e:?}");
            }
        }
    }
}
