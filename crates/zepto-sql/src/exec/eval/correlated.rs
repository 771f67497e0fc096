//! Correlated subqueries: for each distinct tuple of outer values, substitute them into the
//! subquery, plan and run it once (results cached per tuple).

use super::eval;
use crate::error::{Result, SqlError};
use crate::exec::{execute, Batch, ExecContext, Executor};
use crate::plan::binder::{substitute, Binder};
use crate::plan::{BExpr, Correlated, SubqueryKind};
use std::collections::HashMap;
use std::sync::Arc;
use zepto_storage::{Bitmap, Column, ColumnBuilder, ColumnData, DataType, Value};

struct Outcome {
    first: Vec<Value>,
    rows: usize,
}

fn value_eq(a: &Value, b: &Value) -> Option<bool> {
    if a.is_null() || b.is_null() {
        return None;
    }
    Some(match (a, b) {
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Timestamp(x), Value::Timestamp(y)) => x == y,
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    })
}

pub fn eval_correlated(ctx: &ExecContext, sub: &Correlated, lhs: Option<&BExpr>, b: &Batch) -> Result<Column> {
    let n = b.rows;
    let cols: Vec<&Column> = sub
        .refs
        .iter()
        .map(|r| {
            b.columns.get(r.col).map(|c| &**c).ok_or_else(|| SqlError::Internal("outer reference out of range".into()))
        })
        .collect::<Result<_>>()?;
    let lhs = lhs.map(|e| eval(ctx, e, b)).transpose()?;
    let run = ctx.run_context();
    let mut cache: HashMap<String, Outcome> = HashMap::new();
    let ty = match sub.kind {
        SubqueryKind::Scalar => sub.sub_ty,
        _ => DataType::Bool,
    };
    let mut out = ColumnBuilder::new(ty, n);
    for i in 0..n {
        let vals: Vec<Value> = cols.iter().map(|c| c.get(i)).collect();
        let key = format!("{vals:?}");
        if !cache.contains_key(&key) {
            let q = substitute(&sub.query, &sub.refs, Some(&vals));
            let mut binder =
                Binder::new(sub.catalog.catalog.clone(), sub.catalog.access.clone(), Arc::new(Executor), run)
                    .at(sub.catalog.now)
                    .in_txn(sub.catalog.txn.clone())
                    .naming(sub.catalog.names);
            let (plan, _) = binder.bind_query(&q)?;
            let r = execute(run, &crate::plan::physical::plan(crate::plan::optimizer::optimize(plan), run)?)?;
            let first = match sub.kind {
                SubqueryKind::Exists { .. } => Vec::new(),
                _ => r.columns.first().map(|c| (0..c.len()).map(|k| c.get(k)).collect()).unwrap_or_default(),
            };
            cache.insert(key.clone(), Outcome { first, rows: r.rows });
        }
        let o = &cache[&key];
        match sub.kind {
            SubqueryKind::Exists { negated } => out.push_value(&Value::Bool((o.rows > 0) != negated))?,
            SubqueryKind::Scalar => {
                if o.rows > 1 {
                    return Err(SqlError::exec("more than one row returned by a subquery used as an expression"));
                }
                out.push_value(o.first.first().unwrap_or(&Value::Null))?;
            }
            SubqueryKind::In { negated } => {
                let x = lhs.as_ref().map_or(Value::Null, |c| c.get(i));
                let mut res = Some(false);
                if !o.first.is_empty() {
                    let mut saw_null = false;
                    let mut hit = false;
                    for v in &o.first {
                        match value_eq(&x, v) {
                            Some(true) => hit = true,
                            Some(false) => {}
                            None => saw_null = true,
                        }
                    }
                    res = if hit {
                        Some(true)
                    } else if saw_null {
                        None
                    } else {
                        Some(false)
                    };
                }
                match res {
                    Some(v) => out.push_value(&Value::Bool(v != negated))?,
                    None => out.push_null(),
                }
            }
        }
    }
    let c = out.finish();
    // Builders of Null type have no values: make sure a scalar of unknown type still has rows.
    if c.len() != n {
        return Ok(Column::new(ColumnData::Null(n), None::<Bitmap>));
    }
    Ok(c)
}
