#!/usr/bin/env python3
"""Randomized window function and WINDOW JOIN differential test (DuckDB and Polars are the oracles).

    .venv/bin/python tests/gen/window_diff.py --seed 123 --cases 30 --out /tmp/win_123.slt

Each case builds a fresh table w<k> (0..150 rows inserted in shuffled order; NULLs in every
column but `id` and `ts`; few distinct values so that ORDER BY keys tie) and asks random
window queries: ranking, lag/lead (with offsets, defaults, IGNORE NULLS), first/last/nth_value,
and aggregates over ROWS and RANGE frames (numeric, timestamp + INTERVAL, DESC, NULLS FIRST),
with and without PARTITION BY, over GROUP BY results and under QUALIFY. DuckDB answers
those. The kdb-style functions are checked through their definitions: `mavg(x, n)` against
DuckDB's `avg(x) OVER (... ROWS n-1 PRECEDING)` and so on, `deltas`/`ratios` against
`lag`, and `ema` against Polars `ewm_mean(alpha, adjust=False, ignore_nulls=True)`.

WINDOW JOIN queries are checked against the LEFT JOIN + GROUP BY they abbreviate, and band
joins (`JOIN ... ON keys AND q.ts BETWEEN w.ts - a AND w.ts + b`, run by the same sweep) against
DuckDB directly; the right table has NULL keys and times and duplicate times.

Queries whose answer would depend on the order of tied rows are never generated: functions
that look at row positions (row_number, lag, first_value, ROWS frames) get a total ORDER BY.
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

import polars as pl  # noqa: E402

BASE_NS = 1_704_187_800_000_000_000  # 2024-01-02 09:30:00 UTC

# Functions whose value does not depend on how tied rows are ordered (given the frame).
PEER_SAFE = [
    "rank()", "dense_rank()", "percent_rank()", "cume_dist()",
    "count(*)", "count(x)", "sum(n)", "avg(n)", "min(x)", "max(x)", "max(s)", "min(t2)", "sum(x)",
    "avg(x)", "stddev_samp(x)", "var_pop(n)", "count(DISTINCT g)", "median(n)", "corr(x, n)",
    "regr_slope(n, x)", "covar_samp(x, n)",
]
# Functions that look at row positions: need a total ORDER BY.
POSITIONAL = [
    "row_number()", "ntile(3)", "lag(x)", "lag(n, 2)", "lead(x, 1, -1.0)", "lead(s, 2)", "lag(x, 0)",
    "first_value(x)", "last_value(x)", "nth_value(x, 2)", "first_value(x IGNORE NULLS)",
    "last_value(n IGNORE NULLS)", "lag(x IGNORE NULLS)", "lead(n, 2 IGNORE NULLS)", "lag(s, 1, 'none')",
]
FRAMED = {"first_value", "last_value", "nth_value", "count", "sum", "avg", "min", "max", "stddev_samp",
          "var_pop", "median", "corr", "regr_slope", "covar_samp"}


def make_case(rng, k):
    n = rng.choice([0, 1, 2, 7, 40, 150])
    null_rate = rng.choice([0.0, 0.1, 0.3])

    def maybe(v):
        return None if rng.random() < null_rate else v

    times = rng.sample(range(5000), n)
    rows = []
    for i in range(n):
        rows.append((i, TS(BASE_NS + times[i] * 100_000_000), maybe(rng.choice(["A", "B", "C"])),
                     maybe(rng.randrange(4)), maybe(round(rng.uniform(-50, 50), 2)), maybe(rng.randrange(-20, 100)),
                     maybe(rng.choice(["x", "y", "zz", ""])), maybe(TS(BASE_NS + rng.randrange(8) * 1_000_000_000))))
    rng.shuffle(rows)
    ddl = [f"CREATE TABLE w{k} (id INT, ts TIMESTAMP, sym SYMBOL, g INT, x DOUBLE, n BIGINT, s VARCHAR, t2 TIMESTAMP)"]
    ddl += common.insert_sql(f"w{k}", rows)
    # The right side of WINDOW JOIN / range join queries: NULL keys and times, duplicate times.
    m = rng.choice([0, 1, 5, 60, 200])
    qrows = [(maybe(TS(BASE_NS + rng.randrange(5000) * 100_000_000)), maybe(rng.choice(["A", "B", "C", "D"])),
              maybe(round(rng.uniform(0, 100), 2)), maybe(rng.randrange(1000))) for _ in range(m)]
    ddl.append(f"CREATE TABLE q{k} (ts TIMESTAMP, sym {rng.choice(['SYMBOL', 'VARCHAR'])}, bid DOUBLE, n BIGINT)")
    ddl += common.insert_sql(f"q{k}", qrows)
    return ddl


def frame_clause(rng, order_keys):
    """A random frame for ORDER BY `order_keys` (list of (expr, kind))."""
    c = rng.random()
    if c < 0.3:
        return ""
    if c < 0.65:
        a, b = rng.randrange(4), rng.randrange(4)
        return rng.choice([
            f" ROWS BETWEEN {a} PRECEDING AND {b} FOLLOWING",
            f" ROWS {a} PRECEDING",
            " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
            " ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
            f" ROWS BETWEEN {a + 1} FOLLOWING AND {a + b + 2} FOLLOWING",
            f" ROWS BETWEEN {a + b + 2} PRECEDING AND {a + 1} PRECEDING",
            " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
        ])
    if len(order_keys) == 1:
        kind = order_keys[0][1]
        if kind == "ts":
            a, b = rng.choice([1, 10, 60]), rng.choice([0, 5, 30])
            return rng.choice([
                f" RANGE BETWEEN INTERVAL '{a} seconds' PRECEDING AND CURRENT ROW",
                f" RANGE BETWEEN INTERVAL '{a} seconds' PRECEDING AND INTERVAL '{b} seconds' FOLLOWING",
                f" RANGE BETWEEN CURRENT ROW AND INTERVAL '{b} seconds' FOLLOWING",
            ])
        if kind == "int":
            a, b = rng.randrange(3), rng.randrange(3)
            return f" RANGE BETWEEN {a} PRECEDING AND {b} FOLLOWING"
        if kind == "float":
            return rng.choice([" RANGE BETWEEN 10.5 PRECEDING AND CURRENT ROW",
                               " RANGE BETWEEN 5 PRECEDING AND 2.5 FOLLOWING"])
    return rng.choice([" RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
                       " RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
                       " RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"])


def window_spec(rng, positional):
    part = rng.choice(["", "", "PARTITION BY sym", "PARTITION BY g", "PARTITION BY sym, g"])
    # ORDER BY candidates: (sql, kind) where kind selects RANGE offsets.
    choices = [
        [("ts", "ts")], [("ts DESC", "ts")], [("g", "int")], [("x", "float")], [("x DESC NULLS FIRST", "float")],
        [("n NULLS FIRST", "int")], [("t2", "ts")], [("s", "str")], [("g", "int"), ("x DESC", "float")], [],
    ]
    order = rng.choice(choices)
    if positional:
        order = order + [("id", "int")]  # id is unique: a total order
    frame = frame_clause(rng, order) if order else ""
    if frame.startswith(" ROWS") and order[-1][0] != "id":
        order = order + [("id", "int")]  # a ROWS frame looks at positions too
    parts = []
    if part:
        parts.append(part)
    if order:
        parts.append("ORDER BY " + ", ".join(o[0] for o in order))
    return " ".join(parts) + frame


def make_query(rng, k):
    shape = rng.random()
    if shape < 0.12:
        # kdb-style functions, checked through their definitions.
        n = rng.randrange(1, 5)
        fn, duck = rng.choice([
            (f"mavg(x, {n})", f"avg(x) OVER (PARTITION BY sym ORDER BY ts ROWS {n - 1} PRECEDING)"),
            (f"msum(n, {n})", f"sum(n) OVER (PARTITION BY sym ORDER BY ts ROWS {n - 1} PRECEDING)"),
            (f"mmin(x, {n})", f"min(x) OVER (PARTITION BY sym ORDER BY ts ROWS {n - 1} PRECEDING)"),
            (f"mmax(n, {n})", f"max(n) OVER (PARTITION BY sym ORDER BY ts ROWS {n - 1} PRECEDING)"),
            (f"mdev(x, {n})", f"stddev_pop(x) OVER (PARTITION BY sym ORDER BY ts ROWS {n - 1} PRECEDING)"),
            (f"mcount(x, {n})", f"count(x) OVER (PARTITION BY sym ORDER BY ts ROWS {n - 1} PRECEDING)"),
            ("deltas(n)", "CASE WHEN row_number() OVER (PARTITION BY sym ORDER BY ts) = 1 THEN n "
                          "ELSE n - lag(n) OVER (PARTITION BY sym ORDER BY ts) END"),
            ("deltas(x)", "CASE WHEN row_number() OVER (PARTITION BY sym ORDER BY ts) = 1 THEN x "
                          "ELSE x - lag(x) OVER (PARTITION BY sym ORDER BY ts) END"),
            ("ratios(x)", "CASE WHEN row_number() OVER (PARTITION BY sym ORDER BY ts) = 1 THEN x "
                          "ELSE x / lag(x) OVER (PARTITION BY sym ORDER BY ts) END"),
        ])
        if rng.random() < 0.5:
            # Explicit window instead of the kdb default.
            spec = "PARTITION BY g ORDER BY ts"
            return (f"SELECT id, {fn} OVER ({spec}) FROM w{k}",
                    f"SELECT id, {duck.replace('PARTITION BY sym', 'PARTITION BY g')} FROM w{k}")
        return f"SELECT id, {fn} FROM w{k}", f"SELECT id, {duck} FROM w{k}"
    if shape < 0.22:
        # WINDOW JOIN against the LEFT JOIN + GROUP BY it abbreviates, and band joins.
        a, b = rng.choice([0, 1, 5, 30]), rng.choice([0, 1, 5, 30])
        lo = rng.choice([f"w.ts - INTERVAL '{a} seconds'", "w.ts", f"w.ts + INTERVAL '{a} seconds'"])
        hi = f"w.ts + INTERVAL '{a + b} seconds'" if "+" in lo else f"w.ts + INTERVAL '{b} seconds'"
        key = rng.choice(["w.sym = q.sym AND ", "w.sym = q.sym AND ", ""])
        band = rng.choice([f"q.ts BETWEEN {lo} AND {hi}", f"q.ts >= {lo} AND q.ts < {hi}",
                           f"{hi} >= q.ts AND q.ts > {lo}"])
        on = key + band
        c = rng.random()
        if c < 0.5:
            aggs = "count(*), count(q.bid), sum(q.n), avg(q.bid), min(q.bid), max(q.ts), max(q.n)"
            duck_aggs = "count(q.ts), count(q.bid), sum(q.n), avg(q.bid), min(q.bid), max(q.ts), max(q.n)"
            where = rng.choice(["", " WHERE w.x > 0", " WHERE q.bid > 50"])
            if where == " WHERE q.bid > 50":
                return (f"SELECT w.id, {aggs} FROM w{k} w WINDOW JOIN q{k} q ON {on}{where}",
                        f"SELECT w.id, {duck_aggs} FROM w{k} w LEFT JOIN (SELECT * FROM q{k} WHERE bid > 50) q "
                        f"ON {on} GROUP BY w.id")
            return (f"SELECT w.id, {aggs} FROM w{k} w WINDOW JOIN q{k} q ON {on}{where}",
                    f"SELECT w.id, {duck_aggs} FROM w{k} w LEFT JOIN q{k} q ON {on}{where} GROUP BY w.id")
        if c < 0.8:
            return f"SELECT w.id, w.ts, q.ts, q.bid FROM w{k} w LEFT JOIN q{k} q ON {on}", None
        return f"SELECT w.id, q.bid, q.n FROM w{k} w JOIN q{k} q ON {on} AND q.n > 100", None
    if shape < 0.3:
        # Over GROUP BY output.
        fn = rng.choice(["rank() OVER (ORDER BY sum(n) DESC NULLS LAST, g)", "sum(count(*)) OVER ()",
                         "count(*) * 1.0 / sum(count(*)) OVER (PARTITION BY sym)",
                         "lag(max(x)) OVER (PARTITION BY sym ORDER BY g NULLS FIRST)",
                         "avg(avg(x)) OVER (ORDER BY g, sym ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)"])
        return f"SELECT sym, g, {fn} FROM w{k} GROUP BY sym, g", None
    if shape < 0.36:
        spec = window_spec(rng, True)
        return (f"SELECT id, x FROM w{k} QUALIFY row_number() OVER ({spec}) <= 2", None)
    positional = rng.random() < 0.5
    fn = rng.choice(POSITIONAL if positional else PEER_SAFE)
    name = fn.split("(")[0]
    spec = window_spec(rng, positional)
    if name not in FRAMED:
        # Frames do not apply; keep the spec simple.
        spec = spec.split(" ROWS")[0].split(" RANGE")[0]
    where = rng.choice(["", "", " WHERE g IS NOT NULL", " WHERE x > 0"])
    return f"SELECT id, {fn} OVER ({spec}) AS w FROM w{k}{where}", None


def ema_case(con, rng, k):
    """ema(x, n) by sym in ts order, against Polars."""
    n = rng.choice([0.3, 2, 5, 10])
    alpha = n if n < 1 else 2.0 / (n + 1)
    sql = f"SELECT id, ema(x, {n}) FROM w{k}"
    tbl = common.run_arrow(con, f"SELECT id, sym, ts, x FROM w{k} ORDER BY ts")
    df = pl.from_arrow(tbl)
    res = df.with_columns(pl.col("x").ewm_mean(alpha=alpha, adjust=False, ignore_nulls=True).over("sym").alias("e"))
    res = res.with_columns(pl.when(pl.col("x").is_null()).then(None).otherwise(pl.col("e")).alias("e"))
    out = res.select(["id", "e"]).to_arrow()
    out = out.rename_columns(["id", "ema"])
    return sql, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--queries", type=int, default=8, help="queries per case")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    con = common.connect()
    out = [f"# generated by tests/gen/window_diff.py --seed {a.seed} --cases {a.cases}\n"]
    nq = 0
    for k in range(a.cases):
        for stmt in make_case(rng, k):
            con.execute(common.to_duck(stmt))
            out.append(common.slt_statement(stmt))
        for _ in range(a.queries):
            sql, duck = make_query(rng, k)
            try:
                tbl = common.run_arrow(con, common.to_duck(duck or sql))
            except Exception as e:  # a generator bug, not an engine bug
                raise SystemExit(f"DuckDB rejected: {duck or sql}\n  {e}")
            letters, rows = common.format_table(tbl)
            out.append(common.slt_query(sql, letters, "rowsort", common.result_lines(rows, "rowsort")))
            nq += 1
        sql, tbl = ema_case(con, rng, k)
        letters, rows = common.format_table(tbl)
        out.append(common.slt_query(sql, letters, "rowsort", common.result_lines(rows, "rowsort")))
        nq += 1
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {nq} window queries over {a.cases} tables to {a.out}")


if __name__ == "__main__":
    main()
