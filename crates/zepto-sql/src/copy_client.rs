//! COPY whose rows cross the client's connection, the engine's side of it; a door that can
//! stream (the PostgreSQL one) carries the bytes:
//!
//! - `COPY t [(columns)] FROM STDIN`: [`Engine::copy_in`] checks the statement as any write
//!   is checked and gives a [`CopyIn`]; the door feeds it the bytes as they arrive (decoded a
//!   piece at a time, held as columns), and [`CopyIn::finish`] stores the rows whole, as every
//!   ingest does: a bad line, a memory limit passed or a client that gives up stores nothing.
//! - `COPY (query) | t TO STDOUT`: [`Engine::copy_out`] runs the query and gives its result
//!   with the [`CopyOptions`] the door writes it in.
//!
//! The formats themselves (PostgreSQL's text and CSV) are [`zepto_io::pgcopy`]'s.

use crate::copy::listed_columns;
use crate::engine::{shape_for_table, Engine};
use crate::error::{FileProblem, Result, SqlError};
use crate::exec::Batch;
use crate::interrupt::RunContext;
use crate::parser::ast::{CopyEnd, Statement};
use crate::result::QueryResult;
use std::sync::Arc;
pub use zepto_io::pgcopy::CopyOptions;
use zepto_io::pgcopy::CopyReader;
use zepto_io::IoError;
use zepto_storage::{Column, Table};

/// A `COPY ... FROM STDIN` under way.
pub struct CopyIn {
    engine: Engine,
    statement: Statement,
    /// The table's name and the columns the rows hold, in their order.
    table: String,
    columns: Vec<String>,
    reader: CopyReader,
    /// The most the decoded rows may hold (the server's per-statement memory limit).
    limit: Option<usize>,
}

impl std::fmt::Debug for CopyIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyIn")
            .field("table", &self.table)
            .field("columns", &self.columns)
            .field("rows", &self.reader.rows())
            .finish()
    }
}

impl Engine {
    /// Start `s`, a `COPY ... FROM STDIN`, whose rows may hold up to `limit` bytes.
    pub fn copy_in(&self, s: &Statement, limit: Option<usize>) -> Result<CopyIn> {
        let Statement::CopyFrom { columns, source: CopyEnd::Client, options, pos, .. } = s else {
            return Err(SqlError::Internal("copy_in takes a COPY ... FROM STDIN".into()));
        };
        let snap = self.target_snapshot(s)?;
        let columns: Vec<String> = if columns.is_empty() {
            snap.schema().columns.iter().map(|c| c.name.clone()).collect()
        } else {
            columns.clone()
        };
        let defs = listed_columns(&snap, &columns, *pos)?;
        let columns: Vec<String> = defs.iter().map(|c| c.name.clone()).collect();
        let opts = CopyOptions::new(options, &columns).map_err(|m| SqlError::plan(m, Some(*pos)))?;
        let reader = CopyReader::new(opts, defs);
        Ok(CopyIn {
            engine: self.clone(),
            statement: s.clone(),
            table: snap.name().to_string(),
            columns,
            reader,
            limit,
        })
    }

    /// Run `s`, a `COPY ... TO STDOUT`: its rows, and how to write them.
    pub fn copy_out(&self, run: &RunContext, s: &Statement) -> Result<(QueryResult, CopyOptions)> {
        let Statement::CopyTo { query, target: CopyEnd::Client, options } = s else {
            return Err(SqlError::Internal("copy_out takes a COPY ... TO STDOUT".into()));
        };
        let r = self.query_in(run, query)?;
        let names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
        let opts = CopyOptions::new(options, &names).map_err(|m| SqlError::plan(m, None))?;
        Ok((r, opts))
    }
}

impl CopyIn {
    /// How many columns each row holds.
    pub fn width(&self) -> usize {
        self.columns.len()
    }

    /// Take the next bytes of the stream.
    pub fn feed(&mut self, data: &[u8]) -> Result<()> {
        self.reader.feed(data, &zepto_io::unchecked).map_err(|e| self.bad_data(e))?;
        match self.limit {
            Some(limit) if self.reader.held() > limit => Err(over_limit(&self.table, self.reader.held(), limit)),
            _ => Ok(()),
        }
    }

    /// Bytes the rows decoded so far hold.
    pub fn held(&self) -> usize {
        self.reader.held()
    }

    /// The stream has ended: store every row, or none.
    pub fn finish(self, run: &RunContext) -> Result<QueryResult> {
        let CopyIn { engine, statement, table, columns, reader, limit } = self;
        let cols = reader.finish(&zepto_io::unchecked).map_err(|e| malformed(&table, e))?;
        let held: usize = cols.iter().map(Column::data_bytes).sum();
        if let Some(limit) = limit.filter(|&l| held > l) {
            return Err(over_limit(&table, held, limit));
        }
        let snap: Arc<Table> = engine.target_snapshot(&statement)?;
        let rows = cols.first().map_or(0, Column::len);
        let shaped = shape_for_table(&snap, &columns, Batch::new(cols, rows))?;
        engine.store_rows(run, &statement, &snap, shaped)
    }

    fn bad_data(&self, e: IoError) -> SqlError {
        malformed(&self.table, e)
    }
}

/// The error of a COPY whose rows outgrew `limit` bytes.
fn over_limit(table: &str, held: usize, limit: usize) -> SqlError {
    SqlError::ResourcesExhausted(format!(
        "COPY {table} FROM STDIN: the rows hold {held} bytes, over this statement's memory limit of {limit} \
         (the server's --query-memory-mb); nothing was stored: send them in smaller COPYs"
    ))
}

/// A decoding error as the statement's error, named as PostgreSQL names it (`COPY t, line 3,
/// column n: ...`).
fn malformed(table: &str, e: IoError) -> SqlError {
    let reason = match e {
        IoError::BadValue { row, column, message } => format!("line {row}, column {column}: {message}"),
        IoError::BadRow { row, message } => format!("line {row}: {message}"),
        e => e.to_string(),
    };
    SqlError::File { path: format!("COPY {table}"), problem: FileProblem::Malformed, reason }
}
