//! Rendering values as text: CSV cells, JSON values, and the aligned terminal table.

use std::fmt::Write;
use zepto_storage::time;
use zepto_storage::value::{format_f32, format_f64};
use zepto_storage::{Column, ColumnData, DataType};

/// Text of a valid cell as CSV/JSON print it (timestamps ISO-8601 UTC with 9 digits).
pub fn cell_text(c: &Column, i: usize) -> Option<String> {
    if !c.is_valid(i) {
        return None;
    }
    Some(match &c.data() {
        ColumnData::Bool(v) => v[i].to_string(),
        ColumnData::Int32(v) => v[i].to_string(),
        ColumnData::Int64(v) => v[i].to_string(),
        ColumnData::Int128(v) => v[i].to_string(),
        ColumnData::Float32(v) => format_f32(v[i]),
        ColumnData::Float64(v) => format_f64(v[i]),
        ColumnData::Timestamp(v) => time::format_timestamp_iso(v[i]),
        ColumnData::Date(v) => time::format_date(v[i]),
        ColumnData::Interval(v) => time::format_interval(v[i]),
        ColumnData::Varchar(_) | ColumnData::Symbol { .. } => c.str_at(i).unwrap_or("").to_string(),
        ColumnData::Vector { .. } => zepto_storage::value::format_vector(c.vector_at(i)?),
        ColumnData::Null(_) => return None,
    })
}

/// Text of a cell for the terminal (timestamps with a space, NULL shown as `NULL`).
pub fn display_text(c: &Column, i: usize) -> String {
    match &c.data() {
        ColumnData::Timestamp(v) if c.is_valid(i) => time::format_timestamp(v[i]),
        _ => cell_text(c, i).unwrap_or_else(|| "NULL".to_string()),
    }
}

/// `s` as a CSV field: quoted when it must be (commas, quotes, line breaks, edge spaces, and
/// the empty string, which unquoted would read as NULL), quotes doubled.
pub fn csv_escape(s: &str, out: &mut String) {
    if s.is_empty() {
        out.push_str("\"\"");
    } else if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// One CSV cell: NULL → nothing, strings quoted when needed (the empty string as `""`).
pub fn csv_cell(c: &Column, i: usize, out: &mut String) {
    push_cell(c, i, out, Text::Csv)
}

/// One JSON value: numbers bare (non-finite floats as strings), NULL as `null`.
pub fn json_cell(c: &Column, i: usize, out: &mut String) {
    push_cell(c, i, out, Text::Json)
}

/// The text a cell is written in: the two differ in NULL, quoting and escaping only.
#[derive(Clone, Copy, PartialEq)]
enum Text {
    Csv,
    Json,
}

/// One cell as `text`. Strings, timestamps and numbers are written straight into `out`;
/// anything else goes through [`cell_text`].
fn push_cell(c: &Column, i: usize, out: &mut String, text: Text) {
    let json = text == Text::Json;
    if !c.is_valid(i) {
        return if json {
            out.push_str("null")
        };
    }
    match &c.data() {
        ColumnData::Varchar(_) | ColumnData::Symbol { .. } => {
            let s = c.str_at(i).unwrap_or("");
            return if json { json_escape(s, out) } else { csv_escape(s, out) };
        }
        ColumnData::Timestamp(v) => {
            // ISO text has no character to escape, in either text.
            let quote = if json { "\"" } else { "" };
            out.push_str(quote);
            time::push_timestamp(v[i], true, out);
            return out.push_str(quote);
        }
        _ if push_number(c, i, out) => return,
        _ => {}
    }
    let quoted = c.data_type().is_string() || c.data_type().vector_dim().is_some();
    match (cell_text(c, i), text) {
        (None, Text::Csv) => {}
        (None, Text::Json) => out.push_str("null"),
        (Some(s), Text::Csv) if quoted => csv_escape(&s, out),
        (Some(s), Text::Csv) => out.push_str(&s),
        (Some(s), Text::Json) => match c.data_type() {
            DataType::Float32 | DataType::Float64 if !s.contains(['N', 'i']) => out.push_str(&s),
            // Elements are finite (a column invariant): the text is a JSON array of numbers.
            DataType::Vector(_) => out.push_str(&s),
            _ => json_escape(&s, out),
        },
    }
}

/// `s` as a JSON string literal, quotes included. Runs of characters that need no escape are
/// copied whole.
pub fn json_escape(s: &str, out: &mut String) {
    out.push('"');
    let mut from = 0;
    for (at, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..0x20 => "",
            _ => continue,
        };
        // `at` is an ASCII byte's position, so a character boundary on both sides.
        out.push_str(&s[from..at]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escaped);
        }
        from = at + 1;
    }
    out.push_str(&s[from..]);
    out.push('"');
}

