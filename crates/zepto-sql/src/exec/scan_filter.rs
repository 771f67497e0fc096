//! A filter directly over a scan, run as one step: per run of units, only the columns the
//! predicate reads are copied together and the predicate evaluated over them; every other
//! column is then gathered at the kept rows alone, straight from where the rows are stored.
//!
//! Why: a scan of many small partitions (4,000 series of a few hundred rows each) copies each
//! run of them into one batch per column ([`super::scan::pieces_batch`]), and a filter that
//! keeps a tenth of the rows then copies a tenth again. For a wide table (21 columns) that was
//! every column of every row copied to keep a few: the scan was most of `SELECT * ... WHERE`'s
//! time and its peak memory was the table's size. A unit whose columns are shared as they are
//! (a whole large partition, a whole pack) is filtered as before: it costs no copy to read.
//!
//! A `Filter` directly over a `Scan` runs so whenever its predicate is row-local
//! ([`BExpr::is_row_local`]); EXPLAIN prints it on the Filter line.

use super::scan::{column_spans, mark_reads, pieces_batch, span_column, unread, ScanPart};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::BExpr;
use std::ops::Range;
use std::sync::Arc;
use zepto_storage::{Column, DataType, Table};

/// The rows of units `ps` of `table` (in `columns`, the scan's output) that `pred` keeps.
pub fn filtered_run<S: ScanPart>(
    ctx: &ExecContext,
    table: &Table,
    columns: &[usize],
    ps: &[&S],
    pred: &BExpr,
) -> Result<Batch> {
    let shared = matches!(ps, [p] if p.is_shared_whole());
    if shared || ps.is_empty() || columns.is_empty() {
        let b = pieces_batch(table, columns, ps)?;
        return Ok(b.keep(&super::eval::selection(ctx, pred, &b)?));
    }
    let mut reads = vec![false; columns.len()];
    mark_reads(pred, &mut reads);
    let rows: usize = ps.iter().map(|p| p.rows()).sum();
    let spans = column_spans(ps, columns);
    let whole = |(&j, s): (&usize, &Vec<_>)| span_column(table, j, s, ps, rows);
    // The predicate's columns whole; the others untyped NULL placeholders it never reads.
    let probe = (columns.iter().zip(&spans).zip(&reads))
        .map(|(c, &read)| if read { whole(c) } else { Ok(unread(rows)) })
        .collect::<Result<Vec<_>>>()?;
    let probe = Batch::shared(probe, rows);
    let kept = super::eval::selection(ctx, pred, &probe)?;
    let every = kept.len() == rows;
    let cols = columns
        .iter()
        .zip(&spans)
        .zip(probe.columns.iter().zip(&reads))
        .map(|(c, (probed, &read))| match (read, every) {
            (true, true) => Ok(probed.clone()),
            (true, false) => Ok(Arc::new(probed.take(&kept))),
            (false, true) => whole(c),
            (false, false) => gather_spans(table.schema().columns[*c.0].data_type, c.1, &kept).map(Arc::new),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Batch::shared(cols, kept.len()))
}

/// Rows `kept` (ascending positions in the spans' rows, one span after another) of a column
/// stored as `spans`.
fn gather_spans(dt: DataType, spans: &[(&Column, Range<usize>)], kept: &[u32]) -> Result<Column> {
    debug_assert!(kept.windows(2).all(|w| w[0] < w[1]), "kept rows ascend");
    let mut at: Vec<u32> = Vec::with_capacity(kept.len());
    let mut bounds: Vec<(&Column, Range<usize>)> = Vec::new();
    let (mut k, mut offset) = (0, 0usize);
    for (col, r) in spans {
        let end = offset + r.len();
        let from = k;
        while let Some(&i) = kept.get(k).filter(|&&i| (i as usize) < end) {
            at.push(u32::try_from(r.start + (i as usize - offset)).map_err(|e| SqlError::Internal(e.to_string()))?);
            k += 1;
        }
        if k > from {
            bounds.push((*col, from..k));
        }
        offset = end;
    }
    debug_assert_eq!(k, kept.len(), "every kept row is in a span");
    let parts: Vec<(&Column, &[u32])> = bounds.iter().map(|(c, r)| (*c, &at[r.clone()])).collect();
    Column::gather(dt, &parts).map_err(SqlError::Internal)
}
