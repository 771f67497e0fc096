#!/usr/bin/env python3
"""Partition-wise GROUP BY and window functions over many small partitions and a few large
ones, against DuckDB.

    .venv/bin/python tests/gen/partition_diff.py --seed 1 --cases 2 --out /tmp/part_1.slt

Each case builds a table p<k> partitioned by `sym` whose partitions have very different sizes:
many of a few rows (run a bundle at a time, as with 100k symbols) beside some of thousands
(run one at a time, with the galloping bucket search). Rows arrive in shuffled chunks; times
are distinct inside a symbol, so first/last and ROWS frames have one answer. Queries group by
the partition key alone, with a time bucket (runs), with another column (hashing), under
filters on values and on time ranges (pieces cut mid-partition), select rows under those
filters (a filter over a scan runs fused with it), take the newest or oldest time buckets of
a GROUP BY, or rows by time, with a LIMIT (read from that end first), aggregate without GROUP BY (runs
of partitions folded in place), run window functions
partitioned by the key, and ASOF and WINDOW JOIN p<k> with q<k> (its own size mix; some
symbols on one side only) partition by partition. DuckDB answers each.

Writes the slt format of tests/slt.
"""
import argparse
import os
import random
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
from common import TS  # noqa: E402

BASE_NS = 1_704_187_800_000_000_000  # 2024-01-02 09:30:00 UTC
# Partition sizes: tiny ones bundle, the large ones (4096 rows and up) run alone.
SIZES = [1, 1, 2, 3, 5, 8, 20, 50, 300, 1000, 4095, 4096, 6000]


