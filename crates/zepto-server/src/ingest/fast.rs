//! The fields and timestamp of a line read in one pass, when they repeat the previous line's.
//!
//! A client writes the lines of a measurement alike: the same field keys in the same order,
//! each with values of one type. For a line of a known series (its tags already taken from the
//! series cache), `super::lines::Decoder` hands [`read`] the keys its table's previous line
//! had, with the kind of value each key's column takes. Each key is then matched by one
//! comparison and each value parsed straight from the bytes by that kind: no token, no
//! escape handling, no `Value`. Anything else (another key, more or fewer fields, an escape,
//! a string, a value the kind does not take as written here) makes [`read`] answer `None`
//! having changed nothing but `out`, and the line is read the general way
//! (`super::ilp::line_rest`), which reads it or says what is wrong with it.
//!
//! Whatever this reads, the general path reads to the same values: it takes a subset of the
//! syntax (plain decimal integers with `i`, decimal floats, decimal timestamps) whose meaning
//! does not depend on the path. `tests::agrees_with_the_general_path` checks that on
//! generated lines.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use super::ilp::{digits, line_end};

/// How a column takes a field value on this path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// BIGINT: `-?[0-9]+i`.
    Int64,
    /// INTEGER: `-?[0-9]+i` within range.
    Int32,
    /// DOUBLE: a decimal number (`-?[0-9.]+([eE][+-]?[0-9]+)?`, finite) or an integer with `i`.
    Float64,
}

/// A field value read, as its column stores it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Cell {
    /// For a BIGINT column.
    Int64(i64),
    /// For an INTEGER column.
    Int32(i32),
    /// For a DOUBLE column.
    Float64(f64),
}

/// What a line read this way holds beside its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rest {
    /// The timestamp, in nanoseconds (a line without one goes the general way).
    pub timestamp: i64,
    /// Where the timestamp ends (the line's text is up to here).
    pub end: usize,
    /// Where the next line starts.
    pub next: usize,
}

/// The fields of the line at `b[i..]` (just after the space that ends its series), matched
/// against `keys` in order (each a key as written, with no byte that would need an escape,
/// and its column's kind), their values pushed onto `out` in order, then the timestamp,
/// multiplied by `precision`; `None` if the line is not of that form.
pub(super) fn read<'k>(
    b: &[u8],
    mut i: usize,
    keys: impl Iterator<Item = (&'k [u8], Kind)>,
    precision: i64,
    out: &mut Vec<Cell>,
) -> Option<Rest> {
    out.clear();
    for (key, kind) in keys {
        if !out.is_empty() {
            if b.get(i) != Some(&b',') {
                return None;
            }
            i += 1;
        }
        let at = i + key.len();
        if b.get(i..at) != Some(key) || b.get(at) != Some(&b'=') {
            return None;
        }
        let (cell, end) = value(b, at + 1, kind)?;
        out.push(cell);
        i = end;
    }
    if out.is_empty() || b.get(i) != Some(&b' ') {
        return None;
    }
    timestamp(b, i + 1, precision)
}

/// The value at `b[i..]` as `kind` takes it, and where it ends (at `,` or a space).
fn value(b: &[u8], i: usize, kind: Kind) -> Option<(Cell, usize)> {
    let rest = b.get(i..)?;
    let len = rest.iter().position(|&c| matches!(c, b',' | b' ' | b'\n' | b'\r' | b'\t' | b'\\'))?;
    let end = i + len;
    if !matches!(b.get(end), Some(b',' | b' ')) {
        return None;
    }
    let t = rest.get(..len)?;
    let cell = match (t.split_last(), kind) {
        (Some((b'i', d)), Kind::Int64) => Cell::Int64(digits(d)?),
        (Some((b'i', d)), Kind::Int32) => Cell::Int32(i32::try_from(digits(d)?).ok()?),
        (Some((b'i', d)), Kind::Float64) => Cell::Float64(digits(d)? as f64),
        (Some(_), Kind::Float64) => Cell::Float64(decimal(t)?),
        _ => return None,
    };
    Some((cell, end))
}

