//! Scalar functions: strings, math, timestamps, COALESCE and friends.

use super::numeric::to_f64;
use super::{eval, eval_opnd, Batch, Opnd, Subqueries};
use crate::error::{Result, SqlError};
use crate::expr::functions::{Family, ScalarFunc};
use crate::expr::BExpr;
use std::borrow::Cow;
use zepto_storage::time::{self, NS_PER_SEC};
use zepto_storage::{Bitmap, Column, ColumnData, DataType, StrVec, Value};

fn args_cols<'a>(args: &'a [BExpr], b: &'a Batch, sq: &dyn Subqueries) -> Result<Vec<Cow<'a, Column>>> {
    args.iter().map(|a| eval(a, b, sq)).collect()
}

fn str_map(c: &Column, f: impl Fn(&str) -> String) -> Column {
    let n = c.len();
    let mut out = StrVec::with_capacity(n, n * 8);
    for i in 0..n {
        match c.str_at(i) {
            Some(s) => out.push(&f(s)),
            None => out.push(""),
        }
    }
    Column::new(ColumnData::Varchar(out), c.validity().cloned())
}

fn f64_map(c: &Column, mut f: impl FnMut(f64) -> Option<f64>) -> Result<Column> {
    let v = to_f64(c)?;
    let mut valid = c.validity().cloned().unwrap_or_else(|| Bitmap::new_set(c.len()));
    let out: Vec<f64> = v
        .iter()
        .enumerate()
        .map(|(i, &x)| match f(x) {
            Some(y) => y,
            None => {
                valid.set(i, false);
                0.0
            }
        })
        .collect();
    Ok(Column::new(ColumnData::Float64(out.into()), Some(valid)))
}

fn lit_str(e: &BExpr) -> Result<&str> {
    match e {
        BExpr::Lit(Value::Str(s), _) => Ok(s),
        _ => Err(SqlError::Internal("expected a constant string argument".into())),
    }
}

/// DuckDB substring semantics on characters: 1-based start, negative start counts from the end.
fn substr(s: &str, start: i64, len: Option<i64>) -> String {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len() as i64;
    let (mut from, mut to) = if start > 0 {
        (start - 1, len.map_or(n, |l| (start - 1).saturating_add(l)))
    } else if start == 0 {
        (0, len.map_or(n, |l| l - 1))
    } else {
        (n + start, len.map_or(n, |l| (n + start).saturating_add(l)))
    };
    if let Some(l) = len {
        if l < 0 {
            // Negative length: the characters before `start`.
            let end = from;
            from = end + l;
            to = end;
        }
    }
    let (from, to) = (from.clamp(0, n) as usize, to.clamp(0, n) as usize);
    if from >= to {
        return String::new();
    }
    chars[from..to].iter().collect()
}

fn round_half_away(x: f64, digits: i32) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let m = 10f64.powi(digits);
    let y = (x * m).round() / m;
    if y.is_finite() {
        y
    } else {
        x
    }
}

/// A scalar function over the rows of `b` (result type `ty`), by family.
pub fn call(f: ScalarFunc, args: &[BExpr], ty: DataType, b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    match f.family() {
        Family::String => string(f, args, b, sq),
        Family::Math => math(f, args, ty, b, sq),
        Family::Conditional => conditional(f, args, ty, b, sq),
        Family::Temporal => temporal(f, args, ty, b, sq),
        Family::Vector => super::vector::call(f, args, b, sq),
        Family::Json if f == ScalarFunc::JsonBuildObject => super::json::build_object(&args_cols(args, b, sq)?, b.rows),
        Family::Json => Ok(super::json::build_array(&args_cols(args, b, sq)?, b.rows)),
        Family::Calendar => super::calendar::call(f, args, b, sq),
        Family::Array => super::array::call(f, &args_cols(args, b, sq)?, b.rows),
    }
}

/// `kafka_partition(key, partitions)` over columns `[key, partitions]`.
/// [`size_pretty`] of each row of BIGINT column `c`.
fn size_pretty_column(c: &Column) -> Result<Column> {
    let v = c.as_i64_slice().ok_or_else(|| SqlError::Internal("pg_size_pretty of a non-BIGINT".into()))?;
    let mut out = StrVec::with_capacity(v.len(), v.len() * 8);
    for (i, &x) in v.iter().enumerate() {
        out.push(&if c.is_valid(i) { size_pretty(x) } else { String::new() });
    }
    Ok(Column::new(ColumnData::Varchar(out), c.validity().cloned()))
}

