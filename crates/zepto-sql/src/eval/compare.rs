//! Comparisons: `=`, `<>`, `<`, `<=`, `>`, `>=` as BOOLEAN columns in SQL's order
//! ([`compare`]), and the rows a filter keeps ([`selection`]), whose compares of a column with
//! a constant go from 64 flags folded into a word straight to row numbers, a block of rows at a
//! time where the column's block summaries decide it. (`cmp.rs` orders rows for sorts, min/max
//! and GREATEST; this file compares values for expressions and filters.)

use super::batch::{self, and_validity, mask_indices};
use super::sql_order::SqlOrd;
use super::{eval, src_bool, src_f32, src_f64, src_i128, src_i32, src_i64, type_err, zip_map};
use super::{Batch, Opnd, Src, Subqueries};
use crate::error::Result;
use crate::expr::BExpr;
use crate::parser::ast::BinaryOp;
use std::cmp::Ordering;
use zepto_storage::buf::Buf;
use zepto_storage::summary::{Summarize, BLOCK};
use zepto_storage::{Column, ColumnData, DataType, Value};

/// A comparison row by row, in SQL's order ([`SqlOrd`]: NaN greatest, -0.0 = 0.0). Compiled
/// for AVX2 too (chosen at run time): baseline x86-64 has no 64-bit vector compare, so BIGINT
/// and TIMESTAMP filters compare a lane at a time there.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn cmp_vec<T: SqlOrd + PartialOrd>(op: BinaryOp, a: Src<T>, b: Src<T>, n: usize) -> Vec<bool> {
    match (a, b) {
        (Src::S(x), Src::C(c)) if !c.is_nan() => versus_number(op, x, c),
        (Src::C(c), Src::S(y)) if !c.is_nan() => versus_number(op.flip(), y, c),
        (a, b) => match op {
            BinaryOp::Eq => zip_map(a, b, n, |x, y| x.sql_eq(y)),
            BinaryOp::NotEq => zip_map(a, b, n, |x, y| !x.sql_eq(y)),
            BinaryOp::Lt => zip_map(a, b, n, |x, y| x.sql_lt(y)),
            BinaryOp::LtEq => zip_map(a, b, n, |x, y| x.sql_le(y)),
            BinaryOp::Gt => zip_map(a, b, n, |x, y| y.sql_lt(x)),
            _ => zip_map(a, b, n, |x, y| y.sql_le(x)),
        },
    }
}

/// `$then` with `$f` the test `x op c` of a value `x: $t` against a constant `c` that is no
/// NaN: one compare a row, a NaN `x` then being greater than `c` and unequal to it (so `>` and
/// `>=` are the negations of `<=` and `<`: the negated compare is the point, true for the
/// unordered NaN). The one place the operators map to compares, for flags and for rows.
macro_rules! versus_number {
    ($op:expr, $c:expr, $t:ty, $f:ident => $then:expr) => {{
        let c: $t = $c;
        debug_assert!(!c.is_nan());
        match $op {
            BinaryOp::Eq => {
                let $f = |v: $t| v == c;
                $then
            }
            BinaryOp::NotEq => {
                let $f = |v: $t| v != c;
                $then
            }
            BinaryOp::Lt => {
                let $f = |v: $t| v < c;
                $then
            }
            BinaryOp::LtEq => {
                let $f = |v: $t| v <= c;
                $then
            }
            BinaryOp::Gt => {
                let $f = |v: $t| !(v <= c);
                $then
            }
            _ => {
                let $f = |v: $t| !(v < c);
                $then
            }
        }
    }};
}

/// `x op c` for every row, as flags ([`versus_number!`]).
#[allow(clippy::neg_cmp_op_on_partial_ord)]
#[inline(always)]
fn versus_number<T: SqlOrd + PartialOrd>(op: BinaryOp, x: &[T], c: T) -> Vec<bool> {
    versus_number!(op, c, T, f => x.iter().map(|&v| f(v)).collect())
}

/// Whether `x op c` at each row ([`versus_number!`]), as bits handed to `sink` word by word:
/// word `j` holds rows `64 j..` (row `64 j + k` is bit `k`), sixty-four compares folded into it.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn words_versus_number<T: SqlOrd + PartialOrd>(op: BinaryOp, x: &[T], c: T, sink: &mut dyn FnMut(usize, u64)) {
    #[inline(always)]
    fn words<T: Copy>(x: &[T], f: impl Fn(T) -> bool, sink: &mut dyn FnMut(usize, u64)) {
        // Plain loops, no closure of its own: one would be compiled apart, without AVX2.
        for (j, chunk) in x.chunks(64).enumerate() {
            let mut word = 0u64;
            for (k, &v) in chunk.iter().enumerate() {
                word |= u64::from(f(v)) << k;
            }
            sink(j, word);
        }
    }
    versus_number!(op, c, T, f => words(x, f, sink))
}

