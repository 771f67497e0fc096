//! CSV (RFC 4180) reading into typed columns and writing from them.
//!
//! Hand-written rather than the `csv` crate because SPEC §2 needs to know whether a field was
//! quoted (empty unquoted = NULL, `""` = empty string), which that crate does not expose.
//! A batch is all-or-nothing: the first bad row aborts the whole read with its 1-based number.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::format::csv_cell;
use crate::{Check, IoError, CHECK_EVERY};
use std::borrow::Cow;
use zepto_storage::{time, Column, ColumnBuilder, ColumnDef, DataType, Value};

/// How CSV text is laid out.
#[derive(Debug, Clone)]
pub struct CsvOptions {
    /// The first record names the columns (default true).
    pub header: bool,
    /// The field separator (default `,`).
    pub delimiter: u8,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions { header: true, delimiter: b',' }
    }
}

/// One field: its text and whether it was quoted.
#[derive(Debug, Clone, PartialEq)]
pub struct Field<'a> {
    /// The text, unquoted and unescaped: borrowed from the CSV text unless it had doubled
    /// quotes.
    pub text: Cow<'a, str>,
    /// Whether it was quoted (an empty quoted field is the empty string, not NULL).
    pub quoted: bool,
}

/// Records of CSV text: every field in one vector, and where each record ends (no vector per
/// record: a load of 10M lines allocated and freed 10M of them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Records<'a> {
    fields: Vec<Field<'a>>,
    /// Record `i` is `fields[ends[i - 1]..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
}

impl<'a> Records<'a> {
    /// How many records.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there is no record.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The fields of record `i` (empty past the last).
    pub fn get(&self, i: usize) -> &[Field<'a>] {
        let from = if i == 0 { 0 } else { self.ends.get(i - 1).copied().unwrap_or(usize::MAX) };
        let to = self.ends.get(i).copied().unwrap_or(0);
        self.fields.get(from..to).unwrap_or_default()
    }

    /// Every record, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[Field<'a>]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The first record taken out (the header), or `None` when there is none.
    pub(crate) fn take_first(&mut self) -> Option<Vec<Field<'a>>> {
        let first = *self.ends.first()?;
        let head = self.fields.drain(..first).collect();
        self.ends.remove(0);
        self.ends.iter_mut().for_each(|e| *e -= first);
        Some(head)
    }

    /// Only the first `n` records kept.
    pub(crate) fn truncate(&mut self, n: usize) {
        if let Some(&end) = n.checked_sub(1).and_then(|k| self.ends.get(k)) {
            self.fields.truncate(end);
        } else {
            self.fields.clear();
        }
        self.ends.truncate(n);
    }

    /// Add a field to the record being built.
    pub(crate) fn push(&mut self, f: Field<'a>) {
        self.fields.push(f);
    }

    /// End the record of the fields pushed since the last one, whatever they are.
    pub(crate) fn end_record_keeping_blank(&mut self) {
        self.ends.push(self.fields.len());
    }

    /// Call `f` with every field and its position in its record.
    pub(crate) fn for_each_field(&mut self, mut f: impl FnMut(usize, &mut Field<'a>)) {
        let mut from = 0;
        for &end in &self.ends {
            for (k, field) in self.fields.get_mut(from..end).unwrap_or_default().iter_mut().enumerate() {
                f(k, field);
            }
            from = end;
        }
    }

    /// End the record of the fields pushed since the last one, unless it is a blank line (one
    /// empty unquoted field), which is not a record.
    fn end_record(&mut self) {
        let from = self.ends.last().copied().unwrap_or(0);
        if let [only] = self.fields.get(from..).unwrap_or_default() {
            if only.text.is_empty() && !only.quoted {
                self.fields.truncate(from);
                return;
            }
        }
        self.ends.push(self.fields.len());
    }
}

/// Split CSV text into records. `\r\n` and `\n` end records outside quotes.
pub fn parse_records(data: &str, delim: u8) -> Result<Records<'_>, IoError> {
    parse_records_checked(data, delim, &crate::unchecked)
}

