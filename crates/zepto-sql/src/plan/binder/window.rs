//! Window functions: the bound form of `f(...) OVER (...)` and its binding.
//!
//! A [`WinCall`] carries everything the executor needs: the function, its bound arguments,
//! the PARTITION BY and ORDER BY expressions, and the frame with constant offsets. Frames
//! follow the SQL standard (and DuckDB): with ORDER BY the default is `RANGE BETWEEN
//! UNBOUNDED PRECEDING AND CURRENT ROW`, without it the whole partition.
//!
//! kdb-style calls: the window-only functions (`ema`, `deltas`, `mavg`, `lag`, ...) written
//! without `OVER` get a default window: PARTITION BY the table's partition key and ORDER BY
//! its designated timestamp, when those columns are visible; EXPLAIN marks such calls.

use super::Binder;
use crate::error::{Pos, Result, SqlError};
use crate::expr::functions::{agg_by_name, AggFunc};
use crate::parser::ast::{Expr, FrameBound, FrameUnits, FuncCall, WindowSpec};
use crate::plan::bind_expr::{cast_to, common_type, AggCtx, ExprBinder};
use crate::plan::{BExpr, Field, SortKey};
use zepto_storage::{DataType, Value};

/// What a window call computes for each row.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum WinFunc {
    /// `row_number()`: 1, 2, ... in partition order.
    RowNumber,
    /// `rank()`: 1 + rows before the peer group (gaps after ties).
    Rank,
    /// `dense_rank()`: 1 + distinct peer groups before (no gaps).
    DenseRank,
    /// `percent_rank()`: `(rank - 1) / (rows - 1)`, 0 for a single row.
    PercentRank,
    /// `cume_dist()`: rows up to and including the peer group, over the partition's rows.
    CumeDist,
    /// `ntile(n)`: the row's bucket, 1 to `n`, in partition order.
    Ntile(i64),
    /// Rows back (negative: forward). Args: `[x]` or `[x, default]`.
    Lag(i64),
    /// `first_value(x)`: the frame's first value.
    FirstValue,
    /// `last_value(x)`: the frame's last value.
    LastValue,
    /// `nth_value(x, n)`: the frame's `n`-th value (1-based), NULL if the frame is shorter.
    NthValue(i64),
    /// Smoothing factor alpha; `s = alpha * x + (1 - alpha) * s_prev`, seeded with the first
    /// non-NULL value; NULL inputs give NULL and leave the state alone.
    Ema(f64),
    /// `x - previous x`; the first row of a partition gives `x`.
    Deltas,
    /// `x / previous x`; the first row of a partition gives `x`.
    Ratios,
    /// An aggregate over the frame.
    Agg(AggFunc),
}

/// A frame offset: rows for ROWS frames, order-key units for RANGE (nanoseconds for
/// timestamps, days for dates).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Offset {
    /// An integer offset (rows, or integer, timestamp and date order keys).
    Int(i64),
    /// A fractional offset (float order keys).
    Float(f64),
}

/// One end of a bound window frame.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Edge {
    /// The partition's first row.
    UnboundedPreceding,
    /// This far before the current row (or its order value).
    Preceding(Offset),
    /// The current row (RANGE: its whole peer group).
    CurrentRow,
    /// This far after the current row (or its order value).
    Following(Offset),
    /// The partition's last row.
    UnboundedFollowing,
}

/// A bound window frame with constant offsets.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Frame {
    /// ROWS frame (offsets count rows); `false` is RANGE (offsets on the order key).
    pub rows: bool,
    /// The frame's start.
    pub start: Edge,
    /// The frame's end.
    pub end: Edge,
}

impl Frame {
    /// The whole partition (the default without ORDER BY).
    pub const WHOLE: Frame = Frame { rows: true, start: Edge::UnboundedPreceding, end: Edge::UnboundedFollowing };
    /// From the partition start to the current row's peers (the default with ORDER BY).
    pub const RUNNING: Frame = Frame { rows: false, start: Edge::UnboundedPreceding, end: Edge::CurrentRow };
}

