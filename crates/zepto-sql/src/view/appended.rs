//! A scan and its filters over one appended batch instead of a table: what a view's upkeep
//! and a subscription run per write. The batch is the table's columns in schema order, as
//! the write logged them; the scan's keys and time range and its filters are applied as the
//! table's scan would.

use crate::error::Result;
use crate::eval::{mask_indices, Batch};
use crate::exec::ExecContext;
use crate::interrupt::RunContext;
use crate::plan::{BExpr, ScanRange};
use std::sync::Arc;
use zepto_storage::{Column, DataType, Schema};

/// A table's scan (its layout, the columns read, the range) and the filters above it.
pub(crate) struct AppendedScan {
    pub schema: Schema,
    pub key_col: Option<usize>,
    pub ts_col: Option<usize>,
    pub columns: Vec<usize>,
    pub range: ScanRange,
    pub filters: Vec<BExpr>,
}

impl AppendedScan {
    /// A scan of `columns` of `table` over `range`, under `filters` (over the scan's columns):
    /// the table's layout is kept, its rows are not.
    pub fn over(
        table: &zepto_storage::Table,
        columns: Vec<usize>,
        range: ScanRange,
        filters: Vec<BExpr>,
    ) -> AppendedScan {
        AppendedScan {
            schema: table.schema().clone(),
            key_col: table.key_col(),
            ts_col: table.ts_col(),
            columns,
            range,
            filters,
        }
    }

    /// The rows of `columns` (an appended batch) the scan and its filters keep, as the
    /// scan's columns; `None` when none is kept.
    pub fn rows(&self, columns: &[Column]) -> Result<Option<Batch>> {
        if columns.len() < self.schema.len() {
            return Err(crate::error::SqlError::Execution("a batch narrower than its table".into()));
        }
        let n = columns.first().map_or(0, Column::len);
        let keep = self.in_range(columns, n);
        let rows = keep.as_ref().map_or(n, Vec::len);
        if rows == 0 {
            return Ok(None);
        }
        let cols = self
            .columns
            .iter()
            .map(|&c| {
                let col = keep.as_ref().map_or_else(|| columns[c].clone(), |k| columns[c].take(k));
                typed(col, self.schema.columns[c].data_type).map(Arc::new)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut b = Batch::shared(cols, rows);
        let ctx = ExecContext::new(&RunContext::unlimited());
        for f in &self.filters {
            let m = crate::exec::eval::eval(&ctx, f, &b)?;
            let idx = mask_indices(&m);
            if idx.len() != b.rows {
                b = b.take(&idx);
            }
        }
        Ok((b.rows > 0).then_some(b))
    }

    /// The rows of the batch in the scan's keys and time range (`None`: all of them).
    fn in_range(&self, columns: &[Column], n: usize) -> Option<Vec<u32>> {
        let r = &self.range;
        let keys = r.keys.as_ref().zip(self.key_col);
        let ts = self.ts_col.filter(|_| r.ts_lo != i64::MIN || r.ts_hi != i64::MAX);
        if keys.is_none() && ts.is_none() {
            return None;
        }
        let ts_vals = ts.and_then(|t| columns[t].as_i64_slice());
        let keep = |i: usize| {
            let key_ok = keys.is_none_or(|(ks, k)| match columns[k].str_at(i) {
                Some(s) => ks.iter().any(|x| x == s),
                None => r.null_key,
            });
            let ts_ok = ts
                .is_none_or(|t| columns[t].is_valid(i) && ts_vals.is_some_and(|v| v[i] >= r.ts_lo && v[i] <= r.ts_hi));
            key_ok && ts_ok
        };
        Some((0..n).filter(|&i| keep(i)).map(|i| i as u32).collect())
    }
}

/// A column as the table's type says: an all-NULL batch column typed, a string column of
/// the other string type converted.
pub(crate) fn typed(c: Column, want: DataType) -> Result<Column> {
    let have = c.data_type();
    if have == want {
        return Ok(c);
    }
    if have == DataType::Null {
        return Ok(Column::nulls(want, c.len()));
    }
    crate::eval::cast::cast_column(&c, want, false)
}