/// [`parse_records`], asking `check` every [`CHECK_EVERY`] records whether to go on.
pub fn parse_records_checked<'a>(data: &'a str, delim: u8, check: Check) -> Result<Records<'a>, IoError> {
    parse_chunk(data, delim, check, 1).map(|(recs, _)| recs)
}

/// The records of `data` (the whole text, or a piece of it starting at a record whose line
/// is `first_line`, 0 when not known; only the whole text's start, line 1, may hold a byte
/// order mark), and how many
/// there were before blank lines were dropped. Error rows count records from the piece's
/// start, blank ones and a header included.
pub(crate) fn parse_chunk<'a>(
    data: &'a str,
    delim: u8,
    check: Check,
    first_line: usize,
) -> Result<(Records<'a>, usize), IoError> {
    parse_records_keeping(data, delim, check, first_line, false)
}

/// [`parse_chunk`], keeping blank lines as records of one empty field when `keep_blank` (as
/// PostgreSQL's COPY reads them).
pub(crate) fn parse_records_keeping<'a>(
    data: &'a str,
    delim: u8,
    check: Check,
    first_line: usize,
    keep_blank: bool,
) -> Result<(Records<'a>, usize), IoError> {
    let b = data.as_bytes();
    let mut out = Records::default();
    let mut raw = 0;
    let mut i = 0;
    let mut line = first_line;
    if first_line == 1 && b.starts_with(&[0xEF, 0xBB, 0xBF]) {
        i = 3; // UTF-8 byte order mark
    }
    let at = |i: usize| b.get(i).copied();
    let mut open = false;
    while i < b.len() {
        open = true;
        let f = if at(i) == Some(b'"') {
            quoted_field(data, &mut i, &mut line, delim)
                .map_err(|(off, message)| IoError::BadRow { row: raw + off, message })?
        } else {
            // An unquoted field: to the next delimiter or line end.
            let start = i;
            i = memchr::memchr3(delim, b'\n', b'\r', b.get(i..).unwrap_or_default()).map_or(b.len(), |k| i + k);
            Field { text: Cow::Borrowed(data.get(start..i).unwrap_or_default()), quoted: false }
        };
        out.fields.push(f);
        if at(i) == Some(delim) {
            i += 1;
            if i == b.len() {
                out.fields.push(Field { text: Cow::Borrowed(""), quoted: false });
            }
            continue;
        }
        if at(i) == Some(b'\r') {
            i += 1;
        }
        if at(i) == Some(b'\n') {
            i += 1;
            line += 1;
        }
        end_record(&mut out, keep_blank);
        (raw, open) = (raw + 1, false);
        if raw % CHECK_EVERY == 0 {
            check().map_err(IoError::Stopped)?;
        }
    }
    if open {
        end_record(&mut out, keep_blank);
        raw += 1;
    }
    Ok((out, raw))
}

/// The quoted field starting at `*i` (its opening quote), `*i` moved past its closing quote
/// and `*line` past its line ends; its text borrowed from `data` unless it has doubled quotes.
/// An error is `(1, message)`: its record is the one after the records before it.
fn quoted_field<'a>(data: &'a str, i: &mut usize, line: &mut usize, delim: u8) -> Result<Field<'a>, (usize, String)> {
    let b = data.as_bytes();
    let at = |i: usize| b.get(i).copied();
    let start_line = *line;
    let start = *i + 1;
    let (mut j, mut doubled) = (start, false);
    let end = loop {
        let Some(c) = at(j) else {
            return Err((1, format!("unterminated quoted field starting on line {start_line}")));
        };
        if c == b'"' {
            if at(j + 1) != Some(b'"') {
                break j;
            }
            doubled = true;
            j += 1;
        } else if c == b'\n' {
            *line += 1;
        }
        j += 1;
    };
    *i = end + 1;
    if at(*i).is_some_and(|c| c != delim && c != b'\n' && c != b'\r') {
        return Err((1, "unexpected character after a closing quote".into()));
    }
    // Quotes are ASCII: `start..end` lies on character boundaries.
    let raw = data.get(start..end).unwrap_or_default();
    Ok(Field { text: if doubled { Cow::Owned(raw.replace("\"\"", "\"")) } else { Cow::Borrowed(raw) }, quoted: true })
}

