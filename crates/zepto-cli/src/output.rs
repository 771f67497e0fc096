//! Rendering a result in the CLI's formats: table, CSV (SPEC §2 cell rules), JSON (SPEC §2 shape).

use std::time::Duration;
use zepto_io::csv::write_csv;
use zepto_io::format::{json_cell, json_escape, table};
use zepto_sql::QueryResult;

/// Rows the table format prints before eliding the rest.
const TABLE_MAX_ROWS: usize = 40;

pub fn render(r: &QueryResult, format: &str, elapsed: Duration) -> String {
    let names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
    let types: Vec<_> = r.fields.iter().map(|f| f.data_type).collect();
    let batch = r.batch();
    let cols = &batch.col_refs();
    let rows = batch.rows;
    if let Some(status) = &r.status {
        return match format {
            "json" => {
                let mut s = String::from("{\"status\":");
                json_escape(status, &mut s);
                s.push_str("}\n");
                s
            }
            "csv" => String::new(),
            _ => format!("{status}\n"),
        };
    }
    match format {
        "csv" => {
            let mut s = String::new();
            write_csv(&names, cols, rows, &mut s);
            s
        }
        "json" => {
            let mut s = String::from("{\"columns\":[");
            for (j, f) in r.fields.iter().enumerate() {
                if j > 0 {
                    s.push(',');
                }
                s.push_str("{\"name\":");
                json_escape(&f.name, &mut s);
                s.push_str(&format!(",\"type\":\"{}\"}}", f.data_type.sql_name()));
            }
            s.push_str("],\"data\":[");
            for i in 0..rows {
                if i > 0 {
                    s.push(',');
                }
                s.push('[');
                for (j, c) in cols.iter().enumerate() {
                    if j > 0 {
                        s.push(',');
                    }
                    json_cell(c, i, &mut s);
                }
                s.push(']');
            }
            s.push_str(&format!("],\"rows\":{rows},\"elapsed_us\":{:.1}}}\n", elapsed.as_secs_f64() * 1e6));
            s
        }
        _ => table(&names, &types, cols, rows, TABLE_MAX_ROWS),
    }
}
