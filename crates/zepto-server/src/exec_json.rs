//! QuestDB's `/exec` JSON and `/exp` CSV, the part the encoder writes
//! ([`crate::encode::Format::QuestDb`], [`crate::encode::Format::QuestDbCsv`]):
//! what a request asks of the answer ([`ExecShape`]), its head, QuestDB's type names, its values
//! (timestamps to the microsecond with a `Z`, dates at midnight, NaN as `null`) and the answer
//! of a statement without rows. The endpoint itself is [`crate::questdb`].

use zepto_io::format::{json_cell, json_escape};
use zepto_storage::{time, Column, ColumnData, DataType};

/// What a QuestDB `/exec` request asks of its answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecShape {
    /// The query text, echoed back.
    pub query: String,
    /// The rows `lo..hi` of the result (`limit=n` is `0..n`; `limit=lo,hi`, from 1, is
    /// `lo - 1..hi`).
    pub lo: usize,
    /// See `lo`; `None` is every row.
    pub hi: Option<usize>,
    /// `count=true`: `count` is every row of the result, not only those sent.
    pub count: bool,
    /// `nm=true`: only `dataset` and `count`.
    pub no_meta: bool,
    /// `timings=true`: how long the query took, in nanoseconds.
    pub timings: bool,
}

/// The answer's head: the query, the columns and which is the designated timestamp (-1:
/// none), unless `nm`; then the start of the dataset.
pub fn head(exec: Option<&ExecShape>, names: &[String], types: &[DataType], timestamp: Option<usize>, s: &mut String) {
    if exec.is_some_and(|e| e.no_meta) {
        return s.push_str("{\"dataset\":[");
    }
    s.push_str("{\"query\":");
    json_escape(exec.map_or("", |e| e.query.as_str()), s);
    {
        s.push_str(",\"columns\":[");
        for (j, (n, t)) in questdb_names(names).iter().zip(types).enumerate() {
            if j > 0 {
                s.push(',');
            }
            s.push_str("{\"name\":");
            json_escape(n, s);
            s.push_str(",\"type\":\"");
            s.push_str(type_name(*t));
            s.push_str("\"}");
        }
        s.push(']');
    }
    let ts = timestamp.map_or(-1, |i| i64::try_from(i).unwrap_or(-1));
    s.push_str(&format!(",\"timestamp\":{ts},\"dataset\":["));
}

/// The result's column names as QuestDB gives them: an expression's text without the
/// parentheses around the whole of it (`usage_user + 1`), `count(*)` as `count()`, and a name
/// seen before, in any case, suffixed `_2`, `_3`, ... (`ts`, `ts_2`).
pub fn questdb_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for n in names {
        let mut name = unwrapped(n).replace("count(*)", "count()");
        let base = name.clone();
        let mut k = 1;
        while out.iter().any(|o| o.eq_ignore_ascii_case(&name)) {
            k += 1;
            name = format!("{base}_{k}");
        }
        out.push(name);
    }
    out
}

/// `s` without one pair of parentheses that encloses all of it.
fn unwrapped(s: &str) -> &str {
    let Some(inner) = s.strip_prefix('(').and_then(|x| x.strip_suffix(')')) else { return s };
    let mut depth = 0i32;
    for c in inner.chars() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        if depth < 0 {
            return s;
        }
    }
    if depth == 0 {
        inner
    } else {
        s
    }
}

/// QuestDB's name of a column type.
pub fn type_name(t: DataType) -> &'static str {
    match t {
        DataType::Bool => "BOOLEAN",
        DataType::Int32 => "INT",
        DataType::Int64 => "LONG",
        DataType::Int128 => "LONG128",
        DataType::Float32 => "FLOAT",
        DataType::Float64 => "DOUBLE",
        DataType::Timestamp => "TIMESTAMP",
        DataType::Date => "DATE",
        DataType::Interval => "INTERVAL",
        DataType::Varchar => "VARCHAR",
        DataType::Symbol => "SYMBOL",
        DataType::Vector(_) => "ARRAY",
        DataType::Null => "NULL",
    }
}

/// One value as QuestDB writes it: timestamps to the microsecond (`...T09:30:00.000000Z`),
/// dates at midnight to the millisecond, a NaN or infinite float as `null`; the rest as our
/// JSON does.
pub fn cell(c: &Column, i: usize, s: &mut String) {
    if !c.is_valid(i) {
        return s.push_str("null");
    }
    match c.data() {
        ColumnData::Timestamp(v) => {
            let ns = v.get(i).copied().unwrap_or(0);
            if let Some(word) = time::infinite_text(ns) {
                // `infinity` / `-infinity`, as words: no date holds them.
                return json_escape(word, s);
            }
            let text = time::format_timestamp_iso(ns);
            s.push('"');
            // 9 fraction digits and a Z: keep six (the floor to the microsecond; subtracting
            // the nanoseconds overflowed in the first microsecond after -infinity).
            s.push_str(text.get(..text.len().saturating_sub(4)).unwrap_or(&text));
            s.push_str("Z\"");
        }
        ColumnData::Date(v) => {
            s.push('"');
            s.push_str(&time::format_date(v.get(i).copied().unwrap_or(0)));
            s.push_str("T00:00:00.000Z\"");
        }
        ColumnData::Float64(v) if v.get(i).is_some_and(|x| !x.is_finite()) => s.push_str("null"),
        ColumnData::Float32(v) if v.get(i).is_some_and(|x| !x.is_finite()) => s.push_str("null"),
        _ => json_cell(c, i, s),
    }
}

/// A statement's answer without rows: `{"ddl":"OK"}`, or `{"dml":"OK"}` for one that changed
/// rows.
pub fn status(status: &str, s: &mut String) {
    let dml = ["INSERT", "UPDATE", "DELETE", "COPY"].iter().any(|w| status.starts_with(w));
    s.push_str(if dml { "{\"dml\":\"OK\"}\n" } else { "{\"ddl\":\"OK\"}\n" });
}

/// `/exp`'s header line: every name quoted, the line ended by CRLF as QuestDB ends them.
pub fn csv_head(names: &[String], s: &mut String) {
    for (j, n) in questdb_names(names).iter().enumerate() {
        if j > 0 {
            s.push(',');
        }
        quoted(n, s);
    }
    s.push_str("\r\n");
}

/// One `/exp` value: text, symbols, timestamps and dates quoted (quotes doubled), numbers and
/// booleans bare, NULL and NaN empty.
pub fn csv_cell(c: &Column, i: usize, s: &mut String) {
    if !c.is_valid(i) {
        return;
    }
    match c.data() {
        ColumnData::Varchar(_) | ColumnData::Symbol { .. } => quoted(c.str_at(i).unwrap_or(""), s),
        ColumnData::Timestamp(_) | ColumnData::Date(_) => {
            // The JSON text of the value is already a quoted string without quotes inside.
            let mut t = String::new();
            cell(c, i, &mut t);
            s.push_str(&t);
        }
        ColumnData::Float64(v) if v.get(i).is_some_and(|x| !x.is_finite()) => {}
        ColumnData::Float32(v) if v.get(i).is_some_and(|x| !x.is_finite()) => {}
        _ => zepto_io::format::csv_cell(c, i, s),
    }
}

fn quoted(text: &str, s: &mut String) {
    s.push('"');
    s.push_str(&text.replace('"', "\"\""));
    s.push('"');
}
