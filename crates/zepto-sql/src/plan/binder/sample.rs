//! SAMPLE BY (QuestDB semantics): time buckets of the designated timestamp, with the other
//! non-aggregate select-list columns as keys, and FILL for the buckets a key has no rows in.
//!
//! The clause is rewritten into an ordinary aggregation (`GROUP BY bucket, keys...` where the
//! bucket is `origin + xbar(width, ts - origin)`, and `FROM`/`TO` become a time filter the scan
//! answers by binary search); a Fill node right above the Aggregate orders the buckets and
//! generates the missing ones **per key**: every key gets every bucket of `[lo, hi)`.
//!
//! Alignment: `ALIGN TO CALENDAR` (the default) puts bucket edges on multiples of the width
//! from the epoch (plus `WITH OFFSET`); `ALIGN TO FIRST OBSERVATION` starts them at the first
//! row's timestamp; a `FROM` bound aligns them to `FROM`. The range `[lo, hi)` is `FROM`/`TO`
//! when given, else the first to the last bucket present. With `ALIGN TO CALENDAR TIME ZONE`
//! the buckets, `FROM` and `TO` are all times on the zone's wall clock (QuestDB filters on
//! FROM/TO as UTC instants while filling on the wall clock: docs/questdb.md).

use super::Binder;
use crate::error::{Result, SqlError};
use crate::parser::ast::{
    BinaryOp, Expr, FillMode, FuncCall, Literal, OrderItem, Query, SampleBy, Select, SelectItem, SetExpr,
};
use crate::plan::bind_expr::{cast_to, AggCtx, ExprBinder, SubPlan, SubqueryRunner};
use crate::plan::{BExpr, Plan};
use zepto_storage::{DataType, Value};

/// What the rewritten SELECT's binder needs to place the Fill node.
pub struct FillSpec {
    bucket_text: String,
    width: i64,
    months: i64,
    lo: Option<i64>,
    hi: Option<i64>,
    zone: Option<String>,
    modes: Vec<FillMode>,
}

/// How the Fill node fills one aggregate column of a missing bucket.
#[derive(Debug, Clone, PartialEq)]
pub enum FillValue {
    /// No row for a missing bucket.
    None,
    /// NULL.
    Null,
    /// The key's previous bucket value.
    Prev,
    /// Interpolated between the key's neighbouring buckets.
    Linear,
    /// This constant (of the column's type).
    Value(Value),
}

/// The Fill node's parameters; positions refer to the Aggregate output `[keys..., aggs...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FillPlan {
    /// Position of the bucket column.
    pub bucket: usize,
    /// Positions of the key columns (each key gets every bucket).
    pub keys: Vec<usize>,
    /// Each aggregate column's position and fill.
    pub aggs: Vec<(usize, FillValue)>,
    /// Bucket width in nanoseconds (fixed-width buckets).
    pub width: i64,
    /// Calendar-month buckets (`width` is then unused).
    pub months: i64,
    /// Start of the range of buckets, nanoseconds since the epoch (on the zone's wall clock
    /// when `zone` is set); `None` starts at the first bucket present.
    pub lo: Option<i64>,
    /// End of the range (exclusive), as `lo`; `None` ends with the last bucket present.
    pub hi: Option<i64>,
    /// `ALIGN TO CALENDAR TIME ZONE`: buckets are steps of the zone's wall clock (a day 23 or
    /// 25 hours long across a daylight-saving change), named by the instants they start at.
    pub zone: Option<String>,
}

impl FillPlan {
    /// Whether any bucket is generated (otherwise the node only orders by bucket).
    pub fn fills(&self) -> bool {
        self.aggs.iter().any(|(_, v)| *v != FillValue::None)
    }

    /// The parameters as EXPLAIN prints them.
    pub fn describe(&self) -> String {
        let modes: Vec<String> = self
            .aggs
            .iter()
            .map(|(_, v)| match v {
                FillValue::None => "none".to_string(),
                FillValue::Null => "null".to_string(),
                FillValue::Prev => "prev".to_string(),
                FillValue::Linear => "linear".to_string(),
                FillValue::Value(v) => format!("{v:?}"),
            })
            .collect();
        let width = if self.months > 0 {
            format!("{} month(s)", self.months)
        } else {
            zepto_storage::time::format_interval(self.width)
        };
        format!("width={} keys={} fill=[{}]", width, self.keys.len(), modes.join(", "))
    }
}