/// A bound window function call: everything the executor needs to compute it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WinCall {
    /// The function.
    pub func: WinFunc,
    /// Arguments, bound against the window's input.
    pub args: Vec<BExpr>,
    /// `f(DISTINCT ...)` for aggregates over the frame.
    pub distinct: bool,
    /// `IGNORE NULLS`: NULL inputs are skipped when picking a value.
    pub ignore_nulls: bool,
    /// PARTITION BY expressions; empty means one partition.
    pub partition: Vec<BExpr>,
    /// ORDER BY keys within a partition.
    pub order: Vec<SortKey>,
    /// The frame, defaults applied.
    pub frame: Frame,
    /// The result type.
    pub ty: DataType,
    /// How EXPLAIN shows the call (notes a kdb-style default window).
    pub describe: String,
}

/// The default window of kdb-style calls (no `OVER`): expressions to try, each dropped when it
/// does not bind in the query's scope.
pub struct WinDefaults {
    /// Partition key to try (the table's partition key), if any.
    pub partition: Option<Expr>,
    /// Order to try (the designated timestamp), if any.
    pub order: Option<Expr>,
}

fn bad<T>(msg: impl Into<String>, pos: Pos) -> Result<T> {
    Err(SqlError::plan(msg, Some(pos)))
}

fn constant(b: &mut Binder, e: &Expr) -> Result<Value> {
    match (ExprBinder { scope: &[], agg: None, win: None, runner: b }).bind(e)? {
        BExpr::Lit(v, _) => Ok(v),
        _ => bad("must be a constant", e.pos().unwrap_or_default()),
    }
}

fn const_int(b: &mut Binder, e: &Expr, what: &str, min: i64) -> Result<i64> {
    let pos = e.pos().unwrap_or_default();
    match constant(b, e) {
        Ok(v) => match v.as_i64() {
            Some(n) if n >= min && matches!(v, Value::Int32(_) | Value::Int64(_)) => Ok(n),
            _ => bad(format!("{what} must be an integer constant >= {min}"), pos),
        },
        Err(_) => bad(format!("{what} must be an integer constant"), pos),
    }
}

/// Bind one window call in `scope` (with `agg` when the query aggregates: window functions
/// run after GROUP BY and may take aggregates as arguments).
pub fn bind_window_call(
    b: &mut Binder,
    f: &FuncCall,
    scope: &[Field],
    agg: Option<&AggCtx>,
    defaults: &WinDefaults,
) -> Result<WinCall> {
    let spec: WindowSpec = match &f.over {
        Some(s) => (**s).clone(),
        None => WindowSpec::default(),
    };
    if let Some(name) = &spec.base {
        return bad(format!("window '{name}' is not defined (no WINDOW clause names it)"), f.pos);
    }
    let cx = CallCx { f, scope, agg };
    let (partition, order, describe) = cx.window(b, &spec, defaults)?;
    let (func, args, ty, frame) = cx.function(b, &spec)?;
    if f.distinct && !matches!(func, WinFunc::Agg(_)) {
        return bad(format!("DISTINCT is not valid for {}()", f.name), f.pos);
    }
    if f.ignore_nulls
        && !matches!(func, WinFunc::Lag(_) | WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue(_))
    {
        return bad(format!("IGNORE NULLS is not valid for {}()", f.name), f.pos);
    }
    let frame = match frame {
        Some(fr) => fr,
        None => bind_frame(b, &spec, &order)?,
    };
    Ok(WinCall {
        func,
        args,
        distinct: f.distinct,
        ignore_nulls: f.ignore_nulls,
        partition,
        order,
        frame,
        ty,
        describe,
    })
}

/// A window call being bound: the call and the scope its expressions bind in.
struct CallCx<'a> {
    f: &'a FuncCall,
    scope: &'a [Field],
    agg: Option<&'a AggCtx>,
}

