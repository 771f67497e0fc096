//! The graphs of every HNSW index of a catalog, kept in step with its tables.
//!
//! What: for each index (`CREATE INDEX ... USING HNSW`), one [`Graph`] per partition of the
//! table, keyed by the partition's lineage ([`zepto_storage::Partition::lineage`]): rows are
//! keyed by their position, which a lineage keeps stable while rows are only appended in time
//! order. [`Registry::refresh`] adds the rows appended since the last refresh, builds graphs for
//! new lineages (a new partition, or one whose rows moved: a merge, DELETE, UPDATE) and drops
//! graphs no partition has any more.
//!
//! Why this shape: a query never waits for a graph and never gets a different answer because
//! of one. It searches the graph over the rows the graph holds ([`PartGraph::covered`]) and
//! scans the rest exactly, so a graph that lags behind ingestion, or is still being built for a
//! lineage, costs speed, never correctness. Building is the maintainer thread's work
//! ([`Registry::spawn`]), off the write path: an insert is acknowledged as fast with an index
//! as without. Tests and `CREATE INDEX` call [`Registry::refresh`] to catch up at once.

use crate::{AnnError, Graph, Hit, HnswParams, Metric, Query};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use zepto_storage::{Catalog, ColumnData, DataType, IndexDef, Partition};

/// What an HNSW index definition asks for, checked against its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSpec {
    dim: usize,
    metric: Metric,
    params: HnswParams,
}

fn option_num(def: &IndexDef, key: &str, default: usize) -> Result<usize, AnnError> {
    match def.option(key) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| AnnError::Invalid(format!("index option {key} = '{v}': not a whole number"))),
    }
}

impl IndexSpec {
    /// The spec of `def` over a column of type `column_type`: method `hnsw`, a `FLOAT[n]`
    /// column, options `metric` (`cosine` by default, `l2sq`, `ip`), `m`, `ef_construction`
    /// and `ef_search` (DuckDB vss's defaults 16, 128, 64). Any other option is an error.
    pub fn from_def(def: &IndexDef, column_type: DataType) -> Result<IndexSpec, AnnError> {
        if def.method() != "hnsw" {
            return Err(AnnError::Invalid(format!("index method '{}': only HNSW indexes exist", def.method())));
        }
        let DataType::Vector(dim) = column_type else {
            return Err(AnnError::Invalid(format!(
                "an HNSW index needs a FLOAT[n] column; '{}' is {column_type}",
                def.column()
            )));
        };
        if let Some((k, _)) =
            def.options().iter().find(|(k, _)| !["metric", "m", "ef_construction", "ef_search"].contains(&k.as_str()))
        {
            return Err(AnnError::Invalid(format!(
                "unknown HNSW option '{k}' (metric, m, ef_construction and ef_search are)"
            )));
        }
        let metric = match def.option("metric") {
            None => Metric::Cosine,
            Some(m) => Metric::parse(m)
                .ok_or_else(|| AnnError::Invalid(format!("metric '{m}': use 'cosine', 'l2sq' or 'ip'")))?,
        };
        let d = HnswParams::default();
        let params = HnswParams::new(
            option_num(def, "m", d.m())?,
            option_num(def, "ef_construction", d.ef_construction())?,
            option_num(def, "ef_search", d.ef_search())?,
        )?;
        Ok(IndexSpec { dim: usize::from(dim), metric, params })
    }

    /// A spec of parts already checked (a graph's own).
    pub(crate) fn new(dim: usize, metric: Metric, params: HnswParams) -> IndexSpec {
        IndexSpec { dim, metric, params }
    }

    /// The vectors' dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The metric the graph ranks by.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The graph's parameters.
    pub fn params(&self) -> HnswParams {
        self.params
    }
}

/// One partition's graph, holding its rows `0..covered()`.
#[derive(Debug)]
pub struct PartGraph {
    graph: Graph,
    covered: AtomicUsize,
}

