//! CSV (RFC 4180) reading into typed columns and writing from them.
//!
//! Hand-written rather than the `csv` crate because SPEC §2 needs to know whether a field was
//! quoted (empty unquoted = NULL, `""` = empty string), which that crate does not expose.
//! A batch is all-or-nothing: the first bad row aborts the whole read with its 1-based number.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::format::csv_cell;
use crate::{Check, IoError, CHECK_EVERY};
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
pub struct Field {
    /// The text, unquoted and unescaped.
    pub text: String,
    /// Whether it was quoted (an empty quoted field is the empty string, not NULL).
    pub quoted: bool,
}

/// Split CSV text into records. `\r\n` and `\n` end records outside quotes.
pub fn parse_records(data: &str, delim: u8) -> Result<Vec<Vec<Field>>, IoError> {
    parse_records_checked(data, delim, &crate::unchecked)
}

/// [`parse_records`], asking `check` every [`CHECK_EVERY`] records whether to go on.
pub fn parse_records_checked(data: &str, delim: u8, check: Check) -> Result<Vec<Vec<Field>>, IoError> {
    let b = data.as_bytes();
    let mut out = Vec::new();
    let mut rec: Vec<Field> = Vec::new();
    let mut i = 0;
    let mut line = 1usize;
    let data_row = |out: &Vec<Vec<Field>>| out.len();
    if b.starts_with(&[0xEF, 0xBB, 0xBF]) {
        i = 3; // UTF-8 byte order mark
    }
    let at = |i: usize| b.get(i).copied();
    while i < b.len() {
        // One field starting at i.
        let mut f = Field { text: String::new(), quoted: false };
        if at(i) == Some(b'"') {
            f.quoted = true;
            i += 1;
            let start_line = line;
            loop {
                let Some(c) = at(i) else {
                    return Err(IoError::BadRow {
                        row: data_row(&out),
                        message: format!("unterminated quoted field starting on line {start_line}"),
                    });
                };
                if c == b'"' {
                    if at(i + 1) == Some(b'"') {
                        f.text.push('"');
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                if c == b'\n' {
                    line += 1;
                }
                // Copy a run of ordinary bytes at once (keeps UTF-8 intact).
                let start = i;
                while at(i).is_some_and(|c| c != b'"' && c != b'\n') {
                    i += 1;
                }
                if i == start {
                    f.text.push('\n');
                    i += 1;
                } else {
                    f.text.push_str(&data[start..i]);
                }
            }
            if at(i).is_some_and(|c| c != delim && c != b'\n' && c != b'\r') {
                return Err(IoError::BadRow {
                    row: data_row(&out) + 1,
                    message: "unexpected character after a closing quote".into(),
                });
            }
        } else {
            let start = i;
            while at(i).is_some_and(|c| c != delim && c != b'\n' && c != b'\r') {
                i += 1;
            }
            f.text.push_str(&data[start..i]);
        }
        rec.push(f);
        if at(i) == Some(delim) {
            i += 1;
            if i == b.len() {
                rec.push(Field { text: String::new(), quoted: false });
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
        out.push(std::mem::take(&mut rec));
        if out.len() % CHECK_EVERY == 0 {
            check().map_err(IoError::Stopped)?;
        }
    }
    if !rec.is_empty() {
        out.push(rec);
    }
    // Blank lines are not records.
    out.retain(|r| !matches!(r.as_slice(), [only] if only.text.is_empty() && !only.quoted));
    Ok(out)
}

/// Parse one field as a value of `dt`. Empty unquoted → NULL.
pub fn parse_field(f: &Field, dt: DataType) -> Result<Value, String> {
    if f.text.is_empty() && !f.quoted {
        return Ok(Value::Null);
    }
    let t = f.text.trim();
    let bad = || format!("'{}' is not a valid {dt}", f.text);
    Ok(match dt {
        DataType::Varchar | DataType::Symbol => Value::Str(f.text.clone()),
        _ if t.is_empty() => return Err(bad()),
        DataType::Bool => match t.to_ascii_lowercase().as_str() {
            "true" | "t" | "1" | "yes" => Value::Bool(true),
            "false" | "f" | "0" | "no" => Value::Bool(false),
            _ => return Err(bad()),
        },
        DataType::Int32 => Value::Int32(t.parse().map_err(|_| bad())?),
        DataType::Int64 => Value::Int64(t.parse().map_err(|_| bad())?),
        DataType::Float32 => Value::Float32(t.parse().map_err(|_| bad())?),
        DataType::Float64 => Value::Float64(t.parse().map_err(|_| bad())?),
        DataType::Timestamp => match time::parse_timestamp(t) {
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

/// [`read_csv`], asking `check` every [`CHECK_EVERY`] records, while splitting them and while
/// building columns, whether to go on.
pub fn read_csv_checked(
    data: &str,
    schema: &[ColumnDef],
    opts: &CsvOptions,
    check: Check,
) -> Result<Vec<Column>, IoError> {
    let mut recs = parse_records_checked(data, opts.delimiter, check)?;
    let mapping: Vec<Option<usize>> = if opts.header && !recs.is_empty() {
        let head = recs.remove(0);
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
        m
    } else {
        (0..schema.len()).map(Some).collect()
    };
    let width = if opts.header { mapping.iter().flatten().count() } else { schema.len() };
    let mut builders: Vec<ColumnBuilder> = schema.iter().map(|c| ColumnBuilder::new(c.data_type, recs.len())).collect();
    for (r, rec) in recs.iter().enumerate() {
        if r % CHECK_EVERY == CHECK_EVERY - 1 {
            check().map_err(IoError::Stopped)?;
        }
        if rec.len() != width {
            return Err(IoError::BadRow {
                row: r + 1,
                message: format!("expected {width} fields, found {}", rec.len()),
            });
        }
        for ((col, source), builder) in schema.iter().zip(&mapping).zip(builders.iter_mut()) {
            match source.and_then(|k| rec.get(k)) {
                None => builder.push_null(),
                Some(field) => {
                    let v = parse_field(field, col.data_type).map_err(|message| IoError::BadValue {
                        row: r + 1,
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
}