/// A bound window function: what it computes, its arguments, its type, and the fixed frame
/// of the kdb moving functions (others take the query's frame).
type BoundFunc = (WinFunc, Vec<BExpr>, DataType, Option<Frame>);

impl CallCx<'_> {
    fn bind(&self, b: &mut Binder, e: &Expr) -> Result<BExpr> {
        ExprBinder { scope: self.scope, agg: self.agg, win: None, runner: b }.bind(e)
    }

    /// The call's `i`th argument, bound.
    fn arg(&self, b: &mut Binder, i: usize) -> Result<BExpr> {
        match self.f.args.get(i) {
            Some(a) => self.bind(b, a),
            None => Err(SqlError::Internal("window argument".into())),
        }
    }

    fn arity(&self, lo: usize, hi: usize) -> Result<()> {
        let n = self.f.args.len();
        if n < lo || n > hi || self.f.star {
            return bad(format!("wrong number of arguments to {}()", self.f.name), self.f.pos);
        }
        Ok(())
    }

    /// PARTITION BY and ORDER BY (for a kdb-style call without OVER, its default window
    /// first), and how EXPLAIN shows the call.
    fn window(
        &self,
        b: &mut Binder,
        spec: &WindowSpec,
        defaults: &WinDefaults,
    ) -> Result<(Vec<BExpr>, Vec<SortKey>, String)> {
        let f = self.f;
        let kdb = f.over.is_none();
        let mut partition = Vec::new();
        let mut order = Vec::new();
        let mut notes = Vec::new();
        if kdb {
            if let Some(p) = &defaults.partition {
                if let Ok(x) = self.bind(b, p) {
                    partition.push(x);
                    notes.push(format!("PARTITION BY {p}"));
                }
            }
            if let Some(o) = &defaults.order {
                if let Ok(x) = self.bind(b, o) {
                    order.push(SortKey { expr: x, desc: false, nulls_first: false });
                    notes.push(format!("ORDER BY {o}"));
                }
            }
        }
        for p in &spec.partition_by {
            partition.push(self.bind(b, p)?);
        }
        for o in &spec.order_by {
            let x = self.bind(b, &o.expr)?;
            order.push(SortKey { expr: x, desc: o.desc, nulls_first: o.nulls_first.unwrap_or(false) });
        }
        let text = Expr::Func(Box::new(f.clone())).to_string();
        let describe = if kdb {
            let w = if notes.is_empty() { "whole input in input order".to_string() } else { notes.join(" ") };
            format!("{text} [kdb default: {w}]")
        } else {
            text
        };
        Ok((partition, order, describe))
    }

    /// The function by name: ranking, offset and value functions, the kdb moving functions,
    /// or an aggregate over the frame.
    fn function(&self, b: &mut Binder, spec: &WindowSpec) -> Result<BoundFunc> {
        let f = self.f;
        let (func, args, ty) = match f.name.as_str() {
            "row_number" | "rank" | "dense_rank" | "percent_rank" | "cume_dist" => {
                self.arity(0, 0)?;
                let (func, ty) = match f.name.as_str() {
                    "row_number" => (WinFunc::RowNumber, DataType::Int64),
                    "rank" => (WinFunc::Rank, DataType::Int64),
                    "dense_rank" => (WinFunc::DenseRank, DataType::Int64),
                    "percent_rank" => (WinFunc::PercentRank, DataType::Float64),
                    _ => (WinFunc::CumeDist, DataType::Float64),
                };
                (func, vec![], ty)
            }
            "ntile" => {
                self.arity(1, 1)?;
                let n = const_int(b, &f.args[0], "the ntile bucket count", 1)?;
                (WinFunc::Ntile(n), vec![], DataType::Int64)
            }
            "lag" | "lead" => self.lag(b)?,
            "first_value" | "last_value" | "first" | "last" => {
                self.arity(1, 1)?;
                let x = self.arg(b, 0)?;
                let ty = x.data_type();
                let func = if f.name.starts_with("first") { WinFunc::FirstValue } else { WinFunc::LastValue };
                (func, vec![x], ty)
            }
            "nth_value" => {
                self.arity(2, 2)?;
                let x = self.arg(b, 0)?;
                let n = const_int(b, &f.args[1], "the nth_value position", 1)?;
                let ty = x.data_type();
                (WinFunc::NthValue(n), vec![x], ty)
            }
            "ema" | "deltas" | "ratios" | "mavg" | "msum" | "mmin" | "mmax" | "mdev" | "mcount" => {
                return self.kdb(b, spec);
            }
            name => {
                if agg_by_name(name).is_none() {
                    return bad(format!("{name}() is not a window function or aggregate"), f.pos);
                }
                let mut call = b.bind_agg_call(f, self.scope, self.agg)?;
                if call.func == AggFunc::Twap && call.args.len() == 1 {
                    // twap(x): weighted by the designated timestamp.
                    call.args.extend(call.order.take());
                }
                (WinFunc::Agg(call.func), call.args, call.ty)
            }
        };
        Ok((func, args, ty, None))
    }

    /// `lag(x [, k [, default]])`, `lead(...)`: `lead` is a negative lag.
    fn lag(&self, b: &mut Binder) -> Result<(WinFunc, Vec<BExpr>, DataType)> {
        let f = self.f;
        let nargs = f.args.len();
        self.arity(1, 3)?;
        let x = self.arg(b, 0)?;
        let k = match f.args.get(1) {
            Some(e) => const_int(b, e, "the lag/lead offset", i64::MIN + 1)?,
            None => 1,
        };
        let k = if f.name == "lead" { -k } else { k };
        let mut args = vec![x];
        let mut ty = args[0].data_type();
        if nargs == 3 {
            let d = self.bind(b, &f.args[2])?;
            ty = common_type(ty, d.data_type()).ok_or_else(|| {
                SqlError::plan(
                    format!("{}() default of type {} does not match {ty}", f.name, d.data_type()),
                    Some(f.pos),
                )
            })?;
            args.push(d);
        }
        let args = unify(args, ty)?;
        Ok((WinFunc::Lag(k), args, ty))
    }

    /// The kdb-style functions: `ema`, `deltas`, `ratios`, and the moving aggregates
    /// (`mavg`, `msum`, `mmin`, `mmax`, `mdev`, `mcount`) over a fixed ROWS frame.
    fn kdb(&self, b: &mut Binder, spec: &WindowSpec) -> Result<BoundFunc> {
        let f = self.f;
        let mut frame = None;
        let windowed = f.name != "deltas" && f.name != "ratios";
        self.arity(if windowed { 2 } else { 1 }, if windowed { 2 } else { 1 })?;
        if spec.frame.is_some() {
            return bad(format!("{}() takes no frame clause (its window is fixed)", f.name), f.pos);
        }
        // SPEC order is f(x, n); kdb's `n mavg x` order f(n, x) is accepted too.
        let (xi, ni) = if windowed && matches!(f.args[0], Expr::Lit(..)) && !matches!(f.args[1], Expr::Lit(..)) {
            (1, 0)
        } else {
            (0, 1)
        };
        let x = self.arg(b, xi)?;
        let xt = x.data_type();
        let numeric = xt.is_numeric() || xt == DataType::Null || xt == DataType::Bool;
        let (func, args, ty) = match f.name.as_str() {
            "ema" => {
                if !numeric {
                    return bad(format!("ema() needs a numeric argument, got {xt}"), f.pos);
                }
                let v = constant(b, &f.args[ni])?;
                let alpha = match v.as_f64() {
                    Some(n) if n > 0.0 && n < 1.0 => n,
                    Some(n) if n >= 1.0 && n.fract() == 0.0 => 2.0 / (n + 1.0),
                    _ => {
                        return bad(
                            "ema(x, n): n must be a whole number of periods >= 1 or a smoothing factor in (0, 1)",
                            f.pos,
                        )
                    }
                };
                (WinFunc::Ema(alpha), vec![cast_to(x, DataType::Float64)?], DataType::Float64)
            }
            "deltas" => {
                let ty = match xt {
                    t if t.is_integer() || t == DataType::Bool || t == DataType::Null => DataType::Int64,
                    t if t.is_float() => DataType::Float64,
                    DataType::Timestamp | DataType::Interval => DataType::Interval,
                    t => return bad(format!("deltas() needs a numeric or timestamp argument, got {t}"), f.pos),
                };
                let x = if ty == DataType::Interval { x } else { cast_to(x, ty)? };
                (WinFunc::Deltas, vec![x], ty)
            }
            "ratios" => {
                if !numeric {
                    return bad(format!("ratios() needs a numeric argument, got {xt}"), f.pos);
                }
                (WinFunc::Ratios, vec![cast_to(x, DataType::Float64)?], DataType::Float64)
            }
            name => {
                let n = const_int(b, &f.args[ni], &format!("the {name}() window length"), 1)?;
                let agg = match name {
                    "mavg" => AggFunc::Avg,
                    "msum" => AggFunc::Sum,
                    "mmin" => AggFunc::Min,
                    "mmax" => AggFunc::Max,
                    "mdev" => AggFunc::StddevPop,
                    _ => AggFunc::Count,
                };
                let ty = crate::expr::functions::agg_type(agg, &[xt], f.pos)?;
                frame = Some(Frame { rows: true, start: Edge::Preceding(Offset::Int(n - 1)), end: Edge::CurrentRow });
                (WinFunc::Agg(agg), vec![x], ty)
            }
        };
        Ok((func, args, ty, frame))
    }
}