fn end_record(out: &mut Records, keep_blank: bool) {
    if keep_blank {
        out.end_record_keeping_blank();
    } else {
        out.end_record();
    }
}

/// Parse one field as a value of `dt`. Empty unquoted → NULL.
pub fn parse_field(f: &Field, dt: DataType) -> Result<Value, String> {
    parse_field_with(f, dt, &mut time::DayCache::default())
}

/// A CSV boolean, in any case, without a lowercased copy per value.
fn parse_bool(t: &str) -> Option<bool> {
    let is = |words: &[&str]| words.iter().any(|w| t.eq_ignore_ascii_case(w));
    if is(&["true", "t", "1", "yes"]) {
        Some(true)
    } else if is(&["false", "f", "0", "no"]) {
        Some(false)
    } else {
        None
    }
}

/// [`parse_field`], a TIMESTAMP reusing the date of the column's last one (see
/// [`time::parse_timestamp_with`]).
fn parse_field_with(f: &Field, dt: DataType, days: &mut time::DayCache) -> Result<Value, String> {
    if f.text.is_empty() && !f.quoted {
        return Ok(Value::Null);
    }
    let t = f.text.trim();
    let bad = || format!("'{}' is not a valid {dt}", f.text);
    Ok(match dt {
        DataType::Varchar | DataType::Symbol => Value::Str(f.text.to_string()),
        _ if t.is_empty() => return Err(bad()),
        DataType::Bool => Value::Bool(parse_bool(t).ok_or_else(bad)?),
        DataType::Int32 => Value::Int32(t.parse().map_err(|_| bad())?),
        DataType::Int64 => Value::Int64(t.parse().map_err(|_| bad())?),
        DataType::Int128 => Value::Int128(t.parse().map_err(|_| bad())?),
        DataType::Float32 => Value::Float32(t.parse().map_err(|_| bad())?),
        DataType::Float64 => Value::Float64(t.parse().map_err(|_| bad())?),
        DataType::Timestamp => match time::parse_timestamp_with(t, days) {
            Some(v) => Value::Timestamp(v),
            None => Value::Timestamp(t.parse().map_err(|_| bad())?),
        },
        DataType::Date => Value::Date(time::parse_date(t).ok_or_else(bad)?),
        DataType::Interval => Value::Interval(time::parse_interval(t).ok_or_else(bad)?),
        DataType::Vector(d) => {
            Value::Vector(zepto_storage::vector::parse_vector(t, Some(d as usize)).map_err(|e| e.to_string())?)
        }
        DataType::Null => Value::Null,
    })
}

/// Read CSV text into columns in `schema` order. With a header, columns are matched by name
/// (missing ones read NULL, unknown ones are an error); without, by position.
pub fn read_csv(data: &str, schema: &[ColumnDef], opts: &CsvOptions) -> Result<Vec<Column>, IoError> {
    read_csv_checked(data, schema, opts, &crate::unchecked)
}

/// [`read_csv_checked`] of bytes that should be UTF-8 text (a file as read): each piece is
/// checked on the core that splits it, so a large file is not first validated on one thread.
/// Text that is not UTF-8 is [`IoError::NotUtf8`] at its first bad byte, unless a piece before
/// it has an error of its own.
pub fn read_csv_bytes_checked(
    data: &[u8],
    schema: &[ColumnDef],
    opts: &CsvOptions,
    check: Check,
) -> Result<Vec<Column>, IoError> {
    read_csv_pieces(data, schema, opts, check, PIECE_BYTES)
}