/// A valid boolean, integer or finite float cell written as [`cell_text`] would render it,
/// without making a string of it; false (nothing written) for anything else. Floats print
/// through `ryu` unless its text might differ from `cell_text`'s ([`push_plain`]).
fn push_number(c: &Column, i: usize, out: &mut String) -> bool {
    match &c.data() {
        ColumnData::Bool(v) => out.push_str(if v[i] { "true" } else { "false" }),
        ColumnData::Int32(v) => out.push_str(itoa::Buffer::new().format(v[i])),
        ColumnData::Int64(v) => out.push_str(itoa::Buffer::new().format(v[i])),
        ColumnData::Int128(v) => out.push_str(itoa::Buffer::new().format(v[i])),
        ColumnData::Float64(v) if v[i].is_finite() => {
            return push_plain(ryu::Buffer::new().format_finite(v[i]), 15, out)
        }
        // `format_f32` prints whole numbers from 1e7 up without ".0".
        ColumnData::Float32(v) if v[i].is_finite() && (v[i] != v[i].trunc() || v[i].abs() < 1e7) => {
            return push_plain(ryu::Buffer::new().format_finite(v[i]), 6, out)
        }
        _ => return false,
    }
    true
}

/// `text` if it has no exponent and at most `digits` digits: 15 for a DOUBLE, 6 for a REAL,
/// where decimals of that length lie further apart than the values that round to one float,
/// so the shortest text is the only one and the standard library prints it too. With more
/// digits two texts can round-trip, and `ryu` and the standard library may pick different ones.
fn push_plain(text: &str, digits: usize, out: &mut String) -> bool {
    let plain = !text.contains('e') && text.bytes().filter(u8::is_ascii_digit).count() <= digits;
    if plain {
        out.push_str(text);
    }
    plain
}

