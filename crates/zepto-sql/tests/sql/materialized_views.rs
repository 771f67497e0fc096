//! Materialized views: after every write, each view reads exactly what its query answers over
//! the base table (a differential over random streams with late and out-of-order rows, ties in
//! time, deletes and updates), and what is refused, by name.

use crate::common;

use common::{lines, refused, sorted_rows, Rng};
use zepto_sql::Engine;

/// Views over `trades`, each with its query.
const VIEWS: &[(&str, &str)] = &[
    (
        "bars",
        "SELECT sym, ts, count(*) AS n, sum(size) AS volume, min(price) AS low, max(price) AS high, \
         first(price) AS open, last(price) AS close, avg(price) AS mean FROM trades SAMPLE BY 1m",
    ),
    (
        "hourly",
        "SELECT date_trunc('hour', ts) AS h, count(*) AS n, sum(size) AS volume, vwap(price, size) AS vwap \
         FROM trades WHERE sym IN ('A', 'B') GROUP BY h",
    ),
    ("totals", "SELECT count(*) AS n, sum(size) AS volume, stddev(price) AS sd FROM trades WHERE price > 50"),
    (
        // Ties in price and size abound: settled by the value taken, batch by batch too.
        "extremes",
        "SELECT sym, arg_min(size, price) AS cheap, arg_max(price, size) AS big, min_by(ts, price) AS low_at \
         FROM trades GROUP BY sym",
    ),
    (
        "busy",
        "SELECT sym, count(*) AS n, max(size) AS biggest FROM trades GROUP BY sym HAVING count(*) > 20 ORDER BY n DESC",
    ),
    (
        "buckets",
        "SELECT xbar(INTERVAL '5 minutes', ts) AS b, sym, sum(size) * 2 AS double_volume, variance(price) AS var \
         FROM trades WHERE ts >= '2024-01-01 00:10:00' AND size > 3 GROUP BY b, sym",
    ),
];

fn engine() -> Engine {
    let e = Engine::new();
    lines(&e, "CREATE TABLE trades (sym SYMBOL, ts TIMESTAMP, price DOUBLE, size BIGINT) TIMESTAMP(ts)");
    e
}

/// Every view equals its query.
fn check(e: &Engine, after: &str) {
    for (name, sql) in VIEWS {
        let view = sorted_rows(e, &format!("SELECT * FROM {name}"), 9);
        let query = sorted_rows(e, sql, 9);
        assert_eq!(view, query, "view {name} after {after}");
    }
}

/// A batch of `n` rows: time mostly moving forward from `clock` (seconds), some rows late by
/// up to ten minutes, seconds repeated so rows tie in time.
fn batch(rng: &mut Rng, clock: &mut i64, n: usize) -> String {
    let rows: Vec<String> = (0..n)
        .map(|_| {
            *clock += rng.below(3) as i64;
            let late = if rng.below(8) == 0 { rng.below(600) as i64 } else { 0 };
            let sym = ["A", "B", "C", "D", "E"][rng.index(5)];
            let price = 20.0 + rng.below(8000) as f64 / 100.0;
            let size = rng.below(100);
            format!(
                "('{sym}', '2024-01-01'::TIMESTAMP + INTERVAL '{} seconds', {price}, {size})",
                (*clock - late).max(0)
            )
        })
        .collect();
    format!("INSERT INTO trades VALUES {}", rows.join(", "))
}

#[test]
fn views_equal_their_queries_after_every_write() {
    let e = engine();
    let mut rng = Rng::new(0x5EED_u64);
    let mut clock = 0;
    let mut rebuilding = 0;
    // Rows before the views exist: their first build reads them.
    lines(&e, &batch(&mut rng, &mut clock, 300));
    for (name, sql) in VIEWS {
        lines(&e, &format!("CREATE MATERIALIZED VIEW {name} AS {sql}"));
    }
    check(&e, "creation");
    for step in 0..60 {
        let n = 1 + rng.index(150);
        let what = match rng.below(12) {
            k @ (0 | 1) => {
                rebuilding += 1;
                match k {
                    0 => format!("DELETE FROM trades WHERE size < {}", rng.below(10)),
                    _ => format!("UPDATE trades SET price = price + 1 WHERE sym = 'C' AND size > {}", rng.below(90)),
                }
            }
            _ => batch(&mut rng, &mut clock, n),
        };
        lines(&e, &what);
        // Reads in some steps only: several appends fold between two reads.
        if step % 3 != 1 {
            check(&e, &format!("step {step}: {}", &what[..what.len().min(60)]));
        }
    }
    check(&e, "the stream");
    // Appends were folded in, not rebuilt: only the first build and deletes and updates
    // rebuild (at most once between two reads).
    for (name, stats) in e.catalog().view_stats() {
        assert!(stats.commits > 40, "{name}: {stats:?}");
        assert!(stats.rebuilds >= 1 && stats.rebuilds <= 1 + rebuilding, "{name}: {stats:?} ({rebuilding})");
    }
}

