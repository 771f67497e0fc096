//! Approximate nearest-neighbour graphs for `FLOAT[n]` columns: HNSW graphs (our own: the `hnsw` module),
//! one per partition of an indexed column, kept in step with the table.
//!
//! # What it owns
//!
//! The graphs only. The catalog holds, logs and checkpoints the definition (`IndexDef`); a graph
//! is derived data, built again from the rows after a restart. zepto-sql decides when to use one.
//!
//! * [`Graph`] — one HNSW graph keyed by row position: [`Graph::add`] on many threads,
//!   [`Graph::search`] with a filter called inside the walk, answering [`Hit`]s.
//! * [`Registry`] — the graphs of every index of a catalog: per index, one [`PartGraph`] per
//!   partition lineage, holding that partition's rows `0..covered` ([`PartGraph::covered`]).
//! * [`IndexSpec`], [`Metric`], [`HnswParams`] — a `CREATE INDEX ... USING HNSW` definition,
//!   checked: dimension, metric (`cosine`, `l2sq`, `ip`), `m`, `ef_construction`, `ef_search`.
//! * [`Query`] — a query vector prepared once for every graph of one metric; [`half`] — the
//!   half-precision vectors of cosine graphs, and their dot product.
//!
//! # Entry points
//!
//! zepto-sql's `Engine` owns one [`Registry`] (`Engine::indexes`). `CREATE INDEX` (zepto-sql
//! `index.rs`) checks with [`IndexSpec::from_def`], builds with [`Registry::refresh`], then
//! starts the maintainer thread ([`Registry::start`]). The executor (`exec/ann.rs`) calls
//! [`Registry::graph`], [`PartGraph::query`] and [`PartGraph::search`] per partition.
//!
//! # Invariants
//!
//! * Keys are row positions. They hold only while the partition keeps its lineage
//!   (`Partition::lineage`): a new lineage gets a new graph; graphs of gone lineages are dropped.
//! * A graph only picks which rows are looked at (its recall). A lagging graph costs speed, not
//!   rows: a search returns keys below `visible` (at most `covered`), the caller scans the rest
//!   exactly, and result distances come from the column, never from the graph.
//! * Building is off the write path ([`Registry::start`]: a refresh every 100 ms on its own
//!   thread); one [`Registry::refresh`] runs at a time. NULL vectors are left out.
//! * Adds and searches run side by side; only growing a graph's capacity is exclusive.
//! * A [`Query`] searches only graphs of its metric and dimension (else an [`AnnError`]).
//!
//! # When you change …
//!
//! * A metric: [`Metric`] (`parse`, `name`); in `graph.rs`, the `MetricKind` in [`Graph::new`]
//!   and the kernel in `set_kernel`; `metric_of` in zepto-sql's `plan/ann.rs`; `docs/vectors.md`.
//! * An index option: [`IndexSpec::from_def`] (its list of known options), [`HnswParams::new`]
//!   (the ranges) and `docs/vectors.md`.
//! * Code that moves, removes or rewrites a partition's rows must renew `Partition::lineage`.
//! * What [`PartGraph::search`] promises about `covered` and `visible`: `piece_rows` in
//!   zepto-sql's `exec/ann.rs`, which scans the rows a graph does not hold.

mod graph;
pub mod half;
mod hnsw;
mod kernel;
mod registry;

pub use graph::{Graph, Hit, Query};
pub use registry::{IndexSpec, PartGraph, Refreshed, Registry};

use thiserror::Error;

/// An error from building or searching a graph.
#[derive(Debug, Error, PartialEq)]
pub enum AnnError {
    /// Parameters out of their range (dimension, `m`, `ef_construction`, `ef_search`).
    #[error("{0}")]
    Invalid(String),
    /// A vector whose length is not the graph's dimension.
    #[error("a vector of {got} values for a graph of dimension {want}")]
    Dimension {
        /// The graph's dimension.
        want: usize,
        /// The vector's length.
        got: usize,
    },
    /// A graph could not grow to hold its vectors.
    #[error("vector index: out of memory growing a graph to {bytes} bytes")]
    OutOfMemory {
        /// The size the graph's memory would have grown to.
        bytes: usize,
    },
}

/// How a graph measures distance: the metric of the SQL function it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// `array_cosine_distance` (1 - cosine similarity); also answers
    /// `array_cosine_similarity ... DESC`.
    Cosine,
    /// `array_distance` (Euclidean); the graph ranks by its square, which orders the same.
    L2,
    /// `array_negative_inner_product` (and `array_inner_product ... DESC`).
    InnerProduct,
}

impl Metric {
    /// The metric named in `WITH (metric = '...')`, as DuckDB's vss spells them.
    pub fn parse(name: &str) -> Option<Metric> {
        match name.to_ascii_lowercase().as_str() {
            "cosine" | "cos" => Some(Metric::Cosine),
            "l2sq" | "l2" | "euclidean" => Some(Metric::L2),
            "ip" | "inner_product" | "dot" => Some(Metric::InnerProduct),
            _ => None,
        }
    }

    /// The name `EXPLAIN` and the catalog print.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Cosine => "cosine",
            Metric::L2 => "l2sq",
            Metric::InnerProduct => "ip",
        }
    }
}

/// The tunable parameters of an HNSW graph (DuckDB vss's names and defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HnswParams {
    m: usize,
    ef_construction: usize,
    ef_search: usize,
}

impl HnswParams {
    /// Edges per node (`m`, 2..=256), the candidate list while building (`ef_construction`,
    /// at least `m`, at most 4096) and while searching (`ef_search`, 1..=4096; a search for
    /// k rows uses at least k).
    pub fn new(m: usize, ef_construction: usize, ef_search: usize) -> Result<HnswParams, AnnError> {
        if !(2..=256).contains(&m) {
            return Err(AnnError::Invalid(format!("m = {m}: it must be between 2 and 256")));
        }
        if !(m..=4096).contains(&ef_construction) {
            return Err(AnnError::Invalid(format!(
                "ef_construction = {ef_construction}: it must be between m ({m}) and 4096"
            )));
        }
        if !(1..=4096).contains(&ef_search) {
            return Err(AnnError::Invalid(format!("ef_search = {ef_search}: it must be between 1 and 4096")));
        }
        Ok(HnswParams { m, ef_construction, ef_search })
    }

    /// Edges per node.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Candidates kept while inserting.
    pub fn ef_construction(&self) -> usize {
        self.ef_construction
    }

    /// Candidates kept while searching.
    pub fn ef_search(&self) -> usize {
        self.ef_search
    }
}

impl Default for HnswParams {
    /// `m = 16, ef_construction = 128, ef_search = 64`, as DuckDB's vss.
    fn default() -> HnswParams {
        HnswParams { m: 16, ef_construction: 128, ef_search: 64 }
    }
}