fn plan_err<T>(msg: impl Into<String>, sb: &SampleBy) -> Result<T> {
    Err(SqlError::plan(msg, Some(sb.pos)))
}

fn interval(ns: i64) -> Expr {
    Expr::Lit(Literal::Interval(ns), Default::default())
}

impl FillSpec {
    /// The Fill node over the Aggregate `input`. `item_aggs`: the aggregate texts of each
    /// select-list entry (FILL lists give one mode per aggregate entry).
    pub fn plan(&self, b: &mut Binder, input: Plan, ctx: &AggCtx, item_aggs: &[Vec<String>]) -> Result<Plan> {
        let bucket = ctx
            .keys
            .iter()
            .position(|(t, _, _)| *t == self.bucket_text)
            .ok_or_else(|| SqlError::Internal("SAMPLE BY bucket key missing".into()))?;
        let keys: Vec<usize> = (0..ctx.keys.len()).filter(|&i| i != bucket).collect();
        let agg_items: Vec<&Vec<String>> = item_aggs.iter().filter(|t| !t.is_empty()).collect();
        if self.modes.len() > 1 && self.modes.len() != agg_items.len() {
            return Err(SqlError::plan(
                format!(
                    "FILL lists {} modes but the select list has {} aggregate columns",
                    self.modes.len(),
                    agg_items.len()
                ),
                None,
            ));
        }
        let mut modes: Vec<Option<&FillMode>> = vec![None; ctx.aggs.len()];
        for (i, texts) in agg_items.iter().enumerate() {
            let m = if self.modes.len() > 1 { self.modes.get(i) } else { self.modes.first() };
            for t in texts.iter() {
                if let Some(j) = ctx.aggs.iter().position(|(s, _)| s == t) {
                    modes[j] = modes[j].or(m);
                }
            }
        }
        let none_given = self.modes.contains(&FillMode::None);
        if none_given && self.modes.iter().any(|m| *m != FillMode::None) {
            return Err(SqlError::plan("FILL(NONE) cannot be mixed with other fill modes", None));
        }
        let nk = ctx.keys.len();
        let mut aggs = Vec::with_capacity(ctx.aggs.len());
        for (j, m) in modes.into_iter().enumerate() {
            let ty = ctx.aggs[j].1;
            let v = match m {
                None if self.modes.is_empty() || none_given => FillValue::None,
                None => FillValue::Null,
                Some(FillMode::None) => FillValue::None,
                Some(FillMode::Null) => FillValue::Null,
                Some(FillMode::Prev) => FillValue::Prev,
                Some(FillMode::Linear) => {
                    if !(ty.is_numeric() || ty == DataType::Timestamp) {
                        return Err(SqlError::plan(format!("FILL(LINEAR) needs numeric columns, got {ty}"), None));
                    }
                    FillValue::Linear
                }
                Some(FillMode::Value(e)) => {
                    let bound = ExprBinder { scope: &[], agg: None, win: None, runner: b }.bind(e)?;
                    match cast_to(bound, ty)? {
                        BExpr::Lit(v, _) => FillValue::Value(v),
                        _ => return Err(SqlError::plan("a FILL value must be a constant", e.pos())),
                    }
                }
            };
            aggs.push((nk + j, v));
        }
        let (width, months, lo, hi, zone) = (self.width, self.months, self.lo, self.hi, self.zone.clone());
        let spec = FillPlan { bucket, keys, aggs, width, months, lo, hi, zone };
        Ok(Plan::Fill { input: Box::new(input), spec })
    }
}

/// The bucket of `ts`: `origin + xbar(width, ts - origin)`, or `month_bucket(months, ts)`
/// for calendar months.
fn bucket_expr(ts: &Expr, origin: i64, sb: &SampleBy) -> Expr {
    let shifted = if origin == 0 { ts.clone() } else { binary(BinaryOp::Sub, ts.clone(), interval(origin), sb) };
    let (fname, farg) = if sb.months > 0 {
        ("month_bucket", Expr::Lit(Literal::Int(sb.months), sb.pos))
    } else {
        ("xbar", interval(sb.width))
    };
    let bucket = Expr::Func(Box::new(FuncCall::new(fname, vec![farg, shifted], sb.pos)));
    if origin == 0 {
        bucket
    } else {
        binary(BinaryOp::Add, bucket, interval(origin), sb)
    }
}

