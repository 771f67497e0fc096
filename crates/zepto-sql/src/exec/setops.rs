//! UNION / INTERSECT / EXCEPT, with and without ALL (multiset semantics for ALL).

use super::hash::{group_ids, GroupIds};
use super::Batch;
use crate::error::Result;
use crate::parser::ast::SetOp;
use zepto_storage::Column;

fn concat(l: &Batch, r: &Batch) -> Batch {
    let cols = l.columns.iter().zip(&r.columns).map(|(a, b)| Column::concat(&[a, b])).collect();
    Batch::new(cols, l.rows + r.rows)
}

pub fn set_op(op: SetOp, all: bool, l: Batch, r: Batch) -> Result<Batch> {
    let both = concat(&l, &r);
    if op == SetOp::Union && all {
        return Ok(both);
    }
    let cols: Vec<&Column> = both.col_refs();
    let GroupIds { ids, first } = if cols.is_empty() {
        GroupIds { ids: vec![0; both.rows], first: if both.rows > 0 { vec![0] } else { vec![] } }
    } else {
        group_ids(&cols, both.rows)
    };
    let g = first.len();
    let (mut cl, mut cr) = (vec![0usize; g], vec![0usize; g]);
    for (i, &id) in ids.iter().enumerate() {
        if i < l.rows {
            cl[id as usize] += 1;
        } else {
            cr[id as usize] += 1;
        }
    }
    let keep: Vec<u32> = match (op, all) {
        (SetOp::Union, _) => first.clone(),
        (SetOp::Intersect, false) => {
            first.iter().enumerate().filter(|(k, _)| cl[*k] > 0 && cr[*k] > 0).map(|(_, &f)| f).collect()
        }
        (SetOp::Except, false) => {
            first.iter().enumerate().filter(|(k, _)| cl[*k] > 0 && cr[*k] == 0).map(|(_, &f)| f).collect()
        }
        (SetOp::Intersect, true) | (SetOp::Except, true) => {
            // Emit left rows while the group's quota lasts.
            let mut quota: Vec<usize> = (0..g)
                .map(|k| if op == SetOp::Intersect { cl[k].min(cr[k]) } else { cl[k].saturating_sub(cr[k]) })
                .collect();
            let mut out = Vec::new();
            for (i, &id) in ids.iter().enumerate().take(l.rows) {
                if quota[id as usize] > 0 {
                    quota[id as usize] -= 1;
                    out.push(i as u32);
                }
            }
            out
        }
    };
    Ok(super::hash::keys_take(&both, &keep))
}
