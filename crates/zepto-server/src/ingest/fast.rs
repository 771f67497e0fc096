//! The lines of a known series that write the fields of the table's previous line, read in
//! one pass into plain vectors.
//!
//! A client writes the lines of a measurement alike: the same field keys in the same order,
//! each with values of one type. `super::lines::Decoder` keeps per table a [`Shape`]: the tag
//! columns of a series, the field keys its previous line wrote (as the bytes `key=`, then
//! `,key=`, each with the kind of value its column takes) and the designated timestamp. A line of a known
//! series whose tags go to the shape's columns is matched against it: each key by one
//! comparison, each value parsed straight from the bytes by its kind (eight digits at a time)
//! and pushed onto the shape's own vector for that column, the series' tag codes onto theirs.
//! No token, no escape handling, no `Value`, no per-cell dispatch on a builder's type; the
//! decoder moves the staged rows into its column builders a run at a time ([`Shape::drain`])
//! before any line of the table goes another way, and at the end of the body.
//!
//! Anything else (another key, more or fewer fields, an escape, a string, a value the kind
//! does not take as written here) makes [`Shape::read`] answer `None` having staged nothing,
//! and the line is read the general way (`super::ilp::line_rest`), which reads it or says what
//! is wrong with it. Whatever this reads, the general path reads to the same values: it takes a
//! subset of the syntax (plain decimal integers with `i`, decimal floats, decimal timestamps)
//! whose meaning does not depend on the path. `tests::agrees_with_the_general_path` checks that
//! on generated lines.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use super::ilp::line_end;
use std::ops::Range;
use zepto_storage::ValidRun;

/// How a column takes a field value on this path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// BIGINT: `-?[0-9]+i`.
    Int64,
    /// INTEGER: `-?[0-9]+i` within range.
    Int32,
    /// DOUBLE: a decimal number (`-?[0-9][0-9.]*([eE][+-]?[0-9]+)?`, finite) or an integer
    /// with `i`.
    Float64,
}

/// The values of one field staged so far, as its column stores them.
#[derive(Debug, Clone, PartialEq)]
enum Staged {
    Int64(Vec<i64>),
    Int32(Vec<i32>),
    Float64(Vec<f64>),
}

impl Staged {
    fn len(&self) -> usize {
        match self {
            Staged::Int64(v) => v.len(),
            Staged::Int32(v) => v.len(),
            Staged::Float64(v) => v.len(),
        }
    }

    fn truncate(&mut self, n: usize) {
        match self {
            Staged::Int64(v) => v.truncate(n),
            Staged::Int32(v) => v.truncate(n),
            Staged::Float64(v) => v.truncate(n),
        }
    }

    fn valid(&self) -> ValidRun<'_> {
        match self {
            Staged::Int64(v) => ValidRun::I64(v),
            Staged::Int32(v) => ValidRun::I32(v),
            Staged::Float64(v) => ValidRun::F64(v),
        }
    }
}

/// One field of a [`Shape`]: its key's bytes in `Shape::keys` and its column slot.
#[derive(Debug, Clone)]
struct Field {
    key: Range<usize>,
    slot: usize,
}

/// The layout of a table's lines that go this way, and the rows read so far (module docs).
#[derive(Debug, Clone)]
pub(super) struct Shape {
    /// The series' tag columns, in the series' order.
    tags: Vec<u32>,
    fields: Vec<Field>,
    /// Every field's key as the line writes it: `key=` for the first, `,key=` after.
    keys: Vec<u8>,
    /// The designated timestamp's column.
    ts: usize,
    /// Staged rows: per tag its codes, per field its values, and the timestamps.
    codes: Vec<Vec<u32>>,
    values: Vec<Staged>,
    times: Vec<i64>,
}