/// `bytes` as PostgreSQL's `pg_size_pretty` writes it: in the first of bytes, kB, MB, GB, TB
/// and PB that keeps the number under 10,240 (bytes) or 20,480 (the others, rounded half away
/// from zero: each step divides by 1,024 with one bit kept for that rounding).
pub fn size_pretty(bytes: i64) -> String {
    // (name, limit, halves rounded, bits of the unit)
    const UNITS: [(&str, u64, bool, u32); 6] = [
        ("bytes", 10 * 1024, false, 0),
        ("kB", 20 * 1024 - 1, true, 10),
        ("MB", 20 * 1024 - 1, true, 20),
        ("GB", 20 * 1024 - 1, true, 30),
        ("TB", 20 * 1024 - 1, true, 40),
        ("PB", 20 * 1024 - 1, true, 50),
    ];
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    let mut size = bytes;
    for (k, &(name, limit, round, unit_bits)) in UNITS.iter().enumerate() {
        let next = UNITS.get(k + 1);
        if size.unsigned_abs() < limit || next.is_none() {
            let size = if round { half_rounded(size) } else { size };
            return format!("{size} {name}");
        }
        if let Some(&(_, _, next_round, next_bits)) = next {
            let bits = next_bits - unit_bits - u32::from(next_round) + u32::from(round);
            size /= 1i64 << bits;
        }
    }
    format!("{size} PB")
}

