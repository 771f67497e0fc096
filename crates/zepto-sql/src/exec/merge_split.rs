//! Partial aggregate states merged per group on every core.
//!
//! Partials merge by hashing their keys ([`super::exchange::merge_states`]), on one thread.
//! When partials hardly shrink the rows (keys of many distinct values: prices, order ids),
//! that one hash is most of the query. Rows of one group share their keys' hash, so the rows
//! cut by the hash's top bits are parts that share no group: each part merges on a core of its
//! own, and the parts' groups together are the groups. A row keeps its order inside its part,
//! so `first`/`last` ties still go to the earlier / later partial.

use super::exchange::merge_states;
use super::hash::hash_rows;
use super::{concat_chunks, Batch, ExecContext};
use crate::error::Result;
use crate::plan::AggCall;
use zepto_storage::Column;

/// Parts the rows are cut into: a few per core, so a part with more groups than the others
/// does not hold the rest back.
const PARTS_LOG2: u32 = 3;

/// The merge of partial states (`keys` and each aggregate's `states`, `rows` rows) per group:
/// cut by hash on every core from the context's parallel threshold on, else (or on one core)
/// in one piece.
/// Groups come part by part (first appearance within a part).
pub(super) fn merge_on_cores(
    ctx: &ExecContext,
    keys: &[&Column],
    states: &[Vec<&Column>],
    aggs: &[AggCall],
    rows: usize,
) -> Result<Batch> {
    let serial = zepto_storage::par::threads() < 2 || rows < ctx.run_context().parallel_min_rows().max(2);
    if keys.is_empty() || serial {
        return merge_states(keys, states, aggs, rows);
    }
    let mut parts: Vec<Vec<u32>> = vec![Vec::new(); 1 << PARTS_LOG2];
    for (i, h) in hash_rows(keys, rows).into_iter().enumerate() {
        parts[(h >> (64 - PARTS_LOG2)) as usize].push(i as u32);
    }
    parts.retain(|p| !p.is_empty());
    let merged = ctx.par_map(&parts, rows, |_, idx| {
        let k: Vec<Column> = keys.iter().map(|c| c.take(idx)).collect();
        let s: Vec<Vec<Column>> = states.iter().map(|st| st.iter().map(|c| c.take(idx)).collect()).collect();
        let s_refs: Vec<Vec<&Column>> = s.iter().map(|st| st.iter().collect()).collect();
        merge_states(&k.iter().collect::<Vec<_>>(), &s_refs, aggs, idx.len())
    })?;
    Ok(concat_chunks(merged))
}
