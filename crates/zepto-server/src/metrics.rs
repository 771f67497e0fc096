//! Prometheus metrics (`GET /metrics`, text exposition format).
//!
//! Handles for every (route, status class) pair are created at start, so recording a request
//! is a few relaxed atomic adds with no label hashing or allocation; only error codes, a small
//! open set, go through a labelled family.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use zepto_storage::Catalog;

/// What a request was, for metrics and the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `/` and `/query`: SQL statements.
    Query,
    /// `/write` and `/api/v2/write`: ingest.
    Write,
    /// `/tables` and `/tables/<name>`.
    Tables,
    /// `/ping`, `/health` and `/ready` (answered without a key).
    Probe,
    /// `/metrics`.
    Metrics,
    /// `/api/ai/*`: agent memory and caches.
    Ai,
    /// `/cluster`: the cluster node's state.
    Cluster,
    /// `/results/<id>`: pages of a kept result.
    Results,
    /// `/console` and its assets (answered without a key: they hold no data).
    Console,
    /// Any other path (answered 404).
    Other,
}

impl Route {
    const ALL: [Route; 10] = [
        Route::Query,
        Route::Write,
        Route::Tables,
        Route::Probe,
        Route::Metrics,
        Route::Ai,
        Route::Cluster,
        Route::Results,
        Route::Console,
        Route::Other,
    ];

    /// The `route` label value (`query`, `write`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Route::Query => "query",
            Route::Write => "write",
            Route::Tables => "tables",
            Route::Probe => "probe",
            Route::Metrics => "metrics",
            Route::Ai => "ai",
            Route::Cluster => "cluster",
            Route::Results => "results",
            Route::Console => "console",
            Route::Other => "other",
        }
    }

    fn index(self) -> usize {
        Route::ALL.iter().position(|r| *r == self).unwrap_or(Route::ALL.len() - 1)
    }
}

type Labels = Vec<(String, String)>;

/// Every metric the server exports, registered once at start; cheap to update from any thread.
pub struct Metrics {
    registry: Registry,
    /// [route][status class 2xx/3xx, 4xx, 5xx]
    requests: Vec<[Counter; 3]>,
    latency: Vec<Histogram>,
    errors: Family<Labels, Counter>,
    /// `zepto_queries`: SQL statements run.
    pub queries: Counter,
    /// `zepto_rows_returned`: rows in query results.
    pub rows_returned: Counter,
    rows_ingested: Family<Labels, Counter>,
    /// `zepto_connections`: connections accepted.
    pub connections_total: Counter,
    /// `zepto_connections_open`: connections open now.
    pub connections_open: Gauge,
    /// `zepto_subscribers`: subscriptions (`GET /subscribe`) streaming now.
    pub subscribers: Gauge,
    /// `zepto_queries_running`: statements executing now.
    pub queries_running: Gauge,
    /// `zepto_query_slots`: statements that may run at once (`--max-queries`; the quick lane's
    /// slots are beside these).
    pub query_slots: Gauge,
    /// `zepto_query_slots_busy`: query slots held now (by statements running, and by long
    /// scripts being parsed); the quick lane's are not counted.
    pub query_slots_busy: Gauge,
    /// `zepto_queries_stopped_for_memory_total`: queries the memory guard stopped because the
    /// process held more than `--max-server-memory-mb`.
    pub queries_stopped_for_memory: Counter,
    /// `zepto_request_body_bytes_in_flight`: bytes of request bodies held now (of
    /// `--max-inflight-body-mb`; set when metrics are read).
    pub body_bytes_in_flight: Gauge,
    memory: MemoryGauges,
    tables: Gauge,
    table_rows: Gauge,
    index_bytes: Gauge,
    index_rows: Gauge,
    /// WAL records recovery dropped at start (0 when the log was sound).
    pub recovery_dropped_records: Gauge,
    /// Rows of the intact WAL records recovery dropped at start (0 when the log was sound).
    pub recovery_dropped_rows: Gauge,
    cluster_lag: Family<Labels, Gauge>,
    views: ViewGauges,
    cluster_records: Family<Labels, Gauge>,
    fix: FixGauges,
    /// The counters of line protocol over TCP ([`crate::ilp_tcp`]).
    pub ilp_tcp: IlpTcpMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// A new metric of type `M`, registered under `name`.
fn register<M: prometheus_client::registry::Metric + Clone + Default>(r: &mut Registry, name: &str, help: &str) -> M {
    let m = M::default();
    r.register(name, help, m.clone());
    m
}

/// The process's memory: resident, peak, in huge pages, and the huge page advice given.
struct MemoryGauges {
    resident: Gauge<f64, AtomicU64>,
    peak: Gauge<f64, AtomicU64>,
    huge_pages: Gauge<f64, AtomicU64>,
    huge_advised: Gauge,
    huge_refused: Gauge,
    reserved_bytes: Gauge,
    reserved_blocks: Gauge,
    reserved_fallbacks: Gauge,
}

impl MemoryGauges {
    fn register(r: &mut Registry) -> MemoryGauges {
        MemoryGauges {
            resident: register(r, "zepto_memory_resident_bytes", "Resident memory of the process"),
            peak: register(r, "zepto_memory_peak_resident_bytes", "Peak resident memory of the process"),
            huge_pages: register(
                r,
                "zepto_memory_huge_page_bytes",
                "Memory the kernel backs with transparent huge pages (AnonHugePages)",
            ),
            huge_advised: register(
                r,
                "zepto_huge_page_advice",
                "Large blocks advised to use huge pages (--huge-pages on)",
            ),
            huge_refused: register(
                r,
                "zepto_huge_page_advice_refused",
                "Huge page advice the kernel refused: those blocks kept 4 KiB pages",
            ),
            reserved_bytes: register(
                r,
                "zepto_huge_pages_reserved_bytes",
                "Memory mapped on reserved huge pages now (--huge-pages reserved; not in resident memory)",
            ),
            reserved_blocks: register(
                r,
                "zepto_huge_pages_reserved_blocks",
                "Large blocks mapped on reserved huge pages so far",
            ),
            reserved_fallbacks: register(
                r,
                "zepto_huge_pages_reserved_fallbacks",
                "Large blocks the reserved huge page pool could not hold: taken from the allocator, advised",
            ),
        }
    }