fn kafka_partition(c: &[Cow<'_, Column>]) -> Result<Column> {
    let (key, n) = match c {
        [k, n] => (k, n),
        _ => return Err(SqlError::Internal("kafka_partition arity".into())),
    };
    let counts = n.as_i64_slice().ok_or_else(|| SqlError::Internal("kafka_partition count".into()))?;
    let rows = key.len();
    let mut valid = Bitmap::new_set(rows);
    let mut out = Vec::with_capacity(rows);
    for (i, &parts) in counts.iter().enumerate().take(rows) {
        match (key.str_at(i), n.is_valid(i)) {
            (Some(k), true) => {
                if parts < 1 {
                    return Err(SqlError::exec(format!("kafka_partition: {parts} partitions (it must be at least 1)")));
                }
                out.push(super::partitioner::kafka_partition(k.as_bytes(), parts));
            }
            _ => {
                out.push(0);
                valid.set(i, false);
            }
        }
    }
    Ok(Column::new(ColumnData::Int64(out.into()), Some(valid)))
}

/// String functions.
fn string(f: ScalarFunc, args: &[BExpr], b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    use ScalarFunc as F;
    let n = b.rows;
    match f {
        F::Lower => Ok(str_map(&*eval(&args[0], b, sq)?, |s| s.to_lowercase())),
        F::Upper => Ok(str_map(&*eval(&args[0], b, sq)?, |s| s.to_uppercase())),
        F::Trim | F::LTrim | F::RTrim => {
            let c = eval(&args[0], b, sq)?;
            let chars: Option<Vec<char>> = match args.get(1) {
                Some(a) => Some(lit_str(a)?.chars().collect()),
                None => None,
            };
            let pred = |ch: char| match &chars {
                Some(set) => set.contains(&ch),
                None => ch == ' ',
            };
            Ok(str_map(&c, |s| match f {
                F::Trim => s.trim_matches(pred).to_string(),
                F::LTrim => s.trim_start_matches(pred).to_string(),
                _ => s.trim_end_matches(pred).to_string(),
            }))
        }
        F::Replace => {
            let c = args_cols(args, b, sq)?;
            let mut out = StrVec::with_capacity(n, n * 8);
            let mut valid = Bitmap::new_set(n);
            for i in 0..n {
                match (c[0].str_at(i), c[1].str_at(i), c[2].str_at(i)) {
                    (Some(s), Some(from), Some(to)) if !from.is_empty() => out.push(&s.replace(from, to)),
                    (Some(s), Some(_), Some(_)) => out.push(s),
                    _ => {
                        out.push("");
                        valid.set(i, false);
                    }
                }
            }
            Ok(Column::new(ColumnData::Varchar(out), Some(valid)))
        }
        F::StartsWith => {
            let c = args_cols(args, b, sq)?;
            let mut valid = Bitmap::new_set(n);
            let v = (0..n)
                .map(|i| match (c[0].str_at(i), c[1].str_at(i)) {
                    (Some(s), Some(p)) => s.starts_with(p),
                    _ => {
                        valid.set(i, false);
                        false
                    }
                })
                .collect();
            Ok(Column::new(ColumnData::Bool(v), Some(valid)))
        }
        F::RegexpMatches => crate::eval::regex::matches(&args_cols(args, b, sq)?, n),
        F::LikeEscape => crate::eval::like::escape_column(&args_cols(args, b, sq)?, n),
        F::Length => {
            let c = eval(&args[0], b, sq)?;
            let v = (0..n).map(|i| c.str_at(i).map_or(0, |s| s.chars().count() as i64)).collect();
            Ok(Column::new(ColumnData::Int64(v), c.validity().cloned()))
        }
        F::KafkaPartition => kafka_partition(&args_cols(args, b, sq)?),
        F::SizePretty => size_pretty_column(&*eval(&args[0], b, sq)?),
        F::Concat => {
            // concat() skips NULL arguments (DuckDB), unlike `||`.
            let c = args_cols(args, b, sq)?;
            let mut out = StrVec::with_capacity(n, n * 16);
            let mut buf = String::new();
            for i in 0..n {
                buf.clear();
                for col in &c {
                    if let Some(s) = col.str_at(i) {
                        buf.push_str(s);
                    }
                }
                out.push(&buf);
            }
            Ok(Column::from_data(ColumnData::Varchar(out)))
        }
        F::Substr => {
            let c = args_cols(args, b, sq)?;
            let start = c[1].as_i64_slice().ok_or_else(|| SqlError::Internal("substr start".into()))?;
            let len = c
                .get(2)
                .map(|x| x.as_i64_slice().ok_or_else(|| SqlError::Internal("substr len".into())))
                .transpose()?;
            let mut out = StrVec::with_capacity(n, n * 8);
            let mut valid = Bitmap::new_set(n);
            for i in 0..n {
                let ok = c.iter().all(|x| x.is_valid(i));
                match (ok, c[0].str_at(i)) {
                    (true, Some(s)) => out.push(&substr(s, start[i], len.map(|l| l[i]))),
                    _ => {
                        out.push("");
                        valid.set(i, false);
                    }
                }
            }
            Ok(Column::new(ColumnData::Varchar(out), Some(valid)))
        }
        f => Err(SqlError::Internal(format!("{f:?} is not a string function"))),
    }
}

/// Numeric functions.
fn math(f: ScalarFunc, args: &[BExpr], ty: DataType, b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    use ScalarFunc as F;
    let n = b.rows;
    match f {
        F::Abs | F::Floor | F::Ceil | F::Sign => {
            let c = eval(&args[0], b, sq)?;
            let data = match (&c.data(), f) {
                (ColumnData::Int32(v), F::Abs) => ColumnData::Int32(v.iter().map(|x| x.wrapping_abs()).collect()),
                (ColumnData::Int64(v), F::Abs) => ColumnData::Int64(v.iter().map(|x| x.wrapping_abs()).collect()),
                (ColumnData::Int128(v), F::Abs) => ColumnData::Int128(v.iter().map(|x| x.wrapping_abs()).collect()),
                (ColumnData::Int32(_) | ColumnData::Int64(_) | ColumnData::Int128(_), F::Floor | F::Ceil) => {
                    c.data().clone()
                }
                (ColumnData::Float32(v), F::Abs) => ColumnData::Float32(v.iter().map(|x| x.abs()).collect()),
                (ColumnData::Float32(v), F::Floor) => ColumnData::Float32(v.iter().map(|x| x.floor()).collect()),
                (ColumnData::Float32(v), F::Ceil) => ColumnData::Float32(v.iter().map(|x| x.ceil()).collect()),
                (ColumnData::Float64(v), F::Abs) => ColumnData::Float64(v.iter().map(|x| x.abs()).collect()),
                (ColumnData::Float64(v), F::Floor) => ColumnData::Float64(v.iter().map(|x| x.floor()).collect()),
                (ColumnData::Float64(v), F::Ceil) => ColumnData::Float64(v.iter().map(|x| x.ceil()).collect()),
                (_, F::Sign) => {
                    let v = to_f64(&c)?;
                    ColumnData::Int32(
                        v.iter()
                            .map(|&x| {
                                if x > 0.0 {
                                    1
                                } else if x < 0.0 {
                                    -1
                                } else {
                                    0
                                }
                            })
                            .collect(),
                    )
                }
                (ColumnData::Null(k), _) => ColumnData::Null(*k),
                (d, _) => return Err(SqlError::exec(format!("{f:?} is not defined for {}", d.data_type()))),
            };
            Ok(Column::new(data, c.validity().cloned()))
        }
        F::Round => {
            let c = eval(&args[0], b, sq)?;
            let digits = match args.get(1) {
                Some(BExpr::Lit(v, _)) => v.as_i64().unwrap_or(0) as i32,
                Some(_) => return Err(SqlError::NotSupported("round() with a non-constant precision".into())),
                None => 0,
            };
            let data = match &c.data() {
                ColumnData::Int32(_) | ColumnData::Int64(_) | ColumnData::Int128(_) if digits >= 0 => c.data().clone(),
                ColumnData::Float32(v) => {
                    ColumnData::Float32(v.iter().map(|&x| round_half_away(x as f64, digits) as f32).collect())
                }
                _ => {
                    let r = f64_map(&c, |x| Some(round_half_away(x, digits)))?;
                    return super::cast::cast_column(&r, ty, false);
                }
            };
            Ok(Column::new(data, c.validity().cloned()))
        }
        F::Sqrt | F::Ln | F::Log10 | F::Exp => {
            let c = eval(&args[0], b, sq)?;
            let name = format!("{f:?}").to_lowercase();
            let mut err = None;
            let out = f64_map(&c, |x| match f {
                F::Sqrt if x < 0.0 => {
                    err = Some(format!("out of range: cannot take the square root of a negative number ({x})"));
                    None
                }
                F::Ln | F::Log10 if x < 0.0 => {
                    err = Some(format!("out of range: cannot take the logarithm of a negative number ({x})"));
                    None
                }
                F::Ln | F::Log10 if x == 0.0 => {
                    err = Some("out of range: cannot take the logarithm of zero".into());
                    None
                }
                F::Sqrt => Some(x.sqrt()),
                F::Ln => Some(x.ln()),
                F::Log10 => Some(x.log10()),
                _ => Some(x.exp()),
            })?;
            // Only rows that were valid can raise.
            if let Some(e) = err {
                let bad = (0..n).any(|i| c.is_valid(i) && !out.is_valid(i));
                if bad {
                    return Err(SqlError::exec(format!("{e} in {name}()")));
                }
            }
            Ok(out)
        }
        F::Power => {
            let c = args_cols(args, b, sq)?;
            let (x, y) = (to_f64(&c[0])?, to_f64(&c[1])?);
            let v = x.iter().zip(y.iter()).map(|(a, b)| a.powf(*b)).collect();
            Ok(Column::new(ColumnData::Float64(v), super::and_validity(c[0].validity(), c[1].validity())))
        }
        F::Bitwise(op) => bitwise(op, &args_cols(args, b, sq)?, ty, n),
        f => Err(SqlError::Internal(format!("{f:?} is not a math function"))),
    }
}

/// `a op b` on two integer columns of one type (the binder cast them).
fn bitwise(op: crate::expr::functions::Bitwise, c: &[Cow<'_, Column>], ty: DataType, n: usize) -> Result<Column> {
    let valid = super::and_validity(c[0].validity(), c[1].validity());
    let data = match (c[0].data(), c[1].data()) {
        (ColumnData::Int32(x), ColumnData::Int32(y)) => {
            // Both fit in 32 bits; a left shift past them wraps as PostgreSQL's does.
            ColumnData::Int32(x.iter().zip(y).map(|(&a, &b)| op.apply(a.into(), b.into()) as i32).collect())
        }
        (ColumnData::Int64(x), ColumnData::Int64(y)) => {
            ColumnData::Int64(x.iter().zip(y).map(|(&a, &b)| op.apply(a, b)).collect())
        }
        _ => return Ok(Column::nulls(ty, n)),
    };
    Ok(Column::new(data, valid))
}

/// COALESCE, NULLIF, GREATEST, LEAST.
fn conditional(f: ScalarFunc, args: &[BExpr], ty: DataType, b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    use ScalarFunc as F;
    let n = b.rows;
    match f {
        F::Coalesce => {
            let c = args_cols(args, b, sq)?;
            let mut pick = vec![zepto_storage::column::NULL_INDEX; n];
            for i in 0..n {
                if let Some(k) = c.iter().position(|col| col.is_valid(i)) {
                    pick[i] = (k * n + i) as u32;
                }
            }
            let parts: Vec<Column> = c
                .iter()
                .map(|x| if x.data_type() == DataType::Null { Column::nulls(ty, n) } else { x.clone().into_owned() })
                .collect();
            let refs: Vec<&Column> = parts.iter().collect();
            Ok(Column::concat(&refs).take_opt(&pick))
        }
        F::Greatest | F::Least => {
            let c = args_cols(args, b, sq)?;
            let parts: Vec<Column> = c
                .iter()
                .map(|x| if x.data_type() == DataType::Null { Column::nulls(ty, n) } else { x.clone().into_owned() })
                .collect();
            let refs: Vec<&Column> = parts.iter().collect();
            let all = Column::concat(&refs);
            let cmp = super::cmp::value_cmp(&all);
            let want = if f == F::Greatest { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Less };
            let mut pick = vec![zepto_storage::column::NULL_INDEX; n];
            for i in 0..n {
                for k in 0..parts.len() {
                    let r = k * n + i;
                    if !all.is_valid(r) {
                        continue;
                    }
                    let cur = pick[i];
                    if cur == zepto_storage::column::NULL_INDEX || cmp(r, cur as usize) == want {
                        pick[i] = r as u32;
                    }
                }
            }
            Ok(all.take_opt(&pick))
        }
        F::NullIf => {
            let l = eval_opnd(&args[0], b, sq)?;
            let r = eval_opnd(&args[1], b, sq)?;
            let eq_expr = BExpr::Binary {
                op: crate::parser::ast::BinaryOp::Eq,
                left: Box::new(args[0].clone()),
                right: Box::new(args[1].clone()),
                ty: DataType::Bool,
            };
            let eq = super::eval(&eq_expr, b, sq)?;
            drop(r);
            let base = l.into_column(ty, n)?;
            let mut valid = base.validity().cloned().unwrap_or_else(|| Bitmap::new_set(n));
            if let ColumnData::Bool(v) = &eq.data() {
                for i in 0..n {
                    if v[i] && eq.is_valid(i) {
                        valid.set(i, false);
                    }
                }
            }
            Ok(Column::new(base.into_parts().0, Some(valid)))
        }
        f => Err(SqlError::Internal(format!("{f:?} is not a conditional function"))),
    }
}

/// Time functions: date_trunc, date_part, epoch, now, xbar, month_bucket.
fn temporal(f: ScalarFunc, args: &[BExpr], ty: DataType, b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    use ScalarFunc as F;
    let n = b.rows;
    match f {
        F::DateTrunc | F::DatePart => {
            let unit = lit_str(&args[0])?.to_string();
            let c = eval(&args[1], b, sq)?;
            let ts = c.as_i64_slice().ok_or_else(|| SqlError::Internal("timestamp arg".into()))?;
            // An infinite timestamp truncates to itself and has no fields (NULL), as in DuckDB.
            let finite = |t: i64| !time::is_infinite(t);
            if f == F::DateTrunc {
                let trunc = |t: i64| if finite(t) { time::trunc_timestamp(&unit, t).unwrap_or(t) } else { t };
                return Ok(Column::new(
                    ColumnData::Timestamp(ts.iter().map(|&t| trunc(t)).collect()),
                    c.validity().cloned(),
                ));
            }
            let data = ColumnData::Int64(ts.iter().map(|&t| time::extract_field(&unit, t).unwrap_or(0)).collect());
            let ok: Vec<bool> = ts.iter().map(|&t| finite(t)).collect();
            let validity = super::null_where_false(c.validity().cloned(), &ok);
            Ok(Column::new(data, validity))
        }
        F::EpochNs => {
            let c = eval(&args[0], b, sq)?;
            let ts = c.as_i64_slice().ok_or_else(|| SqlError::Internal("timestamp arg".into()))?;
            Ok(Column::new(ColumnData::Int64(ts.to_vec().into()), c.validity().cloned()))
        }
        F::Epoch => {
            let c = eval(&args[0], b, sq)?;
            let ts = c.as_i64_slice().ok_or_else(|| SqlError::Internal("timestamp arg".into()))?;
            Ok(Column::new(
                ColumnData::Float64(ts.iter().map(|&t| t as f64 / NS_PER_SEC as f64).collect()),
                c.validity().cloned(),
            ))
        }
        F::Now => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as i64)
                .unwrap_or(0);
            Ok(Column::repeat(&Value::Timestamp(now), DataType::Timestamp, n)?)
        }
        F::Xbar => xbar(args, ty, b, sq),
        F::MonthBucket => {
            let months = match &args[0] {
                BExpr::Lit(v, _) => v.as_i64().filter(|&m| m >= 1),
                _ => None,
            }
            .ok_or_else(|| SqlError::Internal("month_bucket width".into()))?;
            let c = eval(&args[1], b, sq)?;
            let ts = c.as_i64_slice().ok_or_else(|| SqlError::Internal("timestamp arg".into()))?;
            // Recompute only when a value leaves the current bucket (input is usually sorted).
            let (mut lo, mut hi) = (1i64, 0i64);
            let out = ts
                .iter()
                .map(|&t| {
                    if t < lo || t >= hi {
                        let mi = time::month_index(t).div_euclid(months) * months;
                        lo = time::month_start(mi);
                        hi = time::month_start(mi + months);
                    }
                    lo
                })
                .collect();
            Ok(Column::new(ColumnData::Timestamp(out), c.validity().cloned()))
        }
        f => Err(SqlError::Internal(format!("{f:?} is not a temporal function"))),
    }
}

