//! JSONL ingest: one JSON object per line, keys matched to the table's columns by name
//! (case-insensitively); missing keys are NULL, unknown keys are an error. Blank lines are
//! skipped and not counted: `row` in an error is the 1-based data row, as for CSV.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use zepto_io::IoError;
use zepto_storage::{time, Column, ColumnBuilder, ColumnDef, DataType, Value};

pub fn read_jsonl(body: &str, schema: &[ColumnDef]) -> Result<Vec<Column>, IoError> {
    let lines = body.split('\n').count();
    let mut builders: Vec<ColumnBuilder> = schema.iter().map(|c| ColumnBuilder::new(c.data_type, lines)).collect();
    let mut seen = vec![false; schema.len()];
    // Per column: the date of its last timestamp, reused while rows share it.
    let mut days: Vec<time::DayCache> = schema.iter().map(|_| time::DayCache::default()).collect();
    let mut row = 0;
    for line in body.split('\n') {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        row += 1;
        let bad_row = |message: String| IoError::BadRow { row, message };
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| bad_row(format!("not JSON: {e}")))?;
        let obj = v.as_object().ok_or_else(|| bad_row("expected a JSON object".into()))?;
        seen.iter_mut().for_each(|s| *s = false);
        for (key, val) in obj {
            let j = schema
                .iter()
                .position(|c| c.name == *key)
                .or_else(|| schema.iter().position(|c| c.name.eq_ignore_ascii_case(key)))
                .ok_or_else(|| bad_row(format!("'{key}' is not a column of the table")))?;
            let (Some(col), Some(was), Some(builder), Some(day)) =
                (schema.get(j), seen.get_mut(j), builders.get_mut(j), days.get_mut(j))
            else {
                return Err(bad_row(format!("column {j} is outside the schema")));
            };
            if *was {
                return Err(bad_row(format!("column '{}' given twice", col.name)));
            }
            *was = true;
            let v = json_value(val, col.data_type, day).map_err(|message| IoError::BadValue {
                row,
                column: col.name.clone(),
                message,
            })?;
            builder.push_value(&v)?;
        }
        for (b, s) in builders.iter_mut().zip(&seen) {
            if !*s {
                b.push_null();
            }
        }
    }
    Ok(builders.into_iter().map(ColumnBuilder::finish).collect())
}

/// One JSON value as a value of column type `dt`; a timestamp given as text reuses the date
/// in `days` (see [`time::parse_timestamp_with`]).
pub fn json_value(v: &serde_json::Value, dt: DataType, days: &mut time::DayCache) -> Result<Value, String> {
    use serde_json::Value as J;
    let bad = || format!("{v} is not a valid {dt}");
    Ok(match (v, dt) {
        (J::Null, _) => Value::Null,
        (J::Bool(b), DataType::Bool) => Value::Bool(*b),
        (J::Number(n), DataType::Int32) => {
            Value::Int32(n.as_i64().and_then(|x| i32::try_from(x).ok()).ok_or_else(bad)?)
        }
        (J::Number(n), DataType::Int64) => Value::Int64(n.as_i64().ok_or_else(bad)?),
        (J::Number(n), DataType::Float64) => Value::Float64(n.as_f64().ok_or_else(bad)?),
        (J::Number(n), DataType::Float32) => Value::Float32(n.as_f64().ok_or_else(bad)? as f32),
        (J::Number(n), DataType::Timestamp) => Value::Timestamp(n.as_i64().ok_or_else(bad)?),
        (J::Number(n), DataType::Interval) => Value::Interval(n.as_i64().ok_or_else(bad)?),
        (J::String(s), DataType::Timestamp) => Value::Timestamp(time::parse_timestamp_with(s, days).ok_or_else(bad)?),
        (J::String(s), DataType::Date) => Value::Date(time::parse_date(s).ok_or_else(bad)?),
        (J::String(s), DataType::Interval) => Value::Interval(time::parse_interval(s).ok_or_else(bad)?),
        (J::String(s), DataType::Varchar | DataType::Symbol) => Value::Str(s.clone()),
        (J::Array(a), DataType::Vector(d)) => {
            let xs = a
                .iter()
                .map(|x| x.as_f64().ok_or_else(|| format!("{x} in a vector is not a number")))
                .collect::<Result<Vec<f64>, String>>()?;
            Value::Vector(zepto_storage::vector::check_vector(&xs, Some(d as usize)).map_err(|e| e.to_string())?)
        }
        (J::String(s), DataType::Vector(d)) => {
            Value::Vector(zepto_storage::vector::parse_vector(s, Some(d as usize)).map_err(|e| e.to_string())?)
        }
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Vec<ColumnDef> {
        [("ts", DataType::Timestamp), ("sym", DataType::Symbol), ("px", DataType::Float64), ("n", DataType::Int32)]
            .iter()
            .map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t })
            .collect()
    }

    #[test]
    fn reads_and_names_bad_rows() {
        let body = "{\"ts\":\"2024-01-02 09:30:00\",\"sym\":\"A\",\"px\":1.5,\"n\":3}\n\n{\"TS\":5,\"sym\":null}\n";
        let cols = read_jsonl(body, &schema()).expect("reads");
        assert_eq!(cols[0].len(), 2);
        assert_eq!(cols[0].get(1), Value::Timestamp(5));
        assert_eq!(cols[2].get(1), Value::Null);
        assert_eq!(cols[3].get(0), Value::Int32(3));
        let e = read_jsonl("{\"ts\":1}\n\n{\"n\":1.5}\n", &schema()).expect_err("float into INTEGER");
        assert_eq!(e.row(), Some(2));
        assert!(e.to_string().contains("'n'"), "{e}");
        assert_eq!(read_jsonl("{\"ts\":1}\n[1]\n", &schema()).expect_err("array").row(), Some(2));
        assert_eq!(read_jsonl("{\"zz\":1}", &schema()).expect_err("unknown").row(), Some(1));
        assert_eq!(read_jsonl("{\"ts\":1,", &schema()).expect_err("truncated").row(), Some(1));
        assert_eq!(read_jsonl("{\"n\":3000000000}", &schema()).expect_err("range").row(), Some(1));
    }

    #[test]
    fn vectors_are_json_arrays_or_their_text() {
        let schema = vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "v".into(), data_type: DataType::Vector(3) },
        ];
        let body = "{\"ts\":1,\"v\":[0.5,-1,2e3]}\n{\"ts\":2,\"v\":\"[1,2,3]\"}\n{\"ts\":3,\"v\":null}\n";
        let cols = read_jsonl(body, &schema).expect("reads");
        assert_eq!(cols[1].get(0), Value::Vector(vec![0.5, -1.0, 2000.0]));
        assert_eq!(cols[1].get(1), Value::Vector(vec![1.0, 2.0, 3.0]));
        assert_eq!(cols[1].get(2), Value::Null);
        for (bad, want) in [
            ("{\"v\":[1,2]}", "FLOAT[3]"),
            ("{\"v\":[1,\"x\",3]}", "not a number"),
            ("{\"v\":[1,2,1e39]}", "infinite"),
            ("{\"v\":\"[1,nan,3]\"}", "NaN"),
            ("{\"v\":7}", "FLOAT[3]"),
        ] {
            let e = read_jsonl(&format!("{{\"ts\":1}}\n{bad}\n"), &schema).expect_err(bad);
            assert_eq!(e.row(), Some(2), "{bad}");
            assert!(e.to_string().contains(want) && e.to_string().contains("'v'"), "{bad}: {e}");
        }
    }
}