    /// Read them now.
    fn read(&self) {
        if let Some(rss) = zepto_storage::mem::process_rss_bytes() {
            self.resident.set(rss as f64);
        }
        if let Some(peak) = peak_rss_bytes() {
            self.peak.set(peak as f64);
        }
        if let Some(huge) = zepto_storage::mem::process_huge_page_bytes() {
            self.huge_pages.set(huge as f64);
        }
        let (advised, refused) = zepto_storage::mem::huge_page_advice();
        self.huge_advised.set(i64::try_from(advised).unwrap_or(i64::MAX));
        self.huge_refused.set(i64::try_from(refused).unwrap_or(i64::MAX));
        let (bytes, blocks, fallbacks) = zepto_storage::hugetlb::stats();
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.reserved_bytes.set(gauge(bytes));
        self.reserved_blocks.set(gauge(blocks));
        self.reserved_fallbacks.set(gauge(fallbacks));
    }
}

/// What point-in-time recovery dropped at start: WAL records, and rows of intact records.
fn register_recovery(registry: &mut Registry) -> (Gauge, Gauge) {
    let records = register(
        registry,
        "zepto_wal_recovery_dropped_records",
        "WAL records dropped at start because of corruption (point-in-time recovery)",
    );
    let rows = register(
        registry,
        "zepto_wal_recovery_dropped_rows",
        "Rows of intact WAL records dropped at start after a corruption",
    );
    (records, rows)
}

/// Each route's requests by status class (2xx/3xx, 4xx, 5xx) and its latency histogram, in
/// [`Route::ALL`]'s order.
fn register_routes(registry: &mut Registry) -> (Vec<[Counter; 3]>, Vec<Histogram>) {
    let requests_family: Family<Labels, Counter> =
        register(registry, "zepto_http_requests", "HTTP requests by route and status class");
    let latency_family = Family::<Labels, Histogram>::new_with_constructor(|| {
        // 50 µs .. ~52 s
        Histogram::new(exponential_buckets(0.000_05, 2.0, 21))
    });
    registry.register(
        "zepto_http_request_duration_seconds",
        "Time from request received to response headers sent",
        latency_family.clone(),
    );
    let requests = Route::ALL
        .iter()
        .map(|r| {
            ["2xx", "4xx", "5xx"].map(|class| {
                requests_family
                    .get_or_create_owned(&vec![("route".into(), r.name().into()), ("class".into(), class.into())])
            })
        })
        .collect();
    let latency = Route::ALL
        .iter()
        .map(|r| latency_family.get_or_create_owned(&vec![("route".into(), r.name().into())]))
        .collect();
    (requests, latency)
}

impl Metrics {
    /// All metrics registered, at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let (requests, latency) = register_routes(&mut registry);
        let errors: Family<Labels, Counter> = register(&mut registry, "zepto_errors", "Error responses by error code");
        let queries: Counter = register(&mut registry, "zepto_queries", "SQL statements run");
        let rows_returned: Counter = register(&mut registry, "zepto_rows_returned", "Rows in query results");
        let rows_ingested: Family<Labels, Counter> =
            register(&mut registry, "zepto_rows_ingested", "Rows stored by /write, by format");
        let connections_total: Counter = register(&mut registry, "zepto_connections", "Connections accepted");
        let connections_open: Gauge = register(&mut registry, "zepto_connections_open", "Connections open now");
        let subscribers: Gauge = register(&mut registry, "zepto_subscribers", "Subscriptions streaming now");
        let queries_running: Gauge = register(&mut registry, "zepto_queries_running", "Statements executing now");
        let query_slots: Gauge = register(
            &mut registry,
            "zepto_query_slots",
            "Statements that may run at once (--max-queries; short statements have a lane beside these)",
        );
        let query_slots_busy: Gauge = register(&mut registry, "zepto_query_slots_busy", "Query slots held now");
        let body_bytes_in_flight: Gauge = register(
            &mut registry,
            "zepto_request_body_bytes_in_flight",
            "Bytes of request bodies held now (of --max-inflight-body-mb)",
        );
        let queries_stopped_for_memory: Counter = register(
            &mut registry,
            "zepto_queries_stopped_for_memory",
            "Queries stopped because the server held more than --max-server-memory-mb",
        );
        let memory = MemoryGauges::register(&mut registry);
        let tables: Gauge = register(&mut registry, "zepto_tables", "Tables in the catalog");
        let table_rows: Gauge = register(&mut registry, "zepto_table_rows", "Rows in all tables");
        let index_bytes: Gauge =
            register(&mut registry, "zepto_vector_index_bytes", "Memory the HNSW graphs of vector indexes hold");
        let index_rows: Gauge =
            register(&mut registry, "zepto_vector_index_rows", "Rows the HNSW graphs of vector indexes hold");
        let (recovery_dropped_records, recovery_dropped_rows) = register_recovery(&mut registry);
        let cluster_lag: Family<Labels, Gauge> = register(
            &mut registry,
            "zepto_cluster_partition_lag",
            "Records of a Kafka partition this cluster node owns that it has not applied yet",
        );
        let cluster_records: Family<Labels, Gauge> = register(
            &mut registry,
            "zepto_cluster_records",
            "Kafka records this cluster node applied or refused since it started",
        );
        let fix = FixGauges::register(&mut registry);
        let ilp_tcp = IlpTcpMetrics::register(&mut registry);
        Metrics {
            views: ViewGauges::register(&mut registry),
            ilp_tcp,
            registry,
            cluster_lag,
            cluster_records,
            fix,
            requests,
            latency,
            errors,
            queries,
            rows_returned,
            rows_ingested,
            connections_total,
            connections_open,
            subscribers,
            queries_running,
            query_slots,
            query_slots_busy,
            queries_stopped_for_memory,
            body_bytes_in_flight,
            memory,
            tables,
            table_rows,
            index_bytes,
            index_rows,
            recovery_dropped_records,
            recovery_dropped_rows,
        }
    }

