//! One HNSW graph ([`crate::hnsw`]) behind a small API keyed by row position, over the
//! distance of its metric ([`crate::kernel`]).

use crate::hnsw::{Hnsw, Tuning};
use crate::kernel::{CosineHalf, InnerProduct, SquaredL2};
use crate::{half, AnnError, HnswParams, IndexSpec, Metric};
use zepto_storage::vector;

/// A row a search found: its key (the row's position in the partition) and its distance as the
/// graph measured it (cosine distance, squared L2, or 1 - inner product).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The row's key.
    pub key: u64,
    /// The graph's distance to the query (smaller is nearer).
    pub distance: f32,
}

/// An HNSW graph over vectors of one dimension. Adds and searches may run from many threads at
/// once; keys are added once each.
pub struct Graph {
    inner: ByMetric,
    spec: IndexSpec,
}

/// The graph of each metric: a cosine graph holds unit vectors in half precision
/// ([`crate::half`]), so its distance is one dot product of 16-bit values, not three sums and a
/// square root over 32-bit ones: the build and the walk read half the memory. L2 and
/// inner-product graphs keep f32, whose range their values may need.
enum ByMetric {
    Cosine(Hnsw<CosineHalf>),
    L2(Hnsw<SquaredL2>),
    InnerProduct(Hnsw<InnerProduct>),
}

/// `$body` on the graph of whichever metric `$inner` holds, bound to `$g`.
macro_rules! each_metric {
    ($inner:expr, $g:ident => $body:expr) => {
        match $inner {
            ByMetric::Cosine($g) => $body,
            ByMetric::L2($g) => $body,
            ByMetric::InnerProduct($g) => $body,
        }
    };
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("spec", &self.spec).field("len", &self.len()).finish()
    }
}

/// `v` scaled to unit length (a zero vector stays zero: its distance to anything is 1), in
/// half precision, into `out`; `unit` is scratch.
fn unit_half(v: &[f32], unit: &mut Vec<f32>, out: &mut Vec<i16>) {
    let norm = vector::dot(v, v).sqrt();
    let inv = if norm > 0.0 && norm.is_finite() { (1.0 / norm) as f32 } else { 1.0 };
    unit.clear();
    unit.extend(v.iter().map(|x| x * inv));
    half::encode(unit, out);
}

/// A query vector prepared once for every graph of one metric it is searched in (a search
/// over many partitions' graphs scales and converts it once, not per graph).
#[derive(Debug, Clone)]
pub struct Query {
    metric: Metric,
    dim: usize,
    held: Held,
}

/// A prepared query's values.
#[derive(Debug, Clone)]
enum Held {
    Single(Vec<f32>),
    Half(Vec<i16>),
}

impl Query {
    /// `v` as a graph of `metric` compares it.
    pub fn new(metric: Metric, v: &[f32]) -> Query {
        let held = if metric == Metric::Cosine {
            let mut out = Vec::new();
            unit_half(v, &mut Vec::new(), &mut out);
            Held::Half(out)
        } else {
            Held::Single(v.to_vec())
        };
        Query { metric, dim: v.len(), held }
    }
}

impl Graph {
    /// An empty graph for vectors of `dim` values (1..=65535).
    pub fn new(dim: usize, metric: Metric, params: HnswParams) -> Result<Graph, AnnError> {
        if !(1..=65_535).contains(&dim) {
            return Err(AnnError::Invalid(format!("dimension {dim}: it must be between 1 and 65535")));
        }
        let tuning = Tuning { m: params.m(), ef_construction: params.ef_construction() };
        let inner = match metric {
            Metric::Cosine => ByMetric::Cosine(Hnsw::new(dim, tuning)),
            Metric::L2 => ByMetric::L2(Hnsw::new(dim, tuning)),
            Metric::InnerProduct => ByMetric::InnerProduct(Hnsw::new(dim, tuning)),
        };
        Ok(Graph { inner, spec: IndexSpec::new(dim, metric, params) })
    }

