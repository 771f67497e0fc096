//! Approximate nearest-neighbour graphs for `FLOAT[n]` columns.
//!
//! What: an HNSW graph ([`Graph`]) over the rows of one partition of one vector column, keyed
//! by the row's position in the partition. It is built in parallel, grows as rows are appended
//! in time order, and answers "the k rows nearest to this vector" with a row filter applied
//! inside the graph walk, so a `WHERE` that keeps 10% of the rows still finds k of them.
//!
//! Why a library: HNSW done well (concurrent inserts, filtered search, save/load, tuned
//! kernels) is a project of its own. `usearch` is what DuckDB's `vss` extension and
//! ClickHouse's vector index use; it keeps its own copy of the vectors, so a graph answers
//! without reading the column. The engine decides when to use a graph (the physical planner),
//! keeps it in step with the table, and computes the distances it returns from the column
//! itself, so results never depend on the graph's own arithmetic: only on which rows it finds
//! (the documented recall).

mod graph;
pub mod half;
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
    /// The library failed (out of memory, mostly).
    #[error("vector index: {0}")]
    Library(String),
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
