//! The table functions `range(...)` and `generate_series(...)`, as DuckDB has them: BIGINT
//! from `[start,] stop [, step]` (start 0, step 1), or TIMESTAMP from `start, stop, step` with
//! a DATE or TIMESTAMP start and stop and an INTERVAL step. `range` stops before `stop`,
//! `generate_series` includes it. A NULL argument gives no rows; a zero step is an error.
//!
//! The arguments are constants, so the binder works out the whole series here: a start, a
//! step and a count, which [`Plan::Series`] generates when it runs.

use super::{requalify, Binder, ExprBinder};
use crate::error::{Pos, Result, SqlError};
use crate::parser::ast::Expr;
use crate::plan::bind_expr::fold;
use crate::plan::{BExpr, Field, Plan};
use zepto_storage::{DataType, Value};

/// A table function call in FROM.
pub(super) struct Call<'a> {
    pub name: &'a str,
    pub args: &'a [Expr],
    pub alias: Option<&'a str>,
    pub columns: &'a [String],
    pub pos: Pos,
}

impl Binder {
    /// Bind `range(...)` or `generate_series(...)`.
    pub(super) fn bind_table_function(&mut self, c: &Call<'_>) -> Result<(Plan, Vec<Field>)> {
        let lower = c.name.to_ascii_lowercase();
        if let Some(func) = crate::plan::srf::SrfFunc::by_name(&lower) {
            return self.bind_srf_table(c, func);
        }
        let inclusive = match lower.as_str() {
            "range" => false,
            "generate_series" => true,
            _ if crate::expr::functions::scalar_by_name(&lower).is_some() => return self.bind_scalar_table(c),
            _ => {
                return Err(SqlError::plan(
                    format!(
                        "unknown table function '{}' (table functions: range, generate_series, unnest, generate_subscripts)",
                        c.name
                    ),
                    Some(c.pos),
                ))
            }
        };
        let values = c.args.iter().map(|e| self.constant_arg(e, &lower)).collect::<Result<Vec<_>>>()?;
        let (plan, data_type) = series(&lower, &values, inclusive, c.pos)?;
        if c.columns.len() > 1 {
            return Err(SqlError::plan(
                format!("{} column aliases given for {lower}(), which has one column", c.columns.len()),
                Some(c.pos),
            ));
        }
        let name = c.columns.first().cloned().unwrap_or(lower);
        let field = Field::new(name, data_type);
        Ok((plan, requalify(vec![field], c.alias)))
    }

    /// A scalar function in FROM (`FROM string_to_array(x, ',') s`), as PostgreSQL reads it:
    /// one row, one column named by the column alias, else the table alias, else the function.
    fn bind_scalar_table(&mut self, c: &Call<'_>) -> Result<(Plan, Vec<Field>)> {
        let call = Expr::Func(Box::new(crate::parser::ast::FuncCall::new(c.name, c.args.to_vec(), c.pos)));
        let mut binder = ExprBinder { scope: &[], agg: None, win: None, runner: self };
        let array_of = binder.array_of(&call)?;
        let value = binder.bind(&call)?;
        if c.columns.len() > 1 {
            return Err(SqlError::plan(
                format!("{} column aliases given for {}(), which has one column", c.columns.len(), c.name),
                Some(c.pos),
            ));
        }
        let name =
            c.columns.first().cloned().or_else(|| c.alias.map(str::to_string)).unwrap_or_else(|| c.name.to_string());
        let field = Field { array_of, ..Field::new(name, value.data_type()) };
        let one = Plan::Values { rows: vec![vec![]], width: 0 };
        let plan = Plan::Project { input: Box::new(one), exprs: vec![value] };
        Ok((plan, requalify(vec![field], c.alias)))
    }

    fn constant_arg(&mut self, e: &Expr, func: &str) -> Result<Value> {
        let bound = fold(ExprBinder { scope: &[], agg: None, win: None, runner: self }.bind(e)?)?;
        match bound {
            BExpr::Lit(v, _) => Ok(v),
            _ => Err(SqlError::plan(format!("the arguments of {func}() must be constants"), e.pos())),
        }
    }
}

