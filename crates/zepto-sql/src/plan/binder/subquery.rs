//! Subqueries planned by the binder: the [`SubqueryRunner`] the expression binder calls (an
//! uncorrelated subquery run once and made a constant, a correlated one planned with its outer
//! references), and the outer references put back into a query as values.

use super::*;
use crate::error::{Pos, Result, SqlError};
use crate::parser::ast::*;
use crate::plan::bind_expr::{resolve, SubPlan, SubqueryRunner};
use crate::plan::{BExpr, Field, OuterRef};
use zepto_storage::{DataType, Value};

impl SubqueryRunner for Binder {
    fn statement_time(&self) -> i64 {
        self.now
    }

    fn catalog_function(&self, name: &str, args: Vec<BExpr>, pos: Pos) -> Result<Option<BExpr>> {
        let ctx = self.catalog_context();
        crate::plan::catalog_functions::bind(name, args, &ctx, pos)
    }

    fn tick(&mut self) -> Result<()> {
        self.nodes = self.nodes.wrapping_add(1);
        if self.nodes.is_multiple_of(CHECK_EVERY_NODES) {
            self.run.check()
        } else {
            Ok(())
        }
    }

    fn plan_subquery(&mut self, q: &Query, outer: &[Field]) -> Result<SubPlan> {
        // Bind with outer references replaced by typed NULL placeholders; every column the
        // subquery cannot resolve but the enclosing scope can becomes an outer reference.
        let mut refs: Vec<OuterRef> = Vec::new();
        loop {
            let attempt = substitute(q, &refs, None);
            let e = match self.bind_query(&attempt) {
                Ok((plan, fields)) => {
                    let width = fields.len();
                    let ty = match fields.first().map_or(DataType::Null, |f| f.data_type) {
                        DataType::Symbol => DataType::Varchar,
                        t => t,
                    };
                    if refs.is_empty() {
                        let physical = crate::plan::physical::plan(crate::plan::optimizer::optimize(plan), &self.run)?;
                        let batch = self.executor.execute(&self.run, &physical)?;
                        let values =
                            batch.columns.first().map(|c| (0..c.len()).map(|i| c.get(i)).collect()).unwrap_or_default();
                        return Ok(SubPlan::Rows { values, ty, width, rows: batch.rows });
                    }
                    // CTEs visible here must stay visible when the query is planned again.
                    let mut query = q.clone();
                    let mut ctes: Vec<(String, Query)> = self.ctes.iter().map(|c| (c.0.clone(), c.3.clone())).collect();
                    ctes.append(&mut query.ctes);
                    query.ctes = ctes;
                    return Ok(SubPlan::Correlated {
                        query: Box::new(query),
                        refs,
                        ty,
                        width,
                        catalog: crate::access::CatalogView {
                            catalog: self.catalog.clone(),
                            access: self.access.clone(),
                            now: self.now,
                            txn: self.txn.clone(),
                            names: self.names,
                        },
                    });
                }
                Err(e) => e,
            };
            if let SqlError::ColumnNotFound { table, name, .. } = &e {
                let known = refs.iter().any(|r| r.table == *table && r.name.eq_ignore_ascii_case(name));
                if !known {
                    if let Ok(i) = resolve(outer, table.as_deref(), name, Pos::default()) {
                        refs.push(OuterRef {
                            table: table.clone(),
                            name: name.clone(),
                            col: i,
                            ty: outer[i].data_type,
                            array_item: outer[i].array_of.map(|a| a.item),
                        });
                        continue;
                    }
                }
            }
            return Err(e);
        }
    }
}

/// A literal expression for `v` of type `ty` (NULL placeholders keep their type).
pub(super) fn value_expr(v: Option<&Value>, ty: DataType) -> Expr {
    let pos = Pos::default();
    let ty = if ty == DataType::Symbol { DataType::Varchar } else { ty };
    let lit = match v {
        None | Some(Value::Null) => Literal::Null,
        Some(Value::Bool(b)) => Literal::Bool(*b),
        Some(Value::Int32(x)) => Literal::Int(*x as i64),
        Some(Value::Int64(x)) => Literal::Int(*x),
        Some(Value::Int128(x)) => Literal::Typed(DataType::Int128, x.to_string()),
        Some(Value::Float32(x)) => Literal::Float(*x as f64),
        Some(Value::Float64(x)) => Literal::Float(*x),
        Some(Value::Timestamp(x)) => Literal::Typed(DataType::Timestamp, zepto_storage::time::format_timestamp(*x)),
        Some(Value::Date(x)) => Literal::Typed(DataType::Date, zepto_storage::time::format_date(*x)),
        Some(Value::Interval(x)) => Literal::Interval(*x),
        Some(Value::Str(s)) => Literal::Str(s.clone()),
        Some(Value::Vector(v)) => Literal::Vector(v.iter().map(|&x| x as f64).collect()),
    };
    if ty == DataType::Interval {
        return Expr::Lit(lit, pos);
    }
    Expr::Cast { expr: Box::new(Expr::Lit(lit, pos)), to: ty, try_: false, pos }
}

/// `q` with its outer references replaced by `values` (or typed NULLs).
pub fn substitute(q: &Query, refs: &[OuterRef], values: Option<&[Value]>) -> Query {
    let mut q = q.clone();
    if refs.is_empty() {
        return q;
    }
    crate::parser::visit::rewrite_query(&mut q, &mut |e: &mut Expr| {
        if let Expr::Column { table, name, .. } = e {
            let hit = refs.iter().position(|r| {
                r.name.eq_ignore_ascii_case(name)
                    && match (&r.table, table.as_ref()) {
                        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                        (None, None) => true,
                        _ => false,
                    }
            });
            if let Some(k) = hit {
                *e = value_expr(values.map(|v| &v[k]), refs[k].ty);
                if let Some(item) = refs[k].array_item {
                    let item = Expr::Lit(Literal::Str(item.sql_name().into_owned()), Pos::default());
                    let cast = FuncCall::new(crate::parser::ast::ARRAY_CAST, vec![e.clone(), item], Pos::default());
                    *e = Expr::Func(Box::new(cast));
                }
            }
        }
    });
    q
}

pub(super) fn requalify(fields: Vec<Field>, q: Option<&str>) -> Vec<Field> {
    fields.into_iter().map(|f| Field { qualifier: q.map(str::to_string), ..f }).collect()
}
