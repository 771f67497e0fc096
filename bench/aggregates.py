#!/usr/bin/env python3
"""Aggregates whose GROUP BY leaves out the partition key, beside DuckDB and Polars: no keys,
a filter, and group keys of few, some and very many distinct values. Q2 and Q7 (by symbol,
the partition key) come along for reference. One data set of `gen_data.py` trades, every
engine in process, medians in ms, results checked to agree (row count and first-column sum).

  python bench/aggregates.py [--rows 1000000] [--symbols 100] [--iters 20]
                             [--bin target/release/zepto-bench]

Data goes to target/bench-data/ when missing (as bench/growth.py makes it). ZeptoDB runs through
`zepto-bench --sql`; DuckDB and Polars read the same Parquet file into memory first. Progress
goes to stderr.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from growth import dataset  # noqa: E402
from report import md_table  # noqa: E402

# (name, SQL for ZeptoDB and DuckDB, the Polars query on a frame `t`)
QUERIES = [
    ("count", "SELECT count(*) AS n FROM trades", lambda pl, t: t.select(pl.len().alias("n"))),
    ("sum", "SELECT sum(price) AS s FROM trades", lambda pl, t: t.select(pl.col("price").sum().alias("s"))),
    ("sum_where", "SELECT sum(price) AS s FROM trades WHERE size > 500",
     lambda pl, t: t.filter(pl.col("size") > 500).select(pl.col("price").sum().alias("s"))),
    ("by_mod10", "SELECT size % 10 AS k, sum(price) AS s, count(*) AS n FROM trades GROUP BY k",
     lambda pl, t: t.group_by((pl.col("size") % 10).alias("k")).agg(pl.col("price").sum().alias("s"),
                                                                      pl.len().alias("n"))),
    ("by_size", "SELECT size, count(*) AS n FROM trades GROUP BY size",
     lambda pl, t: t.group_by("size").agg(pl.len().alias("n"))),
    ("by_price", "SELECT price, count(*) AS n FROM trades GROUP BY price",
     lambda pl, t: t.group_by("price").agg(pl.len().alias("n"))),
    ("by_ts", "SELECT ts, count(*) AS n FROM trades GROUP BY ts",
     lambda pl, t: t.group_by("ts").agg(pl.len().alias("n"))),
    ("by_minute", "SELECT time_bucket(INTERVAL 1 minute, ts) AS b, sum(size) AS v, max(price) AS hi FROM trades GROUP BY b",
     lambda pl, t: t.group_by(pl.col("ts").dt.truncate("1m").alias("b")).agg(pl.col("size").sum().alias("v"),
                                                                            pl.col("price").max().alias("hi"))),
    ("Q2", "SELECT sym, avg(price) AS avg_price, max(size) AS max_size, count(*) AS n FROM trades GROUP BY sym",
     lambda pl, t: t.group_by("sym").agg(pl.col("price").mean().alias("avg_price"),
                                         pl.col("size").max().alias("max_size"), pl.len().alias("n"))),
    ("Q7", "SELECT sym, sum(price * size) / sum(size) AS vwap FROM trades GROUP BY sym",
     lambda pl, t: t.group_by("sym").agg(((pl.col("price") * pl.col("size")).sum() / pl.col("size").sum())
                                         .alias("vwap"))),
]


def timed(f, iters: int) -> tuple:
    f()  # warm-up
    ms, out = [], None
    for _ in range(iters):
        t = time.perf_counter()
        out = f()
        ms.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ms), out


def check(rows: int, total: float) -> str:
    return f"{rows}:{total:.6g}"


def checked(sql: str) -> str:
    """The column whose sum is compared: the last one the query names."""
    return sql.split(" FROM ")[0].split(" AS ")[-1].strip()


def duckdb_run(path: str, iters: int) -> dict:
    import duckdb
    con = duckdb.connect()
    con.execute(f"CREATE TABLE trades AS SELECT * FROM read_parquet('{path}')")
    out = {}
    for name, sql, _ in QUERIES:
        ms, r = timed(lambda: con.execute(sql).fetchall(), iters)
        names = [d[0] for d in con.execute(sql).description]
        col = names.index(checked(sql))
        out[name] = (ms, check(len(r), sum(float(x[col] or 0) for x in r)))
        print(f"aggregates: duckdb {name} {ms:.3f} ms", file=sys.stderr)
    return out


def polars_run(path: str, iters: int) -> dict:
    import polars as pl
    t = pl.read_parquet(path)
    out = {}
    for name, sql, q in QUERIES:
        ms, r = timed(lambda: q(pl, t), iters)
        out[name] = (ms, check(r.height, float(r[checked(sql)].fill_null(0).sum())))
        print(f"aggregates: polars {name} {ms:.3f} ms", file=sys.stderr)
    return out


def zepto_run(binary: str, data: str, iters: int) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [binary, "--data", data, "--iters", str(iters), "--json", f.name]
        for name, sql, _ in QUERIES:
            cmd += ["--sql", f"{name}={sql}"]
        subprocess.run(cmd, check=True)
        r = json.load(open(f.name))
    out = {}
    for name, sql, _ in QUERIES:
        c = r["checks"].get(name, {})
        total = c.get("sums", {}).get(checked(sql), 0.0)
        out[name] = (r["queries"].get(name, {}).get("median_ms"), check(c.get("rows", -1), float(total)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--symbols", type=int, default=100)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(HERE), "target", "release", "zepto-bench"))
    a = ap.parse_args()
    data = dataset(a.rows, a.symbols)
    path = os.path.join(data, "trades.parquet")
    res = {"duckdb": duckdb_run(path, a.iters), "polars": polars_run(path, a.iters),
           "zeptodb": zepto_run(a.bin, data, a.iters)}
    print(f"\n{a.rows:,} trades over {a.symbols:,} symbols, medians ms\n")
    rows = []
    for name, _, _ in QUERIES:
        (d, dc), (p, pc), (z, zc) = res["duckdb"][name], res["polars"][name], res["zeptodb"][name]
        best = min(d, p)
        ratio = f"{z / best:.2f}" if z is not None else "error"
        agree = "yes" if dc.split(":")[0] == pc.split(":")[0] == zc.split(":")[0] and \
            all(abs(float(x.split(":")[1]) - float(dc.split(":")[1])) <= 1e-6 * max(1.0, abs(float(dc.split(":")[1])))
                for x in (pc, zc)) else f"no ({dc} {pc} {zc})"
        zs = "error" if z is None else f"{z:.3f}"
        rows.append([name, f"{d:.3f}", f"{p:.3f}", zs, ratio, agree])
    md_table(["query", "DuckDB", "Polars", "ZeptoDB", "ratio to best peer", "results agree"], rows, "<>>>><")


if __name__ == "__main__":
    main()