    /// Count one request of `route` by status class (2xx/3xx, 4xx, 5xx) and observe its latency.
    pub fn record(&self, route: Route, status: u16, elapsed: Duration) {
        let class = match status {
            500.. => 2,
            400..=499 => 1,
            _ => 0,
        };
        let i = route.index();
        self.requests[i][class].inc();
        self.latency[i].observe(elapsed.as_secs_f64());
    }

    /// Count one error response with this error code (`zepto_errors{code}`).
    pub fn error(&self, code: &str) {
        self.errors.get_or_create(&vec![("code".into(), code.into())]).inc();
    }

    /// Count `rows` stored by `/write` in `format` (`zepto_rows_ingested{format}`).
    pub fn ingested(&self, format: &str, rows: u64) {
        self.rows_ingested.get_or_create(&vec![("format".into(), format.into())]).inc_by(rows);
    }

    /// Set the cluster gauges from a node's `/cluster` status: lag per owned partition, records
    /// applied and refused.
    pub fn cluster(&self, status: &crate::cluster::Status) {
        self.cluster_lag.clear();
        for (partition, p) in &status.partitions {
            if let Some(lag) = p.lag() {
                let labels = vec![("topic".into(), status.topic.clone()), ("partition".into(), partition.to_string())];
                self.cluster_lag.get_or_create(&labels).set(lag);
            }
        }
        for (outcome, n) in [("applied", status.records_applied), ("refused", status.records_rejected)] {
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            self.cluster_records.get_or_create(&vec![("outcome".into(), outcome.into())]).set(n);
        }
    }

