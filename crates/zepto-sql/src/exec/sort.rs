//! ORDER BY: typed row comparators (NULLs placed per key, DESC reversing only values), a stable
//! full sort, and a partial selection for ORDER BY ... LIMIT k (top-N).

use super::cmp::{key_cmp, RowCmp};
use super::eval::eval;
use super::{Batch, ExecContext};
use crate::error::Result;
use crate::plan::SortKey;
use std::cmp::Ordering;

/// The rows of `b` in the order of `keys`, the first `limit` of them when there is one.
pub fn sorted(ctx: &ExecContext, b: Batch, keys: &[SortKey], limit: Option<usize>) -> Result<Batch> {
    let perm = sort_indices(ctx, &b, keys, limit)?;
    Ok(b.take(&perm))
}

/// The row order of `b` by `keys` (stable): all rows, or only the first `limit` in order (top-N).
pub fn sort_indices(ctx: &ExecContext, b: &Batch, keys: &[SortKey], limit: Option<usize>) -> Result<Vec<u32>> {
    let cols = keys.iter().map(|k| eval(ctx, &k.expr, b)).collect::<Result<Vec<_>>>()?;
    let cmps: Vec<RowCmp> = cols.iter().zip(keys).map(|(c, k)| key_cmp(c, k.desc, k.nulls_first)).collect();
    let cmp = |a: &u32, b: &u32| {
        for c in &cmps {
            let o = c(*a as usize, *b as usize);
            if o != Ordering::Equal {
                return o;
            }
        }
        a.cmp(b)
    };
    let mut idx: Vec<u32> = (0..b.rows as u32).collect();
    match limit {
        Some(k) if k < idx.len() => {
            if k == 0 {
                return Ok(Vec::new());
            }
            idx.select_nth_unstable_by(k - 1, cmp);
            idx.truncate(k);
            idx.sort_unstable_by(cmp);
        }
        _ => idx.sort_unstable_by(cmp),
    }
    Ok(idx)
}
