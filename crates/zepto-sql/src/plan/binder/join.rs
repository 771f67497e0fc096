//! Joins bound: `left JOIN right ON ... / USING (...)` with its ON condition split into
//! equality keys and the rest, into the node its kind and shape call for: ASOF (keys, one
//! inequality, TOLERANCE, NEAREST), SPLICE, WINDOW (made a WindowJoin by the SELECT over it),
//! a band join, or a hash / nested-loop join.

use super::{window_join, Binder};
use crate::error::{Pos, Result, SqlError};
use crate::expr::functions;
use crate::parser::ast::*;
use crate::plan::bind_expr::{cast_to, resolve, ExprBinder};
use crate::plan::{AsofOuter, BExpr, Field, Plan};
use zepto_storage::{DataType, Value};

impl Binder {
    /// `left JOIN right ON ... / USING (...)`: the ON condition split into equality keys and
    /// the rest, into the join node its kind and shape call for (ASOF, SPLICE, WINDOW, a band
    /// join, or a hash / nested-loop join).
    pub(super) fn bind_join(
        &mut self,
        left: &TableRef,
        right: &TableRef,
        kind: JoinKind,
        on: Option<&Expr>,
        using: &[String],
    ) -> Result<(Plan, Vec<Field>)> {
        let (lp, lf) = self.bind_from(left)?;
        let (rp, rf) = self.bind_from(right)?;
        let nl = lf.len();
        let mut scope = lf.clone();
        scope.extend(rf.iter().cloned());
        let asof = kind.is_asof();
        let (mut conds, merged) = using_conds(&lf, &rf, using, asof, &mut scope)?;
        let (on, nearest, tolerance) = match on {
            Some(on) if asof => split_asof_on(on),
            on => (on.cloned(), false, None),
        };
        if let Some(on) = &on {
            let b = ExprBinder { scope: &scope, agg: None, win: None, runner: self }.bind_bool(on)?;
            b.conjuncts(&mut conds);
        }
        let tolerance = match tolerance {
            None => None,
            Some(e) => Some(self.asof_tolerance(&e)?),
        };
        if kind == JoinKind::Splice {
            return Ok((splice_plan(lp, rp, conds, &lf, &rf)?, scope));
        }
        if kind == JoinKind::Window {
            // Turned into a WindowJoin by the SELECT that aggregates over it.
            let plan = Plan::Join {
                left: Box::new(lp),
                right: Box::new(rp),
                kind: JoinKind::Window,
                left_keys: vec![],
                right_keys: vec![],
                residual: BExpr::and_all(conds),
            };
            return Ok((plan, scope));
        }
        if asof {
            let outer = match kind {
                JoinKind::AsofLeft | JoinKind::AsofAnti => AsofOuter::Left,
                JoinKind::AsofRight => AsofOuter::Right,
                JoinKind::AsofFull => AsofOuter::Full,
                _ => AsofOuter::Inner,
            };
            let plan = asof_plan(lp, rp, conds, nl, outer, nearest, tolerance)?;
            return Ok(match kind {
                JoinKind::AsofSemi | JoinKind::AsofAnti => (asof_semi(plan, kind, &lf), lf),
                _ if outer.keeps_right() && !merged.is_empty() => {
                    (merge_using(plan, &mut scope, &merged, outer == AsofOuter::Right), scope)
                }
                _ => (plan, scope),
            });
        }
        let plan = keyed_join(lp, rp, conds, kind, &mut scope, &merged, nl);
        Ok((plan, scope))
    }
}

/// The columns `USING (...)` merges: each one's left and right position in the join's scope.
type Merged = Vec<(usize, usize)>;

