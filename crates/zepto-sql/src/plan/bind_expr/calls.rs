//! Function calls typed: `bind_function` checks a scalar function's arguments (count, types,
//! implicit casts) by its family (strings, math, time, calendar, vectors, conditionals) and
//! gives the call its result type; QuestDB's `IN (lo, hi)` time ranges too.

use super::typing::is_str_lit;
use super::{bind_binary, cast_to, coerce_pair, common_type, lit};
use crate::error::{Pos, Result, SqlError};
use crate::expr::functions::{scalar_arity, scalar_by_name, Family, ScalarFunc};
use crate::parser::ast::BinaryOp;
use crate::plan::BExpr;
use zepto_storage::{time, DataType, Value};

fn unify_all(args: Vec<BExpr>, name: &str, pos: Pos) -> Result<(Vec<BExpr>, DataType)> {
    let mut ty = DataType::Null;
    // String literals adapt to the other arguments' type (`coalesce(d, '1900-01-01')`).
    let typed: Vec<&BExpr> = args.iter().filter(|a| !is_str_lit(a)).collect();
    let typed_ty = typed.iter().try_fold(DataType::Null, |t, a| common_type(t, a.data_type()));
    if let Some(t) = typed_ty.filter(|t| !t.is_string() && *t != DataType::Null) {
        let args = args.into_iter().map(|a| cast_to(a, t)).collect::<Result<Vec<_>>>()?;
        return Ok((args, t));
    }
    for a in &args {
        ty = common_type(ty, a.data_type()).ok_or_else(|| {
            SqlError::plan(format!("{name}() arguments have incompatible types {ty} and {}", a.data_type()), Some(pos))
        })?;
    }
    let args = args.into_iter().map(|a| cast_to(a, ty)).collect::<Result<Vec<_>>>()?;
    Ok((args, ty))
}

fn str_arg(a: BExpr) -> Result<BExpr> {
    if a.data_type().is_string() {
        Ok(a)
    } else {
        cast_to(a, DataType::Varchar)
    }
}

fn ts_arg(a: BExpr, name: &str, pos: Pos) -> Result<BExpr> {
    match a.data_type() {
        DataType::Timestamp => Ok(a),
        DataType::Date | DataType::Null | DataType::Varchar => cast_to(a, DataType::Timestamp),
        t => Err(SqlError::plan(format!("{name}() needs a TIMESTAMP, got {t}"), Some(pos))),
    }
}

fn num_arg(a: BExpr, name: &str, pos: Pos) -> Result<BExpr> {
    match a.data_type() {
        t if t.is_numeric() => Ok(a),
        DataType::Null => cast_to(a, DataType::Float64),
        DataType::Varchar if is_str_lit(&a) => cast_to(a, DataType::Float64),
        t => Err(SqlError::plan(format!("{name}() needs a numeric argument, got {t}"), Some(pos))),
    }
}

/// Bind a scalar function call: its argument coercions and result type, by family.
pub fn bind_function(name: &str, args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    // PostgreSQL's `array_length(a, dim)` of an array; one argument is a vector's dimension.
    if name == "array_length" && args.len() == 2 {
        return bind_function("array_upper", args, pos);
    }
    let func = scalar_by_name(name).ok_or_else(|| SqlError::plan(format!("unknown function {name}()"), Some(pos)))?;
    let (lo, hi) = scalar_arity(func);
    if args.len() < lo || args.len() > hi {
        return Err(SqlError::plan(format!("wrong number of arguments to {name}(): {}", args.len()), Some(pos)));
    }
    match func.family() {
        Family::String | Family::Array => string_call(func, name, args, pos),
        Family::Math => math_call(func, name, args, pos),
        Family::Conditional => conditional_call(func, name, args, pos),
        Family::Temporal => time_call(func, name, args, pos),
        Family::Vector => vector_call(func, name, args, pos),
        Family::Json => Ok(BExpr::Func { func, args, ty: DataType::Varchar }),
        Family::Calendar => calendar_call(func, name, args, pos),
    }
}

