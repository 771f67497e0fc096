//! A session scoped to a tenant (`TableAccess::with_tenant`) sees a table with a `tenant_id`
//! column as if it held only its tenant's rows, through every door: every kind of read is
//! compared with the same query over `(SELECT * FROM mem WHERE tenant_id = 'a')` in an
//! unscoped session, for two layouts (`tenant_id` the partition key, so the scope selects a
//! partition; and an ordinary column, so the scope stays a filter over the scan). Writes
//! change only the tenant's rows and store only rows of the tenant; statements that would
//! change a scoped table's structure are refused. Tenant `b`'s rows have a `body` that is not a
//! number, so a query that casts `body` fails if it ever looks at one of them.

use zepto_sql::{Engine, SqlError, TableAccess};
use zepto_storage::Value;

use crate::common;
use common::Rng;

/// Where `tenant_id` sits in the table `mem`.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// `tenant_id` is the first SYMBOL column: the partition key.
    Key,
    /// `kind` is the partition key; `tenant_id` an ordinary SYMBOL column.
    Column,
}

const LAYOUTS: [Layout; 2] = [Layout::Key, Layout::Column];

fn ok(e: &Engine, sql: &str) -> zepto_sql::QueryResult {
    e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"))
}

fn denied(e: &Engine, sql: &str) -> String {
    match e.execute(sql) {
        Err(SqlError::PermissionDenied(m)) => m,
        Err(err) => panic!("{sql}: expected PERMISSION_DENIED, got {err}"),
        Ok(_) => panic!("{sql}: expected PERMISSION_DENIED, it ran"),
    }
}

/// The result's rows, one tab-separated line each.
fn lines(r: &zepto_sql::QueryResult) -> Vec<String> {
    let b = r.batch();
    (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("\t")).collect()
}

fn sorted(e: &Engine, sql: &str) -> Vec<String> {
    let mut l = lines(&ok(e, sql));
    l.sort();
    l
}

fn count(e: &Engine, sql: &str) -> i64 {
    let r = ok(e, sql);
    zepto_sql::engine::first_value(&r).and_then(|v| v.as_i64()).unwrap_or_else(|| panic!("{sql}: no count"))
}

fn explain(e: &Engine, sql: &str) -> String {
    lines(&ok(e, &format!("EXPLAIN {sql}"))).join("\n")
}

fn vector(rng: &mut Rng) -> String {
    let v: Vec<String> = (0..4).map(|_| format!("{:.3}", rng.below(2000) as f64 / 1000.0 - 1.0)).collect();
    format!("[{}]", v.join(", "))
}

/// `mem` with `n` rows of tenant `a` (even ids, numeric bodies) and `n` of tenant `b` (odd ids,
/// bodies that are not numbers), `kinds` kinds, one row a second; `kinds` (no `tenant_id`) and
/// `ticks` (no `tenant_id`) beside it. Returns the unscoped and the scoped (tenant `a`) engine.
fn setup(layout: Layout, n: usize, kinds: usize) -> (Engine, Engine) {
    let e = Engine::new().with_parallel_min_rows(0);
    let cols = match layout {
        Layout::Key => "ts TIMESTAMP, tenant_id SYMBOL, kind SYMBOL",
        Layout::Column => "ts TIMESTAMP, kind SYMBOL, tenant_id SYMBOL",
    };
    ok(&e, &format!("CREATE TABLE mem ({cols}, id INT, score DOUBLE, body VARCHAR, emb FLOAT[4])"));
    let mut rng = Rng::new(0x5eed);
    let rows: Vec<String> = (0..2 * n)
        .map(|i| {
            let (tenant, body) = if i % 2 == 0 { ("a", format!("{i}")) } else { ("b", format!("secret-{i}")) };
            let kind = format!("k{}", i % kinds);
            let (first, second) = match layout {
                Layout::Key => (tenant, kind.as_str()),
                Layout::Column => (kind.as_str(), tenant),
            };
            let ts = i as i64 * 1_000_000_000;
            format!("({ts}, '{first}', '{second}', {i}, {i}.0, '{body}', {})", vector(&mut rng))
        })
        .collect();
    for chunk in rows.chunks(1000) {
        ok(&e, &format!("INSERT INTO mem VALUES {}", chunk.join(", ")));
    }
    ok(&e, "CREATE TABLE kinds (kind SYMBOL, label VARCHAR)");
    let labels: Vec<String> = (0..kinds + 1).map(|k| format!("('k{k}', 'kind {k}')")).collect();
    ok(&e, &format!("INSERT INTO kinds VALUES {}", labels.join(", ")));
    ok(&e, "CREATE TABLE ticks (ts TIMESTAMP, kind SYMBOL, px DOUBLE)");
    let ticks: Vec<String> = (0..40)
        .map(|j| format!("({}, 'k{}', {j}.5)", (j * n as i64 / 20 + 1) * 1_000_000_000, j % kinds as i64))
        .collect();
    ok(&e, &format!("INSERT INTO ticks VALUES {}", ticks.join(", ")));
    let scoped = e.with_access(TableAccess::all().with_tenant("a"));
    (e, scoped)
}

