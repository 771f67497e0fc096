//! PostgreSQL's COPY formats, text and CSV, both ways: [`CopyOptions`] read from a COPY
//! statement's options, [`CopyReader`] turning a stream of bytes (a client's `COPY FROM
//! STDIN`) into typed columns as it arrives, and [`CopyOptions::push_field`] writing the
//! rows of `COPY TO STDOUT`.
//!
//! - **text**: fields split by a delimiter (tab), `\N` for NULL, backslash escapes (`\t`,
//!   `\n`, `\\`, octal `\123`, hex `\x41`, `\` before any other byte is that byte), a line
//!   `\.` ends the data.
//! - **CSV**: RFC 4180 as [`crate::csv`] reads it; a NULL is an unquoted field equal to the
//!   NULL string (empty by default), so `""` is the empty string.
//!
//! The reader keeps only the bytes of the record it has not seen end; whole records are
//! decoded a piece at a time (4 MiB) into columns, so a load holds its decoded rows and one
//! piece of text, never the whole text. A bad record stops the read with its line (the header
//! counts as line 1) and column: the caller applies nothing.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::csv::{build_columns, parse_records_keeping, shifted, Field, Records};
use crate::{Check, IoError};
use std::borrow::Cow;
use zepto_storage::{Column, ColumnBuilder, ColumnDef};

/// The text a reader decodes at a time.
const PIECE_BYTES: usize = 4 << 20;

/// The two formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    /// PostgreSQL's text format (the default).
    Text,
    /// CSV.
    Csv,
}

/// Whether the data starts with a header line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// No header.
    None,
    /// A header, skipped on the way in, written on the way out.
    Skip,
    /// A header whose names must be the columns' (`HEADER MATCH`).
    Match,
}

/// A COPY's format and its options.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyOptions {
    format: CopyFormat,
    delimiter: u8,
    null: String,
    header: Header,
    /// Columns (by position) whose values are quoted on the way out whatever they hold.
    force_quote: Vec<bool>,
    /// Columns whose unquoted NULL string reads as itself, not NULL.
    force_not_null: Vec<bool>,
    /// Columns whose quoted NULL string reads as NULL too.
    force_null: Vec<bool>,
}

impl CopyOptions {
    /// The options of a COPY of `columns` (names in order), from its `(key, value)` pairs
    /// (keys in lower case, as the parser gives them). Anything unknown or unsupported is an
    /// error naming it.
    pub fn new(options: &[(String, String)], columns: &[String]) -> Result<CopyOptions, String> {
        let format = match options.iter().rev().find(|(k, _)| k == "format").map(|(_, v)| v.to_ascii_lowercase()) {
            None => CopyFormat::Text,
            Some(f) if f == "text" => CopyFormat::Text,
            Some(f) if f == "csv" => CopyFormat::Csv,
            Some(f) if f == "binary" => return Err("COPY FORMAT binary is not supported: use text or csv".into()),
            Some(f) => return Err(format!("COPY format '{f}' is not known: use text or csv")),
        };
        let csv = format == CopyFormat::Csv;
        let mut o = CopyOptions {
            format,
            delimiter: if csv { b',' } else { b'\t' },
            null: if csv { String::new() } else { "\\N".into() },
            header: Header::None,
            force_quote: vec![false; columns.len()],
            force_not_null: vec![false; columns.len()],
            force_null: vec![false; columns.len()],
        };
        for (k, v) in options {
            o.set(k, v, columns)?;
        }
        o.check()?;
        Ok(o)
    }