#[test]
fn refresh_drop_and_names() {
    let e = engine();
    let mut rng = Rng::new(7);
    let mut clock = 0;
    lines(&e, &batch(&mut rng, &mut clock, 50));
    lines(&e, "CREATE MATERIALIZED VIEW v AS SELECT sym, count(*) AS n FROM trades GROUP BY sym");
    lines(&e, "CREATE MATERIALIZED VIEW IF NOT EXISTS v AS SELECT 1");
    lines(&e, "REFRESH MATERIALIZED VIEW v");
    assert_eq!(lines(&e, "SELECT sum(n) FROM v"), ["50"]);
    // EXPLAIN shows how a view read is kept: the partial aggregate each append runs, and what
    // a read runs over the groups.
    let plan = lines(&e, "EXPLAIN SELECT * FROM v WHERE n > 1").join("\n");
    assert!(plan.contains("materialized view v: each append to trades folds in"), "{plan}");
    assert!(plan.contains("PartialAggregate"), "{plan}");
    // Listed as PostgreSQL lists materialized views, with their columns.
    assert_eq!(lines(&e, "SELECT relkind, reltuples FROM pg_class WHERE relname = 'v'"), ["m\t5.0"]);
    assert_eq!(
        lines(&e, "SELECT matviewname, ispopulated, definition FROM pg_matviews"),
        ["v\ttrue\tSELECT sym, count(*) AS n FROM trades GROUP BY sym"]
    );
    assert_eq!(
        lines(&e, "SELECT attname FROM pg_attribute a JOIN pg_class c ON a.attrelid = c.oid WHERE relname = 'v' ORDER BY attnum"),
        ["sym", "n"]
    );
    assert!(refused(&e, "DROP TABLE trades").contains("has materialized views (v)"));
    assert!(refused(&e, "DROP TABLE v").contains("DROP MATERIALIZED VIEW v"));
    assert!(refused(&e, "CREATE TABLE v (x BIGINT)").contains("already exists"));
    assert!(refused(&e, "CREATE MATERIALIZED VIEW v AS SELECT count(*) FROM trades").contains("already exists"));
    lines(&e, "DROP MATERIALIZED VIEW v");
    lines(&e, "DROP MATERIALIZED VIEW IF EXISTS v");
    assert!(refused(&e, "DROP MATERIALIZED VIEW v").contains("does not exist"));
    assert!(refused(&e, "REFRESH MATERIALIZED VIEW v").contains("does not exist"));
    lines(&e, "DROP TABLE trades");
}

#[test]
fn what_is_not_incremental_is_refused_by_name() {
    let e = engine();
    lines(&e, "CREATE TABLE other (sym SYMBOL, x BIGINT)");
    let cases = [
        ("SELECT sym, price FROM trades", "no GROUP BY"),
        ("SELECT sym, median(price) FROM trades GROUP BY sym", "median does not merge"),
        ("SELECT sym, count(DISTINCT size) FROM trades GROUP BY sym", "DISTINCT does not merge"),
        ("SELECT t.sym, count(*) FROM trades t JOIN other o ON t.sym = o.sym GROUP BY t.sym", "more than one table"),
        ("SELECT sym, count(*) FROM trades WHERE size IN (SELECT x FROM other) GROUP BY sym", "subquery"),
        ("SELECT sym, count(*) FROM nowhere GROUP BY sym", "does not exist"),
        ("SELECT sym, count(*) FROM trades WHERE ts > now() - INTERVAL '1 hour' GROUP BY sym", "now()"),
    ];
    for (sql, why) in cases {
        let err = refused(&e, &format!("CREATE MATERIALIZED VIEW v AS {sql}"));
        assert!(err.contains(why), "{sql}: {err}");
        assert!(!e.catalog().is_view("v"), "{sql} left a view");
    }
}

