//! `LATEST ON ts PARTITION BY keys`: the last row of every key.
//!
//! When the key is the table's partition key and `ts` its designated timestamp, every
//! partition is one key and is sorted by `ts`, so the answer is read from partition tails:
//! one row per partition, no scan (with a WHERE filter, each partition is searched from its
//! end). Otherwise rows are grouped by hashing and the greatest `ts` per group is kept.
//! Rows with a NULL `ts` are never the latest. Output is in `ts` order.

use super::eval::eval;
use super::hash::group_ids;
use super::scan::{piece_batch, pieces};
use super::sort::value_cmp;
use super::{execute, Batch};
use crate::error::Result;
use crate::plan::{BExpr, Plan, ScanRange};
use std::cmp::Ordering;
use std::sync::Arc;
use zepto_storage::{Column, Table};

type Tail<'a> = (&'a Arc<Table>, &'a [usize], &'a ScanRange, Option<&'a BExpr>);

/// The partition-tail shape: a scan (optionally filtered) keyed by its partition key and
/// ordered by its designated timestamp.
pub fn tail_shape<'a>(input: &'a Plan, keys: &[BExpr], ts: &BExpr) -> Option<Tail<'a>> {
    let (scan, pred) = match input {
        Plan::Filter { input, pred } => (&**input, Some(pred)),
        p => (p, None),
    };
    let Plan::Scan { table, columns, range } = scan else { return None };
    let (Some(kc), Some(tc)) = (table.key_col, table.ts_col) else { return None };
    match (keys, ts) {
        ([BExpr::Col(k, _)], BExpr::Col(t, _)) if columns.get(*k) == Some(&kc) && columns.get(*t) == Some(&tc) => {
            Some((table, columns, range, pred))
        }
        _ => None,
    }
}

pub fn latest(input: &Plan, keys: &[BExpr], ts: &BExpr) -> Result<Batch> {
    if let Some((table, columns, range, pred)) = tail_shape(input, keys, ts) {
        let ps = pieces(table, range);
        if ps.iter().all(|p| p.part.sorted) {
            let mut picks: Vec<Batch> = Vec::new();
            for p in &ps {
                let b = piece_batch(table, p, columns, range);
                let tcol = eval(ts, &b)?;
                let mask = pred.map(|e| eval(e, &b)).transpose()?;
                let hit = (0..b.rows).rev().find(|&i| {
                    tcol.is_valid(i)
                        && mask
                            .as_ref()
                            .is_none_or(|m| m.is_valid(i) && matches!(m.get(i), zepto_storage::Value::Bool(true)))
                });
                if let Some(i) = hit {
                    picks.push(b.take(&[i as u32]));
                }
            }
            return Ok(in_ts_order(concat(picks, columns.len(), table, columns), ts));
        }
    }
    let b = execute(input)?;
    let kcols = keys.iter().map(|k| eval(k, &b)).collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Column> = kcols.iter().map(|c| &**c).collect();
    let tcol = eval(ts, &b)?;
    let cmp = value_cmp(&tcol);
    let groups = group_ids(&refs, b.rows);
    let mut best: Vec<Option<usize>> = vec![None; groups.first.len()];
    for (i, &g) in groups.ids.iter().enumerate() {
        if !tcol.is_valid(i) {
            continue;
        }
        let slot = &mut best[g as usize];
        if slot.is_none_or(|j| cmp(i, j) != Ordering::Less) {
            *slot = Some(i);
        }
    }
    let idx: Vec<u32> = best.into_iter().flatten().map(|i| i as u32).collect();
    Ok(in_ts_order(b.take(&idx), ts))
}

fn concat(parts: Vec<Batch>, width: usize, table: &Table, columns: &[usize]) -> Batch {
    let rows = parts.iter().map(|b| b.rows).sum();
    let cols = (0..width)
        .map(|j| {
            if parts.is_empty() {
                return Column::nulls(table.schema.columns[columns[j]].data_type, 0);
            }
            let refs: Vec<&Column> = parts.iter().map(|b| &*b.columns[j]).collect();
            Column::concat(&refs)
        })
        .collect();
    Batch::new(cols, rows)
}

/// Stable sort of the (few) latest rows by `ts`.
fn in_ts_order(b: Batch, ts: &BExpr) -> Batch {
    let idx = {
        let Ok(t) = eval(ts, &b) else { return b };
        let cmp = value_cmp(&t);
        let mut idx: Vec<u32> = (0..b.rows as u32).collect();
        idx.sort_by(|&x, &y| cmp(x as usize, y as usize));
        idx
    };
    b.take(&idx)
}
