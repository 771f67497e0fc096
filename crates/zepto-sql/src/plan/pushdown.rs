//! Filter pushdown into scans: `key = 'X'` / `key IN (...)` select partitions, comparisons of
//! the designated timestamp with constants become a binary-searched range. What a scan enforces
//! exactly is removed from the residual filter.

use super::{BExpr, ScanRange};
use crate::parser::ast::BinaryOp;
use zepto_storage::{DataType, Value};

/// Split a predicate into its AND-ed conjuncts.
pub fn conjuncts(e: BExpr, out: &mut Vec<BExpr>) {
    match e {
        BExpr::Binary { op: BinaryOp::And, left, right, .. } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        e => out.push(e),
    }
}

pub fn and_all(mut v: Vec<BExpr>) -> Option<BExpr> {
    let first = v.pop()?;
    Some(v.into_iter().rev().fold(first, |acc, e| BExpr::Binary {
        op: BinaryOp::And,
        left: Box::new(e),
        right: Box::new(acc),
        ty: DataType::Bool,
    }))
}

/// Take the conjuncts a scan can enforce (`key_col`, `ts_col` are scan output positions).
/// Returns the range and the remaining conjuncts.
pub fn extract(preds: Vec<BExpr>, key_col: Option<usize>, ts_col: Option<usize>) -> (ScanRange, Vec<BExpr>) {
    let mut range = ScanRange::default();
    let mut rest = Vec::new();
    for p in preds {
        if !absorb(&p, key_col, ts_col, &mut range) {
            rest.push(p);
        }
    }
    (range, rest)
}

fn absorb(p: &BExpr, key_col: Option<usize>, ts_col: Option<usize>, r: &mut ScanRange) -> bool {
    match p {
        BExpr::Binary { op, left, right, .. } if op.is_comparison() => {
            let (col, op, v) = match (&**left, &**right) {
                (BExpr::Col(c, _), BExpr::Lit(v, _)) => (*c, *op, v),
                (BExpr::Lit(v, _), BExpr::Col(c, _)) => (*c, op.flip(), v),
                _ => return false,
            };
            if Some(col) == key_col && op == BinaryOp::Eq {
                if let Value::Str(s) = v {
                    intersect_keys(r, vec![s.clone()]);
                    return true;
                }
                if v.is_null() {
                    intersect_keys(r, vec![]);
                    return true;
                }
            }
            if Some(col) == ts_col {
                let t = match v {
                    Value::Timestamp(t) => *t,
                    Value::Null => {
                        // Comparison with NULL is never true.
                        r.ts_lo = i64::MAX;
                        r.ts_hi = i64::MIN;
                        return true;
                    }
                    _ => return false,
                };
                match op {
                    BinaryOp::Eq => {
                        r.ts_lo = r.ts_lo.max(t);
                        r.ts_hi = r.ts_hi.min(t);
                    }
                    BinaryOp::Gt => match t.checked_add(1) {
                        Some(t1) => r.ts_lo = r.ts_lo.max(t1),
                        None => r.ts_lo = i64::MAX,
                    },
                    BinaryOp::GtEq => r.ts_lo = r.ts_lo.max(t),
                    BinaryOp::Lt => match t.checked_sub(1) {
                        Some(t1) => r.ts_hi = r.ts_hi.min(t1),
                        None => r.ts_hi = i64::MIN,
                    },
                    BinaryOp::LtEq => r.ts_hi = r.ts_hi.min(t),
                    _ => return false,
                }
                return true;
            }
            false
        }
        BExpr::InList { expr, list, negated: false } => {
            let BExpr::Col(c, _) = **expr else {
                return false;
            };
            if Some(c) != key_col {
                return false;
            }
            let mut keys = Vec::new();
            for item in list {
                match item {
                    BExpr::Lit(Value::Str(s), _) => keys.push(s.clone()),
                    BExpr::Lit(Value::Null, _) => {}
                    _ => return false,
                }
            }
            intersect_keys(r, keys);
            true
        }
        _ => false,
    }
}

fn intersect_keys(r: &mut ScanRange, mut keys: Vec<String>) {
    keys.sort_unstable();
    keys.dedup();
    r.keys = Some(match r.keys.take() {
        None => keys,
        Some(old) => old.into_iter().filter(|k| keys.contains(k)).collect(),
    });
}