#[test]
fn a_deduplicating_table_replaces_rows_in_its_views() {
    let e = Engine::new();
    lines(&e, "CREATE TABLE q (ts TIMESTAMP, sym SYMBOL, px DOUBLE) TIMESTAMP(ts) DEDUP UPSERT KEYS(ts, sym)");
    lines(&e, "INSERT INTO q VALUES (1, 'A', 1.0), (2, 'A', 2.0), (1, 'B', 5.0)");
    let sql = "SELECT sym, count(*) AS n, sum(px) AS total FROM q GROUP BY sym";
    lines(&e, &format!("CREATE MATERIALIZED VIEW qv AS {sql}"));
    // The same keys again: the rows are replaced, not added.
    lines(&e, "INSERT INTO q VALUES (1, 'A', 10.0), (3, 'B', 1.0)");
    assert_eq!(sorted_rows(&e, "SELECT * FROM qv", 9), sorted_rows(&e, sql, 9));
    assert_eq!(lines(&e, "SELECT n, total FROM qv WHERE sym = 'A'"), ["2\t12.0"]);
    // Deduplication turned on after the view was made is seen too.
    lines(&e, "CREATE TABLE r (ts TIMESTAMP, sym SYMBOL, px DOUBLE) TIMESTAMP(ts)");
    lines(&e, "CREATE MATERIALIZED VIEW rv AS SELECT sym, sum(px) AS total FROM r GROUP BY sym");
    lines(&e, "INSERT INTO r VALUES (1, 'A', 1.0)");
    lines(&e, "ALTER TABLE r DEDUP ENABLE UPSERT KEYS(ts, sym)");
    lines(&e, "INSERT INTO r VALUES (1, 'A', 4.0)");
    assert_eq!(lines(&e, "SELECT total FROM rv"), lines(&e, "SELECT sum(px) FROM r"));
}

#[test]
fn a_tenant_reads_only_views_that_keep_tenants_apart() {
    use zepto_sql::access::TableAccess;
    let e = Engine::new();
    lines(&e, "CREATE TABLE m (tenant_id SYMBOL, ts TIMESTAMP, v BIGINT) TIMESTAMP(ts)");
    lines(&e, "INSERT INTO m VALUES ('a', 1, 1), ('a', 2, 2), ('b', 3, 40)");
    lines(&e, "CREATE MATERIALIZED VIEW per_tenant AS SELECT tenant_id, sum(v) AS total FROM m GROUP BY tenant_id");
    lines(&e, "CREATE MATERIALIZED VIEW everyone AS SELECT sum(v) AS total FROM m");
    let a = e.with_access(TableAccess::all().with_tenant("a"));
    assert_eq!(lines(&a, "SELECT total FROM per_tenant"), ["3"]);
    assert!(refused(&a, "SELECT total FROM everyone").contains("aggregates every tenant's rows"));
    assert!(refused(&a, "CREATE MATERIALIZED VIEW mine AS SELECT count(*) FROM m").contains("scoped to tenant"));
    // A column merely named tenant_id does not keep tenants apart: not the table's, not a
    // group key, or mixed by a window above the groups. The table's, passed through, does.
    for (view, sql) in [
        ("fake", "SELECT v % 2 AS tenant_id, count(*) AS n FROM m GROUP BY v % 2"),
        ("maxed", "SELECT max(tenant_id) AS tenant_id, count(*) AS n FROM m"),
        ("mixed", "SELECT tenant_id, sum(sum(v)) OVER () AS all_total FROM m GROUP BY tenant_id"),
    ] {
        lines(&e, &format!("CREATE MATERIALIZED VIEW {view} AS {sql}"));
        let m = refused(&a, &format!("SELECT * FROM {view}"));
        assert!(m.contains("aggregates every tenant's rows"), "{view}: {m}");
    }
    lines(&e, "CREATE MATERIALIZED VIEW ordered AS SELECT sum(v) AS total, tenant_id AS tenant_id FROM m GROUP BY tenant_id ORDER BY total LIMIT 5");
    assert_eq!(lines(&a, "SELECT total, tenant_id FROM ordered"), ["3\ta"]);
    // Nor does pg_class tell it the refused view's rows (-1, PostgreSQL's unknown); it counts
    // the tenant's own rows of the other, and everything to an unscoped session.
    let tuples = "SELECT relname, reltuples FROM pg_class WHERE relname IN ('per_tenant', 'everyone') ORDER BY relname";
    assert_eq!(lines(&a, tuples), ["everyone\t-1.0", "per_tenant\t1.0"]);
    assert_eq!(lines(&e, tuples), ["everyone\t1.0", "per_tenant\t2.0"]);
}

