//! What a statement returns: rows as batches with their schema, or a status line.

use crate::exec::{self, Batch};
use crate::plan::Field;
use zepto_storage::{Column, DataType, Value};

/// What a statement returns: rows (possibly none) with their schema, or a status message.
///
/// The rows are a list of batches of the same columns, one after another (at least one): a
/// result made of whole table partitions shares their columns instead of copying them into
/// one (see [`exec::execute_chunks`]). [`QueryResult::batch`] gives them as one batch.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// The result's columns (names and types); empty for a status result.
    pub fields: Vec<Field>,
    chunks: Vec<Batch>,
    /// For DDL/DML: what happened (`CREATE TABLE`, `INSERT 3`, ...).
    pub status: Option<String>,
    /// On a cluster node under `allow_partial`: the partitions whose rows the answer lacks
    /// (empty for a whole answer).
    pub missing_partitions: Vec<i32>,
}

impl QueryResult {
    /// A DDL/DML result: a status message, no rows.
    pub fn status(msg: String) -> QueryResult {
        QueryResult {
            fields: vec![],
            chunks: vec![Batch::default()],
            status: Some(msg),
            missing_partitions: Vec::new(),
        }
    }

    /// Rows as one batch.
    pub fn rows(fields: Vec<Field>, batch: Batch) -> QueryResult {
        QueryResult { fields, chunks: vec![batch], status: None, missing_partitions: Vec::new() }
    }

    pub(crate) fn chunked(fields: Vec<Field>, chunks: Vec<Batch>) -> QueryResult {
        assert!(!chunks.is_empty(), "a result has at least one batch (it carries the column types)");
        QueryResult { fields, chunks, status: None, missing_partitions: Vec::new() }
    }

    /// The result, lacking the rows of partitions `missing` (see [`QueryResult::missing_partitions`]).
    pub(crate) fn lacking(mut self, missing: Vec<i32>) -> QueryResult {
        self.missing_partitions = missing;
        self
    }

    /// Rows in all batches.
    pub fn row_count(&self) -> usize {
        self.chunks.iter().map(|b| b.rows).sum()
    }

    /// The rows as batches one after another, as the query produced them.
    pub fn chunks(&self) -> &[Batch] {
        &self.chunks
    }

    /// The rows as one batch (shared when the result is one batch, else concatenated).
    pub fn batch(&self) -> Batch {
        exec::concat_chunks(self.chunks.clone())
    }

    /// The rows as one batch, consuming the result.
    pub fn into_batch(self) -> Batch {
        exec::concat_chunks(self.chunks)
    }

    pub(crate) fn text_column(name: &str, values: Vec<String>) -> QueryResult {
        let n = values.len();
        let col = Column::from_data(zepto_storage::ColumnData::Varchar(values.iter().map(String::as_str).collect()));
        QueryResult::rows(vec![field(name, DataType::Varchar)], Batch::new(vec![col], n))
    }
}

pub(crate) fn field(name: &str, t: DataType) -> Field {
    Field::new(name, t)
}

/// Scalar value of the first row/column (convenience for tests and the CLI).
pub fn first_value(r: &QueryResult) -> Option<Value> {
    let b = r.chunks.iter().find(|b| b.rows > 0)?;
    b.columns.first().map(|c| c.get(0))
}