fn unify(args: Vec<BExpr>, ty: DataType) -> Result<Vec<BExpr>> {
    args.into_iter()
        .map(
            |a| {
                if a.data_type() == ty || (a.data_type().is_string() && ty.is_string()) {
                    Ok(a)
                } else {
                    cast_to(a, ty)
                }
            },
        )
        .collect()
}

fn bind_frame(b: &mut Binder, spec: &WindowSpec, order: &[SortKey]) -> Result<Frame> {
    let Some(fr) = &spec.frame else {
        return Ok(if order.is_empty() { Frame::WHOLE } else { Frame::RUNNING });
    };
    let rows = fr.units == FrameUnits::Rows;
    // RANGE offsets are in units of the single ORDER BY key.
    let key_ty = match order {
        [k] => Some(k.expr.data_type()),
        _ => None,
    };
    let mut edge = |bound: &FrameBound| -> Result<Edge> {
        let (e, preceding) = match bound {
            FrameBound::UnboundedPreceding => return Ok(Edge::UnboundedPreceding),
            FrameBound::UnboundedFollowing => return Ok(Edge::UnboundedFollowing),
            FrameBound::CurrentRow => return Ok(Edge::CurrentRow),
            FrameBound::Preceding(e) => (e, true),
            FrameBound::Following(e) => (e, false),
        };
        let epos = e.pos().unwrap_or(fr.pos);
        let v = constant(b, e).map_err(|_| SqlError::plan("frame offsets must be constants", Some(epos)))?;
        let off = if rows {
            match (&v, v.as_i64()) {
                (Value::Int32(_) | Value::Int64(_), Some(n)) if n >= 0 => Offset::Int(n),
                _ => return bad("a ROWS frame offset must be a non-negative integer", epos),
            }
        } else {
            let Some(kt) = key_ty else {
                return bad("a RANGE frame with an offset needs exactly one ORDER BY expression", fr.pos);
            };
            range_offset(&v, kt, epos)?
        };
        Ok(if preceding { Edge::Preceding(off) } else { Edge::Following(off) })
    };
    let start = edge(&fr.start)?;
    let end = edge(&fr.end)?;
    let rank = |e: &Edge| match e {
        Edge::UnboundedPreceding => 0,
        Edge::Preceding(_) => 1,
        Edge::CurrentRow => 2,
        Edge::Following(_) => 3,
        Edge::UnboundedFollowing => 4,
    };
    if matches!(start, Edge::UnboundedFollowing) {
        return bad("a frame cannot start at UNBOUNDED FOLLOWING", fr.pos);
    }
    if matches!(end, Edge::UnboundedPreceding) {
        return bad("a frame cannot end at UNBOUNDED PRECEDING", fr.pos);
    }
    if rank(&start) > rank(&end) {
        return bad("the frame starts after it ends", fr.pos);
    }
    Ok(Frame { rows, start, end })
}