/// [`read_csv`], asking `check` every [`CHECK_EVERY`] records, while splitting them and while
/// building columns, whether to go on. Text of several pieces (4 MiB) is cut at record ends
/// into pieces that are split and built on every core; errors name the same row as one pass
/// would (the first bad row of the text).
pub fn read_csv_checked(
    data: &str,
    schema: &[ColumnDef],
    opts: &CsvOptions,
    check: Check,
) -> Result<Vec<Column>, IoError> {
    read_csv_pieces(data.as_bytes(), schema, opts, check, PIECE_BYTES)
}

/// [`read_csv_checked`] with the text cut into pieces of about `piece_bytes` (when it holds at
/// least two): the same answer whatever the size, which the tests and the fuzzer check.
///
/// The cuts are first guessed, a piece's length on at the next newline, and the pieces read
/// on every core. A guess inside a quoted field makes the piece before it fail (its last field
/// never closes), so when every piece reads, every cut was a record end. When any piece
/// fails, the text is cut again exactly, following the tokenizer from the start on one
/// thread, and read again: errors are only ever reported from exact cuts.
#[doc(hidden)]
pub fn read_csv_pieces(
    data: &[u8],
    schema: &[ColumnDef],
    opts: &CsvOptions,
    check: Check,
    piece_bytes: usize,
) -> Result<Vec<Column>, IoError> {
    let piece_bytes = piece_bytes.max(1);
    let guessed = guessed_pieces(data, piece_bytes);
    if guessed.len() > 1 {
        match read_cut(data, schema, opts, check, &guessed) {
            Err(e) if !matches!(e, IoError::Stopped(_)) => {}
            read => return read,
        }
    }
    read_cut(data, schema, opts, check, &pieces(data, opts.delimiter, piece_bytes))
}

/// A split error numbered by record (the header counted) numbered by data row.
fn data_row(e: IoError, opts: &CsvOptions) -> IoError {
    match e {
        IoError::BadRow { row, message } if opts.header => {
            IoError::BadRow { row: row.saturating_sub(1).max(1), message }
        }
        e => e,
    }
}

/// The text read as the pieces `pieces` (`(from, to, first line)`, cut at record ends).
fn read_cut(
    data: &[u8],
    schema: &[ColumnDef],
    opts: &CsvOptions,
    check: Check,
    pieces: &[(usize, usize, usize)],
) -> Result<Vec<Column>, IoError> {
    let split = |&(from, to, line): &(usize, usize, usize)| -> Result<(Records, usize), IoError> {
        let bytes = data.get(from..to).ok_or_else(|| IoError::Invalid("a CSV piece outside the text".into()))?;
        let text = std::str::from_utf8(bytes).map_err(|e| IoError::NotUtf8 { offset: from + e.valid_up_to() })?;
        parse_chunk(text, opts.delimiter, check, line)
    };
    // The header is the text's first record: split pieces here until one has a record.
    let mut items: Vec<Item> = Vec::with_capacity(pieces.len());
    let mut mapping: Vec<Option<usize>> = (0..schema.len()).map(Some).collect();
    let mut rest = pieces.iter();
    let mut raw_before = 0;
    if opts.header {
        for p in rest.by_ref() {
            let (mut recs, raw) = split(p).map_err(|e| data_row(shifted(e, raw_before), opts))?;
            raw_before += raw;
            let head = recs.take_first();
            items.push(Item::Split(recs, raw));
            if let Some(head) = head {
                mapping = match header_mapping(&head, schema) {
                    Ok(m) => m,
                    // As one pass would: a record that does not split, anywhere, comes first.
                    Err(e) => {
                        return Err(first_unsplit(rest, split, raw_before).map(|e| data_row(e, opts)).unwrap_or(e))
                    }
                };
                break;
            }
        }
    }
    items.extend(rest.map(|&p| Item::Text(p)));
    let width = if opts.header { mapping.iter().flatten().count() } else { schema.len() };
    // Each piece is split and built on its own, on every core, so that only the pieces being
    // worked on are held as fields. Every piece runs, and errors are numbered after.
    let one = |item: &Item| -> Result<Built, IoError> {
        let (recs, raw) = match item {
            Item::Split(recs, raw) => (std::borrow::Cow::Borrowed(recs), *raw),
            Item::Text(p) => match split(p) {
                Ok((recs, raw)) => (std::borrow::Cow::Owned(recs), raw),
                Err(e) => return Ok(Err((e, Rows::Raw))),
            },
        };
        let built = build_columns(&recs, 0, schema, &mapping, width, check);
        Ok(built.map(|cols| (cols, raw, recs.len())).map_err(|e| (e, Rows::Data(raw))))
    };
    // As one pass would: the first record that does not split, else the first that does not
    // build, each numbered from the text's start.
    let (mut parts, mut unbuilt) = (Vec::with_capacity(items.len()), None);
    let (mut raw_at, mut data_at) = (0, 0);
    for r in zepto_storage::par::try_map(&items, one)? {
        match r {
            Ok((cols, raw, rows)) => {
                (raw_at, data_at) = (raw_at + raw, data_at + rows);
                parts.push(cols);
            }
            Err((e, Rows::Raw)) => return Err(data_row(shifted(e, raw_at), opts)),
            Err((e, Rows::Data(raw))) => {
                unbuilt = unbuilt.or(Some(shifted(e, data_at)));
                raw_at += raw;
            }
        }
    }
    if let Some(e) = unbuilt {
        return Err(e);
    }
    if parts.len() == 1 {
        return Ok(parts.remove(0));
    }
    // The pieces' columns joined a column per core.
    let columns: Vec<usize> = (0..schema.len()).collect();
    zepto_storage::par::try_map(&columns, |&j| {
        Ok(Column::concat(&parts.iter().filter_map(|cols| cols.get(j)).collect::<Vec<_>>()))
    })
}

