//! Blocks of right rows an ASOF residual's walk can pass over without trying their pairs.
//!
//! A walk tries, row by row, the pairs of one left row with its key's right rows until the
//! residual holds. Where it rarely holds (`t.price - q.bid > 0.05` on a key whose quotes sit
//! near its trades), a row walked its key's whole history: 1M trades took minutes. Most such
//! conditions move one way with each right column (`t.price - q.bid > 0.05` holds more as `bid`
//! falls), so a block of right rows can hold a match only if the residual holds for the pair
//! of the left row with the block's most favourable values (the smallest `bid`): evaluated
//! over a summary row per block instead of per right row, a miss rules out the whole block.
//!
//! [`Trends::of`] finds each right column's favourable side, or gives up: a column compared for
//! equality, under a function or `TRY_CAST`, multiplied by another column. The residual must
//! hold (TRUE) at a match; a NULL in a right row cannot make it TRUE where a value would not
//! (three-valued logic is monotone in that sense), so extremes ignore NULLs. NaN and the
//! infinities break the ordering arithmetic relies on: a block holding one in a column the
//! residual reads (for times: one past ±2^62 ns, near the infinite times, which arithmetic
//! leaves in place) is always walked row by row, and a summary is asked [`summary_test`], which
//! also holds where finite extremes make a NaN (an overflow). Integer arithmetic over extremes
//! can overflow where no real pair does: the caller walks plainly when a summary's evaluation
//! fails.
//!
//! Summaries come in levels: a level-0 block is [`BLOCK`] positions of the walk's sequence, each
//! level up [`FANOUT`] blocks of the one below, up to one block for all. They are held as one
//! batch of the right side's width, the levels one after another ([`Blocks::row`]).

use super::Batch;
use crate::parser::ast::BinaryOp;
use crate::plan::BExpr;
use zepto_storage::{Bitmap, Column, ColumnData, DataType, Value};

/// Positions per level-0 block.
pub(super) const BLOCK: usize = 32;
/// Blocks of a level per block of the level above.
const FANOUT: usize = 32;
/// Nanoseconds from the epoch past which a time is summarized as not finite (2^62: the years
/// 1823 to 2116), far from the infinite times' sentinels at ±(2^63 - 1).
const FAR_TIME: u64 = 1 << 62;

/// For each right column a residual reads (by its index among the right columns), whether
/// larger values make the residual more likely to hold (`true`) or smaller ones (`false`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Trends(Vec<(usize, bool)>);

impl Trends {
    /// The trends of `residual` over `[left..., right...]` with `nl` left columns; `None` when
    /// some right column it reads has no single favourable side.
    pub fn of(residual: &BExpr, nl: usize) -> Option<Trends> {
        truth(residual, nl).map(Trends)
    }
}

/// The condition a block's summary row is asked: `residual` with each comparison that must
/// hold for it to hold (not under a `NOT`) also holding where a DOUBLE operand is NaN. Finite
/// extremes can make a NaN no row of the block makes (an overflow to an infinity, less another
/// one), and a comparison with NaN is false; the block must then be walked, not ruled out.
/// Under a `NOT`, a NaN's false comparison already makes the block one to walk.
pub(super) fn summary_test(residual: &BExpr) -> BExpr {
    escape_nan(residual, true)
}

fn escape_nan(e: &BExpr, positive: bool) -> BExpr {
    let boolean = |op, left: BExpr, right: BExpr| BExpr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
        ty: DataType::Bool,
    };
    // NOT (x = x): true exactly when x is NaN (NULL when x is NULL).
    let nan = |x: &BExpr| BExpr::Not(Box::new(boolean(BinaryOp::Eq, x.clone(), x.clone())));
    let float = |x: &BExpr| matches!(x.data_type(), DataType::Float32 | DataType::Float64);
    match e {
        BExpr::Not(x) => BExpr::Not(Box::new(escape_nan(x, !positive))),
        BExpr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right, ty } => BExpr::Binary {
            op: *op,
            left: Box::new(escape_nan(left, positive)),
            right: Box::new(escape_nan(right, positive)),
            ty: *ty,
        },
        BExpr::Binary { op: BinaryOp::Gt | BinaryOp::GtEq | BinaryOp::Lt | BinaryOp::LtEq, left, right, .. }
            if positive && (float(left) || float(right)) =>
        {
            boolean(BinaryOp::Or, boolean(BinaryOp::Or, e.clone(), nan(left)), nan(right))
        }
        _ => e.clone(),
    }
}

