//! A `/write` batch checked as if it were stored, without storing anything: a cluster node
//! checks a batch against its schemas and the caller's rights before it produces the batch
//! to Kafka, so a batch Kafka acknowledged is one the nodes will store (`zepto-cluster`).
//! The check also says how to route the rows: each row's partition key.

use super::{decode_lines, decode_table, Coding, IngestFormat, WriteRequest};
use crate::auth::Principal;
use crate::error::ApiError;
use zepto_sql::Engine;
use zepto_storage::table::default_partition_key;
use zepto_storage::Column;

/// One line of a line-protocol batch that passed the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedLine {
    /// Its 1-based line number in the body.
    pub line: usize,
    /// The value of its table's partition key (empty when the line has none).
    pub key: String,
    /// Whether the line carries its own timestamp (a line without one is stamped with the
    /// server's clock when stored).
    pub timestamped: bool,
    /// Its bytes in the body (its text without the line end; binary values whole).
    pub span: std::ops::Range<usize>,
}

/// What a batch would store.
#[derive(Debug)]
pub enum Checked {
    /// Line protocol: every point, in line order.
    Lines(Vec<CheckedLine>),
    /// CSV, JSONL or Arrow: the table, its columns' names, the decoded columns, and each row's
    /// routing key ([`zepto_sql::plan::dist::routing_key`]: its partition key, `""` without one).
    Rows {
        /// The table written.
        table: String,
        /// Its columns' names, in order.
        names: Vec<String>,
        /// The rows, one column per name.
        columns: Vec<Column>,
        /// Each row's partition key.
        keys: Vec<String>,
    },
}

/// `body` checked as [`super::write`] would store it for `who`, with nothing stored.
pub fn check(engine: &Engine, who: &Principal, req: &WriteRequest, body: &[u8]) -> Result<Checked, ApiError> {
    let catalog = engine.catalog();
    if req.format != IngestFormat::Ilp {
        let (table, snap, columns) = decode_table(catalog, who, req.format, req.table.as_deref(), body, Coding::Own)?;
        let keys = zepto_sql::plan::dist::routing_keys(&snap, &columns);
        let names = snap.schema().columns.iter().map(|c| c.name.clone()).collect();
        return Ok(Checked::Rows { table, names, columns, keys });
    }
    let (plans, at) = decode_lines(catalog, who, req, body, true)?;
    // Each table's partition key: its own, or for a table the batch creates, the one it will get.
    let keys: Vec<Option<usize>> = plans
        .iter()
        .map(|plan| {
            let name = match catalog.layout(&plan.name) {
                Ok(t) => t.key_col.and_then(|k| t.schema.columns.get(k)).map(|c| c.name.clone()),
                Err(_) => default_partition_key(&plan.defs).and_then(|k| plan.defs.get(k)).map(|d| d.name.clone()),
            };
            name.and_then(|n| plan.defs.iter().position(|d| d.name.eq_ignore_ascii_case(&n)))
        })
        .collect();
    let mut lines = Vec::with_capacity(at.len());
    for l in at {
        let column = plans.get(l.table).zip(keys.get(l.table).copied().flatten()).and_then(|(p, k)| p.cols.get(k));
        let value = column.filter(|c| c.is_valid(l.row)).map(|c| c.get(l.row).to_string());
        lines.push(CheckedLine {
            line: l.line,
            key: zepto_sql::plan::dist::routing_key(value.as_deref()).to_string(),
            timestamped: l.timestamped,
            span: l.span,
        });
    }
    lines.sort_by_key(|l| l.line);
    Ok(Checked::Lines(lines))
}