    /// Apply option `k` = `v`.
    fn set(&mut self, k: &str, v: &str, columns: &[String]) -> Result<(), String> {
        let csv_only = |what: &str| format!("COPY {what} is available only in CSV mode");
        match k {
            "format" => {}
            "delimiter" | "delim" => self.delimiter = one_byte("DELIMITER", v)?,
            "null" => self.null = v.to_string(),
            "header" => self.header = header(v)?,
            "quote" | "escape" if self.format != CopyFormat::Csv => return Err(csv_only(&k.to_ascii_uppercase())),
            "quote" | "escape" if v != "\"" => {
                return Err(format!("COPY {} other than '\"' is not supported", k.to_ascii_uppercase()))
            }
            "quote" | "escape" => {}
            "encoding" if matches!(v.to_ascii_lowercase().as_str(), "utf8" | "utf-8" | "unicode") => {}
            "encoding" => return Err(format!("COPY ENCODING '{v}' is not supported: data is UTF-8")),
            "force_quote" | "force_not_null" | "force_null" if self.format != CopyFormat::Csv => {
                return Err(csv_only(&k.to_ascii_uppercase()))
            }
            "force_quote" => self.force_quote = pick(v, columns)?,
            "force_not_null" => self.force_not_null = pick(v, columns)?,
            "force_null" => self.force_null = pick(v, columns)?,
            other => return Err(format!("COPY option '{other}' is not known")),
        }
        Ok(())
    }

    /// The checks PostgreSQL makes of the options together.
    fn check(&self) -> Result<(), String> {
        let d = self.delimiter;
        // In text, a backslash, a period, a letter or a digit would read as part of an escape.
        let escape_like = d == b'\\' || d == b'.' || d.is_ascii_lowercase() || d.is_ascii_digit();
        if matches!(d, b'\n' | b'\r') || (self.format == CopyFormat::Text && escape_like) {
            return Err(format!("COPY delimiter cannot be {:?}", char::from(d)));
        }
        if self.format == CopyFormat::Csv && d == b'"' {
            return Err("COPY delimiter and quote must be different".into());
        }
        if self.null.contains(['\n', '\r']) || self.null.as_bytes().contains(&d) {
            return Err("COPY NULL cannot hold a line break or the delimiter".into());
        }
        Ok(())
    }

    /// The format.
    pub fn format(&self) -> CopyFormat {
        self.format
    }

    /// Whether the data has a header line.
    pub fn header(&self) -> bool {
        self.header != Header::None
    }

    /// Append field `column` of a row to `out`: `value` is its text (`None`: NULL), escaped
    /// or quoted as the format needs, after a delimiter unless it is the first.
    pub fn push_field(&self, value: Option<&[u8]>, column: usize, out: &mut Vec<u8>) {
        if column > 0 {
            out.push(self.delimiter);
        }
        let Some(v) = value else {
            return out.extend_from_slice(self.null.as_bytes());
        };
        match self.format {
            CopyFormat::Text => self.push_text(v, out),
            CopyFormat::Csv => self.push_csv(v, self.force_quote.get(column).copied().unwrap_or(false), out),
        }
    }

    /// End a row.
    pub fn end_row(&self, out: &mut Vec<u8>) {
        out.push(b'\n');
    }

    /// The header line of `names`.
    pub fn push_header(&self, names: &[String], out: &mut Vec<u8>) {
        for (i, n) in names.iter().enumerate() {
            self.push_field(Some(n.as_bytes()), i, out);
        }
        self.end_row(out);
    }

    fn push_text(&self, v: &[u8], out: &mut Vec<u8>) {
        for &b in v {
            let escaped = match b {
                b'\\' => b'\\',
                b'\n' => b'n',
                b'\r' => b'r',
                b'\t' => b't',
                0x08 => b'b',
                0x0c => b'f',
                0x0b => b'v',
                d if d == self.delimiter => d,
                _ => {
                    out.push(b);
                    continue;
                }
            };
            out.extend_from_slice(&[b'\\', escaped]);
        }
    }

    fn push_csv(&self, v: &[u8], force: bool, out: &mut Vec<u8>) {
        let special = |b: &u8| matches!(b, b'"' | b'\n' | b'\r') || *b == self.delimiter;
        let quote = force || v == self.null.as_bytes() || v == b"\\." || v.iter().any(special);
        if !quote {
            return out.extend_from_slice(v);
        }
        out.push(b'"');
        for &b in v {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    }
}

fn one_byte(what: &str, v: &str) -> Result<u8, String> {
    match v.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ => Err(format!("COPY {what} must be a single one-byte character, not '{v}'")),
    }
}