/// The bucket of `ts` on the wall clock of `zone` (`ALIGN TO CALENDAR TIME ZONE`), named by
/// the instant it starts at: `to_utc(bucket(to_timezone(ts, zone)), zone)`. A day is then the
/// zone's day, 23 or 25 hours long across a daylight-saving change; FILL steps on the same
/// wall clock (see `exec/fill.rs`). `origin` is a time on that clock too.
fn zoned_bucket(ts: &Expr, origin: i64, zone: &str, sb: &SampleBy) -> Expr {
    let zone = || Expr::Lit(Literal::Str(zone.to_string()), sb.pos);
    let local = Expr::Func(Box::new(FuncCall::new("to_timezone", vec![ts.clone(), zone()], sb.pos)));
    let bucket = bucket_expr(&local, origin, sb);
    Expr::Func(Box::new(FuncCall::new("to_utc", vec![bucket, zone()], sb.pos)))
}

/// FROM/TO with `ALIGN TO CALENDAR TIME ZONE`: read on the zone's clock, as the buckets are
/// (`FROM '2024-03-28' TO '2024-04-03'` is those local days), so the rows they admit are
/// those from the instant of FROM's wall-clock time to TO's.
fn zoned_bounds(zone: &str, lo: Option<i64>, hi: Option<i64>, sb: &SampleBy) -> Result<(Option<i64>, Option<i64>)> {
    let z = crate::eval::calendar::zone::Zone::parse(zone).map_err(|e| SqlError::plan(e, Some(sb.pos)))?;
    let instant = |wall: Option<i64>| match wall {
        None => Ok(None),
        Some(w) => z.utc(w).map(Some).ok_or_else(|| SqlError::plan("SAMPLE BY FROM/TO is out of range", Some(sb.pos))),
    };
    Ok((instant(lo)?, instant(hi)?))
}

/// `where_` AND `ts >= lo` AND `ts < hi` (the bounds given): SAMPLE BY's FROM/TO as a time
/// filter the scan answers by binary search.
fn time_range_filter(
    mut where_: Option<Expr>,
    ts: &Expr,
    lo: Option<i64>,
    hi: Option<i64>,
    sb: &SampleBy,
) -> Option<Expr> {
    let mut add = |op: BinaryOp, v: i64| {
        let c = Expr::Binary {
            op,
            left: Box::new(ts.clone()),
            right: Box::new(Expr::Lit(
                Literal::Typed(DataType::Timestamp, zepto_storage::time::format_timestamp(v)),
                sb.pos,
            )),
            pos: sb.pos,
        };
        where_ = Some(match where_.take() {
            Some(w) => binary(BinaryOp::And, w, c, sb),
            None => c,
        });
    };
    if let Some(v) = lo {
        add(BinaryOp::GtEq, v);
    }
    if let Some(v) = hi {
        add(BinaryOp::Lt, v);
    }
    where_
}