impl Shape {
    /// The shape of lines whose series' tags go to columns `tags` and whose fields are
    /// `fields` (each its key as written, with no byte that would need an escape, its column
    /// and kind), then a timestamp for column `ts`; `None` unless every column is a different
    /// one and there is a field.
    pub fn new<'k>(tags: &[u32], fields: impl Iterator<Item = (&'k [u8], usize, Kind)>, ts: usize) -> Option<Shape> {
        let mut shape = Shape {
            tags: tags.to_vec(),
            fields: Vec::new(),
            keys: Vec::new(),
            ts,
            codes: vec![Vec::new(); tags.len()],
            values: Vec::new(),
            times: Vec::new(),
        };
        for (key, slot, kind) in fields {
            let start = shape.keys.len();
            if start > 0 {
                shape.keys.push(b',');
            }
            shape.keys.extend_from_slice(key);
            shape.keys.push(b'=');
            shape.fields.push(Field { key: start..shape.keys.len(), slot });
            shape.values.push(match kind {
                Kind::Int64 => Staged::Int64(Vec::new()),
                Kind::Int32 => Staged::Int32(Vec::new()),
                Kind::Float64 => Staged::Float64(Vec::new()),
            });
        }
        let mut slots: Vec<usize> = shape.slots().collect();
        slots.sort_unstable();
        let distinct = slots.windows(2).all(|w| w.first() != w.get(1));
        (distinct && !shape.fields.is_empty()).then_some(shape)
    }

    /// Every column a line of this shape fills.
    fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        let tags = self.tags.iter().map(|&s| s as usize);
        tags.chain(self.fields.iter().map(|f| f.slot)).chain([self.ts])
    }

    /// Whether a series whose tags are `tags` (column slot, code) has this shape's tag columns.
    pub fn fits(&self, tags: &[(u32, u32)]) -> bool {
        self.tags.len() == tags.len() && self.tags.iter().zip(tags).all(|(a, (b, _))| a == b)
    }

    /// Rows staged.
    pub fn rows(&self) -> usize {
        self.times.len()
    }

    /// Stage the line at `b[i..]` (just after the space that ends its series, whose tags
    /// [`Shape::fits`]): its fields, the timestamp multiplied by `precision`, and the tags'
    /// codes. Where the next line starts; `None`, nothing staged, if the line is not of this
    /// shape.
    pub fn read(&mut self, b: &[u8], i: usize, precision: i64, tags: &[(u32, u32)]) -> Option<usize> {
        debug_assert!(self.fits(tags), "a series of other tag columns");
        let Some((timestamp, next)) = self.read_values(b, i, precision) else {
            let n = self.rows();
            self.values.iter_mut().for_each(|v| v.truncate(n));
            return None;
        };
        self.times.push(timestamp);
        self.codes.iter_mut().zip(tags).for_each(|(c, &(_, code))| c.push(code));
        #[cfg(test)]
        tests::STAGED.with(|n| n.set(n.get() + 1));
        Some(next)
    }

    /// The fields pushed onto `values`, then the timestamp and where the next line starts.
    #[inline]
    fn read_values(&mut self, b: &[u8], mut i: usize, precision: i64) -> Option<(i64, usize)> {
        for (f, out) in self.fields.iter().zip(&mut self.values) {
            let key = self.keys.get(f.key.clone())?;
            if b.get(i..i + key.len())? != key {
                return None;
            }
            i = value(b, i + key.len(), out)?;
        }
        if b.get(i) != Some(&b' ') {
            return None;
        }
        let (neg, at) = sign(b, i + 1);
        let (v, n) = digit_run(b, at)?;
        let timestamp = signed(v, neg)?.checked_mul(precision)?;
        Some((timestamp, line_end(b, at + n)?))
    }

    /// Hand every staged column to `put` (its slot and values), then forget the staged rows.
    /// `put`'s first error ends the drain (the builders it filled are then out of step: the
    /// caller fails the body).
    pub fn drain<E>(&mut self, mut put: impl FnMut(usize, ValidRun<'_>) -> Result<(), E>) -> Result<(), E> {
        let rows = self.rows();
        debug_assert!(self.values.iter().all(|v| v.len() == rows), "a field staged out of step");
        if rows == 0 {
            return Ok(());
        }
        for (&slot, codes) in self.tags.iter().zip(&mut self.codes) {
            put(slot as usize, ValidRun::Codes(codes))?;
            codes.clear();
        }
        for (f, v) in self.fields.iter().zip(&mut self.values) {
            put(f.slot, v.valid())?;
            v.truncate(0);
        }
        put(self.ts, ValidRun::I64(&self.times))?;
        self.times.clear();
        Ok(())
    }
}

