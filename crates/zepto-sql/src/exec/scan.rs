//! Table scans: pick partitions by key, cut each to the time range by binary search, gather the
//! requested columns. A scan of one whole partition copies nothing but the selected columns.

use super::Batch;
use crate::error::Result;
use crate::plan::ScanRange;
use std::sync::Arc;
use zepto_storage::{Column, Partition, Table};

pub fn scan(table: &Table, columns: &[usize], range: &ScanRange) -> Result<Batch> {
    let parts: Vec<&Arc<Partition>> = match &range.keys {
        None => table.partitions().iter().collect(),
        Some(keys) => match table.key_col {
            Some(_) => keys
                .iter()
                .filter_map(|k| table.dict().code(k))
                .filter_map(|c| table.partition_for_code(c))
                .collect(),
            None => table.partitions().iter().collect(),
        },
    };
    let mut pieces: Vec<(&Partition, std::ops::Range<usize>)> = Vec::with_capacity(parts.len());
    let ts_bounded = range.ts_lo != i64::MIN || range.ts_hi != i64::MAX;
    for p in parts {
        let r = match (table.ts_col, ts_bounded) {
            (Some(t), true) if p.sorted => p.ts_range(t, range.ts_lo, range.ts_hi),
            _ => 0..p.len(),
        };
        if !r.is_empty() {
            pieces.push((p, r));
        }
    }
    let mut rows: usize = pieces.iter().map(|(_, r)| r.len()).sum();
    let mut cols = Vec::with_capacity(columns.len());
    for &c in columns {
        let parts: Vec<Column> = pieces
            .iter()
            .map(|(p, r)| {
                if r.start == 0 && r.end == p.len() {
                    p.columns[c].clone()
                } else {
                    p.columns[c].slice(r.start, r.len())
                }
            })
            .collect();
        let col = match parts.len() {
            1 => parts
                .into_iter()
                .next()
                .unwrap_or_else(|| Column::nulls(table.schema.columns[c].data_type, 0)),
            _ if parts.is_empty() => Column::nulls(table.schema.columns[c].data_type, 0),
            _ => {
                let refs: Vec<&Column> = parts.iter().collect();
                Column::concat(&refs)
            }
        };
        cols.push(col);
    }
    // A scan whose key filter named no partition, or whose rows all fell outside the range.
    if cols.is_empty() {
        rows = pieces.iter().map(|(_, r)| r.len()).sum();
    }
    let mut batch = Batch::new(cols, rows);
    // Unsorted partitions (never produced by our writers, but never assumed): filter exactly.
    if ts_bounded && pieces.iter().any(|(p, _)| !p.sorted) {
        if let Some(t) = table
            .ts_col
            .and_then(|t| columns.iter().position(|&c| c == t))
        {
            let ts = &batch.columns[t];
            let keep: Vec<u32> = (0..batch.rows)
                .filter(|&i| {
                    ts.is_valid(i)
                        && ts
                            .as_i64_slice()
                            .is_some_and(|v| v[i] >= range.ts_lo && v[i] <= range.ts_hi)
                })
                .map(|i| i as u32)
                .collect();
            batch = batch.take(&keep);
        }
    }
    Ok(batch)
}
