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
