//! The physical planner's choice for `ORDER BY <distance>(col, <constant>) LIMIT k`: answer it
//! from an HNSW index of the scanned column ([`SortHow::Ann`]) instead of sorting every row.
//!
//! The choice is made from the plan's shape and the table snapshot's index definitions:
//! a TopN whose one key is a distance function of a scanned `FLOAT[n]` column and a constant
//! vector, in the direction that puts the nearest first (`array_cosine_distance`,
//! `array_distance`, `array_negative_inner_product` ascending; `array_cosine_similarity`,
//! `array_inner_product` descending, NULLs last), over a (filtered) scan that does not reach
//! the Parquet history, with an index of that column whose metric is the function's. The
//! executor then finds candidate rows per partition (graph search, filter inside the walk, or
//! an exact scan of the rows a filter keeps when they are few) and the ordinary projection and
//! TopN rank them with distances computed from the column: the index decides which rows are
//! looked at, never their order or their values.

use super::shape::{reads_history, scan_shape};
use super::{BExpr, Plan, SortKey};
use crate::expr::functions::ScalarFunc;
use zepto_ann::{IndexSpec, Metric};
use zepto_storage::vector::Metric as Distance;
use zepto_storage::{DataType, Value};

/// How a Sort runs.
#[derive(Debug, Clone, PartialEq)]
pub enum SortHow {
    /// Sort the whole input (keeping the first `limit` rows when there is a limit).
    Full,
    /// The first `limit` rows by a vector distance, among the candidates an index finds.
    Ann(AnnSearch),
    /// The first `limit` rows by a time bucket of an aggregate, from the newest (or oldest)
    /// rows aggregated first ([`super::bucket_topn`]).
    Buckets(super::bucket_topn::BucketTopN),
}

/// An index search the planner chose (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct AnnSearch {
    /// The table's name.
    pub table: String,
    /// The index's name.
    pub index: String,
    /// The indexed column's position among the scan's columns.
    pub column: usize,
    /// The query vector.
    pub query: Vec<f32>,
    /// The rows wanted (the TopN's limit).
    pub k: usize,
    /// The index's metric.
    pub metric: Metric,
    /// The sort key's distance function, as SQL named it, and its direction: how candidates
    /// are ranked exactly.
    pub distance: Distance,
    /// True when the key sorts descending (a similarity: larger is nearer).
    pub desc: bool,
}

impl AnnSearch {
    /// What EXPLAIN prints.
    pub fn describe(&self) -> String {
        format!("index={} metric={} (HNSW candidates, exact distances)", self.index, self.metric.name())
    }
}

/// The graph metric that ranks as `d` does in the direction `desc`, if any.
fn metric_of(d: Distance, desc: bool) -> Option<Metric> {
    match (d, desc) {
        (Distance::CosineDistance, false) | (Distance::CosineSimilarity, true) => Some(Metric::Cosine),
        (Distance::L2, false) => Some(Metric::L2),
        (Distance::NegativeInnerProduct, false) | (Distance::InnerProduct, true) => Some(Metric::InnerProduct),
        _ => None,
    }
}

/// The distance call `f(col, const)` (either order) of a sort key: its distance, the
/// column's position in the projection's input, and the constant.
fn distance_call(e: &BExpr) -> Option<(Distance, usize, &[f32])> {
    let BExpr::Func { func: ScalarFunc::ArrayDistance(d), args, .. } = e else { return None };
    match args.as_slice() {
        [BExpr::Col(c, _), BExpr::Lit(Value::Vector(q), _)] | [BExpr::Lit(Value::Vector(q), _), BExpr::Col(c, _)] => {
            Some((*d, *c, q.as_slice()))
        }
        _ => None,
    }
}

/// [`SortHow::Ann`] for a Sort over `input` by `keys` keeping `limit` rows, when its shape
/// allows (see the module docs).
pub fn choose(input: &Plan, keys: &[SortKey], limit: Option<usize>) -> Option<AnnSearch> {
    let k = limit.filter(|&k| (1..=10_000).contains(&k))?;
    let [key] = keys else { return None };
    let (BExpr::Col(i, _), false) = (&key.expr, key.nulls_first) else { return None };
    let Plan::Project { input: scanned, exprs } = input else { return None };
    let (distance, column, query) = distance_call(exprs.get(*i)?)?;
    let metric = metric_of(distance, key.desc)?;
    let s = scan_shape(scanned)?;
    if reads_history(s.table, s.range) {
        return None;
    }
    let def = s.table.schema().columns.get(*s.columns.get(column)?)?;
    if def.data_type != DataType::Vector(u16::try_from(query.len()).ok()?) {
        return None;
    }
    let index = s.table.indexes().iter().find(|ix| {
        ix.column().eq_ignore_ascii_case(&def.name)
            && IndexSpec::from_def(ix, def.data_type).is_ok_and(|spec| spec.metric() == metric)
    })?;
    Some(AnnSearch {
        table: s.table.name().to_string(),
        index: index.name().to_string(),
        column,
        query: query.to_vec(),
        k,
        metric,
        distance,
        desc: key.desc,
    })
}