/// The series the arguments describe, and its column type.
fn series(func: &str, args: &[Value], inclusive: bool, pos: Pos) -> Result<(Plan, DataType)> {
    let bad = |m: String| SqlError::plan(m, Some(pos));
    let timestamps = args.iter().any(|v| matches!(v, Value::Timestamp(_) | Value::Date(_) | Value::Interval(_)));
    type Read = (fn(&Value) -> Option<i64>, &'static str);
    let (ty, read): (DataType, &[Read]) = match (timestamps, args.len()) {
        (false, 1..=3) => (DataType::Int64, &[(int as fn(&Value) -> Option<i64>, "BIGINT"); 3]),
        (true, 3) => (DataType::Timestamp, &[(ts, "DATE or TIMESTAMP"), (ts, "DATE or TIMESTAMP"), (interval, "INTERVAL")]),
        _ => {
            return Err(bad(format!(
                "{func}() takes BIGINT arguments ([start,] stop [, step]) or a DATE/TIMESTAMP start and stop with an INTERVAL step"
            )))
        }
    };
    let mut parsed = Vec::with_capacity(args.len());
    for (k, (v, (read, wants))) in args.iter().zip(read).enumerate() {
        let p = read(v);
        if p.is_none() && !v.is_null() {
            let t = v.data_type().sql_name();
            return Err(bad(format!("argument {} of {func}() is {t} {v}; it takes a finite {wants}", k + 1)));
        }
        parsed.push(p);
    }
    let (start, stop, step) = match parsed[..] {
        [stop] => (Some(0), stop, Some(1)),
        [start, stop] => (start, stop, Some(1)),
        [start, stop, step] => (start, stop, step),
        _ => return Err(bad(format!("{func}() takes one to three arguments"))),
    };
    let (Some(start), Some(stop), Some(step)) = (start, stop, step) else {
        return Ok((Plan::Series { start: 0, step: 1, count: 0, data_type: ty }, ty));
    };
    if step == 0 {
        return Err(bad(format!("the step of {func}() cannot be 0")));
    }
    let count = count(start, stop, step, inclusive);
    Ok((Plan::Series { start, step, count, data_type: ty }, ty))
}

/// Values of `start, start + step, ...` before (or, `inclusive`, up to) `stop`.
fn count(start: i64, stop: i64, step: i64, inclusive: bool) -> u64 {
    let (span, step) = (i128::from(stop) - i128::from(start), i128::from(step));
    if span != 0 && (span > 0) != (step > 0) {
        return 0;
    }
    let n = if inclusive { span / step + 1 } else { (span + step - step.signum()) / step };
    u64::try_from(n.max(0)).unwrap_or(u64::MAX)
}

fn int(v: &Value) -> Option<i64> {
    matches!(v, Value::Int32(_) | Value::Int64(_)).then(|| v.as_i64()).flatten()
}

/// A finite DATE or TIMESTAMP (a series to or from infinity has no end).
fn ts(v: &Value) -> Option<i64> {
    match *v {
        Value::Timestamp(t) if zepto_storage::time::is_infinite(t) => None,
        Value::Timestamp(t) => Some(t),
        Value::Date(d) => i64::from(d).checked_mul(zepto_storage::time::NS_PER_DAY),
        _ => None,
    }
}

fn interval(v: &Value) -> Option<i64> {
    match *v {
        Value::Interval(i) => Some(i),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn counts_match_duckdb() {
        assert_eq!(count(0, 3, 1, false), 3);
        assert_eq!(count(0, 3, 1, true), 4);
        assert_eq!(count(10, 0, -3, false), 4);
        assert_eq!(count(10, 1, -3, true), 4);
        assert_eq!(count(0, 10, 3, false), 4);
        assert_eq!(count(0, 9, 3, false), 3);
        assert_eq!(count(0, 9, 3, true), 4);
        assert_eq!(count(3, 1, 1, false), 0);
        assert_eq!(count(0, -2, 1, false), 0);
        assert_eq!(count(5, 5, 1, false), 0);
        assert_eq!(count(5, 5, 1, true), 1);
        assert_eq!(count(5, 5, -1, true), 1);
        assert_eq!(count(9223372036854775800, i64::MAX, 3, false), 3);
        assert_eq!(count(i64::MIN, i64::MAX, 1, true), u64::MAX, "2^64 values saturate (running it fails for memory)");
    }
}
