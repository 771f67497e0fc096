//! Set-returning calls in the select list (`unnest(a)`, `generate_subscripts(a, 1)`,
//! `_pg_expandarray(a)`; see [`crate::plan::srf`]): collected from the items, each bound once
//! over the input (after GROUP BY and window functions, as PostgreSQL runs them), and planned
//! as one ProjectSet node whose columns the items then read by the call's text, the way
//! window calls are read.

use super::series::Call;
use super::{Binder, Item, Scopes};
use crate::error::{Result, SqlError};
use crate::parser::ast::{Expr, FuncCall, Literal, FIELD_OF};
use crate::plan::bind_expr::WinCtx;
use crate::plan::srf::{SrfCall, SrfFunc};
use crate::plan::{Field, Plan};
use zepto_storage::DataType;

/// The set-returning calls of the select list (deduplicated by text, in first-seen order).
pub(super) fn collect(items: &[Item]) -> Vec<(String, &FuncCall)> {
    let mut found: Vec<(String, &FuncCall)> = Vec::new();
    for it in items {
        if let Item::Ast { expr, .. } = it {
            collect_in(expr, &mut found);
        }
    }
    found
}

fn collect_in<'e>(e: &'e Expr, found: &mut Vec<(String, &'e FuncCall)>) {
    if let Expr::Func(f) = e {
        if f.over.is_none() && SrfFunc::by_name(&f.name).is_some() {
            let text = e.to_string();
            if !found.iter().any(|(s, _)| *s == text) {
                found.push((text, f));
            }
        }
    }
    super::window::visit_children(e, &mut |c| collect_in(c, found));
}

/// The names a call's output columns are found by: its text, or `(text).field` for each
/// field of a composite result.
pub(super) fn column_keys(text: &str, func: SrfFunc) -> Vec<String> {
    match func.fields() {
        [] => vec![text.to_string()],
        fields => fields.iter().map(|f| format!("({text}).{f}")).collect(),
    }
}

/// A select item that is a composite call (`_pg_expandarray(a) AS keys`) as one item per
/// field (`(call).x AS "keys.x"`, ...), which `(t.keys).x` then finds; `None` for any other.
pub(super) fn composite_fields(e: &Expr, alias: Option<&str>) -> Option<Vec<(Expr, String)>> {
    let Expr::Func(f) = e else { return None };
    let func = SrfFunc::by_name(&f.name).filter(|s| f.over.is_none() && !s.fields().is_empty())?;
    let base = alias.map_or_else(|| func.name().to_string(), str::to_string);
    let part = |field: &str| {
        let name = Expr::Lit(Literal::Str(field.to_string()), f.pos);
        Expr::Func(Box::new(FuncCall::new(FIELD_OF, vec![e.clone(), name], f.pos)))
    };
    Some(func.fields().iter().map(|field| (part(field), format!("{base}.{field}"))).collect())
}

impl Binder {
    /// `FROM unnest(a) [AS] t[(x)]` (and the other set-returning functions): one row per item
    /// of the array, which a correlated subquery's outer column may give (`FROM
    /// unnest(tc.reloptions) x` in psql's `\d+`). A scalar result's column is named by the
    /// column alias, else the table alias, as in PostgreSQL.
    pub(super) fn bind_srf_table(&mut self, c: &Call<'_>, func: SrfFunc) -> Result<(Plan, Vec<Field>)> {
        let call = FuncCall::new(func.name(), c.args.to_vec(), c.pos);
        let none = Scopes { scope: &[], agg: None, win: None };
        let call = self.bind_srf_call(&call, &none)?;
        let names: Vec<String> = match func.fields() {
            [] => vec![c
                .columns
                .first()
                .cloned()
                .or_else(|| c.alias.map(str::to_string))
                .unwrap_or_else(|| func.name().to_string())],
            fields => fields
                .iter()
                .enumerate()
                .map(|(k, f)| c.columns.get(k).cloned().unwrap_or_else(|| f.to_string()))
                .collect(),
        };
        if c.columns.len() > names.len() {
            return Err(SqlError::plan(
                format!("{} column aliases given for {}(), which has {}", c.columns.len(), func.name(), names.len()),
                Some(c.pos),
            ));
        }
        let fields = names.into_iter().zip(call.output_types()).map(|(n, t)| Field::new(n, t)).collect();
        let input = Plan::Values { rows: vec![vec![]], width: 0 };
        Ok((Plan::ProjectSet { input: Box::new(input), calls: vec![call] }, super::requalify(fields, c.alias)))
    }

    /// A ProjectSet over `plan` for the calls `found`, and the context the select list reads
    /// their columns through (after the window calls' of `sc.win`, if any).
    pub(super) fn bind_project_set(
        &mut self,
        plan: Plan,
        found: &[(String, &FuncCall)],
        sc: &Scopes,
    ) -> Result<(Plan, WinCtx)> {
        let mut ctx = match sc.win {
            Some(w) => WinCtx { base: w.base, calls: w.calls.clone() },
            None => WinCtx { base: plan.width(), calls: Vec::new() },
        };
        let mut calls = Vec::with_capacity(found.len());
        for (text, f) in found {
            let call = self.bind_srf_call(f, sc)?;
            for (key, ty) in column_keys(text, call.func).into_iter().zip(call.output_types()) {
                ctx.calls.push((key, ty));
            }
            calls.push(call);
        }
        Ok((Plan::ProjectSet { input: Box::new(plan), calls }, ctx))
    }

    fn bind_srf_call(&mut self, f: &FuncCall, sc: &Scopes) -> Result<SrfCall> {
        let func =
            SrfFunc::by_name(&f.name).ok_or_else(|| SqlError::Internal(format!("{} is not set-returning", f.name)))?;
        let (least, most) = func.arity();
        if f.args.len() < least || f.args.len() > most || f.distinct || f.star || !f.order_by.is_empty() {
            let want = if least == most { format!("{least}") } else { format!("{least} to {most}") };
            return Err(SqlError::plan(format!("{}() takes {want} argument(s)", func.name()), Some(f.pos)));
        }
        let mut args = Vec::with_capacity(f.args.len());
        for a in &f.args {
            args.push(sc.binder(self).bind(a)?);
        }
        let want = [DataType::Varchar, DataType::Int64, DataType::Bool];
        for (k, (a, w)) in args.iter().zip(want).enumerate() {
            let t = a.data_type();
            let fits = t == w
                || t == DataType::Null
                || (w == DataType::Int64 && t.is_integer())
                || (k == 0 && t == DataType::Symbol);
            if !fits {
                return Err(SqlError::plan(
                    format!(
                        "{}() argument {} must be {} (an array), not {t}",
                        func.name(),
                        k + 1,
                        if k == 0 { DataType::Varchar } else { w }
                    ),
                    f.args[k].pos(),
                ));
            }
        }
        let plain = Scopes { scope: sc.scope, agg: None, win: None };
        let item = plain.binder(self).array_of(&f.args[0])?.map_or(DataType::Varchar, |a| a.item);
        Ok(SrfCall { func, args, item })
    }
}