    /// Set the FIX gauges from the door's session reports.
    pub fn fix(&self, reports: &[crate::fix::FixSessionReport]) {
        self.fix.set(reports);
    }

    /// The exposition text, with the gauges read now.
    pub fn render(&self, catalog: &Catalog, index: IndexUsage) -> String {
        self.index_bytes.set(i64::try_from(index.bytes).unwrap_or(i64::MAX));
        self.index_rows.set(i64::try_from(index.rows).unwrap_or(i64::MAX));
        self.memory.read();
        let names = catalog.table_names();
        self.tables.set(names.len() as i64);
        let rows: usize = names.iter().filter_map(|n| catalog.snapshot(n).ok()).map(|t| t.row_count()).sum();
        self.table_rows.set(rows as i64);
        self.views.set(catalog);
        let mut out = String::with_capacity(8 << 10);
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// What the vector indexes' graphs hold, for `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexUsage {
    /// Bytes of all graphs.
    pub bytes: usize,
    /// Rows in all graphs.
    pub rows: usize,
}

/// Peak resident memory (Linux `VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The counters of line protocol over TCP (`zepto_ilp_tcp_*`), updated by its connections.
#[derive(Debug, Default)]
pub struct IlpTcpMetrics {
    /// `zepto_ilp_tcp_connections_total`: connections accepted.
    pub connections: Counter,
    /// `zepto_ilp_tcp_connections_open`: connections open now.
    pub connections_open: Gauge,
    /// `zepto_ilp_tcp_bytes_total`: bytes received.
    pub bytes: Counter,
    /// `zepto_ilp_tcp_lines_total`: lines committed (blank and comment lines included).
    pub lines: Counter,
    /// `zepto_ilp_tcp_rows_total`: rows stored.
    pub rows: Counter,
    /// `zepto_ilp_tcp_batches_total`: batches committed.
    pub batches: Counter,
    /// `zepto_ilp_tcp_bad_lines_total`: bad lines (each closed its connection).
    pub bad_lines: Counter,
    /// `zepto_ilp_tcp_write_errors_total`: batches refused for no line of theirs (rights,
    /// storage), each closing its connection.
    pub write_errors: Counter,
}

impl IlpTcpMetrics {
    /// The counters, registered in `registry`.
    fn register(registry: &mut Registry) -> IlpTcpMetrics {
        IlpTcpMetrics {
            connections: register(
                registry,
                "zepto_ilp_tcp_connections",
                "Line protocol over TCP: connections accepted",
            ),
            connections_open: register(
                registry,
                "zepto_ilp_tcp_connections_open",
                "Line protocol over TCP: connections open now",
            ),
            bytes: register(registry, "zepto_ilp_tcp_bytes", "Line protocol over TCP: bytes received"),
            lines: register(registry, "zepto_ilp_tcp_lines", "Line protocol over TCP: lines committed"),
            rows: register(registry, "zepto_ilp_tcp_rows", "Line protocol over TCP: rows stored"),
            batches: register(registry, "zepto_ilp_tcp_batches", "Line protocol over TCP: batches committed"),
            bad_lines: register(
                registry,
                "zepto_ilp_tcp_bad_lines",
                "Line protocol over TCP: bad lines, each closing its connection",
            ),
            write_errors: register(
                registry,
                "zepto_ilp_tcp_write_errors",
                "Line protocol over TCP: batches refused for no line of theirs (rights, storage)",
            ),
        }
    }
}

/// The FIX gauges of `/metrics`, per session.
#[derive(Debug)]
struct FixGauges {
    counts: [Family<Labels, Gauge>; 4],
    connected: Family<Labels, Gauge>,
    lag: Family<Labels, Gauge<f64, AtomicU64>>,
}

/// The materialized views' gauges, per view. A view is kept within each write of its table,
/// so it is never behind; `stale` is 1 when its next read rebuilds it (after a DELETE, UPDATE
/// or retention on the table).
struct ViewGauges {
    counts: [Family<Labels, Gauge>; 6],
    upkeep: Family<Labels, Gauge<f64, AtomicU64>>,
}

impl ViewGauges {
    fn register(registry: &mut Registry) -> ViewGauges {
        let counts = [
            ("zepto_view_groups", "Groups a materialized view held at its last read"),
            ("zepto_view_commits", "Appends to its table a materialized view folded in, since start"),
            ("zepto_view_rebuilds", "Full rebuilds of a materialized view from its table, since start"),
            ("zepto_view_stale", "1 while a materialized view's next read rebuilds it"),
            ("zepto_view_finishes", "Reads that finished a materialized view's rows after a change, since start"),
            (
                "zepto_view_patched",
                "Reads that computed only the rows of a materialized view's changed groups, since start",
            ),
        ]
        .map(|(name, help)| register(registry, name, help));
        let upkeep = register(
            registry,
            "zepto_view_upkeep_seconds",
            "Time writes to its table spent keeping a materialized view, since start",
        );
        ViewGauges { counts, upkeep }
    }

