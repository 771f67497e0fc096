//! `COPY table FROM 'file'` and `COPY (query) TO 'file'`: format chosen by the `FORMAT` option
//! or the file extension.

use crate::engine::QueryResult;
use crate::error::{Result, SqlError};
use std::path::Path;
use zepto_io::csv::{read_csv, write_csv, CsvOptions};
use zepto_io::parquet::{read_parquet, write_parquet};
use zepto_io::IoError;
use zepto_storage::{Column, Schema};

/// An I/O error as a SQL error, naming the file once.
fn io_error(path: &str, e: IoError) -> SqlError {
    match e {
        IoError::File { .. } => SqlError::Io(e.to_string()),
        e => SqlError::Io(format!("{path}: {e}")),
    }
}

/// Parquet takes no options besides `FORMAT`: types and compression come from the file.
fn parquet_options(options: &[(String, String)]) -> Result<()> {
    match options.iter().find(|(k, _)| k != "format") {
        Some((k, _)) => Err(SqlError::plan(format!("COPY option '{k}' does not apply to FORMAT PARQUET"), None)),
        None => Ok(()),
    }
}

fn format_of(path: &str, options: &[(String, String)]) -> String {
    options
        .iter()
        .find(|(k, _)| k == "format")
        .map(|(_, v)| v.to_ascii_lowercase())
        .unwrap_or_else(|| path.rsplit('.').next().unwrap_or("csv").to_ascii_lowercase())
}

fn csv_options(options: &[(String, String)]) -> Result<CsvOptions> {
    let mut o = CsvOptions::default();
    for (k, v) in options {
        match k.as_str() {
            "header" => o.header = !matches!(v.to_ascii_lowercase().as_str(), "false" | "0" | "off"),
            "delimiter" | "delim" | "sep" => {
                let b = v.as_bytes();
                if b.len() != 1 {
                    return Err(SqlError::plan(format!("DELIMITER must be one character, got '{v}'"), None));
                }
                o.delimiter = b[0];
            }
            "format" => {}
            other => return Err(SqlError::plan(format!("unknown COPY option '{other}'"), None)),
        }
    }
    Ok(o)
}

pub fn read_file(path: &str, options: &[(String, String)], schema: &Schema) -> Result<Vec<Column>> {
    match format_of(path, options).as_str() {
        "csv" | "tsv" | "txt" => {
            let data = std::fs::read_to_string(path).map_err(|e| SqlError::Io(format!("{path}: {e}")))?;
            read_csv(&data, &schema.columns, &csv_options(options)?).map_err(|e| SqlError::Io(format!("{path}: {e}")))
        }
        "parquet" => {
            parquet_options(options)?;
            read_parquet(Path::new(path), &schema.columns).map_err(|e| io_error(path, e))
        }
        f => Err(SqlError::NotSupported(format!("COPY FROM format '{f}'"))),
    }
}

pub fn write_file(path: &str, options: &[(String, String)], r: &QueryResult) -> Result<usize> {
    match format_of(path, options).as_str() {
        "csv" | "tsv" | "txt" => {
            csv_options(options)?;
            let names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
            let (mut out, b) = (String::new(), r.batch());
            write_csv(&names, &b.col_refs(), b.rows, &mut out);
            std::fs::write(path, out).map_err(|e| SqlError::Io(format!("{path}: {e}")))?;
            Ok(b.rows)
        }
        "parquet" => {
            parquet_options(options)?;
            let names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
            let b = r.batch();
            write_parquet(Path::new(path), &names, &b.col_refs(), b.rows).map_err(|e| io_error(path, e))?;
            Ok(b.rows)
        }
        f => Err(SqlError::NotSupported(format!("COPY TO format '{f}'"))),
    }
}