/// An aligned, boxed text table (numbers right-aligned).
pub fn table(names: &[String], types: &[DataType], cols: &[&Column], rows: usize, max_rows: usize) -> String {
    let shown = rows.min(max_rows);
    let mut cells: Vec<Vec<String>> = Vec::with_capacity(shown);
    for i in 0..shown {
        cells.push(cols.iter().map(|c| display_text(c, i)).collect());
    }
    let w: Vec<usize> = (0..names.len())
        .map(|j| {
            let head = names[j].chars().count().max(types[j].sql_name().len());
            cells.iter().map(|r| r[j].chars().count()).max().unwrap_or(0).max(head)
        })
        .collect();
    let line = |l: &str, m: &str, r: &str| {
        let mut s = l.to_string();
        for (j, wj) in w.iter().enumerate() {
            s.push_str(&"─".repeat(wj + 2));
            s.push_str(if j + 1 < w.len() { m } else { r });
        }
        s.push('\n');
        s
    };
    let row = |vals: &[String], right: &[bool]| {
        let mut s = "│".to_string();
        for (j, v) in vals.iter().enumerate() {
            let pad = w[j] - v.chars().count();
            if right[j] {
                s.push_str(&format!(" {}{} │", " ".repeat(pad), v));
            } else {
                s.push_str(&format!(" {}{} │", v, " ".repeat(pad)));
            }
        }
        s.push('\n');
        s
    };
    let right: Vec<bool> = types.iter().map(|t| t.is_numeric()).collect();
    let left = vec![false; names.len()];
    let mut out = line("┌", "┬", "┐");
    out.push_str(&row(names, &left));
    let tnames: Vec<String> = types.iter().map(|t| t.sql_name().to_string()).collect();
    out.push_str(&row(&tnames, &left));
    out.push_str(&line("├", "┼", "┤"));
    for r in &cells {
        out.push_str(&row(r, &right));
    }
    out.push_str(&line("└", "┴", "┘"));
    if rows > shown {
        out.push_str(&format!("({rows} rows, {shown} shown)\n"));
    } else {
        out.push_str(&format!("({rows} row{})\n", if rows == 1 { "" } else { "s" }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::{Dict, StrVec};

    /// What `json_cell` and `csv_cell` wrote before they skipped the per-cell string.
    fn slow_json(c: &Column, i: usize) -> String {
        match (cell_text(c, i), c.data_type()) {
            (None, _) => "null".into(),
            (Some(s), DataType::Float32 | DataType::Float64) if s.contains(['N', 'i']) => format!("\"{s}\""),
            (
                Some(s),
                DataType::Bool
                | DataType::Int32
                | DataType::Int64
                | DataType::Int128
                | DataType::Float32
                | DataType::Float64,
            ) => s,
            (Some(s), _) => {
                let mut out = String::new();
                for ch in s.chars() {
                    match ch {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                        c => out.push(c),
                    }
                }
                format!("\"{out}\"")
            }
        }
    }

    fn check(c: &Column) {
        for i in 0..c.len() {
            let (mut json, mut csv) = (String::new(), String::new());
            json_cell(c, i, &mut json);
            csv_cell(c, i, &mut csv);
            assert_eq!(json, slow_json(c, i), "JSON of row {i} of {:?}", c.data_type());
            let mut want = String::new();
            match cell_text(c, i) {
                Some(s) if c.data_type().is_string() => csv_escape(&s, &mut want),
                Some(s) => want = s,
                None => {}
            }
            assert_eq!(csv, want, "CSV of row {i} of {:?}", c.data_type());
        }
    }

    #[test]
    fn numbers_print_as_their_cell_text() {
        // Edges of the plain and exponent forms, then pseudo-random bit patterns.
        let mut f =
            vec![0.0, -0.0, 1.0, -1.5, 0.1, 1e15, 1e16 - 2.0, 1e16, 1.5e16, 1e-5, 1e-6, 1.2345e-7, 5e-324, f64::MAX];
        f.extend([f64::MIN_POSITIVE, 123456.789, 366.79, 2.0f64.powi(53), 9007199254740993.0, f64::NAN, f64::INFINITY]);
        f.push(f64::NEG_INFINITY);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f.push(f64::from_bits(x));
            // Values of a few digits, as prices are.
            f.push((x % 10_000_000) as f64 / 100.0);
            f.push((x % 1000) as f64 * 10f64.powi((x >> 40) as i32 % 40 - 20));
        }
        let g: Vec<f32> = f.iter().map(|&v| v as f32).chain([f32::MAX, 1e7, 1e-7, 16777217.0]).collect();
        let ints: Vec<i64> =
            f.iter().map(|&v| v.to_bits() as i64 >> (v.to_bits() % 64)).chain([i64::MIN, i64::MAX, 0]).collect();
        check(&Column::from_data(ColumnData::Float64(f.into())));
        check(&Column::from_data(ColumnData::Float32(g.into())));
        check(&Column::from_data(ColumnData::Int64(ints.clone().into())));
        check(&Column::from_data(ColumnData::Int32(ints.iter().map(|&v| v as i32).chain([i32::MIN]).collect())));
        check(&Column::from_data(ColumnData::Bool(vec![true, false].into())));
        let ts = [0, -1, 1_704_187_800_123_456_789, i64::MIN, i64::MAX, i64::MIN + 2, i64::MAX - 1];
        check(&Column::from_data(ColumnData::Timestamp(ts.to_vec().into())));
    }

    #[test]
    fn strings_escape_as_before() {
        let texts =
            ["", "plain", "q\"uote", "back\\slash", "line\nbreak\r\t", "\u{1}\u{1f}x", "é ünï 日本", " edge ", "a,b"];
        let mut s = StrVec::default();
        let mut dict = Dict::default();
        let mut codes = Vec::new();
        for t in texts {
            s.push(t);
            codes.push(dict.intern(t));
        }
        check(&Column::from_data(ColumnData::Varchar(s)));
        check(&Column::from_data(ColumnData::Symbol { codes: codes.into(), dict: std::sync::Arc::new(dict) }));
    }
}