impl PartGraph {
    /// Rows `0..covered()` of the partition are in the graph (those that are not NULL).
    pub fn covered(&self) -> usize {
        self.covered.load(Ordering::Acquire)
    }

    /// `v` prepared for searching this graph (and every other of its index).
    pub fn query(&self, v: &[f32]) -> Query {
        Query::new(self.graph.spec().metric(), v)
    }

    /// Bytes the graph holds.
    pub fn memory_bytes(&self) -> usize {
        self.graph.memory_bytes()
    }

    /// The beam a search of the graph walks with: the most rows it can answer at no extra cost.
    pub fn ef_search(&self) -> usize {
        self.graph.spec().params().ef_search()
    }

    /// The `k` rows nearest to `query` among rows `0..visible` that `keep` accepts (`visible`
    /// at most [`PartGraph::covered`]: the caller scans rows past it exactly).
    pub fn search(
        &self,
        query: &Query,
        k: usize,
        visible: usize,
        keep: Option<&(dyn Fn(u64) -> bool + Sync)>,
    ) -> Result<Vec<Hit>, AnnError> {
        let visible = visible as u64;
        let within = |key: u64| key < visible && keep.is_none_or(|f| f(key));
        self.graph.search(query, k, Some(&within))
    }
}

type Key = (String, String);

struct Entry {
    spec: IndexSpec,
    column: usize,
    parts: HashMap<u64, Arc<PartGraph>>,
}

/// The graphs of every index of one catalog (see the module docs).
#[derive(Default)]
pub struct Registry {
    entries: Mutex<HashMap<Key, Entry>>,
    /// Held by [`Registry::refresh`]: one refresh adds a partition's rows at a time.
    refreshing: Mutex<()>,
    /// Set once the maintainer thread runs ([`Registry::start`]).
    started: std::sync::OnceLock<()>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let graphs: usize = entries.values().map(|e| e.parts.len()).sum();
        f.debug_struct("Registry").field("indexes", &entries.len()).field("graphs", &graphs).finish()
    }
}

/// What one [`Registry::refresh`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Refreshed {
    /// Rows added to graphs.
    pub rows: usize,
    /// Graphs started (new partitions, or partitions whose rows moved).
    pub graphs: usize,
    /// Graphs dropped (their partition changed or went, or their index was dropped).
    pub dropped: usize,
}