/// Reads, each run scoped (`{m}` = `mem`) and compared with the unscoped query over tenant
/// `a`'s rows (`{m}` = a subquery keeping them).
const READS: &[&str] = &[
    "SELECT * FROM {m} x",
    "SELECT count(*), sum(score), min(ts), max(ts), min(id), max(id) FROM {m} x",
    "SELECT kind, count(*), sum(score), avg(id) FROM {m} x GROUP BY kind",
    "SELECT tenant_id, count(*) FROM {m} x GROUP BY tenant_id",
    "SELECT kind, count(*) FROM {m} x WHERE id > 20 AND ts < CAST(150000000000 AS TIMESTAMP) GROUP BY kind",
    "SELECT x.id, y.id FROM {m} x JOIN {m} y ON x.id = y.id - 2",
    "SELECT x.id, y.id FROM {m} x JOIN {m} y ON x.kind = y.kind AND y.id BETWEEN x.id - 4 AND x.id",
    "SELECT x.id, k.label FROM {m} x JOIN kinds k ON x.kind = k.kind",
    "SELECT k.kind, count(x.id) FROM kinds k LEFT JOIN {m} x ON x.kind = k.kind GROUP BY k.kind",
    "SELECT k.kind, x.id FROM {m} x RIGHT JOIN kinds k ON x.kind = k.kind AND x.id < 6",
    "SELECT k.kind, x.id FROM {m} x FULL JOIN kinds k ON x.kind = k.kind AND x.id < 6",
    "SELECT count(*) FROM {m} x CROSS JOIN kinds k",
    "SELECT id FROM {m} x WHERE id IN (SELECT id + 1 FROM {m} y)",
    "SELECT id FROM {m} x WHERE id IN (SELECT id + 2 FROM {m} y WHERE y.id < 50)",
    "SELECT (SELECT max(id) FROM {m} y), (SELECT count(*) FROM {m} y)",
    "SELECT id FROM {m} x WHERE score > (SELECT avg(score) FROM {m} y WHERE y.kind = x.kind)",
    "SELECT id FROM {m} x WHERE EXISTS (SELECT 1 FROM {m} y WHERE y.id = x.id + 1)",
    "SELECT kind FROM kinds k WHERE NOT EXISTS (SELECT 1 FROM {m} y WHERE y.kind = k.kind)",
    "WITH c AS (SELECT kind, max(id) AS top FROM {m} x GROUP BY kind) SELECT c.kind, c.top FROM c",
    "WITH c AS (SELECT id FROM {m} x WHERE id < 30) SELECT count(*) FROM c JOIN {m} y ON c.id = y.id",
    "SELECT id FROM {m} x UNION SELECT id FROM {m} y",
    "SELECT id FROM {m} x EXCEPT SELECT id FROM {m} y WHERE y.id > 10",
    "SELECT id, row_number() OVER (PARTITION BY kind ORDER BY ts), sum(score) OVER (PARTITION BY kind ORDER BY ts) FROM {m} x",
    "SELECT id, lag(id) OVER (ORDER BY ts), count(*) OVER () FROM {m} x",
    "SELECT t.ts, t.px, x.id FROM ticks t ASOF JOIN {m} x ON t.kind = x.kind AND t.ts >= x.ts",
    "SELECT t.ts, x.id FROM ticks t ASOF LEFT JOIN {m} x ON t.ts >= x.ts",
    "SELECT x.id, t.px FROM {m} x ASOF JOIN ticks t ON x.kind = t.kind AND x.ts >= t.ts",
    "SELECT t.ts, count(*), sum(x.score) FROM ticks t WINDOW JOIN {m} x ON t.kind = x.kind AND x.ts BETWEEN t.ts - INTERVAL '10 seconds' AND t.ts",
    "SELECT * FROM {m} x LATEST ON ts PARTITION BY kind",
    "SELECT * FROM {m} x LATEST ON ts PARTITION BY tenant_id",
    "SELECT id FROM {m} x ORDER BY score DESC LIMIT 7",
    "SELECT DISTINCT tenant_id FROM {m} x",
];