/// `USING (...)`'s conditions, each column of the list equal on both sides (for ASOF, the last
/// one `l.t >= r.t`, as DuckDB reads it), and the columns it merges (their right copies marked
/// in `scope` as reached only when qualified).
fn using_conds(
    lf: &[Field],
    rf: &[Field],
    using: &[String],
    asof: bool,
    scope: &mut [Field],
) -> Result<(Vec<BExpr>, Merged)> {
    let nl = lf.len();
    let (mut conds, mut merged) = (Vec::new(), Vec::new());
    for (k, u) in using.iter().enumerate() {
        let p = Pos::default();
        let li = resolve(lf, None, u, p)?;
        let ri = resolve(rf, None, u, p)?;
        let (l, r) = (BExpr::Col(li, lf[li].data_type), BExpr::Col(nl + ri, rf[ri].data_type));
        // DuckDB's ASOF ... USING (keys..., t): the last column is `l.t >= r.t`.
        let op = if asof && k + 1 == using.len() { BinaryOp::GtEq } else { BinaryOp::Eq };
        conds.push(crate::plan::bind_expr::bind_binary(op, l, r, p)?);
        // The bare name means the left copy; the right one is reached qualified only.
        scope[nl + ri].using_copy = true;
        merged.push((li, nl + ri));
    }
    Ok((conds, merged))
}

/// A join of `kind` on `conds` that is neither ASOF, SPLICE nor WINDOW: a band join when its
/// conditions make one, else a hash join on the equalities (a nested loop without any), the
/// rest checked against each pair; a RIGHT or FULL one with its `merged` USING columns
/// merged.
fn keyed_join(
    lp: Plan,
    rp: Plan,
    conds: Vec<BExpr>,
    kind: JoinKind,
    scope: &mut Vec<Field>,
    merged: &[(usize, usize)],
    nl: usize,
) -> Plan {
    let (mut keys, mut residual) = (KeyPairs::default(), Vec::new());
    for c in conds {
        residual.extend(keys.take(c, nl));
    }
    let KeyPairs { left: lk, right: rk } = keys;
    let parts = window_join::JoinParts { lp, rp, lk, rk, residual };
    let window_join::JoinParts { lp, rp, lk, rk, residual } = match window_join::band_join(parts, scope, kind) {
        Ok(plan) => return plan,
        Err(parts) => *parts,
    };
    let plan = Plan::Join {
        left: Box::new(lp),
        right: Box::new(rp),
        kind,
        left_keys: lk,
        right_keys: rk,
        residual: BExpr::and_all(residual),
    };
    if matches!(kind, JoinKind::Right | JoinKind::Full) && !merged.is_empty() {
        return merge_using(plan, scope, merged, false);
    }
    plan
}

/// `SPLICE JOIN`: equality keys only; the times are each side's designated timestamp.
fn splice_plan(lp: Plan, rp: Plan, conds: Vec<BExpr>, lf: &[Field], rf: &[Field]) -> Result<Plan> {
    let nl = lf.len();
    let (mut lk, mut rk) = (Vec::new(), Vec::new());
    for c in conds {
        let (l, r) = split_equi(&c, nl).ok_or_else(|| {
            SqlError::plan("SPLICE JOIN ... ON takes equality keys only (times are the designated timestamps)", None)
        })?;
        lk.push(l);
        rk.push(r);
    }
    let ts = |f: &[Field], side: &str| {
        f.iter()
            .position(|x| x.designated_ts)
            .map(|i| BExpr::Col(i, DataType::Timestamp))
            .ok_or_else(|| SqlError::plan(format!("SPLICE JOIN needs a designated timestamp on the {side} side"), None))
    };
    Ok(Plan::SpliceJoin {
        left_ts: ts(lf, "left")?,
        right_ts: ts(rf, "right")?,
        left: Box::new(lp),
        right: Box::new(rp),
        left_keys: lk,
        right_keys: rk,
    })
}

/// Take the ASOF-only parts out of an ON condition: `nearest(l, r)` (returned as `l >= r`
/// plus the flag) and the `TOLERANCE` marker the parser put in.
fn split_asof_on(on: &Expr) -> (Option<Expr>, bool, Option<Expr>) {
    fn flatten(e: &Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::Binary { op: BinaryOp::And, left, right, .. } => {
                flatten(left, out);
                flatten(right, out);
            }
            e => out.push(e.clone()),
        }
    }
    let mut parts = Vec::new();
    flatten(on, &mut parts);
    let (mut nearest, mut tolerance, mut kept) = (false, None, Vec::new());
    for p in parts {
        match &p {
            Expr::Func(f) if f.name == "nearest" && f.args.len() == 2 && f.over.is_none() => {
                nearest = true;
                kept.push(Expr::Binary {
                    op: BinaryOp::GtEq,
                    left: Box::new(f.args[0].clone()),
                    right: Box::new(f.args[1].clone()),
                    pos: f.pos,
                });
            }
            Expr::Func(f) if f.name == "asof_tolerance" && f.args.len() == 1 => tolerance = Some(f.args[0].clone()),
            _ => kept.push(p),
        }
    }
    let on = kept.into_iter().reduce(|a, b| Expr::Binary {
        op: BinaryOp::And,
        pos: a.pos().unwrap_or_default(),
        left: Box::new(a),
        right: Box::new(b),
    });
    (on, nearest, tolerance)
}

