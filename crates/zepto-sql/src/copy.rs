//! `COPY table FROM 'file'` and `COPY (query) TO 'file'`: format chosen by the `FORMAT` option
//! or the file extension.

use crate::error::{FileProblem, Pos, Result, SqlError};
use crate::files::FilePolicy;
use crate::interrupt::RunContext;
use crate::result::QueryResult;
use std::collections::HashMap;
use std::io::Write;
use zepto_io::csv::{read_csv_bytes_checked, write_csv, CsvOptions};
use zepto_io::parquet::{read_parquet_checked, write_parquet};
use zepto_io::parquet_grouped::read_parquet_grouped;
use zepto_io::read::read_exact_len;
use zepto_io::IoError;
use zepto_storage::{Column, ColumnDef, Schema, Table};

/// A decoding error: the file's contents are wrong (a 4xx), named once.
fn bad_file(path: &str, e: IoError) -> SqlError {
    let reason = match e {
        IoError::File { message, .. } => message,
        e => e.to_string(),
    };
    SqlError::File { path: path.to_string(), problem: FileProblem::Malformed, reason }
}

/// A failed COPY TO: a full disk is [`SqlError::DiskFull`] (507: free space and retry), anything
/// else an IO error.
fn write_error(path: &str, e: IoError) -> SqlError {
    match e {
        IoError::DiskFull { message, .. } => {
            SqlError::DiskFull(format!("COPY TO '{path}': the disk is full ({message}); no file was written"))
        }
        IoError::File { message, .. } => SqlError::Io(format!("{path}: {message}")),
        e => SqlError::Io(format!("{path}: {e}")),
    }
}

/// Write `bytes` to `path` whole or not at all: through `<path>.tmp` (which `files` must also
/// allow), synced, then renamed over `path`; a failure removes the temporary file, so a full
/// disk leaves neither a truncated file nor an old one half overwritten.
fn write_whole(files: &FilePolicy, path: &str, bytes: &[u8]) -> Result<()> {
    let resolved = files.resolve_write(path)?;
    let (mut file, tmp) = files.open_write(&format!("{}.tmp", resolved.display()))?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all()).and_then(|()| std::fs::rename(&tmp, &resolved));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        let e = if zepto_io::is_disk_full(&e) {
            IoError::DiskFull { path: path.to_string(), message: e.to_string() }
        } else {
            IoError::File { path: path.to_string(), message: e.to_string() }
        };
        write_error(path, e)
    })
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

/// The query's check (memory limit, deadline, cancellation) as a reader's [`zepto_io::Check`],
/// keeping the typed error that stopped the read.
struct Stop<'r> {
    run: &'r RunContext,
    error: std::sync::Mutex<Option<SqlError>>,
    /// The thread that started the read, and what the query holds there as of its last check
    /// (a grouped read decodes the key column there before the helpers start).
    caller: std::thread::ThreadId,
    held: std::sync::atomic::AtomicIsize,
    /// What each helper thread decoding part of the file holds, as of its last check (a
    /// helper starts from zero): the query holds `held` plus all of them.
    helpers: std::sync::Mutex<HashMap<std::thread::ThreadId, isize>>,
}