/// A `FLOAT[n]` argument: a vector, or a string literal or NULL read as the vector type `want`
/// (the other argument's). `None` when neither says the dimension.
fn vector_arg(a: BExpr, want: Option<DataType>, name: &str, pos: Pos) -> Result<BExpr> {
    match (a.data_type(), want) {
        (DataType::Vector(_), _) => Ok(a),
        (DataType::Null, Some(t)) => cast_to(a, t),
        (DataType::Varchar, Some(t)) if is_str_lit(&a) => cast_to(a, t),
        (t, _) => Err(SqlError::plan(format!("{name}() needs FLOAT[n] vector arguments, got {t}"), Some(pos))),
    }
}

/// Vector functions: distances between two vectors of one dimension (DOUBLE), and the
/// dimension of one.
fn vector_call(func: ScalarFunc, name: &str, args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    if func == ScalarFunc::ArrayLength {
        let a: Vec<BExpr> = args.into_iter().map(|a| vector_arg(a, None, name, pos)).collect::<Result<_>>()?;
        return Ok(BExpr::Func { func, args: a, ty: DataType::Int64 });
    }
    let mut it = args.into_iter();
    let (Some(a), Some(b)) = (it.next(), it.next()) else {
        return Err(SqlError::Internal(format!("{name}() arity")));
    };
    let want = [a.data_type(), b.data_type()].into_iter().find(|t| t.vector_dim().is_some());
    let (a, b) = (vector_arg(a, want, name, pos)?, vector_arg(b, want, name, pos)?);
    if a.data_type() != b.data_type() {
        return Err(SqlError::plan(
            format!(
                "{name}(): the vectors differ in dimension ({} and {}); both must be FLOAT[n] of one n",
                a.data_type(),
                b.data_type()
            ),
            Some(pos),
        ));
    }
    Ok(BExpr::Func { func, args: vec![a, b], ty: DataType::Float64 })
}

/// String functions: arguments are strings.
fn string_call(func: ScalarFunc, name: &str, mut args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    use DataType::*;
    use ScalarFunc as F;
    let mk = |args: Vec<BExpr>, ty| Ok(BExpr::Func { func, args, ty });
    match func {
        F::Lower | F::Upper | F::Trim | F::LTrim | F::RTrim | F::Replace | F::LikeEscape => {
            let a = args.into_iter().map(str_arg).collect::<Result<Vec<_>>>()?;
            mk(a, Varchar)
        }
        F::StartsWith | F::RegexpMatches => {
            let a = args.into_iter().map(str_arg).collect::<Result<Vec<_>>>()?;
            mk(a, Bool)
        }
        F::Length if args.first().is_some_and(|a| a.data_type().vector_dim().is_some()) => {
            vector_call(F::ArrayLength, name, args, pos)
        }
        F::Length => mk(vec![str_arg(args.remove(0))?], Int64),
        F::ArrayToString => {
            let a = args.into_iter().map(str_arg).collect::<Result<Vec<_>>>()?;
            mk(a, Varchar)
        }
        F::ArrayBound { .. } => {
            let mut it = args.into_iter();
            let mut a = vec![str_arg(it.next().ok_or_else(|| SqlError::Internal("array bound arity".into()))?)?];
            if let Some(d) = it.next() {
                a.push(cast_to(num_arg(d, name, pos)?, Int64)?);
            }
            mk(a, Int32)
        }
        F::ArrayCat | F::StringToArray | F::QuoteIdent => {
            let a = args.into_iter().map(str_arg).collect::<Result<Vec<_>>>()?;
            mk(a, Varchar)
        }
        F::ParseIdent => {
            let s = str_arg(args.remove(0))?;
            mk(vec![s], Varchar)
        }
        F::ArrayValue => {
            let ty = args.iter().try_fold(Null, |t, a| {
                common_type(t, a.data_type()).ok_or_else(|| {
                    SqlError::plan(format!("ARRAY[] items of types {t} and {}", a.data_type()), Some(pos))
                })
            })?;
            let ty = if ty == Null { Varchar } else { ty };
            let a = args.into_iter().map(|a| cast_to(a, ty)).collect::<Result<Vec<_>>>()?;
            mk(a, Varchar)
        }
        F::ArraySubscript => {
            let a = str_arg(args.remove(0))?;
            let i = cast_to(num_arg(args.remove(0), name, pos)?, Int64)?;
            mk(vec![a, i], Varchar)
        }
        F::SizePretty => {
            let bytes = cast_to(num_arg(args.remove(0), name, pos)?, Int64)?;
            mk(vec![bytes], Varchar)
        }
        F::KafkaPartition => {
            let key = str_arg(args.remove(0))?;
            let n = cast_to(num_arg(args.remove(0), name, pos)?, Int64)?;
            mk(vec![key, n], Int64)
        }
        F::Concat => {
            let a = args.into_iter().map(str_arg).collect::<Result<Vec<_>>>()?;
            mk(a, Varchar)
        }
        F::Substr => {
            let mut it = args.into_iter();
            let s = it.next().map(str_arg).transpose()?;
            let mut a = vec![s.ok_or_else(|| SqlError::Internal("substr arity".into()))?];
            for x in it {
                a.push(cast_to(num_arg(x, name, pos)?, Int64)?);
            }
            mk(a, Varchar)
        }
        _ => Err(SqlError::Internal(format!("{name}() is not a string function"))),
    }
}