impl Binder {
    /// The TOLERANCE of an ASOF JOIN: a non-negative constant distance (an INTERVAL for
    /// timestamps, a number of units for integer times).
    fn asof_tolerance(&mut self, e: &Expr) -> Result<i64> {
        let b = ExprBinder { scope: &[], agg: None, win: None, runner: self }.bind(e)?;
        match b {
            BExpr::Lit(Value::Interval(v) | Value::Int64(v), _) if v >= 0 => Ok(v),
            BExpr::Lit(Value::Int32(v), _) if v >= 0 => Ok(v as i64),
            _ => Err(SqlError::plan("TOLERANCE must be a non-negative constant INTERVAL or integer", e.pos())),
        }
    }
}

/// RIGHT and FULL JOIN ... USING: each USING column's bare name (and `*`) gives the value of
/// whichever side has the row, `COALESCE(l, r)` (`COALESCE(r, l)` when `right_first`: an ASOF
/// RIGHT JOIN's time column is the right row's, as in DuckDB). The merged value takes the
/// left column's place and answers to no table name; each side's own value stays reachable
/// qualified (`l.k`, `r.k`): the left one as an extra column after the others.
fn merge_using(plan: Plan, scope: &mut Vec<Field>, merged: &[(usize, usize)], right_first: bool) -> Plan {
    let mut exprs: Vec<BExpr> = (0..scope.len()).map(|i| BExpr::Col(i, scope[i].data_type)).collect();
    for &(l, r) in merged {
        let ty = scope[l].data_type;
        // The right copy in the left one's type (keys of two string kinds stay as they are).
        let right = match scope[r].data_type {
            t if t == ty => BExpr::Col(r, t),
            t => match cast_to(BExpr::Col(r, t), ty) {
                Ok(e) if e.data_type() == ty => e,
                _ => continue,
            },
        };
        let left = BExpr::Col(l, ty);
        let args = if right_first { vec![right, left.clone()] } else { vec![left.clone(), right] };
        exprs[l] = BExpr::Func { func: functions::ScalarFunc::Coalesce, args, ty };
        exprs.push(left);
        let offset = l as isize - scope.len() as isize;
        let own = Field { using_copy: true, star_offset: Some(offset), ..scope[l].clone() };
        scope[l].qualifier = None;
        scope.push(own);
    }
    Plan::Project { input: Box::new(plan), exprs }
}

/// An ASOF condition that reads both sides and is no equality, if it is the inequality: a
/// comparison (`>=`, `>`, `<=`, `<`) of a left and a right expression, as (left time, right
/// time over the right input, operator with the left time first). `None`: another condition
/// between the sides (`l.v + r.v > 10`, an `OR`), which joins the match as a residual.
fn asof_inequality(c: &BExpr, nl: usize) -> Option<Result<(BExpr, BExpr, BinaryOp)>> {
    let BExpr::Binary { op, left, right, .. } = c else { return None };
    if !matches!(op, BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
        return None;
    }
    let (l, r, op) = match split_sides(left, right, nl)? {
        (l, r) if l == **left => (l, r, *op),
        (l, r) => (l, r, op.flip()),
    };
    let ordered = |t: DataType| t.is_numeric() || t.is_string() || matches!(t, DataType::Timestamp | DataType::Date);
    if !ordered(l.data_type()) || l.data_type().is_string() != r.data_type().is_string() {
        return Some(Err(SqlError::plan(
            format!(
                "ASOF JOIN inequality needs ordered numeric, time or string values on both sides, got {} and {}",
                l.data_type(),
                r.data_type()
            ),
            None,
        )));
    }
    Some(Ok((l, r, op)))
}