fn header(v: &str) -> Result<Header, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" => Ok(Header::Skip),
        "false" | "off" | "0" => Ok(Header::None),
        "match" => Ok(Header::Match),
        _ => Err(format!("COPY HEADER takes a Boolean value or MATCH, not '{v}'")),
    }
}

/// Which of `columns` a `FORCE_*` option names (`*` is all of them).
fn pick(v: &str, columns: &[String]) -> Result<Vec<bool>, String> {
    if v == "*" {
        return Ok(vec![true; columns.len()]);
    }
    let mut out = vec![false; columns.len()];
    for name in v.split(',').map(str::trim) {
        let i = columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
            .ok_or_else(|| format!("COPY FORCE column '{name}' is not one of the columns copied"))?;
        if let Some(slot) = out.get_mut(i) {
            *slot = true;
        }
    }
    Ok(out)
}

/// The rows of a `COPY FROM` as bytes arrive: [`CopyReader::feed`] them in any pieces, then
/// [`CopyReader::finish`] for the columns.
pub struct CopyReader {
    opts: CopyOptions,
    schema: Vec<ColumnDef>,
    columns: Vec<ColumnBuilder>,
    /// Bytes not decoded yet: whole records up to `cut`, then the start of one not yet ended.
    pending: Vec<u8>,
    /// How far `pending` has been looked through for record ends, and the state there.
    scanned: usize,
    splitter: Splitter,
    cut: usize,
    /// Lines (records) read so far, the header included, and the line ends among them (more,
    /// when CSV fields hold line breaks).
    lines: usize,
    newlines: usize,
    rows: usize,
    held: usize,
    header_left: bool,
    /// A line `\.` was read: what follows is ignored.
    ended: bool,
    /// Decode once this many bytes of whole records have arrived.
    piece_bytes: usize,
    /// The stream's first bytes were looked at (for a byte order mark).
    started: bool,
}

impl CopyReader {
    /// A reader of rows of `schema` (the columns the data holds, in order) in `opts`.
    pub fn new(opts: CopyOptions, schema: Vec<ColumnDef>) -> CopyReader {
        let columns = schema.iter().map(|c| ColumnBuilder::new(c.data_type, 0)).collect();
        let header_left = opts.header();
        let splitter = Splitter::new(&opts);
        CopyReader {
            opts,
            schema,
            columns,
            pending: Vec::new(),
            scanned: 0,
            splitter,
            cut: 0,
            lines: 0,
            newlines: 0,
            rows: 0,
            held: 0,
            header_left,
            ended: false,
            piece_bytes: PIECE_BYTES,
            started: false,
        }
    }

    /// The reader decoding pieces of about `bytes` (tests cut small pieces).
    #[doc(hidden)]
    pub fn with_piece_bytes(mut self, bytes: usize) -> CopyReader {
        self.piece_bytes = bytes.max(1);
        self
    }

    /// Bytes held: the values decoded so far and the text not decoded yet.
    pub fn held(&self) -> usize {
        self.held + self.pending.len()
    }

    /// Rows decoded so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Take `data`, the next bytes of the stream, decoding whole records once a piece's worth
    /// has arrived (asking `check` whether to go on as it decodes).
    pub fn feed(&mut self, data: &[u8], check: Check) -> Result<(), IoError> {
        if self.ended {
            return Ok(());
        }
        self.pending.extend_from_slice(data);
        if !self.started {
            // A UTF-8 byte order mark at the stream's start is not data (the splitter and the
            // reader must agree on where the first field starts).
            const BOM: &[u8] = &[0xEF, 0xBB, 0xBF];
            if self.pending.len() < BOM.len() && BOM.starts_with(&self.pending) {
                return Ok(());
            }
            if self.pending.starts_with(BOM) {
                self.pending.drain(..BOM.len());
            }
            self.started = true;
        }
        self.scan();
        if self.cut >= self.piece_bytes {
            self.decode_cut(check)?;
        }
        Ok(())
    }