impl<'r> Stop<'r> {
    fn new(run: &'r RunContext) -> Stop<'r> {
        let caller = std::thread::current().id();
        let helpers = std::sync::Mutex::new(HashMap::new());
        let held = std::sync::atomic::AtomicIsize::new(run.held());
        Stop { run, error: std::sync::Mutex::new(None), caller, held, helpers }
    }

    fn check(&self) -> std::result::Result<(), String> {
        let me = std::thread::current().id();
        let r = if me == self.caller {
            self.held.store(self.run.held(), std::sync::atomic::Ordering::Relaxed);
            self.run.check()
        } else {
            let mut helpers = self.helpers.lock().unwrap_or_else(|p| p.into_inner());
            helpers.insert(me, zepto_storage::mem::thread_net_bytes());
            let held = self.held.load(std::sync::atomic::Ordering::Relaxed);
            let total = helpers.values().fold(held, |a, &b| a.saturating_add(b));
            drop(helpers);
            self.run.check_holding(total)
        };
        r.map_err(|e| {
            let reason = e.to_string();
            *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            reason
        })
    }

    /// The error that stopped the read, else the reader's own.
    fn or(&self, path: &str, e: IoError) -> SqlError {
        let stopped = self.error.lock().unwrap_or_else(|p| p.into_inner()).take();
        stopped.unwrap_or_else(|| bad_file(path, e))
    }
}

/// Load `path` (a file `files` allows) as columns of `schema`. The whole file is held while
/// it is decoded, so its size is checked against the query's memory limit before reading, and
/// the decoded rows are checked as they grow (a small file can decode to any size), all under
/// the query `run`.
pub fn read_file(
    run: &RunContext,
    files: &FilePolicy,
    path: &str,
    options: &[(String, String)],
    schema: &Schema,
) -> Result<Vec<Column>> {
    let format = format_of(path, options);
    let (file, resolved, len) = files.open_read(path)?;
    match format.as_str() {
        "csv" | "tsv" | "txt" => {
            let opts = csv_options(options)?;
            run.reserve(len)?;
            let len = usize::try_from(len).map_err(|_| SqlError::Io(format!("{path}: too large to hold")))?;
            // The length seen at open: a file that grows meanwhile cannot outrun the check.
            let data = read_exact_len(&file, len).map_err(|e| SqlError::Io(format!("{path}: {e}")))?;
            let stop = Stop::new(run);
            // Checked as UTF-8 piece by piece, on the cores that decode it.
            read_csv_bytes_checked(&data, &schema.columns, &opts, &|| stop.check()).map_err(|e| stop.or(path, e))
        }
        "parquet" => {
            parquet_options(options)?;
            run.reserve(len)?;
            let stop = Stop::new(run);
            read_parquet_checked(&resolved, &schema.columns, &|| stop.check()).map_err(|e| stop.or(path, e))
        }
        f => Err(SqlError::NotSupported(format!("COPY FROM format '{f}'"))),
    }
}

/// `path` read as [`read_file`] reads it, its rows grouped by `table`'s partition key
/// (`zepto_io::parquet_grouped::read_parquet_grouped`), when it is a Parquet file holding that
/// column and the table has a key; `None` otherwise (read it whole).
pub fn read_grouped(
    run: &RunContext,
    files: &FilePolicy,
    path: &str,
    options: &[(String, String)],
    table: &Table,
) -> Result<Option<Vec<Vec<Column>>>> {
    let Some(key) = table.key_col() else { return Ok(None) };
    if format_of(path, options) != "parquet" {
        return Ok(None);
    }
    parquet_options(options)?;
    let (_file, resolved, len) = files.open_read(path)?;
    run.reserve(len)?;
    let stop = Stop::new(run);
    read_parquet_grouped(&resolved, &table.schema().columns, key, &|| stop.check()).map_err(|e| stop.or(path, e))
}

/// Write the result `r` to `path` (a place `files` allows).
pub fn write_file(files: &FilePolicy, path: &str, options: &[(String, String)], r: &QueryResult) -> Result<usize> {
    match format_of(path, options).as_str() {
        "csv" | "tsv" | "txt" => {
            csv_options(options)?;
            let names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
            let (mut out, b) = (String::new(), r.batch());
            write_csv(&names, &b.col_refs(), b.rows, &mut out);
            write_whole(files, path, out.as_bytes())?;
            Ok(b.rows)
        }
        "parquet" => {
            parquet_options(options)?;
            let resolved = files.resolve_write(path)?;
            // The writer goes through `<path>.tmp`, renamed when complete: check that name too.
            files.resolve_write(&format!("{}.tmp", resolved.display()))?;
            let names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
            // The result's batches as they are: the writer cuts them into row groups and
            // encodes those on every core, with no concatenated copy of the result.
            let chunks = r.chunks().iter().map(|b| (b.columns.clone(), b.rows)).collect();
            write_parquet(&resolved, &names, chunks).map_err(|e| write_error(path, e))
        }
        f => Err(SqlError::NotSupported(format!("COPY TO format '{f}'"))),
    }
}

/// The error for a COPY to or from the client run where there is no client stream (the HTTP
/// door, the embedded engine).
pub fn needs_a_client(what: &str) -> SqlError {
    SqlError::NotSupported(format!(
        "COPY ... {what} streams rows over a PostgreSQL connection (psql's \\copy, psycopg's \
         cursor.copy(), JDBC's CopyManager); here, COPY a file or use INSERT"
    ))
}

/// The definitions of `columns` of `table` in that order (an unknown or repeated name is an
/// error at `pos`).
pub(crate) fn listed_columns(table: &Table, columns: &[String], pos: Pos) -> Result<Vec<ColumnDef>> {
    let mut out: Vec<ColumnDef> = Vec::with_capacity(columns.len());
    for name in columns {
        let def = table.schema().columns.iter().find(|c| c.name.eq_ignore_ascii_case(name)).ok_or_else(|| {
            SqlError::ColumnNotFound {
                message: format!("column '{name}' of table '{}' does not exist", table.name()),
                pos: Some(pos),
                table: None,
                name: name.clone(),
            }
        })?;
        if out.iter().any(|c| c.name == def.name) {
            return Err(SqlError::plan(format!("column '{name}' is listed twice"), Some(pos)));
        }
        out.push(def.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_disk_full_and_anything_else_an_io_error() {
        let full = std::io::Error::from_raw_os_error(28); // ENOSPC
        assert!(zepto_io::is_disk_full(&full));
        let e = write_error("out.csv", IoError::DiskFull { path: "out.csv".into(), message: full.to_string() });
        assert!(
            matches!(&e, SqlError::DiskFull(m) if m.contains("out.csv") && m.contains("no file was written")),
            "{e:?}"
        );
        assert_eq!(e.code(), "DISK_FULL");
        let denied = std::io::Error::from_raw_os_error(13); // EACCES
        assert!(!zepto_io::is_disk_full(&denied));
        let e = write_error("out.csv", IoError::File { path: "/x/out.csv".into(), message: denied.to_string() });
        assert!(matches!(&e, SqlError::Io(m) if m.starts_with("out.csv: ") && !m.contains("/x/")), "{e:?}");
    }

    #[test]
    fn a_csv_copy_writes_whole_files_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("zepto-copy-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("out.csv");
        std::fs::write(&path, "old contents").expect("an old file");
        let files = FilePolicy::new(None, &[]).expect("a policy");
        write_whole(&files, &path.display().to_string(), b"a,b\n1,2\n").expect("written");
        assert_eq!(std::fs::read_to_string(&path).expect("read back"), "a,b\n1,2\n");
        assert!(!dir.join("out.csv.tmp").exists(), "the temporary file was renamed");
        std::fs::remove_dir_all(&dir).expect("cleaned up");
    }
}
