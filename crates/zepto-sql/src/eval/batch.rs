//! Batches: columns of equal length, what expressions are evaluated over and operators pass
//! along, and the two helpers every kernel uses on them (masks to row indices, validity AND).

use std::sync::Arc;
use zepto_storage::{Bitmap, Column, ColumnData};

/// Columns of equal length. `rows` is kept separately so a batch with no columns (the input of
/// a FROM-less SELECT) still has a row count.
/// Columns are shared (`Arc`): a scan of a whole partition, a projection of a plain column
/// and a batch clone copy no data.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The columns, all `rows` long.
    pub columns: Vec<Arc<Column>>,
    /// Number of rows (meaningful even with no columns).
    pub rows: usize,
}

impl Batch {
    /// A batch of owned columns, all `rows` long (checked in debug builds).
    pub fn new(columns: Vec<Column>, rows: usize) -> Batch {
        Batch::shared(columns.into_iter().map(Arc::new).collect(), rows)
    }

    /// A batch of shared columns, all `rows` long (checked in debug builds).
    pub fn shared(columns: Vec<Arc<Column>>, rows: usize) -> Batch {
        debug_assert!(columns.iter().all(|c| c.len() == rows), "batch columns must have {rows} rows");
        Batch { columns, rows }
    }

    /// The columns as plain references.
    pub fn col_refs(&self) -> Vec<&Column> {
        self.columns.iter().map(|c| &**c).collect()
    }

    /// The rows at `idx`, in that order (repeats allowed).
    pub fn take(&self, idx: &[u32]) -> Batch {
        Batch { columns: self.columns.iter().map(|c| Arc::new(c.take(idx))).collect(), rows: idx.len() }
    }

    /// Keep rows where `mask` is true and valid.
    pub fn filter(&self, mask: &Column) -> Batch {
        let idx = mask_indices(mask);
        if idx.len() == self.rows {
            return self.clone();
        }
        self.take(&idx)
    }
}

/// Row indices where a BOOLEAN column is true (NULL counts as false).
pub fn mask_indices(mask: &Column) -> Vec<u32> {
    let ColumnData::Bool(v) = &mask.data() else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(v.len() / 4);
    match mask.validity() {
        None => out.extend(v.iter().enumerate().filter(|(_, b)| **b).map(|(i, _)| i as u32)),
        Some(bm) => out.extend((0..v.len()).filter(|&i| v[i] && bm.get(i)).map(|i| i as u32)),
    }
    out
}

/// AND of two optional validity bitmaps.
pub fn and_validity(a: Option<&Bitmap>, b: Option<&Bitmap>) -> Option<Bitmap> {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(x), Some(y)) => Some(x.and(y)),
    }
}