/// Math functions: numeric arguments.
fn math_call(func: ScalarFunc, name: &str, mut args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    use DataType::*;
    use ScalarFunc as F;
    let mk = |args: Vec<BExpr>, ty| Ok(BExpr::Func { func, args, ty });
    match func {
        F::Abs | F::Floor | F::Ceil => {
            let a = num_arg(args.remove(0), name, pos)?;
            let t = a.data_type();
            mk(vec![a], t)
        }
        F::Sign => mk(vec![num_arg(args.remove(0), name, pos)?], Int32),
        F::Round => {
            let a = num_arg(args.remove(0), name, pos)?;
            let t = a.data_type();
            let mut v = vec![a];
            if let Some(d) = args.pop() {
                v.push(cast_to(num_arg(d, name, pos)?, Int32)?);
            }
            mk(v, t)
        }
        F::Bitwise(_) => {
            let mut ints = Vec::with_capacity(2);
            for a in args {
                let t = a.data_type();
                if !(t.is_integer() || t == Null) {
                    return Err(SqlError::plan(format!("{name}() takes integers, not {t}"), Some(pos)));
                }
                ints.push(a);
            }
            let ty = if ints.iter().all(|a| matches!(a.data_type(), Int32 | Null)) { Int32 } else { Int64 };
            let ints = ints.into_iter().map(|a| cast_to(a, ty)).collect::<Result<Vec<_>>>()?;
            mk(ints, ty)
        }
        F::Sqrt | F::Ln | F::Log10 | F::Exp | F::Power => {
            let a = args
                .into_iter()
                .map(|a| num_arg(a, name, pos).and_then(|a| cast_to(a, Float64)))
                .collect::<Result<Vec<_>>>()?;
            mk(a, Float64)
        }
        _ => Err(SqlError::Internal(format!("{name}() is not a math function"))),
    }
}

/// COALESCE, GREATEST, LEAST, NULLIF: arguments of one common type.
fn conditional_call(func: ScalarFunc, name: &str, mut args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    use ScalarFunc as F;
    let mk = |args: Vec<BExpr>, ty| Ok(BExpr::Func { func, args, ty });
    match func {
        F::Coalesce | F::Greatest | F::Least => {
            let (a, t) = unify_all(args, name, pos)?;
            mk(a, t)
        }
        F::NullIf => {
            let r = args.pop().ok_or_else(|| SqlError::Internal("nullif arity".into()))?;
            let l = args.pop().ok_or_else(|| SqlError::Internal("nullif arity".into()))?;
            let (l, r) = coerce_pair(l, r, pos)?;
            let t = l.data_type();
            mk(vec![l, r], t)
        }
        _ => Err(SqlError::Internal(format!("{name}() is not a conditional function"))),
    }
}