/// How the truth of `e` grows with each right column.
fn truth(e: &BExpr, nl: usize) -> Option<Vec<(usize, bool)>> {
    if !reads_right(e, nl) {
        return Some(Vec::new());
    }
    match e {
        BExpr::Not(x) => truth(x, nl).map(flip),
        BExpr::Binary { op: BinaryOp::And | BinaryOp::Or, left, right, .. } => {
            merge(truth(left, nl)?, truth(right, nl)?)
        }
        BExpr::Binary { op, left, right, .. } if ordered(left.data_type()) && ordered(right.data_type()) => match op {
            BinaryOp::Gt | BinaryOp::GtEq => merge(value(left, nl)?, flip(value(right, nl)?)),
            BinaryOp::Lt | BinaryOp::LtEq => merge(flip(value(left, nl)?), value(right, nl)?),
            _ => None,
        },
        _ => None,
    }
}

/// How the value of numeric `e` moves as each right column grows (`true`: never falls).
fn value(e: &BExpr, nl: usize) -> Option<Vec<(usize, bool)>> {
    if !reads_right(e, nl) {
        return Some(Vec::new());
    }
    let scaled = |x: &BExpr, by: &BExpr| Some(if lit_sign(by)? { value(x, nl)? } else { flip(value(x, nl)?) });
    match e {
        BExpr::Col(i, ty) if ordered(*ty) => Some(vec![(i - nl, true)]),
        BExpr::Neg(x) => value(x, nl).map(flip),
        // Not TRY_CAST: it turns a value out of range into NULL, an extreme's included.
        BExpr::Cast { expr, to, try_: false } if ordered(*to) && ordered(expr.data_type()) => value(expr, nl),
        BExpr::Binary { op, left, right, ty } if ordered(*ty) => match op {
            BinaryOp::Add => merge(value(left, nl)?, value(right, nl)?),
            BinaryOp::Sub => merge(value(left, nl)?, flip(value(right, nl)?)),
            BinaryOp::Mul if matches!(**right, BExpr::Lit(..)) => scaled(left, right),
            BinaryOp::Mul if matches!(**left, BExpr::Lit(..)) => scaled(right, left),
            BinaryOp::Div => scaled(left, right),
            _ => None,
        },
        _ => None,
    }
}

fn reads_right(e: &BExpr, nl: usize) -> bool {
    let mut any = false;
    e.for_each_col(&mut |i| any |= i >= nl);
    any
}

/// Types whose values are ordered as numbers (what the summaries hold).
fn ordered(t: DataType) -> bool {
    use DataType as D;
    matches!(t, D::Int32 | D::Int64 | D::Float32 | D::Float64 | D::Timestamp | D::Date | D::Interval)
}

/// A numeric literal's sign (`true`: positive); `None` for zero, an infinity, NaN, NULL or no
/// literal (a product by an infinity makes NaN of a zero).
fn lit_sign(e: &BExpr) -> Option<bool> {
    let BExpr::Lit(v, _) = e else { return None };
    let x = match *v {
        Value::Int32(x) | Value::Date(x) => f64::from(x),
        Value::Int64(x) | Value::Interval(x) | Value::Timestamp(x) => x as f64,
        Value::Float32(x) => f64::from(x),
        Value::Float64(x) => x,
        _ => return None,
    };
    (x != 0.0 && x.is_finite()).then_some(x > 0.0)
}

fn flip(t: Vec<(usize, bool)>) -> Vec<(usize, bool)> {
    t.into_iter().map(|(c, up)| (c, !up)).collect()
}

/// Both trends, or `None` when they disagree on a column.
fn merge(mut a: Vec<(usize, bool)>, b: Vec<(usize, bool)>) -> Option<Vec<(usize, bool)>> {
    for (c, up) in b {
        match a.iter().find(|x| x.0 == c) {
            Some(&(_, was)) if was != up => return None,
            Some(_) => {}
            None => a.push((c, up)),
        }
    }
    Some(a)
}

/// The summaries of a walk's sequence of right rows, every level.
#[derive(Debug)]
pub(super) struct Blocks {
    /// A row per block, the levels one after another: the favourable extreme of each column the
    /// residual reads over the block's rows (NULL where all are NULL), NULL columns elsewhere.
    pub summary: Batch,
    /// Per summary row: the block holds a NaN or an infinity in a column read (walk it).
    visit: Vec<bool>,
    /// Where each level starts among the summary rows.
    starts: Vec<usize>,
    /// Positions in the sequence.
    positions: usize,
}

impl Blocks {
    /// Summaries of the `positions` positions of a walk (right row `seq[p]`, or `p` without
    /// `seq`) over `r`, for `trends`; `None` when a column read is of a type summaries lack.
    pub fn build(r: &Batch, seq: Option<&[u32]>, positions: usize, trends: &Trends) -> Option<Blocks> {
        let mut starts = vec![0];
        let mut n = positions.div_ceil(BLOCK);
        let mut total = n;
        while n > 1 {
            starts.push(total);
            n = n.div_ceil(FANOUT);
            total += n;
        }
        let mut visit = vec![false; total];
        let mut cols: Vec<Column> = (0..r.columns.len()).map(|_| Column::nulls(DataType::Null, total)).collect();
        for &(c, up) in &trends.0 {
            let at = |p: usize| seq.map_or(p, |s| s[p] as usize);
            cols[c] = summarize(r.columns.get(c)?, at, positions, up, &starts, &mut visit)?;
        }
        Some(Blocks { summary: Batch::new(cols, total), visit, starts, positions })
    }