/// Where the bucket `w * floor(t / w)` holding `t` ends (the next bucket's start; `None` past
/// i64: the bucket runs to the end of the times), `w > 0`. `after`, the end of a bucket before
/// `t`'s: when `t` lies in the bucket right after it, no division (tens of cycles) is needed,
/// as with time-ordered data, which stays in a bucket or moves to the next one. A bucket whose
/// start is below i64::MIN still ends where it ends.
pub(crate) fn bucket_end(t: i64, w: i64, after: Option<i64>) -> Option<i64> {
    match after {
        Some(p) if t >= p && t.checked_sub(p).is_some_and(|d| d < w) => p.checked_add(w),
        _ => t.div_euclid(w).checked_add(1).and_then(|k| k.checked_mul(w)),
    }
}

/// `w * floor(t / w)` for every value, finding a bucket's bounds only when a value leaves the
/// current one ([`bucket_end`]: without a division when it moves to the next; the first row of
/// every bucket, a GROUP BY's keys, is such data too).
fn xbar_const(v: &[i64], w: i64) -> Vec<i64> {
    debug_assert!(w > 0);
    let mut out = Vec::with_capacity(v.len());
    let (mut lo, mut hi) = (1i64, 0i64); // empty bucket: the first value recomputes
    for &t in v {
        if t < lo || t > hi {
            // Past a bucket (`hi < t`, so `hi + 1` fits): it ended at `hi + 1`.
            let end = bucket_end(t, w, (t > hi && lo <= hi).then(|| hi + 1));
            // A bucket whose start is below i64::MIN keeps i64::MIN as its value.
            lo = end.map_or_else(|| t.div_euclid(w).saturating_mul(w), |e| e.saturating_sub(w));
            hi = end.map_or(i64::MAX, |e| e - 1);
        }
        out.push(lo);
    }
    out
}