    /// The columns of every row read, once the stream has ended.
    pub fn finish(mut self, check: Check) -> Result<Vec<Column>, IoError> {
        if !self.ended && !self.pending.is_empty() {
            self.cut = self.pending.len();
            self.decode_cut(check)?;
        }
        Ok(self.columns.into_iter().map(ColumnBuilder::finish).collect())
    }

    /// Move `cut` past every record end in the bytes not yet looked through.
    fn scan(&mut self) {
        let mut cut = self.cut;
        self.scanned = self.splitter.ends(&self.pending, self.scanned, |end| cut = end);
        self.cut = cut;
    }

    /// Decode the whole records before `cut` and drop their text.
    fn decode_cut(&mut self, check: Check) -> Result<(), IoError> {
        let piece: Vec<u8> = self.pending.drain(..self.cut).collect();
        self.scanned = self.scanned.saturating_sub(self.cut);
        self.cut = 0;
        match std::str::from_utf8(&piece) {
            Ok(text) => self.decode(text, check),
            Err(e) => {
                // The records before the one holding the bad byte first: an error in them
                // comes first, wherever the stream was cut.
                let valid = piece.get(..e.valid_up_to()).unwrap_or_default();
                let end = record_ends(valid, &self.opts).last().copied().unwrap_or(0);
                let before = std::str::from_utf8(valid.get(..end).unwrap_or_default()).unwrap_or_default();
                self.decode(before, check)?;
                if self.ended {
                    return Ok(()); // past the end marker: not data
                }
                Err(IoError::BadRow { row: self.lines + 1, message: "invalid byte sequence for encoding UTF8".into() })
            }
        }
    }

    /// Decode `text`, whole records.
    fn decode(&mut self, text: &str, check: Check) -> Result<(), IoError> {
        if text.is_empty() || self.ended {
            return Ok(());
        }
        let parsed = match self.opts.format {
            CopyFormat::Csv => self.csv_records(text, check),
            CopyFormat::Text => self.text_records(text),
        };
        let (mut recs, lines) = match parsed {
            Ok(r) => r,
            Err((e, start)) => {
                // The records before the bad one first: an error in them comes first, wherever
                // the stream was cut.
                if let Some(before) = text.get(..start).filter(|b| b.len() < text.len()) {
                    self.decode(before, check)?;
                    if self.ended {
                        return Ok(()); // past the end marker: not data
                    }
                }
                return Err(e);
            }
        };
        let first_line = self.lines;
        self.lines += lines;
        self.newlines += memchr::memchr_iter(b'\n', text.as_bytes()).count();
        if self.header_left {
            self.header_left = false;
            let head = recs.take_first().unwrap_or_default();
            self.check_header(&head)?;
        }
        if self.opts.format == CopyFormat::Csv {
            self.csv_end_marker(&mut recs);
            self.csv_nulls(&mut recs);
        }
        let skipped = usize::from(self.opts.header() && first_line == 0);
        let width = self.schema.len();
        let mapping: Vec<Option<usize>> = (0..width).map(Some).collect();
        let cols = build_columns(&recs, first_line + skipped, &self.schema, &mapping, width, check)?;
        for (b, c) in self.columns.iter_mut().zip(&cols) {
            self.held += c.data_bytes();
            b.extend_from(c);
        }
        self.rows += recs.len();
        Ok(())
    }