/// The first error of `pieces` that do not split into records, numbered from the text's start
/// (`before` records precede them).
fn first_unsplit<'p, 'a>(
    pieces: impl Iterator<Item = &'p (usize, usize, usize)>,
    split: impl Fn(&(usize, usize, usize)) -> Result<(Records<'a>, usize), IoError>,
    mut before: usize,
) -> Option<IoError> {
    for p in pieces {
        match split(p) {
            Ok((_, raw)) => before += raw,
            Err(e) => return Some(shifted(e, before)),
        }
    }
    None
}

/// A piece of CSV text to read: already split into records (the ones up to the header, with
/// how many records they had before blank lines were dropped), or `(from, to, first line)`.
enum Item<'a> {
    Split(Records<'a>, usize),
    Text((usize, usize, usize)),
}

/// A piece's columns, its records before blank lines were dropped and its data rows; or its
/// first error, its row counted from the piece's start.
type Built = Result<(Vec<Column>, usize, usize), (IoError, Rows)>;

/// How a piece's error counts its row.
enum Rows {
    /// In records, blank ones and a header included (the piece did not split).
    Raw,
    /// In data rows (the piece split into this many records, and one did not build).
    Data(usize),
}

/// Text at least twice this long is cut into pieces of about this size.
const PIECE_BYTES: usize = 4 << 20;

/// `(from, to, first line)` of pieces of about `piece_bytes`, each cut after the first newline
/// a piece's length on, as if no quoted field held it. Their first lines are not known: 0
/// (which also tells [`parse_chunk`] that the piece is not the text's start).
fn guessed_pieces(b: &[u8], piece_bytes: usize) -> Vec<(usize, usize, usize)> {
    if b.len() < piece_bytes.saturating_mul(2) {
        return vec![(0, b.len(), 1)];
    }
    let (mut out, mut start) = (Vec::new(), 0);
    while let Some(k) = b.get(start + piece_bytes..).and_then(|rest| memchr::memchr(b'\n', rest)) {
        let end = start + piece_bytes + k + 1;
        out.push((start, end, usize::from(start == 0)));
        start = end;
    }
    if start < b.len() {
        out.push((start, b.len(), usize::from(start == 0)));
    }
    out
}

/// `(from, to, first line)` of pieces of `data` that start and end at record boundaries: cut
/// after newlines outside quoted fields, found by following the tokenizer's states. Outside
/// quotes it jumps from quote to newline with `memchr` (one thread reads the whole text here,
/// so a byte-at-a-time loop was a fifth of a load); a quote opens a field only at its start,
/// which is the text's start or just after a delimiter or line end read outside quotes. Past a
/// malformed field the cuts may differ from what the tokenizer sees, but only after the error
/// the piece holding it reports first.
fn pieces(b: &[u8], delim: u8, piece_bytes: usize) -> Vec<(usize, usize, usize)> {
    if b.len() < piece_bytes.saturating_mul(2) {
        return vec![(0, b.len(), 1)];
    }
    let mut out = Vec::new();
    let bom = if b.starts_with(&[0xEF, 0xBB, 0xBF]) { 3 } else { 0 };
    let (mut start, mut start_line, mut line) = (0, 1, 1);
    let mut i = bom;
    while let Some(k) = memchr::memchr2(b'"', b'\n', b.get(i..).unwrap_or_default()) {
        let at = i + k;
        i = at + 1;
        if b.get(at) == Some(&b'\n') {
            line += 1;
            if i - start >= piece_bytes {
                out.push((start, i, start_line));
                (start, start_line) = (i, line);
            }
            continue;
        }
        let field_start = at == bom || b.get(at - 1).is_some_and(|&c| c == delim || c == b'\r' || c == b'\n');
        if field_start {
            // A quoted field: to its closing quote (a doubled quote is text), counting lines.
            loop {
                let rest = b.get(i..).unwrap_or_default();
                let Some(q) = memchr::memchr(b'"', rest) else {
                    line += memchr::memchr_iter(b'\n', rest).count();
                    i = b.len();
                    break;
                };
                line += memchr::memchr_iter(b'\n', rest.get(..q).unwrap_or_default()).count();
                i += q + 1;
                if b.get(i) != Some(&b'"') {
                    break;
                }
                i += 1;
            }
        }
    }
    if start < b.len() {
        out.push((start, b.len(), start_line));
    }
    out
}

/// `e` from a piece, its row counted from the text's start (`before` records precede it).
pub(crate) fn shifted(e: IoError, before: usize) -> IoError {
    match e {
        IoError::BadRow { row, message } => IoError::BadRow { row: row + before, message },
        IoError::BadValue { row, column, message } => IoError::BadValue { row: row + before, column, message },
        e => e,
    }
}

/// Which field of a record feeds each schema column, from the header `head` (columns matched
/// by name; missing ones read NULL, unknown ones are an error).
fn header_mapping(head: &[Field], schema: &[ColumnDef]) -> Result<Vec<Option<usize>>, IoError> {
    let mut m = vec![None; schema.len()];
    for (k, h) in head.iter().enumerate() {
        let name = h.text.trim();
        let i = schema
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| IoError::Invalid(format!("CSV header names unknown column '{name}'")))?;
        match m.get_mut(i) {
            Some(Some(_)) => return Err(IoError::Invalid(format!("CSV header names column '{name}' twice"))),
            Some(slot) => *slot = Some(k),
            None => return Err(IoError::Invalid(format!("CSV column {i} is outside the schema"))),
        }
    }
    Ok(m)
}