impl Binder {
    /// Rewrite SAMPLE BY into GROUP BY + Fill and bind that.
    pub(super) fn bind_sample_by(
        &mut self,
        s: &Select,
        sb: &SampleBy,
        order_by: &[OrderItem],
    ) -> Result<(Plan, Vec<super::Field>)> {
        if !s.group_by.is_empty() {
            return plan_err("SAMPLE BY cannot be combined with GROUP BY (non-aggregate columns are the keys)", sb);
        }
        if s.latest.is_some() {
            return plan_err("SAMPLE BY cannot be combined with LATEST ON", sb);
        }
        let Some(from) = &s.from else { return plan_err("SAMPLE BY needs a FROM table", sb) };
        let (_, scope) = self.bind_from(from)?;
        let Some(tsf) = scope.iter().find(|f| f.designated_ts) else {
            return plan_err("SAMPLE BY needs a table with a designated timestamp", sb);
        };
        let ts = Expr::Column { table: tsf.qualifier.clone(), name: tsf.name.clone(), pos: sb.pos };
        let ts_name = tsf.name.clone();
        let lo = sb.from.as_ref().map(|e| self.const_ts(e)).transpose()?;
        let hi = sb.to.as_ref().map(|e| self.const_ts(e)).transpose()?;
        if sb.months > 0 && sb.calendar_offset != Some(0) {
            return plan_err(
                "calendar month/year buckets align to the calendar only (no offset, no first observation)",
                sb,
            );
        }
        let origin = match (lo, sb.calendar_offset) {
            _ if sb.months > 0 => 0,
            (Some(f), _) => f,
            (None, Some(off)) => off,
            (None, None) => self.first_observation(s, &ts)?,
        };
        let (bucket, (from_at, to_at)) = match &sb.time_zone {
            None => (bucket_expr(&ts, origin, sb), (lo, hi)),
            Some(zone) => (zoned_bucket(&ts, origin, zone, sb), zoned_bounds(zone, lo, hi, sb)?),
        };
        let mut items = Vec::with_capacity(s.items.len());
        let mut group_by = vec![bucket.clone()];
        let mut has_agg = false;
        for it in &s.items {
            match it {
                SelectItem::Wildcard { .. } => {
                    return plan_err("SAMPLE BY needs an explicit select list (no *)", sb);
                }
                SelectItem::Expr { expr, alias } => {
                    let is_ts = matches!(expr, Expr::Column { table, name, .. }
                        if name.eq_ignore_ascii_case(&ts_name)
                            && table.as_deref().is_none_or(|t| tsf.qualifier.as_deref().is_some_and(|q| q.eq_ignore_ascii_case(t))));
                    if is_ts {
                        items.push(SelectItem::Expr {
                            expr: bucket.clone(),
                            alias: Some(alias.clone().unwrap_or_else(|| ts_name.clone())),
                        });
                        continue;
                    }
                    if crate::plan::bind_expr::contains_aggregate(expr) {
                        has_agg = true;
                    } else {
                        group_by.push(expr.clone());
                    }
                    items.push(it.clone());
                }
            }
        }
        if !has_agg {
            return plan_err("SAMPLE BY needs at least one aggregate in the select list", sb);
        }
        let where_ = time_range_filter(s.where_.clone(), &ts, from_at, to_at, sb);
        let rewritten = Select { items, where_, group_by, sample_by: None, ..s.clone() };
        self.pending_fill = Some(FillSpec {
            bucket_text: bucket.to_string(),
            width: sb.width,
            months: sb.months,
            lo: lo.map(|v| if sb.months > 0 { zepto_storage::time::month_bucket(sb.months, v) } else { v }),
            hi,
            zone: sb.time_zone.clone(),
            modes: sb.fill.clone(),
        });
        let r = self.bind_select(&rewritten, order_by);
        self.pending_fill = None;
        r
    }

    /// A constant timestamp (FROM / TO bounds).
    fn const_ts(&mut self, e: &Expr) -> Result<i64> {
        let b = ExprBinder { scope: &[], agg: None, win: None, runner: self }.bind(e)?;
        match cast_to(b, DataType::Timestamp)? {
            BExpr::Lit(Value::Timestamp(v), _) => Ok(v),
            _ => Err(SqlError::plan("SAMPLE BY FROM/TO must be constant timestamps", e.pos())),
        }
    }

    /// `min(ts)` of the rows the query reads (ALIGN TO FIRST OBSERVATION).
    fn first_observation(&mut self, s: &Select, ts: &Expr) -> Result<i64> {
        let min = Expr::Func(Box::new(FuncCall::new("min", vec![ts.clone()], Default::default())));
        let sel = Select {
            distinct: false,
            items: vec![SelectItem::Expr { expr: min, alias: None }],
            from: s.from.clone(),
            where_: s.where_.clone(),
            group_by: vec![],
            having: None,
            qualify: None,
            latest: None,
            sample_by: None,
        };
        let q = Query {
            ctes: vec![],
            body: SetExpr::Select(Box::new(sel)),
            order_by: vec![],
            limit: None,
            limit_to: None,
            offset: None,
        };
        match self.plan_subquery(&q, &[])? {
            SubPlan::Rows { values, .. } => Ok(match values.first() {
                Some(Value::Timestamp(v)) => *v,
                _ => 0,
            }),
            SubPlan::Correlated { .. } => Err(SqlError::Internal("first observation is correlated".into())),
        }
    }
}

fn binary(op: BinaryOp, l: Expr, r: Expr, sb: &SampleBy) -> Expr {
    Expr::Binary { op, left: Box::new(l), right: Box::new(r), pos: sb.pos }
}