/// A RANGE offset converted to the order key's units.
fn range_offset(v: &Value, key: DataType, pos: Pos) -> Result<Offset> {
    let neg = || bad("a RANGE frame offset must not be negative or NULL", pos);
    match (key, v) {
        (DataType::Timestamp, Value::Interval(ns)) | (DataType::Timestamp, Value::Int64(ns)) => {
            if *ns < 0 {
                return neg();
            }
            Ok(Offset::Int(*ns))
        }
        (DataType::Date, Value::Interval(ns)) => {
            use zepto_storage::time::NS_PER_DAY;
            if *ns < 0 || ns % NS_PER_DAY != 0 {
                return bad("a RANGE offset on a DATE key must be whole days", pos);
            }
            Ok(Offset::Int(ns / NS_PER_DAY))
        }
        (k, Value::Int32(_) | Value::Int64(_)) if k.is_integer() || k == DataType::Date => match v.as_i64() {
            Some(n) if n >= 0 => Ok(Offset::Int(n)),
            _ => neg(),
        },
        (k, v) if k.is_float() && v.as_f64().is_some() && !matches!(v, Value::Interval(_)) => match v.as_f64() {
            Some(x) if x >= 0.0 => Ok(Offset::Float(x)),
            _ => neg(),
        },
        (k, v) => {
            bad(format!("a RANGE offset of type {} does not fit an ORDER BY key of type {k}", v.data_type()), pos)
        }
    }
}