/// Temporal functions: timestamps, units and bucket widths.
fn time_call(func: ScalarFunc, name: &str, mut args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    use DataType::*;
    use ScalarFunc as F;
    let mk = |args: Vec<BExpr>, ty| Ok(BExpr::Func { func, args, ty });
    match func {
        F::DateTrunc | F::DatePart => {
            let unit = match &args[0] {
                BExpr::Lit(Value::Str(s), _) => s.to_ascii_lowercase(),
                _ => return Err(SqlError::plan(format!("{name}() needs a constant unit such as 'minute'"), Some(pos))),
            };
            let ok = if func == F::DateTrunc {
                time::trunc_timestamp(&unit, 0).is_some()
            } else {
                time::extract_field(&unit, 0).is_some()
            };
            if !ok {
                return Err(SqlError::plan(format!("{name}(): unknown unit '{unit}'"), Some(pos)));
            }
            let ts = ts_arg(args.remove(1), name, pos)?;
            mk(vec![lit(Value::Str(unit)), ts], if func == F::DateTrunc { Timestamp } else { Int64 })
        }
        F::EpochNs => mk(vec![ts_arg(args.remove(0), name, pos)?], Int64),
        F::MonthBucket => {
            let ts = ts_arg(args.remove(1), name, pos)?;
            match &args[0] {
                BExpr::Lit(v, _) if v.as_i64().is_some_and(|n| n >= 1) && v.data_type().is_integer() => {
                    let n = lit(Value::Int64(v.as_i64().unwrap_or(1)));
                    mk(vec![n, ts], Timestamp)
                }
                _ => Err(SqlError::plan("month_bucket(n, ts) needs a constant whole number of months >= 1", Some(pos))),
            }
        }
        F::Epoch => mk(vec![ts_arg(args.remove(0), name, pos)?], Float64),
        F::Now => mk(vec![], Timestamp),
        F::Xbar => {
            let x = args.remove(1);
            let w = args.remove(0);
            match x.data_type() {
                Timestamp | Date => {
                    let x = cast_to(x, Timestamp)?;
                    let w = match w.data_type() {
                        Interval => w,
                        t if t.is_integer() => cast_to(cast_to(w, Int64)?, Interval)?,
                        Varchar if is_str_lit(&w) => cast_to(w, Interval)?,
                        t => {
                            return Err(SqlError::plan(
                                format!("xbar() bucket width for timestamps must be an INTERVAL, got {t}"),
                                Some(pos),
                            ))
                        }
                    };
                    mk(vec![w, x], Timestamp)
                }
                t if t.is_numeric() => {
                    let w = num_arg(w, name, pos)?;
                    let common = common_type(t, w.data_type()).unwrap_or(Float64);
                    mk(vec![cast_to(w, common)?, cast_to(x, common)?], common)
                }
                t => Err(SqlError::plan(format!("xbar() needs a numeric or TIMESTAMP value, got {t}"), Some(pos))),
            }
        }
        _ => Err(SqlError::Internal(format!("{name}() is not a temporal function"))),
    }
}