def make_case(rng, k):
    nsym = rng.choice([30, 120, 400])
    rows = []
    for s in range(nsym):
        n = rng.choice(SIZES) if rng.random() < 6 / nsym else rng.choice(SIZES[:8])
        # Distinct times inside a symbol, spread over ~3 hours with gaps.
        times = sorted(rng.sample(range(10_800_000), n))
        for t in times:
            price = None if rng.random() < 0.02 else round(rng.uniform(10, 500), 2)
            rows.append((TS(BASE_NS + t * 1_000_000), "S%04d" % s, rng.randrange(3), price, rng.randrange(1, 1000)))
    # A NULL-key partition too.
    for t in rng.sample(range(10_800_000), rng.choice([0, 3, 40])):
        rows.append((TS(BASE_NS + t * 1_000_000), None, rng.randrange(3), round(rng.uniform(10, 500), 2), 7))
    # Shuffled chunks: partitions receive rows out of order and in several batches.
    chunks = [rows[i:i + 997] for i in range(0, len(rows), 997)]
    rng.shuffle(chunks)
    rows = [r for c in chunks for r in c]
    ddl = [f"CREATE TABLE p{k} (ts TIMESTAMP, sym SYMBOL, g INT, price DOUBLE, size BIGINT)"]
    ddl += common.insert_sql(f"p{k}", rows, chunk=1000)
    # The right side of ASOF and WINDOW JOINs: its own size mix, some symbols on one side only.
    qrows = []
    for s in range(nsym // 4, nsym + nsym // 4):
        n = rng.choice(SIZES) if rng.random() < 6 / nsym else rng.choice(SIZES[:8])
        for t in sorted(rng.sample(range(10_800_000), n)):
            qrows.append((TS(BASE_NS + t * 1_000_000), "S%04d" % s, round(rng.uniform(10, 500), 2), rng.randrange(100)))
    rng.shuffle(qrows)
    ddl.append(f"CREATE TABLE q{k} (ts TIMESTAMP, sym SYMBOL, bid DOUBLE, n BIGINT)")
    ddl += common.insert_sql(f"q{k}", qrows, chunk=1000)
    return ddl, len(rows) + len(qrows)


def time_lit(rng):
    return "'%s'" % common.fmt_ts_ns(BASE_NS + rng.randrange(10_800_000) * 1_000_000)


def where(rng):
    """A filter: none, on values, on a time range (cuts partitions mid-way), or both."""
    a, b = sorted([time_lit(rng), time_lit(rng)])
    return rng.choice([
        "",
        f" WHERE price > {rng.randrange(50, 450)}",
        f" WHERE ts >= {a} AND ts < {b}",
        f" WHERE ts BETWEEN {a} AND {b} AND size % 3 <> 0",
        " WHERE sym IS NULL OR size > 500",
    ])


def queries(rng, k):
    """(ZeptoDB SQL, DuckDB SQL) pairs."""
    t = f"p{k}"
    w = where(rng)
    width = rng.choice([("1 minute", 60), ("15 minutes", 900), ("1 second", 1)])
    bucket_z = f"xbar(INTERVAL '{width[0]}', ts)"
    bucket_d = f"time_bucket(INTERVAL '{width[0]}', ts)"
    aggs = "count(*) AS n, sum(size) AS v, min(price) AS lo, max(price) AS hi, count(price) AS np"
    win = "PARTITION BY sym ORDER BY ts"
    frames = rng.choice(["ROWS 3 PRECEDING", "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING",
                         "ROWS UNBOUNDED PRECEDING"])
    inner_z = (f"SELECT sym, sum(size) OVER ({win} {frames}) AS s, lag(size) OVER ({win}) AS l, "
               f"row_number() OVER ({win}) AS rn, first_value(size) OVER ({win}) AS f0 FROM {t}{w}")
    outer = "SELECT sym, count(*), sum(s), sum(l), max(rn), sum(f0) FROM ({}) x GROUP BY sym"
    q = f"q{k}"
    on = rng.choice(["p.ts >= q.ts", "p.ts > q.ts", "p.ts <= q.ts"])
    asof = rng.choice(["ASOF JOIN", "ASOF LEFT JOIN"])
    secs = rng.choice([1, 2, 30])
    band = f"q.ts BETWEEN p.ts - INTERVAL '{secs} seconds' AND p.ts + INTERVAL '{secs} seconds'"
    wj_z = f"SELECT p.sym, count(*) AS c, sum(q.n) AS s, max(q.bid) AS b FROM {t} p WINDOW JOIN {q} q ON p.sym = q.sym AND {band}"
    wj_d = (f"SELECT any_value(p.sym) AS sym, count(q.ts) AS c, sum(q.n) AS s, max(q.bid) AS b FROM {t} p "
            f"LEFT JOIN {q} q ON p.sym = q.sym AND {band} GROUP BY p.rowid")
    wj_outer = "SELECT sym, count(*), sum(c), sum(s), max(b), count(b) FROM ({}) x GROUP BY sym"
    return [
        (f"SELECT p.sym, count(*), count(q.bid), sum(q.n), max(q.ts), min(q.bid) FROM {t} p {asof} {q} q "
         f"ON p.sym = q.sym AND {on} GROUP BY p.sym",) * 2,
        (wj_outer.format(wj_z), wj_outer.format(wj_d)),
        (f"SELECT sym, {aggs} FROM {t}{w} GROUP BY sym",) * 2,
        # No GROUP BY: runs of partitions folded in place (exec/keyless.rs).
        (f"SELECT {aggs}, avg(price) AS a, sum(price * size) AS ps, min(ts) AS t0 FROM {t}{w}",) * 2,
        (f"SELECT sym, {bucket_z} AS b, first(price) AS o, last(price) AS c, {aggs} FROM {t}{w} GROUP BY sym, b",
         f"SELECT sym, {bucket_d} AS b, arg_min_null(price, ts) AS o, arg_max_null(price, ts) AS c, {aggs} "
         f"FROM {t}{w} GROUP BY sym, b"),
        (f"SELECT sym, g, {aggs} FROM {t}{w} GROUP BY sym, g",) * 2,
        (f"SELECT g, sym, sum(size) AS v FROM {t}{w} GROUP BY g, sym HAVING count(*) > 1",) * 2,
        (outer.format(inner_z),) * 2,
        # Rows under a filter (run fused with the scan: the predicate's columns first, the
        # others gathered at the kept rows), and a filter on a column not selected.
        (f"SELECT * FROM {t}{w}",) * 2,
        (f"SELECT size, ts, sym FROM {t} WHERE price < {rng.randrange(20, 480)}{w.replace(' WHERE', ' AND (', 1) + ')' if w else ''}",) * 2,
    ] + bucket_topn(rng, t, w)


def bucket_topn(rng, t, w):
    """The newest (or oldest) time buckets of a GROUP BY with a LIMIT: aggregated from the
    newest rows first, the window widened until the limit is met. Times are whole
    milliseconds: buckets of 1 ms put every row on a bucket's first instant."""
    n = rng.choice([1, 3, 10, 60])
    width = rng.choice(["1 millisecond", "1 second", "1 minute", "15 minutes"])
    bucket_z, bucket_d = f"xbar(INTERVAL '{width}', ts)", f"time_bucket(INTERVAL '{width}', ts)"
    trunc = "date_trunc('minute', ts)"
    return [
        (f"SELECT {bucket_z} AS b, max(price) AS hi, count(*) AS n FROM {t}{w} GROUP BY b ORDER BY b DESC LIMIT {n}",
         f"SELECT {bucket_d} AS b, max(price) AS hi, count(*) AS n FROM {t}{w} GROUP BY b ORDER BY b DESC LIMIT {n}"),
        (f"SELECT {trunc} AS m, sum(size) AS v FROM {t}{w} GROUP BY m HAVING count(*) > 2 ORDER BY m LIMIT {n}",) * 2,
        (f"SELECT {bucket_z} AS b, sym, sum(size) AS v FROM {t}{w} GROUP BY b, sym ORDER BY b DESC, sym LIMIT {n}",
         f"SELECT {bucket_d} AS b, sym, sum(size) AS v FROM {t}{w} GROUP BY b, sym ORDER BY b DESC, sym LIMIT {n}"),
    ] + time_topn(rng, t, w, n)


def time_topn(rng, t, w, n):
    """Rows by the designated time itself with a LIMIT (`TimeTopN`: read from the newest, or
    oldest, rows, the window widened until the limit is met), under the case's filter, a filter
    few rows pass, and a GROUP BY of the time itself. Every column breaks ties (times repeat
    across symbols), so one set of rows is the answer."""
    rare = f"size > {rng.choice([990, 998])}"
    also = f"{w} AND {rare}" if w else f" WHERE {rare}"
    return [
        (f"SELECT * FROM {t}{w} ORDER BY ts DESC, sym, g, price, size LIMIT {n}",) * 2,
        (f"SELECT ts, sym, price FROM {t}{w} ORDER BY ts, sym, price LIMIT {n} OFFSET 2",) * 2,
        (f"SELECT ts, sym, size FROM {t}{also} ORDER BY ts DESC, sym, size LIMIT {n}",) * 2,
        (f"SELECT ts, count(*) AS n, max(price) AS hi FROM {t}{w} GROUP BY ts ORDER BY ts DESC LIMIT {n}",) * 2,
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    con = common.connect()
    out = [f"# generated by tests/gen/partition_diff.py --seed {a.seed} --cases {a.cases}\n"]
    n = rows = 0
    for k in range(a.cases):
        ddl, m = make_case(rng, k)
        rows += m
        for stmt in ddl:
            con.execute(common.to_duck(stmt))
            out.append(common.slt_statement(stmt))
        for _ in range(2):
            for sql, duck in queries(rng, k):
                tbl = common.run_arrow(con, common.to_duck(duck))
                letters, res = common.format_table(tbl)
                out.append(common.slt_query(sql, letters, "rowsort", common.result_lines(res, "rowsort")))
                n += 1
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {n} partition-wise queries over {a.cases} tables ({rows} rows) to {a.out}")


if __name__ == "__main__":
    main()
