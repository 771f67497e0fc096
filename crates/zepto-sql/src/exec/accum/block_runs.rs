//! Long runs read through the block summaries their columns keep
//! (`zepto_storage::summary`): a run of a NULL-free column takes the sums and extremes of the
//! blocks it covers whole, and reads only its rows before and after them. A partition's
//! `avg(price)` or `max(size)` then reads a few thousand of its rows once a query has
//! summarized its blocks (the first one reads them all, as before). Runs this long are whole
//! partitions or days of them; bars keep the kernels that cost little per run.
//!
//! A float sum through the summaries adds the run's rows before its first whole block, each
//! block's sum and the rows after, in that order, whether the blocks' summaries were kept or
//! made for the query: one query over the same rows gives the same bits every time.

use super::runs;
use zepto_storage::buf::Buf;
use zepto_storage::summary::{FloatSummary, IntSummary, Summarize, BLOCK};
use zepto_storage::{Column, ColumnData};

/// Runs averaging this many rows (four blocks) go through the summaries.
const LONG_RUN: usize = 4 * BLOCK;

/// Whether `x`'s runs are read through the summaries: no NULL, and long runs.
fn long(x: &Column, starts: &[u32], n: usize) -> bool {
    x.validity().is_none() && !starts.is_empty() && n / starts.len() >= LONG_RUN
}

/// Each run's summary (`runs` over `starts`, `n` rows) of an integer column (BIGINT,
/// TIMESTAMP, INTERVAL, INTEGER, DATE) without NULLs whose runs are long; `None` otherwise.
pub fn int_runs(x: &Column, starts: &[u32], n: usize) -> Option<Vec<IntSummary>> {
    match x.data() {
        ColumnData::Int64(b) | ColumnData::Timestamp(b) | ColumnData::Interval(b) => each(x, b, starts, n),
        ColumnData::Int32(b) | ColumnData::Date(b) => each(x, b, starts, n),
        _ => None,
    }
}

/// Each run's summary of a DOUBLE column without NULLs whose runs are long; `None` otherwise.
pub fn float_runs(x: &Column, starts: &[u32], n: usize) -> Option<Vec<FloatSummary>> {
    match x.data() {
        ColumnData::Float64(b) => each(x, b, starts, n),
        _ => None,
    }
}

/// Each run's summary of `x`'s values `b`, where [`long`] says the summaries apply.
fn each<T: Summarize>(x: &Column, b: &Buf<T>, starts: &[u32], n: usize) -> Option<Vec<T::Summary>> {
    long(x, starts, n).then(|| runs(starts, n).map(|(s, e)| b.summary_of(s..e)).collect())
}

/// A run's least (`max` false) or greatest double as `min`/`max` rank them, NaN the largest:
/// `None` where the summary cannot tell (NaN beside nothing but `+inf`, or only NaN).
pub fn float_extreme(s: &FloatSummary, max: bool) -> Option<f64> {
    match (max, s.nan) {
        (true, true) => Some(f64::NAN),
        (true, false) => Some(s.max),
        (false, true) if s.min == f64::INFINITY => None,
        (false, _) => Some(s.min),
    }
}