/// Collect the window calls of an expression (deduplicated by text, in first-seen order).
pub fn collect_calls<'e>(e: &'e Expr, out: &mut Vec<(String, &'e FuncCall)>) {
    fn go<'e>(e: &'e Expr, out: &mut Vec<(String, &'e FuncCall)>) {
        if let Expr::Func(f) = e {
            if crate::plan::bind_expr::is_window_call(f) {
                let text = e.to_string();
                if !out.iter().any(|(t, _)| *t == text) {
                    out.push((text, f));
                }
                return;
            }
        }
        visit_children(e, &mut |c| go(c, out));
    }
    go(e, out)
}

/// Direct children of an AST expression (not into subqueries).
pub(super) fn visit_children<'e>(e: &'e Expr, f: &mut dyn FnMut(&'e Expr)) {
    match e {
        Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } | Expr::Cast { expr, .. } => f(expr),
        Expr::Binary { left, right, .. } => {
            f(left);
            f(right);
        }
        Expr::Func(fc) => fc.args.iter().for_each(f),
        Expr::Case { operand, whens, else_ } => {
            if let Some(o) = operand {
                f(o);
            }
            for (w, t) in whens {
                f(w);
                f(t);
            }
            if let Some(x) = else_ {
                f(x);
            }
        }
        Expr::InList { expr, list, .. } => {
            f(expr);
            list.iter().for_each(f);
        }
        Expr::InValues(v) => f(&v.expr),
        Expr::InSubquery { expr, .. } => f(expr),
        Expr::Between { expr, lo, hi, .. } => {
            f(expr);
            f(lo);
            f(hi);
        }
        Expr::Like { expr, pattern, .. } => {
            f(expr);
            f(pattern);
        }
        Expr::Column { .. } | Expr::Lit(..) | Expr::Exists { .. } | Expr::Subquery(_) => {}
    }
}