/// Every read in a scoped session gives what the same read gives over tenant `a`'s rows, and
/// never a row of tenant `b`.
#[test]
fn reads_see_only_the_tenants_rows() {
    let own = "(SELECT * FROM mem WHERE tenant_id = 'a')";
    for layout in LAYOUTS {
        let (all, scoped) = setup(layout, 60, 3);
        for q in READS {
            let got = sorted(&scoped, &q.replace("{m}", "mem"));
            let want = sorted(&all, &q.replace("{m}", own));
            assert_eq!(got, want, "{layout:?}: {q}");
        }
        assert_eq!(count(&scoped, "SELECT count(*) FROM mem"), 60, "{layout:?}");
        assert_eq!(count(&scoped, "SELECT count(*) FROM mem WHERE tenant_id = 'b'"), 0, "{layout:?}");
        assert_eq!(count(&scoped, "SELECT count(*) FROM mem WHERE id % 2 = 1"), 0, "{layout:?}");
        // The same statements unscoped see both tenants: the comparison above can fail.
        assert_eq!(count(&all, "SELECT count(*) FROM mem"), 120, "{layout:?}");
        let r = sorted(&all, "SELECT id FROM mem x WHERE id IN (SELECT id + 1 FROM mem y)");
        assert!(!r.is_empty(), "{layout:?}");
        // SAMPLE BY buckets count only the tenant's rows.
        let r = ok(&scoped, "SELECT ts, count(*) AS n FROM mem SAMPLE BY 10s");
        let b = r.batch();
        let total: i64 = (0..b.rows).filter_map(|i| b.columns[1].get(i).as_i64()).sum();
        assert_eq!(total, 60, "{layout:?}");
        // The rows one sees are all tenant a's.
        assert_eq!(sorted(&scoped, "SELECT DISTINCT tenant_id FROM mem"), ["a"], "{layout:?}");
    }
}

/// A user's expression is evaluated only over the tenant's rows: a cast that fails on every
/// row of tenant `b` succeeds in the scoped session, whichever operator runs it.
#[test]
fn user_expressions_never_see_other_tenants_rows() {
    for layout in LAYOUTS {
        let (all, scoped) = setup(layout, 60, 3);
        let casts = [
            "SELECT count(*) FROM mem WHERE CAST(body AS INT) >= 0",
            "SELECT kind, count(*) FROM mem WHERE CAST(body AS INT) >= 0 GROUP BY kind",
            "SELECT kind, sum(CAST(body AS INT)) FROM mem GROUP BY kind",
            "SELECT id, sum(CAST(body AS INT)) OVER (PARTITION BY kind ORDER BY ts) FROM mem",
            "SELECT * FROM mem WHERE CAST(body AS INT) >= 0 LATEST ON ts PARTITION BY kind",
            "SELECT id FROM mem WHERE CAST(body AS INT) >= 0 ORDER BY array_distance(emb, [0, 0, 0, 0]) LIMIT 3",
        ];
        for q in casts {
            assert!(all.execute(q).is_err(), "{layout:?}: {q} fails over tenant b's bodies");
            ok(&scoped, q);
        }
        ok(&scoped, "DELETE FROM mem WHERE CAST(body AS INT) < 0");
        ok(&scoped, "UPDATE mem SET score = CAST(body AS DOUBLE)");
        assert_eq!(count(&all, "SELECT count(*) FROM mem WHERE tenant_id = 'b' AND score = id"), 60, "{layout:?}");
    }
}

