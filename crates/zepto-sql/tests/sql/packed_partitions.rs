//! Tables of many small partitions are packed into shared columns (`zepto-storage`'s
//! `table/pack.rs`); every operator that reads partitions must read a packed one as it reads a
//! loose one. The same rows go into `t`, partitioned by a SYMBOL over 2,000 symbols (so packed,
//! but for three large ones), and into `u`, whose symbol is a VARCHAR (one partition, never
//! packed). Every query shape that
//! reads partitions answers the same over both: partition-wise and partial aggregates, filters,
//! window functions, ASOF and WINDOW JOIN, LATEST ON, key and time lookups. Then changes unpack
//! some partitions (inserts in and out of time order, a DELETE, an UPDATE) and the queries run
//! again, and once more after the next packing.

use zepto_sql::Engine;

use crate::common;
use common::Rng;

const SYMS: u64 = 2_000;

/// `n` rows of trades (each time unique: ties would leave window order to the path) and as
/// many quotes, starting at second `from`.
fn inserts(rng: &mut Rng, n: usize, from: u64) -> (String, String) {
    let (mut t, mut q) = (Vec::new(), Vec::new());
    for i in 0..n as u64 {
        // Half the rows go to three symbols, whose partitions grow too large to be packed
        // and lie loose between the packed ones.
        let sym = match rng.below(2) {
            0 => format!("'S{}'", rng.below(3) * 700),
            _ => format!("'S{}'", rng.below(SYMS)),
        };
        let ts = format!("TIMESTAMP '2024-01-02 00:00:00' + INTERVAL '{} milliseconds'", (from + i) * 7);
        let px = if rng.below(20) == 0 { "NULL".to_string() } else { format!("{}.5", rng.below(500)) };
        t.push(format!("({ts}, {sym}, {px}, {})", rng.below(1000) as i64 - 100));
        let qts = format!("TIMESTAMP '2024-01-02 00:00:00' + INTERVAL '{} milliseconds'", (from + i) * 7 + 3);
        q.push(format!("({qts}, {sym}, {}.25)", rng.below(500)));
    }
    (t.join(", "), q.join(", "))
}

fn insert(e: &Engine, rng: &mut Rng, n: usize, from: u64) {
    let (t, q) = inserts(rng, n, from);
    for (packed, loose, rows) in [("t", "u", &t), ("q", "r", &q)] {
        e.execute(&format!("INSERT INTO {packed} VALUES {rows}")).expect("packed rows");
        e.execute(&format!("INSERT INTO {loose} VALUES {rows}")).expect("loose rows");
    }
}

/// Queries over `{t}` and `{q}`: `t` and `q` packed, `u` and `r` the same rows loose.
const QUERIES: &[&str] = &[
    "SELECT sym, count(*), sum(n), min(px), max(px), first(px), last(n), avg(px) FROM {t} GROUP BY sym",
    "SELECT count(*), sum(px), min(n), max(ts) FROM {t}",
    "SELECT count(*), sum(px) FROM {t} WHERE n > 500",
    "SELECT n % 10 AS k, count(*), sum(px) FROM {t} WHERE px > 100 GROUP BY k",
    "SELECT sym, xbar(INTERVAL '1 second', ts) AS b, count(*), last(px) FROM {t} GROUP BY sym, b",
    "SELECT sym, ts, sum(n) OVER (PARTITION BY sym ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM {t}",
    "SELECT sym, ts, ema(px, 5) OVER (PARTITION BY sym ORDER BY ts) FROM {t}",
    "SELECT a.sym, a.ts, a.px, b.bid FROM {t} a ASOF JOIN {q} b ON a.sym = b.sym AND a.ts >= b.ts",
    "SELECT a.sym, a.ts, avg(b.bid), count(*) FROM {t} a WINDOW JOIN {q} b ON a.sym = b.sym \
     AND b.ts BETWEEN a.ts - INTERVAL '50 milliseconds' AND a.ts",
    "SELECT * FROM {t}",
    "SELECT sym, px * 2 FROM {t} WHERE n > 100",
    "SELECT * FROM {t} LATEST ON ts PARTITION BY sym",
    "SELECT * FROM {t} WHERE sym IN ('S1', 'S77', 'S1999') AND ts >= TIMESTAMP '2024-01-02 00:00:10'",
    "SELECT * FROM {t} WHERE ts BETWEEN TIMESTAMP '2024-01-02 00:00:05' AND TIMESTAMP '2024-01-02 00:00:06'",
    // A time range over every partition: packs are cut by their timestamps, not walked.
    "SELECT count(*), sum(px), min(ts), max(ts) FROM {t} \
     WHERE ts BETWEEN TIMESTAMP '2024-01-02 00:00:10' AND TIMESTAMP '2024-01-02 00:00:30'",
    "SELECT sym, count(*), last(px), first(n) FROM {t} WHERE ts >= TIMESTAMP '2024-01-02 00:00:20' GROUP BY sym",
    "SELECT n % 3 AS k, count(*), sum(px) FROM {t} WHERE ts < TIMESTAMP '2024-01-02 00:00:25' GROUP BY k",
    "SELECT sym, ts, sum(n) OVER (PARTITION BY sym ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM {t} \
     WHERE ts > TIMESTAMP '2024-01-02 00:00:40'",
    "SELECT ts, sym, px FROM {t} WHERE ts <= TIMESTAMP '2024-01-02 00:00:15' AND px > 200",
];

