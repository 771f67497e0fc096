//! The vector family: distances between `FLOAT[n]` vectors (`array_cosine_similarity`,
//! `array_cosine_distance`, `array_distance`, `array_inner_product`,
//! `array_negative_inner_product`) and `array_length`, over the flat `f32` buffers. The
//! kernels are `zepto_storage::vector`'s (shared with the ANN index to come); this module only
//! walks rows: a constant vector against a column (the nearest-neighbour query's shape) reads
//! the constant once, two columns go row by row. NULL in, NULL out.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use super::{eval_opnd, Batch, Opnd, Subqueries};
use crate::error::{Result, SqlError};
use crate::expr::functions::ScalarFunc;
use crate::expr::BExpr;
use zepto_storage::vector::Metric;
use zepto_storage::{Bitmap, Column, ColumnData, DataType, Value};

/// A vector function over the rows of `b`.
pub fn call(f: ScalarFunc, args: &[BExpr], b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    let n = b.rows;
    match (f, args) {
        (ScalarFunc::ArrayLength, [a]) => {
            let a = eval_opnd(a, b, sq)?;
            let dim = match &a {
                Opnd::Lit(Value::Vector(v)) => v.len(),
                Opnd::Col(c) => c.data_type().vector_dim().unwrap_or(0),
                Opnd::Lit(_) => 0,
            };
            Ok(Column::new(ColumnData::Int64(vec![dim as i64; n].into()), a.validity(n)))
        }
        (ScalarFunc::ArrayDistance(m), [x, y]) => {
            let (x, y) = (eval_opnd(x, b, sq)?, eval_opnd(y, b, sq)?);
            distance(m, &x, &y, n)
        }
        _ => Err(SqlError::Internal(format!("{f:?} is not a vector function of {} arguments", args.len()))),
    }
}

/// One operand's rows: a constant vector, or a column's flat buffer of `dim` per row.
enum Rows<'a> {
    Const(&'a [f32]),
    Flat(&'a [f32], usize),
    Null,
}

impl<'a> Rows<'a> {
    fn of(o: &'a Opnd<'_>) -> Result<Rows<'a>> {
        Ok(match o {
            Opnd::Lit(Value::Vector(v)) => Rows::Const(v),
            Opnd::Lit(Value::Null) => Rows::Null,
            Opnd::Col(c) => match c.data() {
                ColumnData::Vector { dim, values } => Rows::Flat(values, *dim as usize),
                ColumnData::Null(_) => Rows::Null,
                d => return Err(SqlError::Internal(format!("a {} operand of a vector function", d.data_type()))),
            },
            Opnd::Lit(v) => {
                return Err(SqlError::Internal(format!("a {} operand of a vector function", v.data_type())))
            }
        })
    }

    #[inline]
    fn row(&self, i: usize) -> &'a [f32] {
        match *self {
            Rows::Const(v) => v,
            Rows::Flat(v, d) => v.get(i * d..(i + 1) * d).unwrap_or(&[]),
            Rows::Null => &[],
        }
    }
}

/// `m` between the rows of `x` and `y` (DOUBLE; NULL where either is NULL).
fn distance(m: Metric, x: &Opnd, y: &Opnd, n: usize) -> Result<Column> {
    let (rx, ry) = (Rows::of(x)?, Rows::of(y)?);
    if matches!(rx, Rows::Null) || matches!(ry, Rows::Null) {
        return Ok(Column::nulls(DataType::Float64, n));
    }
    let (dx, dy) = (rx.row(0).len(), ry.row(0).len());
    if n > 0 && dx != dy {
        return Err(SqlError::exec(format!("vectors differ in dimension: {dx} and {dy}")));
    }
    let validity = match (x.validity(n), y.validity(n)) {
        (Some(a), Some(b)) => Some(Bitmap::from_bools((0..n).map(|i| a.get(i) && b.get(i)))),
        (a, b) => a.or(b),
    };
    let rows = |r: std::ops::Range<usize>| -> Vec<f64> {
        match &validity {
            // NULL rows hold zeros: computing them costs what a branch would, and they are masked.
            None => r.map(|i| m.eval(rx.row(i), ry.row(i))).collect(),
            Some(v) => r.map(|i| if v.get(i) { m.eval(rx.row(i), ry.row(i)) } else { 0.0 }).collect(),
        }
    };
    let out = if n.saturating_mul(dx) < PAR_FLOATS {
        rows(0..n)
    } else {
        // An exact nearest-neighbour scan of a large column: pieces on every core.
        let pieces: Vec<std::ops::Range<usize>> =
            (0..n).step_by(PAR_ROWS).map(|start| start..(start + PAR_ROWS).min(n)).collect();
        let done = zepto_storage::par::try_map(&pieces, |r| Ok::<_, std::convert::Infallible>(rows(r.clone())));
        match done {
            Ok(parts) => parts.concat(),
            Err(never) => match never {},
        }
    };
    Ok(Column::new(ColumnData::Float64(out.into()), validity))
}

/// From this many floats on one side (rows × dimension) distances are computed on every core:
/// about half a millisecond of work, well above what starting the helpers costs.
const PAR_FLOATS: usize = 1 << 21;

/// Rows per piece of a parallel distance computation (taken one at a time by the helpers).
const PAR_ROWS: usize = 4096;
