//! `CREATE INDEX ... USING HNSW` and `DROP INDEX`: what is refused (and changes nothing), and
//! that the registry's graphs follow the table: appended rows are added, a DELETE's new
//! partition layout gets a new graph, a dropped index frees its graphs.

use zepto_sql::Engine;

fn err(e: &Engine, sql: &str) -> String {
    e.execute(sql).err().unwrap_or_else(|| panic!("{sql} should fail")).to_string()
}

fn ok(e: &Engine, sql: &str) {
    e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
}

fn engine() -> Engine {
    let e = Engine::new();
    ok(&e, "CREATE TABLE m (ts TIMESTAMP, tenant SYMBOL, id INT, emb FLOAT[4])");
    let rows: Vec<String> = (0..200)
        .map(|i| {
            let x = i as f32;
            format!("({i}, 't{}', {i}, [{}, {}, {}, 1])", i % 3, (x * 0.37).sin(), (x * 0.11).cos(), x / 200.0)
        })
        .collect();
    ok(&e, &format!("INSERT INTO m VALUES {}", rows.join(", ")));
    e
}

/// Every partition of `m` has a graph for its current lineage that holds all of its rows.
fn graphs_cover_every_row(e: &Engine, index: &str) -> bool {
    let t = e.catalog().snapshot("m").expect("m");
    t.partitions().iter().all(|p| e.indexes().graph("m", index, p.lineage()).is_some_and(|g| g.covered() == p.len()))
}

#[test]
fn bad_index_definitions_are_refused_and_change_nothing() {
    let e = engine();
    let cases = [
        ("CREATE INDEX i ON m USING HNSW (id)", "needs a FLOAT[n] column"),
        ("CREATE INDEX i ON m USING BTREE (emb)", "only HNSW"),
        ("CREATE INDEX i ON m USING HNSW (nope)", "does not exist"),
        ("CREATE INDEX i ON nope USING HNSW (emb)", "nope"),
        ("CREATE INDEX i ON m USING HNSW (emb) WITH (metric = 'hamming')", "metric 'hamming'"),
        ("CREATE INDEX i ON m USING HNSW (emb) WITH (m = 1)", "m = 1"),
        ("CREATE INDEX i ON m USING HNSW (emb) WITH (ef_construction = 'x')", "not a whole number"),
        ("CREATE INDEX i ON m USING HNSW (emb) WITH (colour = 'red')", "unknown HNSW option"),
        ("CREATE INDEX i ON m USING HNSW (emb, id)", "one column"),
    ];
    for (sql, want) in cases {
        let m = err(&e, sql);
        assert!(m.contains(want), "{sql}: {m}");
    }
    assert!(e.catalog().indexes().is_empty(), "nothing recorded");
    ok(&e, "CREATE INDEX i ON m USING HNSW (emb) WITH (metric = 'cosine', m = 8, ef_construction = 32)");
    assert!(err(&e, "CREATE INDEX I ON m USING HNSW (emb)").contains("already exists"));
    ok(&e, "CREATE INDEX IF NOT EXISTS i ON m USING HNSW (emb)");
    assert!(err(&e, "DROP INDEX j").contains("does not exist"));
    ok(&e, "DROP INDEX IF EXISTS j");
    assert_eq!(e.catalog().indexes().len(), 1);
}

#[test]
fn graphs_follow_appends_deletes_and_drops() {
    let e = engine();
    ok(&e, "CREATE INDEX mi ON m USING HNSW (emb)");
    assert!(graphs_cover_every_row(&e, "mi"), "CREATE INDEX builds before it answers");
    let before = e.catalog().snapshot("m").expect("m").partitions().iter().map(|p| p.lineage()).collect::<Vec<_>>();
    ok(&e, "INSERT INTO m VALUES (500, 't0', 500, [1, 2, 3, 4]), (501, 't1', 501, NULL)");
    e.refresh_indexes().expect("refreshed");
    assert!(graphs_cover_every_row(&e, "mi"), "appended rows are added");
    let after = e.catalog().snapshot("m").expect("m").partitions().iter().map(|p| p.lineage()).collect::<Vec<_>>();
    assert_eq!(before, after, "appends in time order keep the graphs' keys");
    ok(&e, "DELETE FROM m WHERE id = 3");
    e.refresh_indexes().expect("refreshed");
    assert!(graphs_cover_every_row(&e, "mi"), "the partition whose rows moved has a new graph");
    ok(&e, "DROP INDEX mi");
    e.refresh_indexes().expect("refreshed");
    let t = e.catalog().snapshot("m").expect("m");
    assert!(t.partitions().iter().all(|p| e.indexes().graph("m", "mi", p.lineage()).is_none()), "graphs freed");
    assert_eq!(e.indexes().memory_bytes(), 0);
}

/// Deterministic pseudo-random numbers in [-1, 1) (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }

    fn vector(&mut self, dim: usize) -> String {
        let v: Vec<String> = (0..dim).map(|_| format!("{:.4}", self.next())).collect();
        format!("[{}]", v.join(", "))
    }
}