/// Views whose rows are their groups' own (projections, SAMPLE BY without FILL): a read after
/// a few rows computes only the changed groups' rows and patches them into the rows it kept,
/// and still equals the query: late rows into old buckets, new buckets, a new symbol's groups
/// before the last bucket (the rows are sorted again), NULLs, strings, ties. A view whose time
/// column moves with its rows (`max(ts)`) is sorted again each time.
#[test]
fn small_writes_patch_the_rows_a_read_kept() {
    const PATCHED: &[(&str, &str)] = &[
        (
            "secs",
            "SELECT sym, ts, first(price) AS open, max(price) AS high, min(venue) AS venue, last(price) AS close, \
             sum(size) AS volume, count(price) AS n, stddev(price) AS sd, vwap(price, size) AS vwap \
             FROM ticks SAMPLE BY 1s",
        ),
        (
            "mods",
            "SELECT sym, size % 7 AS k, count(*) AS n, avg(price) AS mean, max(price) - min(price) AS spread \
             FROM ticks GROUP BY sym, k",
        ),
        ("newest", "SELECT sym, max(ts) AS seen, last(price) AS px FROM ticks GROUP BY sym"),
        // SYMBOL results, NULL for the groups whose tags are all NULL (size % 5 = 4).
        ("tags", "SELECT size % 5 AS k, sym, max(tag) AS top, first(tag) AS opening FROM ticks GROUP BY k, sym"),
    ];
    let e = Engine::new();
    lines(
        &e,
        "CREATE TABLE ticks (sym SYMBOL, ts TIMESTAMP, price DOUBLE, size BIGINT, venue VARCHAR, tag SYMBOL) TIMESTAMP(ts)",
    );
    let mut rng = Rng::new(0xFAC7);
    let mut clock = 0i64;
    let mut rows = |rng: &mut Rng, n: usize, syms: usize| {
        let r: Vec<String> = (0..n)
            .map(|_| {
                clock += rng.below(400) as i64;
                let at = if rng.below(6) == 0 { clock - rng.below(300_000) as i64 } else { clock }.max(0);
                let price = if rng.below(10) == 0 {
                    "NULL".to_string()
                } else {
                    format!("{}", 10.0 + rng.below(900) as f64 / 8.0)
                };
                let size = rng.below(50);
                let tag = if size % 5 == 4 { "NULL".to_string() } else { format!("'t{}'", rng.below(7)) };
                format!(
                    "('S{}', '2024-01-01'::TIMESTAMP + INTERVAL '{at} milliseconds', {price}, {size}, 'v{}', {tag})",
                    rng.index(syms),
                    rng.below(9)
                )
            })
            .collect();
        format!("INSERT INTO ticks VALUES {}", r.join(", "))
    };
    lines(&e, &rows(&mut rng, 2000, 12));
    for (name, sql) in PATCHED {
        lines(&e, &format!("CREATE MATERIALIZED VIEW {name} AS {sql}"));
    }
    let check = |after: &str| {
        for (name, sql) in PATCHED {
            let view = sorted_rows(&e, &format!("SELECT * FROM {name}"), 9);
            assert_eq!(view, sorted_rows(&e, sql, 9), "view {name} after {after}");
        }
    };
    check("creation");
    for step in 0..80 {
        // Now and then a new symbol: its groups are new, some of them before the last bucket.
        let syms = 12 + step / 20;
        let n = 1 + rng.index(6);
        let what = rows(&mut rng, n, syms);
        lines(&e, &what);
        check(&format!("step {step}: {what}"));
    }
    let stats = e.catalog().view_stats();
    let of = |name: &str| stats.iter().find(|(n, _)| n == name).map(|(_, s)| *s).expect("the view's stats");
    for name in ["secs", "mods", "tags"] {
        let s = of(name);
        assert!(s.finishes >= 80 && s.patched + 1 >= s.finishes, "{name}: every read but the first patched: {s:?}");
    }
    assert!(of("newest").patched < 40, "its time column moves: sorted again ({:?})", of("newest"));
}

/// Views made and dropped while another session writes their base table, a view over it
/// already there: the two finish (CREATE MATERIALIZED VIEW took the views' lock, then the
/// base table's, while a writer holding the table's lock read the views': each could wait for
/// the other forever).
#[test]
fn views_made_beside_writers_do_not_deadlock() {
    let e = std::sync::Arc::new(engine());
    lines(&e, "CREATE MATERIALIZED VIEW kept AS SELECT sym, count(*) AS n FROM trades GROUP BY sym");
    let (done, finished) = std::sync::mpsc::channel();
    let writer = {
        let (e, done) = (e.clone(), done.clone());
        std::thread::spawn(move || {
            let (mut rng, mut clock) = (Rng::new(7), 0);
            for _ in 0..1500 {
                e.execute(&batch(&mut rng, &mut clock, 4)).expect("a write");
            }
            done.send("writer").expect("sent");
        })
    };
    let maker = std::thread::spawn(move || {
        for i in 0..150 {
            let sql = format!("CREATE MATERIALIZED VIEW v{i} AS SELECT sym, max(size) AS m FROM trades GROUP BY sym");
            e.execute(&sql).expect("a view");
            e.execute(&format!("DROP MATERIALIZED VIEW v{i}")).expect("dropped");
        }
        done.send("maker").expect("sent");
    });
    for _ in 0..2 {
        let who = finished.recv_timeout(std::time::Duration::from_secs(120));
        assert!(who.is_ok(), "a session waited for the other for two minutes: {who:?}");
    }
    writer.join().expect("writer");
    maker.join().expect("maker");
}