/// EXPLAIN shows the scope: a filter over the scan, or the tenant's partition when
/// `tenant_id` is the partition key; a user's time range still reaches the scan.
#[test]
fn explain_shows_the_scope_and_ranges_still_reach_the_scan() {
    let q = "SELECT id FROM mem WHERE ts >= CAST(10000000000 AS TIMESTAMP)";
    let (_, scoped) = setup(Layout::Key, 20, 3);
    let plan = explain(&scoped, q);
    assert!(plan.contains("partitions=[\"a\"]") && plan.contains("ts=["), "{plan}");
    let (all, scoped) = setup(Layout::Column, 20, 3);
    let plan = explain(&scoped, q);
    assert!(plan.contains("Filter") && plan.contains("ts=["), "{plan}");
    assert!(!explain(&all, q).contains("Filter"), "the unscoped plan has no filter");
    // The scoped plan counts nothing over the whole table (how many partitions other tenants'
    // kinds make); the unscoped one does.
    assert!(plan.contains("partitions=all") && !plan.contains("partitions=all("), "{plan}");
    assert!(explain(&all, q).contains("partitions=all("), "the unscoped plan counts partitions");
    // The partition-wise operators still take the scoped scan.
    let plan = explain(&scoped, "SELECT kind, count(*) FROM mem WHERE id > 3 GROUP BY kind");
    assert!(plan.contains("PartitionAggregate"), "{plan}");
    let plan = explain(&scoped, "SELECT * FROM mem LATEST ON ts PARTITION BY kind");
    assert!(plan.contains("LatestTails"), "{plan}");
    let m = denied(&scoped, &format!("EXPLAIN ANALYZE {q}"));
    assert!(m.contains("EXPLAIN ANALYZE"), "{m}");
    ok(&all, &format!("EXPLAIN ANALYZE {q}"));
}

/// A materialized view's part of EXPLAIN (how it is kept: a plan over its base table) counts
/// nothing over a scoped base table either.
#[test]
fn explain_of_a_view_counts_nothing_over_a_scoped_base_table() {
    let (all, scoped) = setup(Layout::Column, 20, 3);
    ok(
        &all,
        "CREATE MATERIALIZED VIEW per_kind AS SELECT tenant_id, kind, count(*) AS n FROM mem GROUP BY tenant_id, kind",
    );
    let q = "SELECT * FROM per_kind";
    let unscoped = explain(&all, q);
    assert!(unscoped.contains("materialized view per_kind") && unscoped.contains("partitions=all("), "{unscoped}");
    let plan = explain(&scoped, q);
    assert!(plan.contains("materialized view per_kind"), "{plan}");
    assert!(plan.contains("partitions=all") && !plan.contains("partitions=all("), "{plan}");
    assert_eq!(sorted(&scoped, q), sorted(&all, "SELECT * FROM per_kind WHERE tenant_id = 'a'"));
}