/// QuestDB's calendar functions: the unit or period a constant checked here, timestamps
/// coerced; `to_timestamp(text, pattern)` with a constant pattern compiled here once.
fn calendar_call(func: ScalarFunc, name: &str, args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    use crate::eval::calendar::{pattern::Pattern, Period, Unit};
    use DataType::*;
    use ScalarFunc as F;
    let constant = |e: &BExpr| match e {
        BExpr::Lit(Value::Str(s), _) => Ok(s.clone()),
        _ => Err(SqlError::plan(format!("{name}(): the first argument must be a constant"), Some(pos))),
    };
    let mut it = args.into_iter();
    let (Some(a), b, c) = (it.next(), it.next(), it.next()) else {
        return Err(SqlError::Internal(format!("{name}() arity")));
    };
    let missing = || SqlError::Internal(format!("{name}() arity"));
    let mk = |args: Vec<BExpr>, ty| Ok(BExpr::Func { func, args, ty });
    match func {
        F::DateAdd | F::DateDiff => {
            let unit = constant(&a)?;
            if Unit::from_letter(&unit).is_none() {
                return Err(SqlError::plan(
                    format!("{name}(): unknown unit '{unit}' (y M w d h m s T u n)"),
                    Some(pos),
                ));
            }
            let (b, c) = (b.ok_or_else(missing)?, c.ok_or_else(missing)?);
            if func == F::DateAdd {
                let n = cast_to(num_arg(b, name, pos)?, Int64)?;
                return mk(vec![lit(Value::Str(unit)), n, ts_arg(c, name, pos)?], Timestamp);
            }
            mk(vec![lit(Value::Str(unit)), ts_arg(b, name, pos)?, ts_arg(c, name, pos)?], Int64)
        }
        F::ToTimezone | F::ToUtc => {
            let zone = match b {
                Some(BExpr::Lit(Value::Str(z), _)) => z,
                _ => {
                    return Err(SqlError::plan(format!("{name}(ts, tz): the time zone must be a constant"), Some(pos)))
                }
            };
            crate::eval::calendar::zone::Zone::parse(&zone).map_err(|e| SqlError::plan(e, Some(pos)))?;
            mk(vec![ts_arg(a, name, pos)?, lit(Value::Str(zone))], Timestamp)
        }
        F::TimestampFloor | F::TimestampCeil => {
            let period = constant(&a)?;
            if Period::parse(&period).is_none() {
                return Err(SqlError::plan(
                    format!("{name}(): '{period}' is not a period such as 'h' or '15m'"),
                    Some(pos),
                ));
            }
            mk(vec![lit(Value::Str(period)), ts_arg(b.ok_or_else(missing)?, name, pos)?], Timestamp)
        }
        _ => match b {
            None if a.data_type().is_numeric() => mk(vec![cast_to(a, Float64)?], Timestamp),
            None => cast_to(a, Timestamp),
            Some(p) => {
                let text = constant(&p)
                    .map_err(|_| SqlError::plan("to_timestamp(text, pattern): a constant pattern", Some(pos)))?;
                Pattern::compile(&text).map_err(|e| SqlError::plan(e, Some(pos)))?;
                mk(vec![cast_to(a, Varchar)?, lit(Value::Str(text))], Timestamp)
            }
        },
    }
}

/// QuestDB's `x IN 'text'`: for a timestamp `x`, `x` in any of the ranges the interval text
/// names, as `x >= start AND x < end` terms ORed (so a designated timestamp's range becomes
/// a binary search); for any other `x`, `x = 'text'`.
pub(super) fn questdb_in(args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    let mut it = args.into_iter();
    let (Some(x), Some(BExpr::Lit(Value::Str(text), _))) = (it.next(), it.next()) else {
        return Err(SqlError::Internal("questdb_in arguments".into()));
    };
    if !matches!(x.data_type(), DataType::Timestamp | DataType::Date) {
        return bind_binary(BinaryOp::Eq, x, BExpr::Lit(Value::Str(text), DataType::Varchar), pos);
    }
    let x = cast_to(x, DataType::Timestamp)?;
    let ranges = crate::eval::calendar::interval::ranges(&text).map_err(|e| SqlError::plan(e, Some(pos)))?;
    let ts = |ns: i64| BExpr::Lit(Value::Timestamp(ns), DataType::Timestamp);
    let mut any: Option<BExpr> = None;
    for (start, end) in ranges {
        let from = bind_binary(BinaryOp::GtEq, x.clone(), ts(start), pos)?;
        let to = bind_binary(BinaryOp::Lt, x.clone(), ts(end), pos)?;
        let both = bind_binary(BinaryOp::And, from, to, pos)?;
        any = Some(match any {
            Some(a) => bind_binary(BinaryOp::Or, a, both, pos)?,
            None => both,
        });
    }
    any.ok_or_else(|| SqlError::Internal("an interval without a range".into()))
}