    fn set(&self, catalog: &Catalog) {
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.counts.iter().for_each(Family::clear);
        self.upkeep.clear();
        for (name, s) in catalog.view_stats() {
            let labels = vec![("view".into(), name)];
            for (family, n) in
                self.counts.iter().zip([s.groups, s.commits, s.rebuilds, u64::from(s.stale), s.finishes, s.patched])
            {
                family.get_or_create(&labels).set(int(n));
            }
            self.upkeep.get_or_create(&labels).set(s.upkeep_ns as f64 / 1e9);
        }
    }
}

impl FixGauges {
    /// The gauges, registered in `registry`.
    fn register(registry: &mut Registry) -> FixGauges {
        let counts = [
            ("zepto_fix_messages", "FIX messages processed in sequence, per session, since start"),
            ("zepto_fix_rows", "Rows FIX messages stored, per session, since start"),
            ("zepto_fix_gaps", "Sequence gaps a FIX session asked to be resent, since start"),
            ("zepto_fix_rejects", "FIX messages rejected or ignored as garbled, per session, since start"),
        ]
        .map(|(name, help)| register(registry, name, help));
        let connected = register(registry, "zepto_fix_session_connected", "1 while the FIX session is logged on");
        let lag = register(
            registry,
            "zepto_fix_lag_seconds",
            "Of a FIX session's last stored batch: from its newest message's SendingTime to stored",
        );
        FixGauges { counts, connected, lag }
    }

    /// Set them from the door's reports.
    fn set(&self, reports: &[crate::fix::FixSessionReport]) {
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        for r in reports {
            let labels = vec![("session".into(), r.session.clone())];
            for (family, n) in self.counts.iter().zip([r.messages, r.rows, r.gaps, r.rejects]) {
                family.get_or_create(&labels).set(int(n));
            }
            self.connected.get_or_create(&labels).set(i64::from(r.connected));
            if let Some(lag) = r.lag_ns {
                self.lag.get_or_create(&labels).set(lag as f64 / 1e9);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_the_series() {
        let m = Metrics::new();
        m.record(Route::Query, 200, Duration::from_micros(120));
        m.record(Route::Write, 400, Duration::from_millis(3));
        m.error("SQL_PARSE");
        m.ingested("ilp", 42);
        let text = m.render(&Catalog::new(), IndexUsage::default());
        for want in [
            "zepto_http_requests_total{route=\"query\",class=\"2xx\"} 1",
            "zepto_http_requests_total{route=\"write\",class=\"4xx\"} 1",
            "zepto_errors_total{code=\"SQL_PARSE\"} 1",
            "zepto_rows_ingested_total{format=\"ilp\"} 42",
            "zepto_http_request_duration_seconds_count{route=\"query\"} 1",
            "zepto_tables 0",
            "zepto_ilp_tcp_bad_lines_total 0",
            "zepto_ilp_tcp_connections_open 0",
        ] {
            assert!(text.contains(want), "missing {want} in\n{text}");
        }
    }
}