    /// The records of CSV `text` (whole records) and how many lines they took; or the first
    /// error and where its record starts.
    fn csv_records<'a>(&self, text: &'a str, check: Check) -> Result<(Records<'a>, usize), (IoError, usize)> {
        // Its rows number the records of `text` from 1.
        parse_records_keeping(text, self.opts.delimiter, check, self.newlines + 1, true).map_err(|e| {
            let e = shifted(e, self.lines);
            let before = match &e {
                IoError::BadRow { row, .. } | IoError::BadValue { row, .. } => row.saturating_sub(self.lines + 1),
                _ => 0,
            };
            let ends = record_ends(text.as_bytes(), &self.opts);
            let start = before.checked_sub(1).and_then(|k| ends.get(k)).copied().unwrap_or(0);
            (e, start)
        })
    }

    /// The records of text-format `text` (whole lines) and how many lines they took; or the
    /// first error and where its line starts.
    fn text_records<'a>(&mut self, text: &'a str) -> Result<(Records<'a>, usize), (IoError, usize)> {
        let mut recs = Records::default();
        let mut lines = 0;
        let mut start = 0;
        let body = text.strip_suffix('\n').unwrap_or(text);
        for raw in body.split('\n') {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            lines += 1;
            if line == "\\." {
                self.ended = true;
                break;
            }
            let line_no = self.lines + lines;
            for f in split_text(line, self.opts.delimiter) {
                let field = self.text_field(f).map_err(|message| (IoError::BadRow { row: line_no, message }, start))?;
                recs.push(field);
            }
            recs.end_record_keeping_blank();
            start += raw.len() + 1;
        }
        Ok((recs, lines))
    }

    /// One raw text-format field as a field: the NULL string is NULL, anything else a value.
    fn text_field<'a>(&self, raw: &'a str) -> Result<Field<'a>, String> {
        if raw == self.opts.null {
            return Ok(Field { text: Cow::Borrowed(""), quoted: false });
        }
        let text = if raw.contains('\\') { Cow::Owned(unescape(raw)?) } else { Cow::Borrowed(raw) };
        Ok(Field { text, quoted: true })
    }

    /// A record that is `\.` alone, unquoted, ends the data (psql sends it, and PostgreSQL up
    /// to 17 reads it so in CSV too): it and what follows are dropped.
    fn csv_end_marker(&mut self, recs: &mut Records) {
        let marker = recs.iter().position(|r| matches!(r, [f] if !f.quoted && f.text == "\\."));
        if let Some(k) = marker {
            recs.truncate(k);
            self.ended = true;
        }
    }

    /// CSV fields as NULL or values under the NULL string and the `FORCE_*` options.
    fn csv_nulls(&self, recs: &mut Records) {
        let null = self.opts.null.as_str();
        let (not_null, force_null) = (&self.opts.force_not_null, &self.opts.force_null);
        recs.for_each_field(|column, f| {
            let is_null_text = f.text == null;
            let null_here = if f.quoted {
                is_null_text && force_null.get(column).copied().unwrap_or(false)
            } else {
                is_null_text && !not_null.get(column).copied().unwrap_or(false)
            };
            *f = if null_here {
                Field { text: Cow::Borrowed(""), quoted: false }
            } else {
                Field { text: std::mem::take(&mut f.text), quoted: true }
            };
        });
    }

    /// With `HEADER MATCH`, the header must name the columns in order.
    fn check_header(&self, head: &[Field]) -> Result<(), IoError> {
        if self.opts.header != Header::Match {
            return Ok(());
        }
        let names: Vec<&str> = head.iter().map(|f| f.text.as_ref()).collect();
        let want: Vec<&str> = self.schema.iter().map(|c| c.name.as_str()).collect();
        let same = names.len() == want.len() && names.iter().zip(&want).all(|(a, b)| a.eq_ignore_ascii_case(b));
        if same {
            return Ok(());
        }
        let message = format!("the header names {names:?}, the columns are {want:?}");
        Err(IoError::BadRow { row: 1, message: format!("HEADER MATCH: {message}") })
    }
}

/// Finds where records end, as the readers split them: at a line end (`\n`, and for CSV
/// also `\r` or `\r\n`) outside a quoted CSV field. A quote opens a field only at its start
/// (as [`crate::csv`] reads it); inside one, `""` is a quote and a lone `"` closes it.
#[derive(Debug, Clone)]
struct Splitter {
    csv: bool,
    delimiter: u8,
    quoted: bool,
}

impl Splitter {
    fn new(opts: &CopyOptions) -> Splitter {
        Splitter { csv: opts.format == CopyFormat::Csv, delimiter: opts.delimiter, quoted: false }
    }