    /// Its dimension, metric and parameters.
    pub fn spec(&self) -> IndexSpec {
        self.spec
    }

    /// Vectors in the graph.
    pub fn len(&self) -> usize {
        each_metric!(&self.inner, g => g.len())
    }

    /// True when no vector was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the graph holds (its vectors and edges).
    pub fn memory_bytes(&self) -> usize {
        each_metric!(&self.inner, g => g.memory_bytes())
    }

    /// Add `vectors` (rows of the graph's dimension, [`IndexSpec::dim`] values, laid end to end) under keys `first_key`,
    /// `first_key + 1`, ..., on up to `threads` threads. Capacity grows by doubling, so adding
    /// rows a few at a time costs amortized O(1) reallocation per row.
    pub fn add(&self, first_key: u64, vectors: &[f32], threads: usize) -> Result<(), AnnError> {
        let dim = self.spec.dim();
        if !vectors.len().is_multiple_of(dim) {
            return Err(AnnError::Dimension { want: dim, got: vectors.len() % dim });
        }
        let rows = vectors.len() / dim;
        let row = |i: usize| &vectors[i * dim..(i + 1) * dim];
        let key = |i: usize| first_key + i as u64;
        match &self.inner {
            ByMetric::Cosine(g) => g.add(rows, threads, |i, unit: &mut Vec<f32>, out| {
                unit_half(row(i), unit, out);
                key(i)
            }),
            ByMetric::L2(g) => g.add(rows, threads, |i, _: &mut (), out| {
                out.extend_from_slice(row(i));
                key(i)
            }),
            // The same f32 rows as L2's; a separate arm because the kernel types differ.
            ByMetric::InnerProduct(g) => g.add(rows, threads, |i, _: &mut (), out| {
                out.extend_from_slice(row(i));
                key(i)
            }),
        }
    }