/// Whether a `-` is at `b[i]`, and where the digits start.
#[inline]
fn sign(b: &[u8], i: usize) -> (bool, usize) {
    let neg = b.get(i) == Some(&b'-');
    (neg, i + usize::from(neg))
}

/// `v` with a sign as an i64, if in range.
#[inline]
fn signed(v: u64, neg: bool) -> Option<i64> {
    if !neg {
        return i64::try_from(v).ok();
    }
    // -2^63 has no positive twin: it wraps onto itself.
    (v <= 1 << 63).then(|| (v as i64).wrapping_neg())
}

/// The field value at `b[i..]` as `out`'s kind takes it, pushed onto `out`; where it ends (at
/// `,` or a space). On `None` a value may have been pushed: the caller drops the line's.
#[inline]
fn value(b: &[u8], i: usize, out: &mut Staged) -> Option<usize> {
    let (neg, at) = sign(b, i);
    let (v, n) = digit_run(b, at)?;
    let end = at + n;
    let suffixed = b.get(end) == Some(&b'i');
    let end = match out {
        Staged::Int64(o) if suffixed => {
            o.push(signed(v, neg)?);
            end + 1
        }
        Staged::Int32(o) if suffixed => {
            o.push(i32::try_from(signed(v, neg)?).ok()?);
            end + 1
        }
        Staged::Float64(o) if suffixed => {
            o.push(signed(v, neg)? as f64);
            end + 1
        }
        // Up to 15 digits a double holds the integer exactly, as its text parses.
        Staged::Float64(o) if n <= 15 && matches!(b.get(end), Some(b',' | b' ')) => {
            o.push(if neg { -(v as f64) } else { v as f64 });
            end
        }
        Staged::Float64(o) => {
            let (f, e) = decimal_at(b, i)?;
            o.push(f);
            e
        }
        _ => return None,
    };
    matches!(b.get(end), Some(b',' | b' ')).then_some(end)
}

/// The decimal number at `b[i..]` (up to `,` or a space) and where it ends.
fn decimal_at(b: &[u8], i: usize) -> Option<(f64, usize)> {
    let rest = b.get(i..)?;
    let len = rest.iter().position(|&c| matches!(c, b',' | b' ' | b'\n' | b'\r' | b'\t' | b'\\'))?;
    if !matches!(rest.get(len), Some(b',' | b' ')) {
        return None;
    }
    Some((decimal(rest.get(..len)?)?, i + len))
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

/// Powers of ten up to 10^8.
const POW10: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

/// The decimal digits at `b[i..]`: their value and count, at least one and at most 19 (more
/// is `None`: the general path reads or refuses it). Read eight bytes at a time.
#[inline]
fn digit_run(b: &[u8], start: usize) -> Option<(u64, usize)> {
    let (mut v, mut i) = (0u64, start);
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().ok()?);
        let n = leading_digits(w);
        if i - start + n > 19 {
            return None;
        }
        v = v * POW10.get(n)? + word_digits(w, n);
        i += n;
        if n < 8 {
            return (i > start).then_some((v, i - start));
        }
    }
    // The body's last bytes, one at a time.
    while let Some(d) = b.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
        if i - start == 19 {
            return None;
        }
        v = v * 10 + u64::from(d);
        i += 1;
    }
    (i > start).then_some((v, i - start))
}

