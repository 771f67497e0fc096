//! The ProjectSet operator: set-returning calls in the select list ([`crate::plan::srf`]).
//! Each input row is repeated once per row of its longest call; the calls' columns follow
//! the input's, NULL where a call has run out.

use super::context::ExecContext;
use super::eval;
use crate::error::{Result, SqlError};
use crate::eval::{array, cast::parse_value, Batch};
use crate::plan::srf::{SrfCall, SrfFunc};
use zepto_storage::{Column, ColumnBuilder, DataType, Value};

/// `b` expanded by `calls`.
pub(super) fn project_set(ctx: &ExecContext, b: &Batch, calls: &[SrfCall]) -> Result<Batch> {
    let args: Vec<Vec<Column>> = calls
        .iter()
        .map(|c| c.args.iter().map(|a| eval::eval(ctx, a, b).map(|c| c.into_owned())).collect())
        .collect::<Result<_>>()?;
    let types: Vec<DataType> = calls.iter().flat_map(SrfCall::output_types).collect();
    let widths: Vec<usize> = calls.iter().map(|c| c.output_types().len()).collect();
    let mut out: Vec<ColumnBuilder> = types.iter().map(|&t| ColumnBuilder::new(t, b.rows)).collect();
    let mut take = Vec::with_capacity(b.rows);
    for r in 0..b.rows {
        ctx.check_every(r, 1024)?;
        let rows: Vec<Vec<Vec<Value>>> =
            calls.iter().zip(&args).map(|(c, a)| call_rows(c, a, r)).collect::<Result<_>>()?;
        let n = rows.iter().map(Vec::len).max().unwrap_or(0);
        for k in 0..n {
            take.push(u32::try_from(r).map_err(|_| SqlError::Execution("too many rows to expand".into()))?);
            let mut col = 0;
            for (&width, call_rows) in widths.iter().zip(&rows) {
                for j in 0..width {
                    let v = call_rows.get(k).map_or(&Value::Null, |row| &row[j]);
                    out[col + j].push_value(v).map_err(|e| SqlError::Execution(e.to_string()))?;
                }
                col += width;
            }
        }
    }
    let mut expanded = b.take(&take);
    expanded.columns.extend(out.into_iter().map(|c| std::sync::Arc::new(c.finish())));
    Ok(expanded)
}

/// The rows call `c` gives for input row `r` (its arguments' columns `args`), each as its
/// output columns' values.
fn call_rows(c: &SrfCall, args: &[Column], r: usize) -> Result<Vec<Vec<Value>>> {
    let Some(text) = args.first().and_then(|a| a.str_at(r).filter(|_| a.is_valid(r))) else {
        return Ok(Vec::new());
    };
    let items = array::parse(text)?;
    let n = i32::try_from(items.len()).map_err(|_| SqlError::Execution("an array of over 2^31 items".into()))?;
    Ok(match c.func {
        SrfFunc::Unnest => items.iter().map(|i| item(i, c.item).map(|v| vec![v])).collect::<Result<_>>()?,
        SrfFunc::ExpandArray => {
            items.iter().zip(1..).map(|(i, k)| Ok(vec![item(i, c.item)?, Value::Int32(k)])).collect::<Result<_>>()?
        }
        SrfFunc::Subscripts => {
            let dim = args.get(1).map(|d| d.get(r));
            let reverse = args.get(2).is_some_and(|x| x.get(r) == Value::Bool(true));
            if dim != Some(Value::Int32(1)) && dim != Some(Value::Int64(1)) {
                return Ok(Vec::new());
            }
            let subs = (1..=n).map(|k| vec![Value::Int32(k)]);
            if reverse {
                subs.rev().collect()
            } else {
                subs.collect()
            }
        }
    })
}

/// An array item read as the array's item type.
fn item(text: &Option<String>, ty: DataType) -> Result<Value> {
    let Some(s) = text else { return Ok(Value::Null) };
    if ty == DataType::Varchar {
        return Ok(Value::Str(s.clone()));
    }
    parse_value(s, ty).ok_or_else(|| SqlError::Execution(format!("array item {s:?} is not a {ty}")))
}