    /// The `k` keys nearest to `query`, nearest first, among those `keep` accepts (`keep` is
    /// called inside the walk, on the keys the walk meets).
    pub fn search(
        &self,
        query: &Query,
        k: usize,
        keep: Option<&(dyn Fn(u64) -> bool + Sync)>,
    ) -> Result<Vec<Hit>, AnnError> {
        if query.dim != self.spec.dim() {
            return Err(AnnError::Dimension { want: self.spec.dim(), got: query.dim });
        }
        if query.metric != self.spec.metric() {
            return Err(AnnError::Invalid(format!(
                "a query prepared for {:?} searched in a {:?} graph",
                query.metric,
                self.spec.metric()
            )));
        }
        if k == 0 {
            return Ok(Vec::new());
        }
        let ef = self.spec.params().ef_search();
        let hit = |key, distance| Hit { key, distance };
        Ok(match (&self.inner, &query.held) {
            (ByMetric::Cosine(g), Held::Half(q)) => g.search(q, k, ef, keep, hit),
            (ByMetric::L2(g), Held::Single(q)) => g.search(q, k, ef, keep, hit),
            (ByMetric::InnerProduct(g), Held::Single(q)) => g.search(q, k, ef, keep, hit),
            _ => unreachable!("a query is prepared for its metric's graph (checked above)"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random vectors, `rows` x `dim`.
    fn vectors(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
        crate::hnsw::tests::values(rows * dim, seed)
    }

    fn cosine_distance(a: &[f32], b: &[f32]) -> f64 {
        let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
        for (x, y) in a.iter().zip(b) {
            ab += f64::from(*x) * f64::from(*y);
            aa += f64::from(*x) * f64::from(*x);
            bb += f64::from(*y) * f64::from(*y);
        }
        1.0 - ab / (aa.sqrt() * bb.sqrt())
    }

    /// The exact top k by cosine distance among rows `keep` accepts.
    fn exact(data: &[f32], dim: usize, q: &[f32], k: usize, keep: &dyn Fn(u64) -> bool) -> Vec<u64> {
        let mut d: Vec<(f64, u64)> = data
            .chunks(dim)
            .enumerate()
            .filter(|(i, _)| keep(*i as u64))
            .map(|(i, v)| (cosine_distance(v, q), i as u64))
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0));
        d.into_iter().take(k).map(|(_, i)| i).collect()
    }

    fn recall(found: &[Hit], truth: &[u64]) -> f64 {
        let hit = found.iter().filter(|h| truth.contains(&h.key)).count();
        hit as f64 / truth.len() as f64
    }

    #[test]
    fn parameters_out_of_range_are_refused() {
        assert!(HnswParams::new(1, 128, 64).is_err());
        assert!(HnswParams::new(16, 8, 64).is_err());
        assert!(HnswParams::new(16, 128, 0).is_err());
        assert!(Graph::new(0, Metric::Cosine, HnswParams::default()).is_err());
        assert_eq!(Metric::parse("COSINE"), Some(Metric::Cosine));
        assert_eq!(Metric::parse("hamming"), None);
    }

    #[test]
    fn a_graph_finds_the_exact_neighbours_with_high_recall_and_grows_by_appends() {
        let (dim, rows) = (32, 4000);
        let data = vectors(rows, dim, 7);
        let g = Graph::new(dim, Metric::Cosine, HnswParams::default()).expect("a graph");
        let half = rows / 2 * dim;
        g.add(0, &data[..half], 2).expect("first half");
        g.add((rows / 2) as u64, &data[half..], 1).expect("second half, appended");
        assert_eq!(g.len(), rows);
        let queries = vectors(50, dim, 99);
        let mut total = 0.0;
        for q in queries.chunks(dim) {
            let found = g.search(&Query::new(g.spec().metric(), q), 10, None).expect("a search");
            assert_eq!(found.len(), 10);
            assert!(found.windows(2).all(|w| w[0].distance <= w[1].distance), "nearest first");
            total += recall(&found, &exact(&data, dim, q, 10, &|_| true));
        }
        assert!(total / 50.0 >= 0.95, "recall@10 {}", total / 50.0);
    }

    #[test]
    fn a_filtered_search_returns_only_rows_the_filter_keeps() {
        let (dim, rows) = (16, 3000);
        let data = vectors(rows, dim, 3);
        let g = Graph::new(dim, Metric::Cosine, HnswParams::default()).expect("a graph");
        g.add(0, &data, 2).expect("built");
        let keep = |k: u64| k % 10 == 3;
        let mut total = 0.0;
        for q in vectors(20, dim, 5).chunks(dim) {
            let found = g.search(&Query::new(g.spec().metric(), q), 10, Some(&keep)).expect("a search");
            assert!(found.iter().all(|h| keep(h.key)), "{found:?}");
            total += recall(&found, &exact(&data, dim, q, 10, &keep));
        }
        assert!(total / 20.0 >= 0.9, "filtered recall@10 {}", total / 20.0);
    }

    #[test]
    fn wrong_dimensions_are_errors() {
        let g = Graph::new(4, Metric::L2, HnswParams::default()).expect("a graph");
        assert_eq!(g.add(0, &[1.0; 6], 1), Err(AnnError::Dimension { want: 4, got: 2 }));
        assert_eq!(g.search(&Query::new(Metric::L2, &[1.0; 3]), 1, None), Err(AnnError::Dimension { want: 4, got: 3 }));
        assert_eq!(
            g.search(&Query::new(Metric::L2, &[1.0; 4]), 3, None),
            Ok(Vec::new()),
            "an empty graph finds nothing"
        );
        assert!(
            matches!(g.search(&Query::new(Metric::Cosine, &[1.0; 4]), 3, None), Err(AnnError::Invalid(_))),
            "a query prepared for another metric is refused"
        );
    }
}