fn key(table: &str, index: &str) -> Key {
    (table.to_ascii_lowercase(), index.to_ascii_lowercase())
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Arc<Registry> {
        Arc::new(Registry::default())
    }

    /// The graph of index `index` of `table` for the partition of lineage `lineage`, if one
    /// was started.
    pub fn graph(&self, table: &str, index: &str, lineage: u64) -> Option<Arc<PartGraph>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(&key(table, index))?.parts.get(&lineage).cloned()
    }

    /// Bytes all graphs hold.
    pub fn memory_bytes(&self) -> usize {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.values().flat_map(|e| e.parts.values()).map(|g| g.memory_bytes()).sum()
    }

    /// Rows all graphs hold.
    pub fn covered_rows(&self) -> usize {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.values().flat_map(|e| e.parts.values()).map(|g| g.covered()).sum()
    }

    /// Bring every index of `catalog` up to date with its tables' current snapshots, building
    /// on up to `threads` threads.
    pub fn refresh(&self, catalog: &Catalog, threads: usize) -> Result<Refreshed, AnnError> {
        let _one = self.refreshing.lock().unwrap_or_else(|e| e.into_inner());
        let mut done = Refreshed::default();
        let mut live = HashSet::new();
        for (table, def) in catalog.indexes() {
            let Ok(t) = catalog.snapshot(&table) else { continue };
            let Some(column) = t.schema().index_of(def.column()) else { continue };
            let Ok(spec) = IndexSpec::from_def(&def, t.schema().columns[column].data_type) else { continue };
            let k = key(&table, def.name());
            let lineages: HashSet<u64> = t.partitions().iter().map(|p| p.lineage()).collect();
            done.dropped += self.keep_only(&k, spec, column, &lineages);
            for p in t.partitions() {
                let (g, new) = self.part_graph(&k, p.lineage())?;
                done.graphs += usize::from(new);
                done.rows += catch_up(&g, p, column, threads)?;
            }
            live.insert(k);
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|k, e| {
            let keep = live.contains(k);
            if !keep {
                done.dropped += e.parts.len();
            }
            keep
        });
        Ok(done)
    }

    /// Make `k`'s entry match `spec` and `column` (a new entry, or a fresh one if the index
    /// was dropped and made again differently) and drop graphs of lineages not in `lineages`.
    fn keep_only(&self, k: &Key, spec: IndexSpec, column: usize, lineages: &HashSet<u64>) -> usize {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let e = entries.entry(k.clone()).or_insert_with(|| Entry { spec, column, parts: HashMap::new() });
        if e.spec != spec || e.column != column {
            let gone = e.parts.len();
            *e = Entry { spec, column, parts: HashMap::new() };
            return gone;
        }
        let before = e.parts.len();
        e.parts.retain(|l, _| lineages.contains(l));
        before - e.parts.len()
    }

    /// The graph for `lineage` under `k`, started if there is none (true when started).
    fn part_graph(&self, k: &Key, lineage: u64) -> Result<(Arc<PartGraph>, bool), AnnError> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let e = entries
            .get_mut(k)
            .ok_or_else(|| AnnError::Invalid("the index was dropped while its graph was being started".into()))?;
        if let Some(g) = e.parts.get(&lineage) {
            return Ok((g.clone(), false));
        }
        let graph = Graph::new(e.spec.dim, e.spec.metric, e.spec.params)?;
        let g = Arc::new(PartGraph { graph, covered: AtomicUsize::new(0) });
        e.parts.insert(lineage, g.clone());
        Ok((g, true))
    }

    /// Start the maintainer thread ([`Registry::spawn`] every 100 ms) unless it runs already.
    pub fn start(self: &Arc<Self>, catalog: &Arc<Catalog>) -> std::io::Result<()> {
        if self.started.set(()).is_err() {
            return Ok(());
        }
        self.spawn(catalog.clone(), Duration::from_millis(100))
    }

    /// Refresh every `period` on a thread of its own until the registry is dropped; errors
    /// are said once each on stderr.
    pub fn spawn(self: &Arc<Self>, catalog: Arc<Catalog>, period: Duration) -> std::io::Result<()> {
        let weak: Weak<Registry> = Arc::downgrade(self);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::thread::Builder::new().name("zepto-ann".into()).spawn(move || {
            let mut said = String::new();
            loop {
                std::thread::sleep(period);
                let Some(r) = weak.upgrade() else { return };
                if let Err(e) = r.refresh(&catalog, threads) {
                    let e = e.to_string();
                    if e != said {
                        eprintln!("zeptodb: WARNING building a vector index: {e}");
                        said = e;
                    }
                }
            }
        })?;
        Ok(())
    }
}

/// Add the rows of `p` that `g` does not hold yet (NULL vectors are left out); the rows added.
fn catch_up(g: &PartGraph, p: &Partition, column: usize, threads: usize) -> Result<usize, AnnError> {
    let (from, to) = (g.covered(), p.len());
    if from >= to {
        return Ok(0);
    }
    let col = &p.columns()[column];
    let ColumnData::Vector { dim, values } = col.data() else { return Ok(0) };
    let d = usize::from(*dim);
    let mut start = from;
    while start < to {
        // One run of non-NULL rows at a time (all of them when the column has no NULLs).
        while start < to && !col.is_valid(start) {
            start += 1;
        }
        let mut end = start;
        while end < to && col.is_valid(end) {
            end += 1;
        }
        if let Some(rows) = values.get(start * d..end * d) {
            g.graph.add(start as u64, rows, threads)?;
        }
        start = end;
    }
    g.covered.store(to, Ordering::Release);
    Ok(to - from)
}