/// How many of the eight bytes of `w` (in memory order) are decimal digits before the first
/// one that is not.
#[inline]
fn leading_digits(w: u64) -> usize {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // A digit byte is 0x30..=0x39: its high nibble is 3, and still 3 after adding 6. (A byte
    // from 0xFA carries into the next one, after the first non-digit: no matter.)
    let not_digit = ((w & HIGH) ^ ZEROS) | ((w.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ ZEROS);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `n` bytes of `w` (in memory order), each a decimal digit.
#[inline]
fn word_digits(w: u64, n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    // The digits moved to the top, behind leading zeros, then combined in pairs, fours and
    // eights by multiplications (as simdjson parses eight digits).
    let v = (w & 0x0F0F_0F0F_0F0F_0F0F) << (8 * (8 - n));
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let (lo, hi) = (v & 0x0000_00FF_0000_00FF, (v >> 16) & 0x0000_00FF_0000_00FF);
    (lo.wrapping_mul(100 + (1_000_000 << 32)).wrapping_add(hi.wrapping_mul(1 + (10_000 << 32)))) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::ilp::{parse, Precision};
    use zepto_storage::{DataType, Value};

    const KEYS: [(&[u8], Kind); 3] = [(b"a", Kind::Int64), (b"bb", Kind::Float64), (b"c", Kind::Int32)];

    /// A field value as its column stores it.
    #[derive(Debug, Clone, Copy)]
    enum Cell {
        Int64(i64),
        Int32(i32),
        Float64(f64),
    }

    /// Equal as stored: doubles bit for bit (-0.0 is not 0.0).
    impl PartialEq for Cell {
        fn eq(&self, other: &Cell) -> bool {
            match (self, other) {
                (Cell::Int64(a), Cell::Int64(b)) => a == b,
                (Cell::Int32(a), Cell::Int32(b)) => a == b,
                (Cell::Float64(a), Cell::Float64(b)) => a.to_bits() == b.to_bits(),
                _ => false,
            }
        }
    }

    /// A shape of two tag columns (0 and 1), `KEYS` in columns 2, 3 and 4, the timestamp in 5.
    fn shape() -> Shape {
        let fields = KEYS.iter().enumerate().map(|(k, &(key, kind))| (key, k + 2, kind));
        Shape::new(&[0, 1], fields, 5).expect("a shape")
    }

    const TAGS: [(u32, u32); 2] = [(0, 7), (1, 9)];

    thread_local! {
        /// Lines staged by any shape on this thread (a test that needs the path taken checks
        /// that this grew).
        pub(super) static STAGED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The staged rows by column slot, drained.
    fn drained(s: &mut Shape) -> Vec<(usize, Vec<Cell>, Vec<u32>)> {
        let mut out = Vec::new();
        s.drain(|slot, v| {
            let (cells, codes) = match v {
                ValidRun::I64(x) => (x.iter().map(|&x| Cell::Int64(x)).collect(), vec![]),
                ValidRun::I32(x) => (x.iter().map(|&x| Cell::Int32(x)).collect(), vec![]),
                ValidRun::F32(_) => unreachable!("the fast path stages no REAL column"),
                ValidRun::F64(x) => (x.iter().map(|&x| Cell::Float64(x)).collect(), vec![]),
                ValidRun::Codes(c) => (vec![], c.to_vec()),
            };
            out.push((slot, cells, codes));
            Ok::<(), ()>(())
        })
        .expect("drained");
        out
    }

    /// The line read alone: its cells in key order and its timestamp; `None` (and nothing
    /// staged) when it is not of the shape.
    fn fast(line: &str) -> Option<(Vec<Cell>, i64)> {
        let mut s = shape();
        let Some(next) = s.read(line.as_bytes(), 0, 1, &TAGS) else {
            assert!(s.values.iter().all(|v| v.len() == 0), "{line}: a refused line staged values");
            return None;
        };
        assert_eq!(next, line.len(), "{line}");
        let cols = drained(&mut s);
        let slots: Vec<usize> = cols.iter().map(|c| c.0).collect();
        assert_eq!(slots, [0, 1, 2, 3, 4, 5]);
        assert_eq!((cols[0].2.clone(), cols[1].2.clone()), (vec![7], vec![9]));
        let Cell::Int64(timestamp) = cols[5].1[0] else { panic!("{line}: no timestamp") };
        Some((cols[2..5].iter().flat_map(|c| c.1.clone()).collect(), timestamp))
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
            // As the decoder's general path types a value into a column of the kind's type.
            let dt = match kind {
                Kind::Int64 => DataType::Int64,
                Kind::Int32 => DataType::Int32,
                Kind::Float64 => DataType::Float64,
            };
            cells.push(match crate::ingest::lines::convert(v, dt)? {
                Value::Int64(i) => Cell::Int64(i),
                Value::Int32(i) => Cell::Int32(i),
                Value::Float64(f) => Cell::Float64(f),
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

    /// Lines read one after another stage in order; a refused one stages nothing.
    #[test]
    fn rows_stage_in_order() {
        let mut s = shape();
        let body = b"a=1i,bb=2,c=3i 10\na=4i,bb=x,c=6i 11\na=7i,bb=8.5,c=9i 12\n";
        assert_eq!(s.read(body, 0, 1, &TAGS), Some(18));
        assert_eq!(s.read(body, 18, 1, &TAGS), None);
        assert_eq!(s.read(body, 36, 1, &TAGS), Some(body.len()));
        assert!(s.fits(&TAGS) && !s.fits(&TAGS[..1]) && !s.fits(&[(0, 7), (2, 9)]));
        let cols = drained(&mut s);
        assert_eq!(cols[2].1, [Cell::Int64(1), Cell::Int64(7)]);
        assert_eq!(cols[3].1, [Cell::Float64(2.0), Cell::Float64(8.5)]);
        assert_eq!(cols[5].1, [Cell::Int64(10), Cell::Int64(12)]);
        assert_eq!((s.rows(), drained(&mut s).len()), (0, 0), "a drain forgets the rows");
        assert!(Shape::new(&[2], KEYS.iter().map(|&(k, kind)| (k, 2, kind)), 5).is_none(), "one column twice");
        assert!(Shape::new(&[0], std::iter::empty(), 5).is_none(), "no field");
    }

    /// Eight digits at a time read what a digit at a time reads, at every length and
    /// alignment, up against the end of the bytes or followed by anything.
    #[test]
    fn digit_runs_agree_with_parse() {
        let mut rng = zepto_storage::rng::XorShift::new(3);
        for _ in 0..200_000 {
            let len = rng.index(24);
            let mut b: Vec<u8> = (0..rng.index(4)).map(|_| b'x').collect();
            let start = b.len();
            b.extend((0..len).map(|_| b'0' + rng.index(10) as u8));
            if rng.index(2) == 0 {
                b.push([b'i', b',', b' ', b'/', b':', 0xFF, b'.'][rng.index(7)]);
                b.extend((0..rng.index(10)).map(|_| b'0' + rng.index(10) as u8));
            }
            let text = std::str::from_utf8(&b[start..start + len]).unwrap_or_default();
            let want = (1..=19).contains(&len).then(|| (text.parse::<u64>().expect("digits"), len));
            assert_eq!(digit_run(&b, start), want, "{b:?}");
        }
        for w in [*b"12345678", *b"9\xFA\x300000\x00", *b"/0123456", *b":9999999"] {
            let want = w.iter().take_while(|c| c.is_ascii_digit()).count();
            assert_eq!(leading_digits(u64::from_le_bytes(w)), want, "{w:?}");
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
            "-0",
            "-0i",
            "-9223372036854775808i",
            "9223372036854775808i",
            "123456789012345",
            "-1234567890123456",
            "12345678901234567",
            "1234567890123456789",
            "12345678901234567890",
            "99999999999999999999i",
            "-2147483648i",
            "1E3",
        ];
        let mut rng = zepto_storage::rng::XorShift::new(7);
        let mut next = |n: usize| rng.index(n);
        let mut fast_read = 0;
        for _ in 0..50_000 {
            let v: Vec<&str> = (0..3).map(|_| pieces[next(pieces.len())]).collect();
            let ts = [
                "1",
                "-5",
                "x",
                "17 ",
                "1700000000000000000\r\n",
                "12345678901234567890",
                "-9223372036854775808",
                "5\t",
            ][next(8)];
            let line = format!("a={},bb={},c={} {ts}", v[0], v[1], v[2]);
            if let Some(f) = fast(&line) {
                assert_eq!(Some(f), general(&line), "{line}");
                fast_read += 1;
            }
        }
        // About 1% of the combinations are all valid.
        assert!(fast_read > 300, "{fast_read} lines read fast");
    }

    /// Lines of two tables over a dozen series, in the usual form mostly, with missing fields,
    /// another order, a string, escapes and no timestamp among them.
    fn mixed_lines(n: usize) -> Vec<String> {
        let mut rng = zepto_storage::rng::XorShift::new(11);
        let mut next = |n: u64| rng.below(n);
        let mut lines = vec!["m,host=h0 u=1i,f=0.5,c=1i 1".to_string(), "n,host=h0 u=1i,f=0.5,c=1i 1".to_string()];
        for _ in 0..n {
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
        lines
    }

    /// A body whose lines repeat their series (read by the fast path after each series' first
    /// line) lands as the same lines written one body each (each read the general way: the
    /// series cache lives for one body), with missing fields, another order, escapes and no
    /// timestamp among them.
    #[test]
    fn a_body_lands_as_its_lines_one_by_one() {
        use crate::auth::Principal;
        use crate::ingest::{write, IngestFormat, WriteRequest};
        let lines = mixed_lines(3000);
        let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: Precision::NANOS, now_ns: 42 };
        let who = Principal::anonymous_admin();
        let (whole, one_by_one, in_parts) =
            (zepto_sql::Engine::new(), zepto_sql::Engine::new(), zepto_sql::Engine::new());
        // Table m made first with an INTEGER column (ILP would make BIGINT): both kinds.
        for e in [&whole, &one_by_one, &in_parts] {
            e.execute("CREATE TABLE m (host SYMBOL, u BIGINT, f DOUBLE, c INTEGER, timestamp TIMESTAMP)")
                .expect("table m");
        }
        let staged = STAGED.with(|n| n.get());
        write(&whole, &who, &req, lines.join("\n").as_bytes()).expect("the body is stored");
        let staged = STAGED.with(|n| n.get()) - staged;
        assert!(staged > 500, "{staged} of {} lines staged", lines.len());
        for l in &lines {
            write(&one_by_one, &who, &req, l.as_bytes()).expect("the line is stored");
        }
        // In bodies of 500 lines: the later ones know their series from the catalog's memo.
        for part in lines.chunks(500) {
            write(&in_parts, &who, &req, part.join("\n").as_bytes()).expect("the part is stored");
        }
        // Scans in storage order: partitions, then time, ties in arrival order (a staged row
        // moved behind a later line of its table would show).
        for sql in ["SELECT * FROM m", "SELECT * FROM n", "DESCRIBE m", "DESCRIBE n"] {
            let rows = |e: &zepto_sql::Engine| {
                let b = e.execute(sql).expect(sql).into_batch();
                let cell = |i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("|");
                (0..b.rows).map(cell).collect::<Vec<_>>()
            };
            let a = rows(&whole);
            assert!(a.len() > 2, "{sql}: {a:?}");
            assert_eq!(a, rows(&one_by_one), "{sql}");
            assert_eq!(a, rows(&in_parts), "{sql}");
        }
    }
}