/// The columns of data records `recs` (the first is data row `row0 + 1`, 1-based), each
/// record `width` fields wide.
pub(crate) fn build_columns(
    recs: &Records,
    row0: usize,
    schema: &[ColumnDef],
    mapping: &[Option<usize>],
    width: usize,
    check: Check,
) -> Result<Vec<Column>, IoError> {
    let mut builders: Vec<ColumnBuilder> = schema.iter().map(|c| ColumnBuilder::new(c.data_type, recs.len())).collect();
    let mut days = vec![time::DayCache::default(); schema.len()];
    for (r, rec) in recs.iter().enumerate() {
        if r % CHECK_EVERY == CHECK_EVERY - 1 {
            check().map_err(IoError::Stopped)?;
        }
        let row = row0 + r + 1;
        if rec.len() != width {
            return Err(IoError::BadRow { row, message: format!("expected {width} fields, found {}", rec.len()) });
        }
        for (((col, source), builder), days) in schema.iter().zip(mapping).zip(builders.iter_mut()).zip(&mut days) {
            match source.and_then(|k| rec.get(k)) {
                None => builder.push_null(),
                // Text goes in as it is, without a `Value` of its own (as `parse_field` reads it).
                Some(f) if matches!(col.data_type, DataType::Varchar | DataType::Symbol) => {
                    if f.text.is_empty() && !f.quoted {
                        builder.push_null();
                    } else {
                        builder.push_str(&f.text)?;
                    }
                }
                Some(field) => {
                    let v = parse_field_with(field, col.data_type, days).map_err(|message| IoError::BadValue {
                        row,
                        column: col.name.clone(),
                        message,
                    })?;
                    builder.push_value(&v)?;
                }
            }
        }
    }
    Ok(builders.into_iter().map(ColumnBuilder::finish).collect())
}

