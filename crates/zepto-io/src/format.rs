//! Rendering values as text: CSV cells, JSON values, and the aligned terminal table.

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
    match cell_text(c, i) {
        None => {}
        Some(s) if c.data_type().is_string() || c.data_type().vector_dim().is_some() => csv_escape(&s, out),
        Some(s) => out.push_str(&s),
    }
}

/// `s` as a JSON string literal, quotes included.
pub fn json_escape(s: &str, out: &mut String) {
    out.push('"');
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
    out.push('"');
}

/// One JSON value: numbers bare (non-finite floats as strings), NULL as `null`.
pub fn json_cell(c: &Column, i: usize, out: &mut String) {
    match cell_text(c, i) {
        None => out.push_str("null"),
        Some(s) => match c.data_type() {
            DataType::Bool | DataType::Int32 | DataType::Int64 => out.push_str(&s),
            DataType::Float32 | DataType::Float64 if !s.contains(['N', 'i']) => out.push_str(&s),
            // Elements are finite (a column invariant): the text is a JSON array of numbers.
            DataType::Vector(_) => out.push_str(&s),
            _ => json_escape(&s, out),
        },
    }
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