    /// Call `end` with the offset after each record end in `b[from..]` (`b` starts at a
    /// record's start); the offset to go on from when more bytes arrive (a byte whose meaning
    /// depends on the next one waits for it).
    fn ends(&mut self, b: &[u8], from: usize, mut end: impl FnMut(usize)) -> usize {
        if !self.csv {
            if let Some(k) = memchr::memrchr(b'\n', b.get(from..).unwrap_or_default()) {
                end(from + k + 1);
            }
            return b.len();
        }
        let mut k = from;
        while let Some(off) = memchr::memchr3(b'"', b'\n', b'\r', b.get(k..).unwrap_or_default()) {
            let at = k + off;
            let next = b.get(at + 1).copied();
            k = at + 1;
            match (b.get(at).copied(), self.quoted) {
                (Some(b'"'), true) => match next {
                    None => return at,
                    Some(b'"') => k = at + 2,
                    Some(_) => self.quoted = false,
                },
                (Some(b'"'), false) => {
                    let prev = at.checked_sub(1).and_then(|p| b.get(p)).copied();
                    // A quote in the middle of a field is a character of it.
                    self.quoted = prev.is_none_or(|p| p == b'\n' || p == b'\r' || p == self.delimiter);
                }
                (Some(b'\r'), false) => match next {
                    None => return at,
                    Some(b'\n') => {
                        k = at + 2;
                        end(k);
                    }
                    Some(_) => end(k),
                },
                (_, false) => end(k),
                _ => {}
            }
        }
        b.len()
    }
}

/// The offsets after each record end of `b` (which starts at a record's start, and is all
/// there is: a last `\r` ends a record).
fn record_ends(b: &[u8], opts: &CopyOptions) -> Vec<usize> {
    let mut out = Vec::new();
    let mut splitter = Splitter::new(opts);
    let waiting = splitter.ends(b, 0, |e| out.push(e));
    if waiting < b.len() && b.get(waiting) == Some(&b'\r') && !splitter.quoted {
        out.push(waiting + 1);
    }
    out
}

/// The raw fields of a text-format line: split at delimiters not escaped by a backslash.
fn split_text(line: &str, delimiter: u8) -> impl Iterator<Item = &str> {
    let b = line.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        while let Some(k) = memchr::memchr2(b'\\', delimiter, b.get(i..).unwrap_or_default()) {
            let at = i + k;
            if b.get(at) == Some(&b'\\') {
                i = at + 2;
                continue;
            }
            let field = line.get(start..at).unwrap_or_default();
            (start, i) = (at + 1, at + 1);
            return Some(field);
        }
        done = true;
        Some(line.get(start..).unwrap_or_default())
    })
}

/// A text-format field's backslash escapes undone.
fn unescape(raw: &str) -> Result<String, String> {
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = b.get(i) else {
            return Err("a backslash ends the field".into());
        };
        i += 1;
        let byte = match e {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 0x0b,
            b'0'..=b'7' => digits(b, &mut i, e, 8, 3),
            b'x' if b.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let first = b.get(i).copied().unwrap_or(b'0');
                i += 1;
                digits(b, &mut i, first, 16, 2)
            }
            other => other,
        };
        out.push(byte);
    }
    String::from_utf8(out).map_err(|_| "an escape makes the field invalid UTF-8".into())
}

/// The byte whose digits in `radix` start with `first` and go on at `b[*i..]` (at most
/// `max` digits in all), `*i` moved past them.
fn digits(b: &[u8], i: &mut usize, first: u8, radix: u32, max: usize) -> u8 {
    let digit = |c: u8| char::from(c).to_digit(radix);
    let mut v = digit(first).unwrap_or(0);
    for _ in 1..max {
        match b.get(*i).and_then(|&c| digit(c)) {
            Some(d) => {
                v = v * radix + d;
                *i += 1;
            }
            None => break,
        }
    }
    (v & 0xff) as u8
}

#[cfg(test)]
mod tests;