fn same_answers(e: &Engine, when: &str) {
    for sql in QUERIES {
        let on = |t: &str, q: &str| sql.replace("{t}", t).replace("{q}", q);
        let (packed, loose) = (on("t", "q"), on("u", "r"));
        let (a, b) = (common::sorted_rows(e, &packed, 9), common::sorted_rows(e, &loose, 9));
        assert!(!a.is_empty(), "{when}: {packed} found nothing");
        assert_eq!(a, b, "{when}: {packed}");
    }
}

fn packed_partitions(e: &Engine, table: &str) -> usize {
    let t = e.catalog().snapshot(table).expect("table");
    t.partitions().iter().filter(|p| p.is_packed()).count()
}

/// How many batches of `SELECT * FROM t` are a pack's own columns.
fn pack_shared(e: &Engine) -> usize {
    let t = e.catalog().snapshot("t").expect("table");
    let packs: Vec<&[std::sync::Arc<zepto_storage::Column>]> =
        t.partitions().iter().filter_map(|p| p.pack()).map(|(cols, _)| cols).collect();
    let r = e.execute("SELECT * FROM t").expect("scan");
    let shared = |b: &zepto_sql::exec::Batch| {
        packs.iter().any(|pk| b.columns.iter().zip(pk.iter()).all(|(a, p)| std::sync::Arc::ptr_eq(a, p)))
    };
    r.chunks().iter().filter(|b| shared(b)).count()
}

#[test]
fn packed_partitions_answer_as_loose_ones() {
    let e = Engine::new().with_parallel_min_rows(0);
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT)").expect("t");
    e.execute("CREATE TABLE u (ts TIMESTAMP, sym VARCHAR, px DOUBLE, n BIGINT)").expect("u");
    e.execute("CREATE TABLE q (ts TIMESTAMP, sym SYMBOL, bid DOUBLE)").expect("q");
    e.execute("CREATE TABLE r (ts TIMESTAMP, sym VARCHAR, bid DOUBLE)").expect("r");
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    insert(&e, &mut rng, 8_000, 0);
    assert!(packed_partitions(&e, "t") > 1_500, "2,000 small partitions are packed");
    assert_eq!(packed_partitions(&e, "u"), 0);
    same_answers(&e, "packed");
    let t = e.catalog().snapshot("t").expect("t");
    let large = t.partitions().iter().filter(|p| !p.is_packed() && p.len() >= 1024).count();
    assert_eq!(large, 3, "three large partitions lie loose between the packed ones");
    assert_eq!(pack_shared(&e), 1, "a whole pack's columns are the answer's, not a copy");

    // Later rows for a few symbols, earlier rows for others, a DELETE and an UPDATE: the
    // partitions they touch leave the pack.
    insert(&e, &mut rng, 50, 20_000);
    insert(&e, &mut rng, 50, 3);
    for table in ["t", "u"] {
        e.execute(&format!("DELETE FROM {table} WHERE n < 0 AND sym < 'S3'")).expect("delete");
        e.execute(&format!("UPDATE {table} SET px = px + 1 WHERE n % 7 = 0 AND sym > 'S8'")).expect("update");
    }
    let left = packed_partitions(&e, "t");
    assert!(left > 0 && left < 1_900, "{left} partitions still packed");
    same_answers(&e, "after changes");
    assert_eq!(pack_shared(&e), 0, "a pack with rows gone is gathered");

    // Enough new rows to pay for a packing: everything small is packed again.
    insert(&e, &mut rng, 9_000, 40_000);
    assert!(packed_partitions(&e, "t") > left, "packed again");
    same_answers(&e, "repacked");
}