    /// The levels, 0 the finest.
    pub fn levels(&self) -> usize {
        self.starts.len()
    }

    /// The summary row of the level-`level` block holding position `p`, and the block's first
    /// and last positions.
    pub fn row(&self, level: usize, p: usize) -> (usize, usize, usize) {
        let size = BLOCK * FANOUT.pow(level as u32);
        let b = p / size;
        (self.starts[level] + b, b * size, ((b + 1) * size).min(self.positions) - 1)
    }

    /// Whether summary row `row` must be walked whatever its summary says.
    pub fn must_visit(&self, row: usize) -> bool {
        self.visit[row]
    }
}

/// One column's summaries at every level (`starts` as [`Blocks::starts`]), marking in `visit`
/// the blocks with a non-finite value.
fn summarize(
    c: &Column,
    at: impl Fn(usize) -> usize,
    positions: usize,
    up: bool,
    starts: &[usize],
    visit: &mut [bool],
) -> Option<Column> {
    macro_rules! levels {
        ($v:expr, $variant:ident, $finite:expr) => {{
            let (vals, valid) = extremes($v, |i| c.is_valid(i), &at, positions, up, starts, visit, $finite);
            Some(Column::new(ColumnData::$variant(vals.into()), Some(Bitmap::from_bools(valid))))
        }};
    }
    match c.data() {
        ColumnData::Int32(v) => levels!(v, Int32, |_| true),
        ColumnData::Date(v) => levels!(v, Date, |_| true),
        ColumnData::Int64(v) => levels!(v, Int64, |_| true),
        // `'infinity'` and `'-infinity'` stay put under arithmetic where a finite time near
        // them may land past them: a block of times beyond ±2^62 ns (1823..2116) is walked.
        ColumnData::Timestamp(v) => levels!(v, Timestamp, |x: i64| x.unsigned_abs() <= FAR_TIME),
        ColumnData::Interval(v) => levels!(v, Interval, |_| true),
        ColumnData::Float32(v) => levels!(v, Float32, |x: f32| x.is_finite()),
        ColumnData::Float64(v) => levels!(v, Float64, |x: f64| x.is_finite()),
        _ => None,
    }
}