const DIM: usize = 16;

/// Two engines with the same 12,000 rows in three partitions; only the first has an index.
fn indexed_and_plain() -> (Engine, Engine) {
    let (a, b) = (Engine::new(), Engine::new());
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let rows: Vec<String> = (0..12_000).map(|i| format!("({i}, 't{}', {i}, {})", i % 3, rng.vector(DIM))).collect();
    for e in [&a, &b] {
        ok(e, &format!("CREATE TABLE m (ts TIMESTAMP, tenant SYMBOL, id INT, emb FLOAT[{DIM}])"));
        for chunk in rows.chunks(2000) {
            ok(e, &format!("INSERT INTO m VALUES {}", chunk.join(", ")));
        }
    }
    ok(&a, "CREATE INDEX mi ON m USING HNSW (emb) WITH (metric = 'cosine')");
    (a, b)
}

fn ids(e: &Engine, sql: &str) -> Vec<i64> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let b = r.batch();
    (0..b.rows).map(|i| b.columns[0].get(i).as_i64().expect("an id")).collect()
}

fn explain(e: &Engine, sql: &str) -> String {
    let r = e.execute(&format!("EXPLAIN {sql}")).expect("explain");
    let b = r.batch();
    (0..b.rows).map(|i| format!("{:?}", b.columns[0].get(i))).collect::<Vec<_>>().join("\n")
}

/// Searches through the index agree with exact search on the same rows (recall@10 over 20
/// queries, unfiltered and with a filter evaluated inside the walk), return only rows the
/// filter keeps, and EXPLAIN says which ran.
#[test]
fn index_searches_agree_with_exact_search() {
    let (indexed, plain) = indexed_and_plain();
    let mut rng = Rng(77);
    let (mut found, mut total) = (0, 0);
    for n in 0..20 {
        let q = rng.vector(DIM);
        let filter = ["", "WHERE id % 5 <> 0", "WHERE tenant = 't1'", "WHERE id % 7 = 0"][n % 4];
        let sql = format!("SELECT id, array_cosine_distance(emb, {q}) AS d FROM m {filter} ORDER BY d LIMIT 10");
        if n == 0 {
            assert!(explain(&indexed, &sql).contains("AnnTopN"), "{}", explain(&indexed, &sql));
            assert!(!explain(&plain, &sql).contains("AnnTopN"));
        }
        let (got, want) = (ids(&indexed, &sql), ids(&plain, &sql));
        assert_eq!(got.len(), 10, "{sql}");
        if filter.contains("% 5") {
            assert!(got.iter().all(|i| i % 5 != 0), "only rows the filter keeps: {got:?}");
        }
        if filter.contains("% 7") {
            assert_eq!(got, want, "a filter that keeps few rows is answered exactly");
        }
        found += got.iter().filter(|i| want.contains(i)).count();
        total += want.len();
    }
    let recall = found as f64 / total as f64;
    assert!(recall >= 0.9, "recall@10 {recall}");
}

/// Only the direction that puts the nearest first uses the index, and rows appended after the
/// graphs were built are found before the maintainer adds them (they are scanned exactly).
#[test]
fn directions_and_rows_the_graph_does_not_hold_yet() {
    let (indexed, _) = indexed_and_plain();
    let q = Rng(5).vector(DIM);
    let desc = format!("SELECT id FROM m ORDER BY array_cosine_similarity(emb, {q}) DESC LIMIT 3");
    assert!(explain(&indexed, &desc).contains("AnnTopN"));
    let asc = format!("SELECT id FROM m ORDER BY array_cosine_similarity(emb, {q}) LIMIT 3");
    assert!(!explain(&indexed, &asc).contains("AnnTopN"), "farthest first is a plain TopN");
    let l2 = format!("SELECT id FROM m ORDER BY array_distance(emb, {q}) LIMIT 3");
    assert!(!explain(&indexed, &l2).contains("AnnTopN"), "no L2 index");
    ok(&indexed, &format!("INSERT INTO m VALUES (99999, 't2', 99999, {q})"));
    assert_eq!(ids(&indexed, &desc).first(), Some(&99_999), "the new row is the nearest");
}

/// `SET ann = off` makes the statements after it in the script search exactly (EXPLAIN says
/// so); the setting ends with the script. Unknown settings and values are refused.
#[test]
fn set_ann_off_searches_exactly() {
    let (indexed, plain) = indexed_and_plain();
    let q = Rng(11).vector(DIM);
    let sql = format!("SELECT id, array_cosine_distance(emb, {q}) AS d FROM m WHERE id % 3 = 0 ORDER BY d LIMIT 10");
    assert!(explain(&indexed, &sql).contains("AnnTopN"));
    let plan = indexed.execute(&format!("SET ann = off; EXPLAIN {sql}")).expect("explain");
    let b = plan.batch();
    let text: Vec<String> = (0..b.rows).map(|i| format!("{:?}", b.columns[0].get(i))).collect();
    assert!(!text.join("\n").contains("AnnTopN"), "{text:?}");
    let r = indexed.execute(&format!("SET ann TO 'off'; {sql}")).expect("exact");
    let got: Vec<i64> = (0..r.batch().rows).map(|i| r.batch().columns[0].get(i).as_i64().expect("id")).collect();
    assert_eq!(got, ids(&plain, &sql), "exactly the rows an exact search finds");
    assert!(explain(&indexed, &sql).contains("AnnTopN"), "the setting ended with its script");
    for bad in ["SET ann = maybe", "SET nothing = on", "SET ann"] {
        assert!(indexed.execute(bad).is_err(), "{bad}");
    }
}