/// Write a header row and the rows of `cols` as CSV.
pub fn write_csv(names: &[String], cols: &[&Column], rows: usize, out: &mut String) {
    for (j, n) in names.iter().enumerate() {
        if j > 0 {
            out.push(',');
        }
        crate::format::csv_escape(n, out);
    }
    out.push('\n');
    for i in 0..rows {
        for (j, c) in cols.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            csv_cell(c, i, out);
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs() -> Vec<ColumnDef> {
        vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "s".into(), data_type: DataType::Varchar },
            ColumnDef { name: "n".into(), data_type: DataType::Int64 },
        ]
    }

    #[test]
    fn null_vs_empty_and_quotes() {
        let cols =
            read_csv("ts,s,n\n2024-01-02 09:30:00,\"a,\"\"b\"\"\",1\n5,,\n6,\"\",7\n", &defs(), &CsvOptions::default())
                .expect("reads");
        assert_eq!(cols[1].get(0), Value::Str("a,\"b\"".into()));
        assert_eq!(cols[1].get(1), Value::Null);
        assert_eq!(cols[1].get(2), Value::Str(String::new()));
        assert_eq!(cols[2].get(1), Value::Null);
        assert_eq!(cols[0].get(1), Value::Timestamp(5));
        let mut out = String::new();
        write_csv(&["ts".into(), "s".into(), "n".into()], &cols.iter().collect::<Vec<_>>(), 3, &mut out);
        let back = read_csv(&out, &defs(), &CsvOptions::default()).expect("round trip");
        for j in 0..3 {
            for i in 0..3 {
                assert_eq!(back[j].get(i), cols[j].get(i));
            }
        }
    }

    #[test]
    fn errors_name_the_row() {
        let e = read_csv("ts,s,n\n1,a,2\n2,b,x\n", &defs(), &CsvOptions::default()).expect_err("bad");
        assert_eq!(e.row(), Some(2));
        let e = read_csv("ts,s,n\n1,a\n", &defs(), &CsvOptions::default()).expect_err("short");
        assert_eq!(e.row(), Some(1));
        assert!(read_csv("ts,s,n\n1,\"open,2\n", &defs(), &CsvOptions::default()).is_err());
    }

    /// A random CSV text: quoted fields with delimiters, doubled quotes and newlines, quotes
    /// inside unquoted fields, `\r\n` and lone `\r` line ends, blank lines, a byte order
    /// mark, and now and then a malformed record.
    fn random_csv(rnd: &mut impl FnMut(u64) -> u64) -> String {
        let mut out = String::new();
        if rnd(4) == 0 {
            out.push('\u{feff}');
        }
        // Now and then a header naming an unknown column.
        out.push_str(if rnd(8) == 0 { "ts,bogus,n\n" } else { "ts,s,n\n" });
        let records = rnd(60);
        // Half the texts have a malformed record or two (which one a read reports depends on
        // their kinds: one that does not split beats one that does not build).
        let bad_at = [(rnd(2) == 0).then(|| rnd(records.max(1))), (rnd(4) == 0).then(|| rnd(records.max(1)))];
        for r in 0..records {
            let ts = if rnd(12) == 0 { String::new() } else { rnd(1000).to_string() };
            let s = match rnd(6) {
                0 => String::new(),
                1 => "\"\"".to_string(),
                2 => "\"a,\"\"b\"\"\nc\"".to_string(),
                3 => "q\"uote".to_string(),
                _ => format!("v{}", rnd(50)),
            };
            let mut fields = [ts, s, rnd(100).to_string()];
            if bad_at.contains(&Some(r)) {
                match rnd(4) {
                    0 => fields[0] = "x".into(),
                    1 => fields[1] = "\"open".into(),
                    2 => fields[1] = "\"x\"y".into(),
                    _ => fields[2] = "1,2".into(),
                }
            }
            out.push_str(&fields.join(","));
            out.push_str(["\n", "\r\n", "\n\n", "\r", "\n"][rnd(5) as usize]);
        }
        out
    }

    #[test]
    fn a_cut_guessed_inside_a_quoted_field_is_cut_again_exactly() {
        // Every third record's text holds newlines: guesses land inside it.
        let mut text = String::from("ts,s,n\n");
        for i in 0..300 {
            let s = if i % 3 == 0 { format!("\"line one\nline two, {i}\nthree\"") } else { format!("v{i}") };
            text.push_str(&format!("{i},{s},{}\n", i * 2));
        }
        let guessed = guessed_pieces(text.as_bytes(), 16);
        let exact = pieces(text.as_bytes(), b',', 16);
        assert_ne!(guessed, exact, "some guess fell inside a quoted field");
        let opts = CsvOptions::default();
        let whole = read_csv_pieces(text.as_bytes(), &defs(), &opts, &crate::unchecked, usize::MAX).expect("whole");
        let cut = read_csv_pieces(text.as_bytes(), &defs(), &opts, &crate::unchecked, 16).expect("in pieces");
        assert_eq!(whole[1].len(), 300);
        for (a, b) in whole.iter().zip(&cut) {
            assert!((0..300).all(|i| a.get(i) == b.get(i)));
        }
        assert_eq!(cut[1].get(3), Value::Str("line one\nline two, 3\nthree".into()));
    }

    #[test]
    fn pieces_read_as_the_whole_text_does() {
        let mut r = zepto_storage::rng::XorShift::new(0x9e37_79b9_7f4a_7c15u64);
        let mut rnd = move |n: u64| r.below(n);
        let (mut ok, mut bad) = (0, 0);
        for round in 0..400 {
            let text = random_csv(&mut rnd);
            let opts = CsvOptions { header: rnd(3) != 0, delimiter: b',' };
            let whole = read_csv_pieces(text.as_bytes(), &defs(), &opts, &crate::unchecked, usize::MAX);
            for piece in [1, 7, 32] {
                let cut = read_csv_pieces(text.as_bytes(), &defs(), &opts, &crate::unchecked, piece);
                match (&whole, &cut) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.len(), b.len());
                        for (ca, cb) in a.iter().zip(b) {
                            assert_eq!(ca.len(), cb.len(), "round {round}, pieces of {piece}: {text:?}");
                            assert!((0..ca.len()).all(|i| ca.get(i) == cb.get(i)), "round {round}: {text:?}");
                        }
                    }
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "round {round}: {text:?}"),
                    _ => panic!("round {round}, pieces of {piece}: {whole:?} vs {cut:?} for {text:?}"),
                }
            }
            if whole.is_ok() {
                ok += 1;
            } else {
                bad += 1;
            }
        }
        // Both outcomes were exercised.
        assert!(ok > 50 && bad > 50, "{ok} good texts, {bad} bad");
    }
}