/// The favourable extreme of each block at every level, and whether each has one (a value).
#[allow(clippy::too_many_arguments)]
fn extremes<T: Copy + PartialOrd + Default>(
    v: &[T],
    valid: impl Fn(usize) -> bool,
    at: impl Fn(usize) -> usize,
    positions: usize,
    up: bool,
    starts: &[usize],
    visit: &mut [bool],
    finite: impl Fn(T) -> bool,
) -> (Vec<T>, Vec<bool>) {
    let total = visit.len();
    let mut best: Vec<Option<T>> = vec![None; total];
    let pick = |a: Option<T>, x: T| match a {
        Some(a) if (up && a >= x) || (!up && a <= x) => Some(a),
        _ => Some(x),
    };
    for p in 0..positions {
        let (b, row) = (p / BLOCK, at(p));
        if !valid(row) {
            continue;
        }
        let x = v[row];
        if finite(x) {
            best[b] = pick(best[b], x);
        } else {
            visit[b] = true;
        }
    }
    // Each level from the one below: block `i` of level `l` covers blocks `i * FANOUT..` of `l - 1`.
    for l in 1..starts.len() {
        let (below, here) = (starts[l - 1], starts[l]);
        for i in below..here {
            let parent = here + (i - below) / FANOUT;
            best[parent] = match best[i] {
                Some(x) => pick(best[parent], x),
                None => best[parent],
            };
            visit[parent] |= visit[i];
        }
    }
    (best.iter().map(|b| b.unwrap_or_default()).collect(), best.iter().map(Option::is_some).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(i: usize) -> BExpr {
        BExpr::Col(i, DataType::Float64)
    }

    fn bin(op: BinaryOp, l: BExpr, r: BExpr) -> BExpr {
        let ty = if matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div) {
            DataType::Float64
        } else {
            DataType::Bool
        };
        BExpr::Binary { op, left: Box::new(l), right: Box::new(r), ty }
    }

    fn lit(x: f64) -> BExpr {
        BExpr::Lit(Value::Float64(x), DataType::Float64)
    }

    /// Left columns 0 and 1, right columns 2 and 3 (right indices 0 and 1).
    #[test]
    fn each_right_column_gets_the_side_that_makes_the_condition_hold() {
        // l.price - r.bid > 0.05: smaller bids hold more.
        let e = bin(BinaryOp::Gt, bin(BinaryOp::Sub, col(0), col(2)), lit(0.05));
        assert_eq!(Trends::of(&e, 2), Some(Trends(vec![(0, false)])));
        // NOT (r.bid * -2 < l.x) OR r.ask / 4 >= 1: the NOT and the negative factor cancel.
        let e = bin(
            BinaryOp::Or,
            BExpr::Not(Box::new(bin(BinaryOp::Lt, bin(BinaryOp::Mul, col(2), lit(-2.0)), col(0)))),
            bin(BinaryOp::GtEq, bin(BinaryOp::Div, col(3), lit(4.0)), lit(1.0)),
        );
        assert_eq!(Trends::of(&e, 2), Some(Trends(vec![(0, false), (1, true)])));
    }

    #[test]
    fn conditions_without_one_side_per_column_have_no_trends() {
        let cases = [
            // The same column pulled both ways.
            bin(BinaryOp::Gt, bin(BinaryOp::Sub, col(2), col(2)), lit(0.0)),
            bin(BinaryOp::And, bin(BinaryOp::Gt, col(2), col(0)), bin(BinaryOp::Lt, col(2), col(1))),
            // Equality, a product of columns, a division by a column, by zero.
            bin(BinaryOp::Eq, col(2), col(0)),
            bin(BinaryOp::Gt, bin(BinaryOp::Mul, col(2), col(0)), lit(1.0)),
            bin(BinaryOp::Gt, bin(BinaryOp::Div, col(0), col(2)), lit(1.0)),
            bin(BinaryOp::Gt, bin(BinaryOp::Mul, col(2), lit(0.0)), lit(1.0)),
        ];
        for e in cases {
            assert_eq!(Trends::of(&e, 2), None, "{e:?}");
        }
        // A condition on the left side alone has nothing to summarize.
        assert_eq!(Trends::of(&bin(BinaryOp::Gt, col(0), lit(1.0)), 2), Some(Trends(vec![])));
    }

    /// Extremes per block at every level skip NULLs and mark blocks holding NaN or infinity;
    /// positions map to rows through the walk's sequence.
    #[test]
    fn summaries_hold_each_blocks_favourable_extreme() {
        let n = BLOCK * FANOUT + 5;
        let mut v: Vec<f64> = (0..n).map(|i| i as f64).collect();
        v[3] = f64::NAN;
        let valid = (0..n).map(|i| i % BLOCK != 7);
        let r = Batch::new(vec![Column::new(ColumnData::Float64(v.into()), Some(Bitmap::from_bools(valid)))], n);
        // Reversed: position p is row n - 1 - p.
        let seq: Vec<u32> = (0..n as u32).rev().collect();
        let b = Blocks::build(&r, Some(&seq), n, &Trends(vec![(0, false)])).expect("DOUBLE summarizes");
        assert_eq!(b.levels(), 3);
        let at = |level, p| {
            let (row, first, last) = b.row(level, p);
            (b.summary.columns[0].get(row), first, last, b.must_visit(row))
        };
        // Position 0 is row n - 1; the block's least is its last position's row.
        assert_eq!(at(0, 0), (Value::Float64((n - BLOCK) as f64), 0, BLOCK - 1, false));
        // The last level-0 block: positions n - 5.., rows 4..=0, row 3 NaN.
        assert_eq!(at(0, n - 1), (Value::Float64(0.0), n - 5, n - 1, true));
        assert_eq!(at(1, 0), (Value::Float64(5.0), 0, BLOCK * FANOUT - 1, false));
        assert_eq!(at(2, 7), (Value::Float64(0.0), 0, n - 1, true));
    }

    /// Times near the infinite ones (which arithmetic leaves in place while a finite time
    /// next to them moves past them) mark their blocks to be walked; ordinary times do not.
    #[test]
    fn blocks_with_times_near_the_infinite_ones_are_walked() {
        let near = -i64::MAX + 1; // 1677-09-21 00:12:43.145224194: less 2 ns is i64::MIN
        for (odd, walked) in [(0, false), (zepto_storage::time::TS_NEG_INFINITY, true), (near, true)] {
            let mut v = vec![1_700_000_000_000_000_000i64; BLOCK];
            v[9] = odd;
            let r = Batch::new(vec![Column::new(ColumnData::Timestamp(v.into()), None)], BLOCK);
            let b = Blocks::build(&r, None, BLOCK, &Trends(vec![(0, true)])).expect("times summarize");
            assert_eq!(b.must_visit(b.row(0, 0).0), walked, "{odd}");
        }
    }
}