/// The rows of `b` where `e` holds, ascending (NULL counts as false): [`mask_indices`] of
/// [`eval`], except where `held_words` can say it: comparisons of columns without NULLs with
/// numbers (`size > 4000`) or of SYMBOLs with strings (`side = 'B'`), and ANDs and ORs of
/// them, go from the compares' bits to the rows, with no flag per row written and read back
/// (a fifth of a filter's scan that keeps few rows).
pub fn selection(e: &BExpr, b: &Batch, sq: &dyn Subqueries) -> Result<Vec<u32>> {
    if !by_words(e, b) {
        return Ok(mask_indices(&*eval(e, b, sq)?));
    }
    let mut out = Vec::new();
    held_words(e, b, &mut |j, w| batch::push_set_bits(&mut out, w, j * 64, (b.rows - j * 64).min(64)));
    Ok(out)
}

/// A comparison of a column with a constant that [`held_words`] answers, its values typed.
enum Versus<'a> {
    I64(&'a Buf<i64>, i64),
    I32(&'a Buf<i32>, i32),
    F64(&'a Buf<f64>, f64),
    /// A SYMBOL's codes and the string's code (`None`: the dictionary lacks it).
    Code(&'a [u32], Option<u32>),
}

/// `column op constant` (either way round) of a comparison whose column has no NULL and whose
/// constant is a number of the column's kind (as [`compare`] pairs them), neither NULL nor
/// NaN, or a SYMBOL column's (in)equality with a string (its code's, as `compare_strings`
/// decides it): each row is then true or false, never NULL, and one compare says which.
fn versus_constant<'a>(e: &'a BExpr, b: &'a Batch) -> Option<(BinaryOp, Versus<'a>)> {
    let BExpr::Binary { op, left, right, .. } = e else { return None };
    let (op, i, c) = match (&**left, &**right) {
        (BExpr::Col(i, _), BExpr::Lit(c, _)) if op.is_comparison() => (*op, *i, c),
        (BExpr::Lit(c, _), BExpr::Col(i, _)) if op.is_comparison() => (op.flip(), *i, c),
        _ => return None,
    };
    let x = &**b.columns.get(i)?;
    if x.validity().is_some() {
        return None;
    }
    if let (ColumnData::Symbol { codes, dict }, Value::Str(s)) = (x.data(), c) {
        return matches!(op, BinaryOp::Eq | BinaryOp::NotEq).then(|| (op, Versus::Code(codes, dict.code(s))));
    }
    use ColumnData as D;
    let v = match (x.data(), c) {
        (
            D::Int64(v) | D::Timestamp(v) | D::Interval(v),
            Value::Int64(k) | Value::Timestamp(k) | Value::Interval(k),
        ) => Versus::I64(v, *k),
        (D::Int32(v) | D::Date(v), Value::Int32(k) | Value::Date(k)) => Versus::I32(v, *k),
        (D::Float64(v), Value::Float64(k)) if !k.is_nan() => Versus::F64(v, *k),
        _ => return None,
    };
    Some((op, v))
}

/// Whether [`held_words`] answers `e` over `b`: a [`versus_constant`] comparison, or an AND or
/// OR of such (two-valued: no NULL among them).
fn by_words(e: &BExpr, b: &Batch) -> bool {
    match e {
        BExpr::Binary { op: BinaryOp::And | BinaryOp::Or, left, right, .. } => by_words(left, b) && by_words(right, b),
        e => versus_constant(e, b).is_some(),
    }
}

/// Where `e` (one that [`by_words`] accepts) holds over `b`, as [`words_versus_number`] hands
/// bits to `sink`: an AND or OR keeps its left side's words and combines the right's with them
/// as they come.
fn held_words(e: &BExpr, b: &Batch, sink: &mut dyn FnMut(usize, u64)) {
    if let BExpr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right, .. } = e {
        let mut l: Vec<u64> = Vec::with_capacity(b.rows.div_ceil(64));
        held_words(left, b, &mut |_, w| l.push(w));
        let and = *op == BinaryOp::And;
        held_words(right, b, &mut |j, w| {
            let v = l.get(j).copied().unwrap_or(0); // both sides give a word per 64 rows
            sink(j, if and { v & w } else { v | w })
        });
        return;
    }
    debug_assert!(by_words(e, b), "held_words of an expression by_words refuses");
    match versus_constant(e, b) {
        Some((op, Versus::I64(v, k))) => by_blocks(op, v, k, |s| Some((s.min, s.max)), sink),
        // The summary's bounds are the block's INTEGERs (DATEs), so they fit.
        Some((op, Versus::I32(v, k))) => by_blocks(op, v, k, |s| Some((s.min as i32, s.max as i32)), sink),
        // A NaN is ranked past every number: its block is read.
        Some((op, Versus::F64(v, k))) => by_blocks(op, v, k, |s| (!s.nan).then_some((s.min, s.max)), sink),
        Some((op, Versus::Code(codes, Some(k)))) => words_versus_number(op, codes, k, sink),
        // A string the dictionary lacks equals no row.
        Some((op, Versus::Code(_, None))) => every_word(b.rows, op == BinaryOp::NotEq, sink),
        None => {}
    }
}

/// [`words_versus_number`] of `x op c`, a block of rows at a time where `x` keeps its blocks'
/// summaries (`zepto_storage::summary`: a partition's whole column, shared): a block whose least
/// and greatest value (`bounds`, `None` when the summary cannot give them) say that every row
/// holds, or none does, gives its words without reading a row (DuckDB's and ClickHouse's
/// zone maps; a rare `size > 4000` reads a few blocks of a partition). The first query over
/// a block summarizes it; the ones after read the summary.
fn by_blocks<T: Summarize + SqlOrd + PartialOrd>(
    op: BinaryOp,
    x: &Buf<T>,
    c: T,
    bounds: impl Fn(T::Summary) -> Option<(T, T)>,
    sink: &mut dyn FnMut(usize, u64),
) {
    let Some(blocks) = x.kept_blocks() else { return words_versus_number(op, x, c, sink) };
    const WORDS: usize = BLOCK / 64;
    let mut end = 0;
    for (rows, s) in blocks {
        let j0 = rows.start / 64;
        match bounds(s).and_then(|(lo, hi)| decided(op, lo, hi, c)) {
            Some(all) => (j0..j0 + WORDS).for_each(|j| sink(j, if all { u64::MAX } else { 0 })),
            None => words_versus_number(op, &x[rows.clone()], c, &mut |j, w| sink(j0 + j, w)),
        }
        end = rows.end;
    }
    let at = end / 64;
    words_versus_number(op, &x[end..], c, &mut |j, w| sink(at + j, w));
}

/// Whether `x op c` holds for every value of a block whose least is `lo` and greatest `hi`
/// (`Some(true)`), for none (`Some(false)`), or the rows must say (`None`). Neither bound is
/// NaN ([`versus_number!`] maps the operators: a compare monotone in `x` that agrees at
/// both ends agrees between them).
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn decided<T: SqlOrd + PartialOrd>(op: BinaryOp, lo: T, hi: T, c: T) -> Option<bool> {
    let (at_lo, at_hi) = versus_number!(op, c, T, f => (f(lo), f(hi)));
    match op {
        _ if lo == hi => Some(at_lo),
        BinaryOp::Eq | BinaryOp::NotEq => (c < lo || c > hi).then_some(op == BinaryOp::NotEq),
        _ => (at_lo == at_hi).then_some(at_lo),
    }
}

/// The words of `rows` rows that all hold (`every`) or none does, for `sink` as
/// [`words_versus_number`] hands them (no bit past the last row).
fn every_word(rows: usize, every: bool, sink: &mut dyn FnMut(usize, u64)) {
    for j in 0..rows.div_ceil(64) {
        let len = (rows - j * 64).min(64);
        let full = if len == 64 { u64::MAX } else { (1u64 << len) - 1 };
        sink(j, if every { full } else { 0 });
    }
}

/// Whether an ordering satisfies a comparison operator (`Eq`, `NotEq`, `Lt`, `LtEq`, `Gt`, `GtEq`;
/// anything else is treated as `>=`).
pub fn ord_matches(op: BinaryOp, o: Ordering) -> bool {
    match op {
        BinaryOp::Eq => o == Ordering::Equal,
        BinaryOp::NotEq => o != Ordering::Equal,
        BinaryOp::Lt => o == Ordering::Less,
        BinaryOp::LtEq => o != Ordering::Greater,
        BinaryOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }
}

pub(super) fn compare(op: BinaryOp, l: &Opnd, r: &Opnd, lt: DataType, n: usize) -> Result<Column> {
    let validity = and_validity(l.validity(n).as_ref(), r.validity(n).as_ref());
    if l.is_null_lit() || r.is_null_lit() {
        return Ok(Column::nulls(DataType::Bool, n));
    }
    let v = if lt.is_string() {
        compare_strings(op, l, r, n)?
    } else if let (Some(a), Some(b)) = (src_i64(l), src_i64(r)) {
        cmp_vec(op, a, b, n)
    } else if let (Some(a), Some(b)) = (src_i32(l), src_i32(r)) {
        cmp_vec(op, a, b, n)
    } else if let (Some(a), Some(b)) = (src_i128(l), src_i128(r)) {
        cmp_vec(op, a, b, n)
    } else if let (Some(a), Some(b)) = (src_f64(l), src_f64(r)) {
        cmp_vec(op, a, b, n)
    } else if let (Some(a), Some(b)) = (src_f32(l), src_f32(r)) {
        cmp_vec(op, a, b, n)
    } else if let (Some(a), Some(b)) = (src_bool(l), src_bool(r)) {
        cmp_vec(op, a, b, n)
    } else {
        return Err(type_err(op, lt));
    };
    Ok(Column::new(ColumnData::Bool(v.into()), validity))
}

fn compare_strings(op: BinaryOp, l: &Opnd, r: &Opnd, n: usize) -> Result<Vec<bool>> {
    // Symbol vs constant: decide once per dictionary entry, then map codes.
    let sym_vs_lit = |c: &Column, s: &str, op: BinaryOp| -> Option<Vec<bool>> {
        let ColumnData::Symbol { codes, dict } = &c.data() else {
            return None;
        };
        if matches!(op, BinaryOp::Eq | BinaryOp::NotEq) {
            let want = dict.code(s);
            let eq = op == BinaryOp::Eq;
            return Some(match want {
                Some(k) => codes.iter().map(|&c| (c == k) == eq).collect(),
                None => vec![!eq; codes.len()],
            });
        }
        let table: Vec<bool> = dict.iter().map(|d| ord_matches(op, d.cmp(s))).collect();
        Some(codes.iter().map(|&c| table.get(c as usize).copied().unwrap_or(false)).collect())
    };
    match (l, r) {
        (Opnd::Col(c), Opnd::Lit(Value::Str(s))) => {
            if let Some(v) = sym_vs_lit(c, s, op) {
                return Ok(v);
            }
            Ok((0..n).map(|i| ord_matches(op, c.str_at(i).unwrap_or("").cmp(s.as_str()))).collect())
        }
        (Opnd::Lit(Value::Str(s)), Opnd::Col(c)) => {
            if let Some(v) = sym_vs_lit(c, s, op.flip()) {
                return Ok(v);
            }
            Ok((0..n).map(|i| ord_matches(op, s.as_str().cmp(c.str_at(i).unwrap_or("")))).collect())
        }
        (Opnd::Col(a), Opnd::Col(b)) => {
            if let (ColumnData::Symbol { codes: x, dict: dx }, ColumnData::Symbol { codes: y, dict: dy }) =
                (&a.data(), &b.data())
            {
                if dx.lineage() == dy.lineage() && matches!(op, BinaryOp::Eq | BinaryOp::NotEq) {
                    let eq = op == BinaryOp::Eq;
                    return Ok(x.iter().zip(y).map(|(p, q)| (p == q) == eq).collect());
                }
            }
            Ok((0..n).map(|i| ord_matches(op, a.str_at(i).unwrap_or("").cmp(b.str_at(i).unwrap_or("")))).collect())
        }
        (Opnd::Lit(a), Opnd::Lit(b)) => {
            let (Value::Str(a), Value::Str(b)) = (a, b) else {
                return Err(type_err(op, DataType::Varchar));
            };
            Ok(vec![ord_matches(op, a.cmp(b)); n])
        }
        _ => Err(type_err(op, DataType::Varchar)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::NoSubqueries;
    use super::*;
    use zepto_storage::Bitmap;

    /// A comparison with a constant (either side) answers as the row-by-row comparison of two
    /// columns does, NaN, infinities and signed zeros included.
    #[test]
    fn comparisons_with_a_constant_match_the_columns_form() {
        let xs = [f64::NEG_INFINITY, -1.5, -0.0, 0.0, 2.0, f64::INFINITY, f64::NAN];
        let ops = [BinaryOp::Eq, BinaryOp::NotEq, BinaryOp::Lt, BinaryOp::LtEq, BinaryOp::Gt, BinaryOp::GtEq];
        for op in ops {
            for &c in &xs {
                let cs = vec![c; xs.len()];
                let want = cmp_vec(op, Src::S(&xs), Src::S(&cs), xs.len());
                assert_eq!(cmp_vec(op, Src::S(&xs), Src::C(c), xs.len()), want, "x {op:?} {c}");
                let flipped = cmp_vec(op, Src::S(&cs), Src::S(&xs), xs.len());
                assert_eq!(cmp_vec(op, Src::C(c), Src::S(&xs), xs.len()), flipped, "{c} {op:?} x");
            }
        }
    }

    /// The rows a filter keeps, through the fused compares or not, are the rows where its
    /// flags are true: every operator, the constant on either side, BIGINT, TIMESTAMP, INTEGER
    /// and DOUBLE columns (NaN, infinities, signed zeros), SYMBOL columns against strings in
    /// their dictionary and not, lengths around the 64-row words, NULLs in the column or as
    /// the constant, a NaN constant, a comparison of two columns, and ANDs and ORs of them.
    #[test]
    fn selections_are_the_rows_whose_flags_hold() {
        let mut rng = zepto_storage::rng::XorShift::new(0x2545_f491_4f6c_dd1d);
        let floats = [f64::NEG_INFINITY, -1.5, -0.0, 0.0, 2.0, f64::INFINITY, f64::NAN];
        let ops = [BinaryOp::Eq, BinaryOp::NotEq, BinaryOp::Lt, BinaryOp::LtEq, BinaryOp::Gt, BinaryOp::GtEq];
        for round in 0..200 {
            let n = [0, 1, 63, 64, 65, 130, 1000][round % 7];
            let pick = |rng: &mut zepto_storage::rng::XorShift| rng.below(7) as usize;
            let (data, lit, ty) = match round % 5 {
                0 => {
                    let v: Vec<i64> = (0..n).map(|_| rng.below(7) as i64 - 3).collect();
                    (ColumnData::Int64(v.into()), Value::Int64(rng.below(7) as i64 - 3), DataType::Int64)
                }
                1 => {
                    let v: Vec<i64> = (0..n).map(|_| rng.below(7) as i64).collect();
                    (ColumnData::Timestamp(v.into()), Value::Timestamp(rng.below(7) as i64), DataType::Timestamp)
                }
                2 => {
                    let v: Vec<i32> = (0..n).map(|_| rng.below(7) as i32 - 3).collect();
                    (ColumnData::Int32(v.into()), Value::Int32(rng.below(7) as i32 - 3), DataType::Int32)
                }
                4 => {
                    // Symbols s0..s4; the constant may be one the dictionary lacks (s5, s6).
                    let mut sym = zepto_storage::column::ColumnBuilder::new(DataType::Symbol, n);
                    for _ in 0..n {
                        sym.push_value(&Value::Str(format!("s{}", rng.below(5)))).expect("a symbol");
                    }
                    (sym.finish().data().clone(), Value::Str(format!("s{}", rng.below(7))), DataType::Symbol)
                }
                _ => {
                    let v: Vec<f64> = (0..n).map(|_| floats[pick(&mut rng)]).collect();
                    (ColumnData::Float64(v.into()), Value::Float64(floats[pick(&mut rng)]), DataType::Float64)
                }
            };
            let validity = (round % 3 == 0).then(|| Bitmap::from_bools((0..n).map(|i| i % 3 != 1)));
            let lit = if round % 11 == 0 { Value::Null } else { lit };
            let b = Batch::new(vec![Column::new(data.clone(), validity), Column::from_data(data)], n);
            let col = |i| Box::new(BExpr::Col(i, ty));
            let lt = if ty == DataType::Symbol { DataType::Varchar } else { ty };
            let c = || Box::new(BExpr::Lit(lit.clone(), lt));
            for op in ops {
                for (left, right) in [(col(0), c()), (c(), col(0)), (col(1), c()), (c(), col(1)), (col(0), col(1))] {
                    let e = BExpr::Binary { op, left, right, ty: DataType::Bool };
                    let want = mask_indices(&eval(&e, &b, &NoSubqueries).expect("flags"));
                    assert_eq!(selection(&e, &b, &NoSubqueries).expect("rows"), want, "round {round}: {e:?}");
                    // ANDs and ORs of it with another comparison (on the other column, or on
                    // the same one), either way round, and nested.
                    let other =
                        BExpr::Binary { op: ops[round % 6], left: col(1 - round % 2), right: c(), ty: DataType::Bool };
                    let join = |op: BinaryOp, l: &BExpr, r: &BExpr| BExpr::Binary {
                        op,
                        left: Box::new(l.clone()),
                        right: Box::new(r.clone()),
                        ty: DataType::Bool,
                    };
                    let (and, or) = (BinaryOp::And, BinaryOp::Or);
                    let nested = join(or, &join(and, &e, &other), &join(and, &other, &e));
                    for e in [join(and, &e, &other), join(and, &other, &e), join(or, &e, &other), nested] {
                        let want = mask_indices(&eval(&e, &b, &NoSubqueries).expect("flags"));
                        assert_eq!(selection(&e, &b, &NoSubqueries).expect("rows"), want, "round {round}: {e:?}");
                    }
                }
            }
        }
    }

    /// Shared columns of several blocks select through their blocks' bounds
    /// ([`by_blocks`]): blocks of one value, of a narrow range and of a wide one, in
    /// BIGINT, DATE and DOUBLE (with NaN, signed zeros and infinities in some blocks), every
    /// operator against constants at, inside and past the blocks' bounds, twice (the
    /// summaries made, then kept), alone and under an AND: the rows the flags give.
    #[test]
    fn block_bounds_select_the_rows_the_compares_do() {
        let mut rng = zepto_storage::rng::XorShift::new(0x9b05_688c_2b3e_6c1f);
        let ops = [BinaryOp::Eq, BinaryOp::NotEq, BinaryOp::Lt, BinaryOp::LtEq, BinaryOp::Gt, BinaryOp::GtEq];
        let odd = [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY];
        for round in 0..36 {
            let n = [3 * BLOCK + 100, 4 * BLOCK, BLOCK - 1, 5 * BLOCK + 64][round % 4];
            // Each block's values: a base and a width of 1, 3 or 1000.
            let ints: Vec<i64> = (0..n)
                .map(|i| {
                    let b = (i / BLOCK) as i64;
                    b * 500 + rng.below([1, 3, 1000][(i / BLOCK + round) % 3]) as i64
                })
                .collect();
            let (data, ty) = match round % 3 {
                0 => (ColumnData::Int64(ints.clone().into()), DataType::Int64),
                1 => (ColumnData::Date(ints.iter().map(|&v| v as i32 - 900).collect()), DataType::Date),
                _ => {
                    let mut f: Vec<f64> = ints.iter().map(|&v| v as f64 * 0.5 - 600.0).collect();
                    for b in (0..n / BLOCK).filter(|b| (b + round) % 3 == 0) {
                        f[b * BLOCK + rng.below(BLOCK as u64) as usize] = odd[rng.below(5) as usize];
                    }
                    (ColumnData::Float64(f.into()), DataType::Float64)
                }
            };
            let mut col = Column::from_data(data);
            col.share();
            let lit_of = |row: usize, delta: i64| match col.data() {
                ColumnData::Int64(v) => Value::Int64(v[row] + delta),
                ColumnData::Date(v) => Value::Date(v[row] + delta as i32),
                ColumnData::Float64(v) if v[row].is_nan() => Value::Float64(1.0),
                ColumnData::Float64(v) => Value::Float64(v[row] + delta as f64 * 0.5),
                d => panic!("unexpected {:?}", d.data_type()),
            };
            let b = Batch::new(vec![col.clone(), col.clone()], n);
            let c0 = |op: BinaryOp, l: Value| BExpr::Binary {
                op,
                left: Box::new(BExpr::Col(0, ty)),
                right: Box::new(BExpr::Lit(l, ty)),
                ty: DataType::Bool,
            };
            for op in ops {
                for delta in [-1, 0, 1] {
                    let row = rng.below(n as u64) as usize;
                    let e = c0(op, lit_of(row, delta));
                    let other = c0(ops[round % 6], lit_of(rng.below(n as u64) as usize, 0));
                    let and = BExpr::Binary {
                        op: BinaryOp::And,
                        left: Box::new(e.clone()),
                        right: Box::new(other),
                        ty: DataType::Bool,
                    };
                    for e in [&e, &and] {
                        let want = mask_indices(&eval(e, &b, &NoSubqueries).expect("flags"));
                        for pass in ["made", "kept"] {
                            let got = selection(e, &b, &NoSubqueries).expect("rows");
                            assert_eq!(got, want, "round {round}, summaries {pass}: {e:?}");
                        }
                    }
                }
            }
        }
    }
}
