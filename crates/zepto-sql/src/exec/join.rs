//! Joins. Equality keys → hash join (build on the right input: a bucket head array plus a
//! `next` chain per row, so building allocates two flat vectors and nothing per row); other
//! conditions → a block nested loop. Residual conditions are applied to candidate pairs before
//! outer-join padding, so LEFT/RIGHT/FULL keep SQL semantics.

use super::eval::eval;
use super::hash::{eq_at, hash_rows};
use super::{mask_indices, Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::parser::ast::JoinKind;
use crate::plan::BExpr;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::Column;

/// Most candidate pairs one nested-loop block materializes.
const BLOCK_PAIRS: usize = 1 << 20;
/// Refuse joins whose output would exceed this many rows.
const MAX_OUTPUT_ROWS: usize = 1 << 31;

pub fn join(
    ctx: &ExecContext,
    l: &Batch,
    r: &Batch,
    kind: JoinKind,
    lk: &[BExpr],
    rk: &[BExpr],
    residual: Option<&BExpr>,
) -> Result<Batch> {
    let (mut li, mut ri) = if lk.is_empty() {
        nested_loop(ctx, l, r, residual)?
    } else {
        let (li, ri) = hash_pairs(ctx, l, r, lk, rk)?;
        filter_pairs(ctx, l, r, li, ri, residual)?
    };
    if matches!(kind, JoinKind::Left | JoinKind::Full) {
        let mut hit = vec![false; l.rows];
        li.iter().for_each(|&i| hit[i as usize] = true);
        for (i, h) in hit.iter().enumerate() {
            if !h {
                li.push(i as u32);
                ri.push(NULL_INDEX);
            }
        }
    }
    if matches!(kind, JoinKind::Right | JoinKind::Full) {
        let mut hit = vec![false; r.rows];
        ri.iter().filter(|&&j| j != NULL_INDEX).for_each(|&j| hit[j as usize] = true);
        for (j, h) in hit.iter().enumerate() {
            if !h {
                li.push(NULL_INDEX);
                ri.push(j as u32);
            }
        }
    }
    Ok(assemble(l, r, &li, &ri))
}

fn assemble(l: &Batch, r: &Batch, li: &[u32], ri: &[u32]) -> Batch {
    let mut cols: Vec<Column> = l.columns.iter().map(|c| c.take_opt(li)).collect();
    cols.extend(r.columns.iter().map(|c| c.take_opt(ri)));
    Batch::new(cols, li.len())
}

fn hash_pairs(ctx: &ExecContext, l: &Batch, r: &Batch, lk: &[BExpr], rk: &[BExpr]) -> Result<(Vec<u32>, Vec<u32>)> {
    let lcols = lk.iter().map(|e| eval(ctx, e, l)).collect::<Result<Vec<_>>>()?;
    let rcols = rk.iter().map(|e| eval(ctx, e, r)).collect::<Result<Vec<_>>>()?;
    let lref: Vec<&Column> = lcols.iter().map(|c| &**c).collect();
    let rref: Vec<&Column> = rcols.iter().map(|c| &**c).collect();
    let lh = hash_rows(&lref, l.rows);
    let rh = hash_rows(&rref, r.rows);
    let cap = (r.rows * 2).next_power_of_two().max(16);
    let mask = cap - 1;
    let mut head = vec![NULL_INDEX; cap];
    let mut next = vec![NULL_INDEX; r.rows];
    // Insert in reverse so chains list rows in input order.
    for j in (0..r.rows).rev() {
        if rref.iter().any(|c| !c.is_valid(j)) {
            continue; // NULL keys never match
        }
        let b = (rh[j] as usize) & mask;
        next[j] = head[b];
        head[b] = j as u32;
    }
    let (mut li, mut ri) = (Vec::new(), Vec::new());
    for i in 0..l.rows {
        ctx.check_every(i, 1 << 16)?;
        if lref.iter().any(|c| !c.is_valid(i)) {
            continue;
        }
        let mut j = head[(lh[i] as usize) & mask];
        while j != NULL_INDEX {
            let ju = j as usize;
            if rh[ju] == lh[i] && lref.iter().zip(&rref).all(|(a, b)| eq_at(a, i, b, ju)) {
                li.push(i as u32);
                ri.push(j);
                if li.len() > MAX_OUTPUT_ROWS {
                    return Err(SqlError::ResourcesExhausted(format!(
                        "join produces more than {MAX_OUTPUT_ROWS} rows"
                    )));
                }
            }
            j = next[ju];
        }
    }
    Ok((li, ri))
}

fn filter_pairs(
    ctx: &ExecContext,
    l: &Batch,
    r: &Batch,
    li: Vec<u32>,
    ri: Vec<u32>,
    residual: Option<&BExpr>,
) -> Result<(Vec<u32>, Vec<u32>)> {
    let Some(pred) = residual else {
        return Ok((li, ri));
    };
    let joined = assemble(l, r, &li, &ri);
    let m = eval(ctx, pred, &joined)?;
    let keep = mask_indices(&m);
    Ok((keep.iter().map(|&k| li[k as usize]).collect(), keep.iter().map(|&k| ri[k as usize]).collect()))
}

fn nested_loop(ctx: &ExecContext, l: &Batch, r: &Batch, residual: Option<&BExpr>) -> Result<(Vec<u32>, Vec<u32>)> {
    if l.rows.saturating_mul(r.rows) > MAX_OUTPUT_ROWS && residual.is_none() {
        return Err(SqlError::ResourcesExhausted(format!("cross join of {} x {} rows is too large", l.rows, r.rows)));
    }
    let (mut li, mut ri) = (Vec::new(), Vec::new());
    if r.rows == 0 {
        return Ok((li, ri));
    }
    let block = (BLOCK_PAIRS / r.rows).max(1);
    let mut start = 0;
    while start < l.rows {
        ctx.check()?;
        let end = (start + block).min(l.rows);
        let mut bl = Vec::with_capacity((end - start) * r.rows);
        let mut br = Vec::with_capacity((end - start) * r.rows);
        for i in start..end {
            for j in 0..r.rows {
                bl.push(i as u32);
                br.push(j as u32);
            }
        }
        let (fl, fr) = filter_pairs(ctx, l, r, bl, br, residual)?;
        li.extend(fl);
        ri.extend(fr);
        if li.len() > MAX_OUTPUT_ROWS {
            return Err(SqlError::ResourcesExhausted(format!("join produces more than {MAX_OUTPUT_ROWS} rows")));
        }
        start = end;
    }
    Ok((li, ri))
}