/// ASOF SEMI (`plan` an inner ASOF join) and ANTI (`plan` an ASOF LEFT join) JOIN: the left
/// columns of the rows with a match, or of those without (a matched row's right time is
/// never NULL: NULL times never match).
fn asof_semi(plan: Plan, kind: JoinKind, lf: &[Field]) -> Plan {
    let keep = lf.iter().enumerate().map(|(i, f)| BExpr::Col(i, f.data_type)).collect();
    let plan = match (&plan, kind) {
        (Plan::AsofJoin { right_ts, .. }, JoinKind::AsofAnti) => {
            let mut unmatched = right_ts.clone();
            unmatched.map_cols(&|i| i + lf.len());
            let pred = BExpr::IsNull { expr: Box::new(unmatched), negated: false };
            Plan::Filter { input: Box::new(plan), pred }
        }
        _ => plan,
    };
    Plan::Project { input: Box::new(plan), exprs: keep }
}

/// The ASOF join of `lp` (its `nl` columns first) and `rp` on `conds`: its equality keys, the
/// one inequality between the times (`nearest`: the nearest time either way), right-only
/// conditions filtering `rp`, the rest checked against each matched pair; `outer` says which
/// unmatched rows it keeps, `tolerance` the farthest a match may be.
fn asof_plan(
    lp: Plan,
    mut rp: Plan,
    conds: Vec<BExpr>,
    nl: usize,
    outer: AsofOuter,
    nearest: bool,
    tolerance: Option<i64>,
) -> Result<Plan> {
    let AsofConds { keys: KeyPairs { left: left_keys, right: right_keys }, ineq, right_only, residual } =
        AsofConds::classify(conds, nl, outer)?;
    let (left_ts, right_ts, op) = ineq.ok_or_else(|| {
        SqlError::plan(
            "ASOF JOIN needs an inequality (>=, >, <=, <) or nearest(l, r) between a left and a right column",
            None,
        )
    })?;
    if nearest && left_ts.data_type().is_string() {
        return Err(SqlError::plan("nearest() needs numeric or time values (strings have no distance)", None));
    }
    if nearest && !residual.is_empty() {
        return Err(SqlError::plan(
            "nearest() takes no other condition between the two sides (equalities, one-side conditions and TOLERANCE only)",
            None,
        ));
    }
    let op = if nearest { BinaryOp::Eq } else { op };
    if let Some(pred) = BExpr::and_all(right_only) {
        rp = Plan::Filter { input: Box::new(rp), pred };
    }
    if tolerance.is_some()
        && !matches!(left_ts.data_type(), DataType::Timestamp | DataType::Date)
        && !left_ts.data_type().is_integer()
    {
        return Err(SqlError::plan("TOLERANCE needs timestamp or integer times", None));
    }
    Ok(Plan::AsofJoin {
        left: Box::new(lp),
        right: Box::new(rp),
        left_keys,
        right_keys,
        left_ts,
        right_ts,
        op,
        outer,
        tolerance,
        residual: BExpr::and_all(residual),
        emit: None,
        how: crate::plan::AsofHow::KeySearch,
    })
}

/// An ASOF join's conditions classified by what each does: equalities (and one-side conditions
/// made keys), the one inequality between the times, filters of the right rows, and the
/// rest, checked against each matched pair.
struct AsofConds {
    keys: KeyPairs,
    /// The left time, the right time, and how they compare.
    ineq: Option<(BExpr, BExpr, BinaryOp)>,
    right_only: Vec<BExpr>,
    residual: Vec<BExpr>,
}

impl AsofConds {
    /// `conds` (over the left input's `nl` columns, then the right's) classified; an error for
    /// a second inequality between the sides.
    fn classify(conds: Vec<BExpr>, nl: usize, outer: AsofOuter) -> Result<AsofConds> {
        let mut out = AsofConds { keys: KeyPairs::default(), ineq: None, right_only: Vec::new(), residual: Vec::new() };
        for c in conds {
            if let Some(c) = out.keys.take(c, nl).and_then(|c| out.one_side(c, nl, outer)) {
                out.between_sides(c, nl)?;
            }
        }
        Ok(out)
    }