/// The rows a partition's exact candidates are cut down to keep every row tied with the k-th
/// nearest, so an index-backed TopN over many equal vectors (under a filter the planner scans
/// exactly) answers what a plain TopN answers, ties, NULL vectors and directions included.
#[test]
fn exact_candidates_keep_every_tie() {
    let (a, b) = (Engine::new(), Engine::new());
    let mut rng = Rng(0x5eed);
    let bases: Vec<String> = (0..4).map(|_| rng.vector(DIM)).collect();
    let rows: Vec<String> = (0..9_000)
        .map(|i| {
            let emb = if i % 97 == 0 { "NULL".to_string() } else { bases[i % 4].clone() };
            format!("({i}, 't{}', {i}, {emb})", i % 3)
        })
        .collect();
    for e in [&a, &b] {
        ok(e, &format!("CREATE TABLE m (ts TIMESTAMP, tenant SYMBOL, id INT, emb FLOAT[{DIM}])"));
        for chunk in rows.chunks(3000) {
            ok(e, &format!("INSERT INTO m VALUES {}", chunk.join(", ")));
        }
    }
    ok(&a, "CREATE INDEX mi ON m USING HNSW (emb) WITH (metric = 'cosine')");
    let q = rng.vector(DIM);
    for (filter, order) in [
        ("WHERE id % 11 = 0", "array_cosine_distance(emb, {q})"),
        ("WHERE id % 11 = 0 AND emb IS NOT NULL", "array_cosine_similarity(emb, {q}) DESC"),
        ("WHERE id % 13 = 1 AND emb IS NOT NULL", "array_cosine_distance({q}, emb)"),
    ] {
        let order = order.replace("{q}", &q);
        for k in [1, 7, 40] {
            let sql = format!("SELECT id FROM m {filter} ORDER BY {order}, id LIMIT {k}");
            let plain_order = format!("SELECT id FROM m {filter} ORDER BY {order} LIMIT {k}");
            assert!(explain(&a, &plain_order).contains("AnnTopN"), "{}", explain(&a, &plain_order));
            assert_eq!(ids(&a, &plain_order), ids(&b, &plain_order), "{plain_order}");
            assert_eq!(ids(&a, &sql), ids(&b, &sql), "{sql}");
        }
    }
}

/// The graph ranks a cosine index in half precision, whose rounding (about 1e-4 on a distance
/// here) is coarser than the gaps between rows very near the query (about 1e-5 to 1e-4); an
/// index-backed search re-ranks the walk's whole beam by exact distances, not only its `k`
/// nearest by the graph's measure. 10 rows near each query among 4,000 random ones: the exact
/// 5 nearest come back.
#[test]
fn the_walks_beam_is_reranked_by_exact_distances() {
    let (a, b) = (Engine::new(), Engine::new());
    let mut rng = Rng(0xbeef);
    let queries: Vec<Vec<f32>> = (0..4).map(|_| (0..DIM).map(|_| rng.next()).collect()).collect();
    let literal = |v: &[f32]| format!("[{}]", v.iter().map(|x| format!("{x:.6}")).collect::<Vec<_>>().join(", "));
    let rows: Vec<String> = (0..4000)
        .map(|i| {
            let v: Vec<f32> = match (i % 100 == 7).then(|| &queries[(i / 100) % 4]) {
                Some(q) => q.iter().map(|x| x + 0.01 * rng.next()).collect(),
                None => (0..DIM).map(|_| rng.next()).collect(),
            };
            format!("({i}, {})", literal(&v))
        })
        .collect();
    for e in [&a, &b] {
        ok(e, &format!("CREATE TABLE n (id INT, emb FLOAT[{DIM}])"));
        ok(e, &format!("INSERT INTO n VALUES {}", rows.join(", ")));
    }
    ok(&a, "CREATE INDEX ni ON n USING HNSW (emb) WITH (metric = 'cosine')");
    for q in &queries {
        let sql = format!("SELECT id FROM n ORDER BY array_cosine_distance(emb, {}) LIMIT 5", literal(q));
        assert!(explain(&a, &sql).contains("AnnTopN"), "{}", explain(&a, &sql));
        let want = ids(&b, &sql);
        assert!(want.iter().all(|i| i % 100 == 7), "the near rows are the nearest: {want:?}");
        assert_eq!(ids(&a, &sql), want, "{sql}");
    }
}