/// An infinite timestamp is its own bucket (as DuckDB's time_bucket leaves it).
fn keep_infinite(src: &[i64], out: &mut [i64]) {
    for (o, &t) in out.iter_mut().zip(src) {
        if time::is_infinite(t) {
            *o = t;
        }
    }
}

/// `xbar(w, x)` = `w * floor(x / w)`; for timestamps `w` is an interval in ns.
fn xbar(args: &[BExpr], ty: DataType, b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    let w = eval_opnd(&args[0], b, sq)?;
    let x = eval(&args[1], b, sq)?;
    let n = b.rows;
    let wv = match &w {
        Opnd::Lit(v) => Some((*v).clone()),
        Opnd::Col(_) => None,
    };
    let validity = super::and_validity(x.validity(), w.validity(n).as_ref());
    match (&x.data(), ty) {
        (ColumnData::Timestamp(v) | ColumnData::Int64(v), _) if ty == DataType::Timestamp || ty == DataType::Int64 => {
            let widths: Vec<i64> = match &wv {
                Some(v) => vec![v.as_i64().unwrap_or(0); 1],
                None => w.into_column(DataType::Int64, n)?.as_i64_slice().map(<[i64]>::to_vec).unwrap_or_default(),
            };
            if widths.len() == 1 && widths[0] > 0 {
                let mut out = xbar_const(v, widths[0]);
                let data = if ty == DataType::Timestamp {
                    keep_infinite(v, &mut out);
                    ColumnData::Timestamp(out.into())
                } else {
                    ColumnData::Int64(out.into())
                };
                return Ok(Column::new(data, validity));
            }
            let mut valid = validity.unwrap_or_else(|| Bitmap::new_set(n));
            let out: Vec<i64> = v
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    let wd = if widths.len() == 1 { widths[0] } else { widths.get(i).copied().unwrap_or(0) };
                    if wd <= 0 {
                        valid.set(i, false);
                        0
                    } else {
                        t.div_euclid(wd).saturating_mul(wd)
                    }
                })
                .collect();
            let data = if ty == DataType::Timestamp {
                let mut out = out;
                keep_infinite(v, &mut out);
                ColumnData::Timestamp(out.into())
            } else {
                ColumnData::Int64(out.into())
            };
            Ok(Column::new(data, Some(valid)))
        }
        (ColumnData::Int32(v), DataType::Int32) => {
            let wd = wv.and_then(|v| v.as_i64()).unwrap_or(0) as i32;
            if wd <= 0 {
                return Ok(Column::nulls(ty, n));
            }
            Ok(Column::new(ColumnData::Int32(v.iter().map(|&t| t.div_euclid(wd) * wd).collect()), validity))
        }
        _ => {
            let wc = w.into_column(ty, n)?;
            let (xf, wf) = (to_f64(&x)?, to_f64(&wc)?);
            let out: Vec<f64> =
                xf.iter().zip(wf.iter()).map(|(&a, &w)| if w > 0.0 { w * (a / w).floor() } else { f64::NAN }).collect();
            let col = Column::new(ColumnData::Float64(out.into()), validity);
            super::cast::cast_column(&col, ty, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::substr;

    #[test]
    fn xbar_reuses_buckets_exactly() {
        let v = [-61, -60, -1, 0, 59, 60, 61, 119, 120, 5, i64::MAX, i64::MIN];
        let got = super::xbar_const(&v, 60);
        let want: Vec<i64> = v.iter().map(|t| t.div_euclid(60).saturating_mul(60)).collect();
        assert_eq!(got, want);
        // A bucket starting below i64::MIN keeps i64::MIN as its value but ends where it ends:
        // the next bucket's rows must not inherit it (whatever row comes first).
        let v = [i64::MIN, i64::MIN + 900, i64::MIN + 1100, i64::MIN + 1900, i64::MAX - 5, i64::MAX];
        let want: Vec<i64> = v.iter().map(|t| t.div_euclid(1000).saturating_mul(1000)).collect();
        assert_eq!(super::xbar_const(&v, 1000), want);
        // Generated: steps within a bucket, to the next one, over many, back, and across i64's
        // ends, against a division per value.
        let mut rng = zepto_storage::rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut rnd = |n: u64| rng.below(n);
        for round in 0..2000 {
            let w = [1, 2, 7, 60, 1000, 1 << 40, i64::MAX / 3][round % 7];
            let mut t = match round % 5 {
                0 => i64::MIN + rnd(3000) as i64,
                1 => i64::MAX - rnd(3000) as i64,
                _ => rnd(1 << 20) as i64 - (1 << 19),
            };
            let v: Vec<i64> = (0..1 + rnd(60))
                .map(|_| {
                    let step = match rnd(8) {
                        0 => -(rnd(2 * w.unsigned_abs().min(1 << 50)) as i64),
                        1 => w.saturating_mul(rnd(5) as i64),
                        2 => i64::MAX,
                        3 => i64::MIN,
                        _ => rnd(w.unsigned_abs().min(1 << 50) + 1) as i64,
                    };
                    t = t.saturating_add(step);
                    t
                })
                .collect();
            let want: Vec<i64> = v.iter().map(|t| t.div_euclid(w).saturating_mul(w)).collect();
            assert_eq!(super::xbar_const(&v, w), want, "width {w}, {v:?}");
        }
    }

    #[test]
    fn substr_semantics() {
        assert_eq!(substr("hello", 2, Some(3)), "ell");
        assert_eq!(substr("hello", 2, None), "ello");
        assert_eq!(substr("hello", -3, Some(2)), "ll");
        assert_eq!(substr("hello", 0, Some(2)), "h");
        assert_eq!(substr("hello", 10, Some(2)), "");
        assert_eq!(substr("héllo", 2, Some(2)), "él");
    }
}