    /// A condition on one side, as DuckDB takes it: on the right, it filters the rows
    /// searched; on the left (or on neither), a row failing it finds no match (kept with
    /// NULLs by ASOF LEFT JOIN): a key that is NULL for it, TRUE for every right row. A right
    /// row failing one is still kept by RIGHT and FULL: there it is such a key too. `c` given
    /// back when it reads both sides.
    fn one_side(&mut self, c: BExpr, nl: usize, outer: AsofOuter) -> Option<BExpr> {
        let gate = |c: BExpr| {
            let t = BExpr::Lit(Value::Bool(true), DataType::Bool);
            (BExpr::Case { whens: vec![(c, t.clone())], else_: None, ty: DataType::Bool }, t)
        };
        let shift = |mut e: BExpr| {
            e.map_cols(&|i| i - nl);
            e
        };
        let (mut l, mut r) = (false, false);
        c.for_each_col(&mut |i| if i < nl { l = true } else { r = true });
        match (l, r) {
            (false, true) if outer.keeps_right() => {
                let (r, l) = gate(shift(c));
                self.keys.push(l, r);
            }
            (false, true) => self.right_only.push(shift(c)),
            (_, false) => {
                let (l, r) = gate(c);
                self.keys.push(l, r);
            }
            _ => return Some(c),
        }
        None
    }

    /// A condition reading both sides: the join's inequality between the times, or one
    /// checked against each matched pair.
    fn between_sides(&mut self, c: BExpr, nl: usize) -> Result<()> {
        let Some(found) = asof_inequality(&c, nl) else {
            self.residual.push(c);
            return Ok(());
        };
        let found = found?;
        if self.ineq.is_some() {
            return Err(SqlError::plan(
                "ASOF JOIN takes exactly one inequality condition (use TOLERANCE for a maximum distance)",
                None,
            ));
        }
        self.ineq = Some(found);
        Ok(())
    }
}

/// A join's equality keys: the left input's expressions and, pair by pair, the right input's
/// they must equal (over the right input's columns).
#[derive(Default)]
struct KeyPairs {
    left: Vec<BExpr>,
    right: Vec<BExpr>,
}

impl KeyPairs {
    /// One pair more.
    fn push(&mut self, l: BExpr, r: BExpr) {
        self.left.push(l);
        self.right.push(r);
    }

    /// `c` (over the left input's `nl` columns, then the right's) taken as keys when it is
    /// `l = r` or `l IS NOT DISTINCT FROM r` between the sides; given back otherwise.
    fn take(&mut self, c: BExpr, nl: usize) -> Option<BExpr> {
        if let Some((l, r)) = split_equi(&c, nl) {
            self.push(l, r);
        } else if let Some((l, r)) = split_not_distinct(&c, nl) {
            self.left.extend(l);
            self.right.extend(r);
        } else {
            return Some(c);
        }
        None
    }
}

/// `l = r` with one side over the left input only and the other over the right only.
pub(super) fn split_equi(c: &BExpr, nl: usize) -> Option<(BExpr, BExpr)> {
    let BExpr::Binary { op: BinaryOp::Eq, left, right, .. } = c else {
        return None;
    };
    split_sides(left, right, nl)
}

/// `l IS NOT DISTINCT FROM r` between the two sides as join keys on which NULL matches NULL:
/// two never-NULL keys per side (see [`crate::plan::bind_expr::null_safe_keys`]).
fn split_not_distinct(c: &BExpr, nl: usize) -> Option<([BExpr; 2], [BExpr; 2])> {
    let (left, right) = crate::plan::bind_expr::as_not_distinct(c)?;
    let (l, r) = split_sides(left, right, nl)?;
    Some((crate::plan::bind_expr::null_safe_keys(&l)?, crate::plan::bind_expr::null_safe_keys(&r)?))
}

/// `left` and `right` as a (left input, right input) pair of expressions, the right one over
/// the right input's columns; `None` unless each reads one side only.
fn split_sides(left: &BExpr, right: &BExpr, nl: usize) -> Option<(BExpr, BExpr)> {
    let side = |e: &BExpr| {
        let (mut l, mut r) = (false, false);
        e.for_each_col(&mut |i| if i < nl { l = true } else { r = true });
        (l, r)
    };
    let shift = |e: &BExpr| {
        let mut e = e.clone();
        e.map_cols(&|i| i - nl);
        e
    };
    match (side(left), side(right)) {
        ((true, false), (false, true)) => Some((left.clone(), shift(right))),
        ((false, true), (true, false)) => Some((right.clone(), shift(left))),
        _ => None,
    }
}