/// `t` as a finite decimal number, written with digits, `.`, a leading `-` and an exponent.
fn decimal(t: &[u8]) -> Option<f64> {
    let d = t.strip_prefix(b"-").unwrap_or(t);
    let plain = d.first().is_some_and(u8::is_ascii_digit)
        && d.iter().all(|&c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
    if !plain {
        return None;
    }
    let f: f64 = std::str::from_utf8(t).ok()?.parse().ok()?;
    f.is_finite().then_some(f)
}

/// The timestamp at `b[i..]` and the line's end after it.
fn timestamp(b: &[u8], i: usize, precision: i64) -> Option<Rest> {
    let rest = b.get(i..)?;
    let len = rest.iter().position(|&c| matches!(c, b' ' | b'\t' | b'\r' | b'\n')).unwrap_or(rest.len());
    let timestamp = digits(rest.get(..len)?)?.checked_mul(precision)?;
    let end = i + len;
    let next = line_end(b, end)?;
    Some(Rest { timestamp, end, next })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::ilp::{parse, FieldValue, Precision};

    const KEYS: [(&[u8], Kind); 3] = [(b"a", Kind::Int64), (b"bb", Kind::Float64), (b"c", Kind::Int32)];

    fn fast(line: &str) -> Option<(Vec<Cell>, i64)> {
        let mut out = Vec::new();
        let r = read(line.as_bytes(), 0, KEYS.iter().copied(), 1, &mut out)?;
        assert_eq!(r.next, line.len(), "{line}");
        Some((out, r.timestamp))
    }

    /// The general path's reading of the same fields, as the kinds would store them.
    fn general(line: &str) -> Option<(Vec<Cell>, i64)> {
        let body = format!("m {line}");
        let p = parse(body.as_bytes(), Precision::NANOS).ok()?.pop()?;
        let mut cells = Vec::new();
        for ((k, v), (key, kind)) in p.fields.iter().zip(KEYS) {
            if k.as_bytes() != key {
                return None;
            }
            cells.push(match (v, kind) {
                (FieldValue::Int(i), Kind::Int64) => Cell::Int64(*i),
                (FieldValue::Int(i), Kind::Int32) => Cell::Int32(i32::try_from(*i).ok()?),
                (FieldValue::Int(i), Kind::Float64) => Cell::Float64(*i as f64),
                (FieldValue::Float(f), Kind::Float64) => Cell::Float64(*f),
                _ => return None,
            });
        }
        (p.fields.len() == KEYS.len()).then_some((cells, p.timestamp?))
    }

    #[test]
    fn reads_the_usual_line() {
        assert_eq!(
            fast("a=-5i,bb=2.5e1,c=7i 1700000000000000000\n"),
            Some((vec![Cell::Int64(-5), Cell::Float64(25.0), Cell::Int32(7)], 1_700_000_000_000_000_000))
        );
        assert_eq!(fast("a=1i,bb=3i,c=0i 12\r\n").map(|(c, _)| c[1]), Some(Cell::Float64(3.0)));
    }

    #[test]
    fn anything_else_goes_the_general_way() {
        for line in [
            "a=1i,bb=2,c=3i",                      // no timestamp
            "a=1i,bb=2,c=3i,d=4i 1",               // a field more
            "a=1i,bb=2 1",                         // a field fewer
            "a=1,bb=2,c=3i 1",                     // a float into BIGINT
            "a=1i,bb=2,c=3000000000i 1",           // past INTEGER
            "a=1i,bb=NaN,c=3i 1",                  // a special
            "a=1i,bb=1e999,c=3i 1",                // not finite
            "a=1i,bb=\"x\",c=3i 1",                // a string
            "a=1u,bb=2,c=3i 1",                    // unsigned
            "A=1i,bb=2,c=3i 1",                    // another key
            "a=1i,bb=2,c=3i  1",                   // two spaces
            "a=1i,bb=2,c=3i 1 x",                  // text after the timestamp
            "a=1i,bb=2,c=3i 99999999999999999999", // past i64
            "a=1i,bb=2\\,c=3i 1",                  // an escape
        ] {
            assert_eq!(fast(line), None, "{line}");
        }
    }

    /// Generated lines: whatever the fast path reads, the general path reads the same.
    #[test]
    fn agrees_with_the_general_path() {
        let pieces = [
            "1",
            "-1",
            "0",
            "12i",
            "-3i",
            "2.5",
            "-0.5e-3",
            "1e5",
            "1.",
            ".5",
            "9223372036854775807i",
            "+1",
            "1e",
            "--1i",
            "",
            "2147483648i",
            "1.5i",
            "t",
        ];
        let mut rng = zepto_storage::rng::XorShift::new(7);
        let mut next = |n: usize| rng.index(n);
        let mut fast_read = 0;
        for _ in 0..50_000 {
            let v: Vec<&str> = (0..3).map(|_| pieces[next(pieces.len())]).collect();
            let ts = ["1", "-5", "x", "17 "][next(4)];
            let line = format!("a={},bb={},c={} {ts}", v[0], v[1], v[2]);
            if let Some(f) = fast(&line) {
                assert_eq!(Some(f), general(&line), "{line}");
                fast_read += 1;
            }
        }
        // About 1% of the combinations are all valid.
        assert!(fast_read > 300, "{fast_read} lines read fast");
    }

    /// A body whose lines repeat their series (read by the fast path after each series' first
    /// line) lands as the same lines written one body each (each read the general way: the
    /// series cache lives for one body), with missing fields, another order, escapes and no
    /// timestamp among them.
    #[test]
    fn a_body_lands_as_its_lines_one_by_one() {
        use crate::auth::Principal;
        use crate::ingest::{write, IngestFormat, WriteRequest};
        let mut rng = zepto_storage::rng::XorShift::new(11);
        let mut next = |n: u64| rng.below(n);
        let mut lines = vec!["m,host=h0 u=1i,f=0.5,c=1i 1".to_string(), "n,host=h0 u=1i,f=0.5,c=1i 1".to_string()];
        for _ in 0..3000 {
            let series =
                format!("{},host=h{}{}", ["m", "n"][next(2) as usize], next(6), ["", ",r=a\\ b"][next(2) as usize]);
            let (u, f, c) = (next(200) as i64 - 100, next(1000), next(50));
            let f = [format!("{f}.25"), format!("{f}e-1"), format!("{f}i"), format!("-{f}")][next(4) as usize].clone();
            let fields = match next(20) {
                0 => format!("c={c}i,u={u}i,f={f}"),
                1 => format!("u={u}i,c={c}i"),
                2 => format!("u={u}i,f={f},c={c}i,x=\"s\""),
                _ => format!("u={u}i,f={f},c={c}i"),
            };
            let ts = if next(20) == 0 { String::new() } else { format!(" {}", next(500)) };
            lines.push(format!("{series} {fields}{ts}"));
        }
        let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: Precision::NANOS, now_ns: 42 };
        let who = Principal::anonymous_admin();
        let (whole, one_by_one) = (zepto_sql::Engine::new(), zepto_sql::Engine::new());
        write(&whole, &who, &req, lines.join("\n").as_bytes()).expect("the body is stored");
        for l in &lines {
            write(&one_by_one, &who, &req, l.as_bytes()).expect("the line is stored");
        }
        for sql in ["SELECT * FROM m ORDER BY ALL", "SELECT * FROM n ORDER BY ALL", "DESCRIBE m", "DESCRIBE n"] {
            let rows = |e: &zepto_sql::Engine| {
                let b = e.execute(sql).expect(sql).into_batch();
                let cell = |i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("|");
                (0..b.rows).map(cell).collect::<Vec<_>>()
            };
            let a = rows(&whole);
            assert!(a.len() > 2, "{sql}: {a:?}");
            assert_eq!(a, rows(&one_by_one), "{sql}");
        }
    }
}