/// `ORDER BY <distance> LIMIT k` through the HNSW index: EXPLAIN says the index answers, and
/// only the tenant's rows come back, the nearest of them (the query vector is a row of `b`).
#[test]
fn index_searches_return_only_the_tenants_rows() {
    for layout in LAYOUTS {
        // One kind: with `tenant_id` an ordinary column, both tenants share the partition and
        // its graph, and tenant a keeps more rows than an exact scan would take.
        let (all, scoped) = setup(layout, 2500, 1);
        ok(&all, "CREATE INDEX mem_emb ON mem USING HNSW (emb) WITH (metric = 'l2')");
        let b = ok(&all, "SELECT emb FROM mem WHERE id = 1").batch();
        let Value::Vector(v) = b.columns[0].get(0) else { panic!("a vector") };
        let q = format!("[{}]", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "));
        let search = format!("SELECT id FROM mem ORDER BY array_distance(emb, {q}) LIMIT 10");
        assert!(explain(&scoped, &search).contains("AnnTopN"), "{layout:?}: {}", explain(&scoped, &search));
        let nearest = format!("SELECT id FROM mem ORDER BY array_distance(emb, {q}) + 0 LIMIT 1");
        assert_eq!(lines(&ok(&all, &nearest)), ["1"], "{layout:?}: b's row is the nearest of all");
        let got: Vec<i64> = lines(&ok(&scoped, &search)).iter().map(|l| l.parse().expect("an id")).collect();
        assert_eq!(got.len(), 10, "{layout:?}");
        assert!(got.iter().all(|id| id % 2 == 0), "{layout:?}: only tenant a's rows: {got:?}");
        // The same answer as an exact search over tenant a's rows (`+ 0` keeps the index out).
        let exact = format!("SELECT id FROM mem WHERE tenant_id = 'a' ORDER BY array_distance(emb, {q}) + 0 LIMIT 10");
        let want: Vec<i64> = lines(&ok(&all, &exact)).iter().map(|l| l.parse().expect("an id")).collect();
        let found = got.iter().filter(|id| want.contains(id)).count();
        assert!(found >= 8, "{layout:?}: recall {found}/10: {got:?} vs {want:?}");
        // With a user's filter too.
        let filtered = format!("SELECT id FROM mem WHERE id % 4 = 0 ORDER BY array_distance(emb, {q}) LIMIT 5");
        let got = lines(&ok(&scoped, &filtered));
        assert!(got.len() == 5 && got.iter().all(|l| l.parse::<i64>().is_ok_and(|id| id % 4 == 0)), "{got:?}");
    }
}

/// DELETE and UPDATE change only the tenant's rows; UPDATE may not move a row to another
/// tenant.
#[test]
fn delete_and_update_touch_only_the_tenants_rows() {
    for layout in LAYOUTS {
        let (all, scoped) = setup(layout, 60, 3);
        let b_rows = || sorted(&all, "SELECT * FROM mem WHERE tenant_id = 'b'");
        let before = b_rows();
        assert_eq!(ok(&scoped, "DELETE FROM mem WHERE id < 20").status.as_deref(), Some("DELETE 10"));
        assert_eq!(ok(&scoped, "UPDATE mem SET score = -1, body = 'x'").status.as_deref(), Some("UPDATE 50"));
        assert_eq!(
            ok(&scoped, "UPDATE mem SET ts = ts + INTERVAL '1 second' WHERE id = 40").status.as_deref(),
            Some("UPDATE 1")
        );
        assert_eq!(b_rows(), before, "{layout:?}: tenant b's rows are untouched");
        assert_eq!(count(&all, "SELECT count(*) FROM mem WHERE tenant_id = 'a' AND score = -1"), 50);
        let m = denied(&scoped, "UPDATE mem SET tenant_id = 'b' WHERE id = 40");
        assert!(m.contains("tenant_id"), "{m}");
        denied(&scoped, "UPDATE mem SET TENANT_ID = 'a'");
        assert_eq!(count(&all, "SELECT count(*) FROM mem WHERE tenant_id = 'a'"), 50);
        assert_eq!(ok(&scoped, "DELETE FROM mem").status.as_deref(), Some("DELETE 50"));
        assert_eq!(b_rows(), before, "{layout:?}: a DELETE without WHERE leaves tenant b's rows");
        assert_eq!(count(&all, "SELECT count(*) FROM mem"), 60);
        // Tables without tenant_id are not scoped.
        assert_eq!(ok(&scoped, "DELETE FROM ticks WHERE px < 1").status.as_deref(), Some("DELETE 1"));
    }
}

/// INSERT, INSERT ... SELECT and CREATE TABLE AS store rows of the tenant only: one row of
/// another tenant (or none) refuses the whole statement, and nothing is stored.
#[test]
fn writes_store_only_the_tenants_rows() {
    for layout in LAYOUTS {
        let (all, scoped) = setup(layout, 30, 3);
        let (t_a, t_b) = match layout {
            Layout::Key => ("'a', 'k0'", "'b', 'k0'"),
            Layout::Column => ("'k0', 'a'", "'k0', 'b'"),
        };
        let row = |t: &str, id: i32| format!("({id}000000000, {t}, {id}, 1.0, '{id}', NULL)");
        let n = || count(&all, "SELECT count(*) FROM mem");
        assert_eq!(n(), 60);
        denied(&scoped, &format!("INSERT INTO mem VALUES {}", row(t_b, 1001)));
        denied(&scoped, &format!("INSERT INTO mem VALUES {}, {}", row(t_a, 1000), row(t_b, 1001)));
        denied(&scoped, "INSERT INTO mem (ts, kind, id) VALUES (1, 'k0', 1002)");
        denied(&scoped, "INSERT INTO mem SELECT ts, 'b', 'b', id, score, body, emb FROM mem");
        assert_eq!(n(), 60, "{layout:?}: nothing stored");
        ok(&scoped, &format!("INSERT INTO mem VALUES {}", row(t_a, 1000)));
        ok(&scoped, "INSERT INTO mem (id, tenant_id) VALUES (1004, 'a')");
        assert_eq!(n(), 62);
        assert_eq!(count(&all, "SELECT count(*) FROM mem WHERE tenant_id = 'a'"), 32);
        // Copies of the scoped table: only the tenant's rows, into a table with or without
        // tenant_id.
        ok(&all, "CREATE TABLE own AS SELECT * FROM mem WHERE false");
        ok(&scoped, "INSERT INTO own SELECT * FROM mem");
        ok(
            &all,
            "CREATE TABLE flat (ts TIMESTAMP, k1 SYMBOL, k2 SYMBOL, id INT, score DOUBLE, body VARCHAR, emb FLOAT[4])",
        );
        ok(&scoped, "INSERT INTO flat SELECT * FROM mem");
        for t in ["own", "flat"] {
            assert_eq!(count(&all, &format!("SELECT count(*) FROM {t}")), 32, "{layout:?}: {t}");
            assert_eq!(count(&all, &format!("SELECT count(*) FROM {t} WHERE id % 2 = 1")), 0, "{layout:?}: {t}");
        }
        ok(&scoped, "CREATE TABLE mine AS SELECT * FROM mem");
        assert_eq!(count(&all, "SELECT count(*) FROM mine"), 32);
        denied(&scoped, "CREATE TABLE theirs AS SELECT 'b' AS tenant_id, id FROM mem");
        assert!(!all.catalog().exists("theirs"), "nothing created");
    }
}

/// Statements that would change a scoped table's structure, or load it wholesale, are
/// refused; the same statements on tables without `tenant_id` run.
#[test]
fn structure_changes_of_scoped_tables_are_refused() {
    let (all, scoped) = setup(Layout::Column, 10, 3);
    ok(&all, "CREATE INDEX mem_emb ON mem USING HNSW (emb)");
    let dir = std::env::temp_dir().join(format!("zepto-tenant-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let csv = dir.join("rows.csv");
    ok(&all, &format!("COPY (SELECT * FROM mem WHERE id < 0) TO '{}'", csv.display()));
    for sql in [
        "DROP TABLE mem".to_string(),
        "DROP TABLE IF EXISTS MEM".to_string(),
        "ALTER TABLE mem ADD COLUMN extra INT".to_string(),
        "ALTER TABLE mem SET TTL 30 DAYS".to_string(),
        "ALTER TABLE mem CONVERT PARTITION TO PARQUET WHERE ts < '2024-01-01'".to_string(),
        "ALTER TABLE kinds ADD COLUMN tenant_id SYMBOL".to_string(),
        "CREATE INDEX mem_emb2 ON mem USING HNSW (emb)".to_string(),
        "DROP INDEX mem_emb".to_string(),
        format!("COPY mem FROM '{}'", csv.display()),
    ] {
        denied(&scoped, &sql);
    }
    assert!(all.catalog().exists("mem") && all.catalog().indexes().len() == 1);
    assert_eq!(count(&all, "SELECT count(*) FROM mem"), 20);
    ok(&scoped, "ALTER TABLE kinds ADD COLUMN extra INT");
    ok(&scoped, "DROP TABLE ticks");
    ok(&scoped, "SHOW TABLES");
    ok(&scoped, "DESCRIBE mem");
    // COPY of a query or a whole table writes the tenant's rows only.
    for (i, sql) in ["COPY mem TO '{}'", "COPY (SELECT id, body FROM mem ORDER BY id) TO '{}'"].iter().enumerate() {
        let out = dir.join(format!("out{i}.csv"));
        ok(&scoped, &sql.replace("{}", &out.display().to_string()));
        let text = std::fs::read_to_string(&out).expect("written");
        assert_eq!(text.lines().count(), 11, "header and 10 rows: {text}");
        assert!(!text.contains("secret"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Grants and scope together: the grants still apply, and DROP INDEX is checked against the
/// grant of the index's table.
#[test]
fn grants_still_apply_under_a_scope() {
    let (all, _) = setup(Layout::Key, 5, 2);
    ok(&all, "CREATE INDEX mem_emb ON mem USING HNSW (emb)");
    let granted = all.with_access(TableAccess::only(["mem"]).with_tenant("a"));
    assert_eq!(count(&granted, "SELECT count(*) FROM mem"), 5);
    assert!(matches!(granted.execute("SELECT * FROM kinds"), Err(SqlError::PermissionDenied(_))));
    let other = all.with_access(TableAccess::only(["kinds"]));
    assert!(matches!(other.execute("DROP INDEX mem_emb"), Err(SqlError::PermissionDenied(_))));
    // A tenant with no rows sees an empty table.
    let nobody = all.with_access(TableAccess::all().with_tenant("c"));
    assert_eq!(count(&nobody, "SELECT count(*) FROM mem"), 0);
    assert_eq!(sorted(&nobody, "SELECT * FROM mem LATEST ON ts PARTITION BY tenant_id"), Vec::<String>::new());
}
