#!/usr/bin/env python3
"""The small queries a dashboard polls, from Python in process, beside DuckDB and Polars in
one run: the latest trade of a symbol, the newest rows of the table (under no filter, a filter
many rows pass and one few pass), the highest prices and largest trades, the rows under a rare
filter and a count under two, the last price and the trade count by symbol, and aggregates
over a time range (by symbol, of one symbol, a VWAP). ZeptoDB reads
the newest rows of a time-sorted partition first (`TimeTopN`), keeps a TopN's rows by a
threshold on its first key partition by partition, filters partitions on every core (a
column compared with a number straight to the rows it keeps), and reads a GROUP BY of the
symbol with only `count(*)`/`first`/`last` at each partition's ends; a filter or an
aggregate over a partition's whole blocks reads their summaries (least, greatest, sum), and
a time range reads a partition's rows in place.

One data set of `gen_data.py` trades (made into target/bench-data/ when missing, as
bench/growth.py makes it); every engine reads the same Parquet file into memory first
(ZeptoDB through `COPY`), then answers each query `--iters` times: medians in microseconds,
the result converted to Arrow as each engine's users would (`.to_arrow()`,
`.to_arrow_table()`, the Polars frame itself), results checked to agree. Progress goes to
stderr.

    .venv/bin/python bench/dashboard.py [--rows 1000000] [--symbols 100] [--iters 500]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
from growth import dataset  # noqa: E402
from report import md_table  # noqa: E402

SYM = "S001"
# (name, SQL for ZeptoDB and DuckDB, the Polars query on a frame `t`)
QUERIES = [
    ("latest trade of a symbol", f"SELECT * FROM trades WHERE sym = '{SYM}' ORDER BY ts DESC LIMIT 1",
     lambda pl, t: t.filter(pl.col("sym") == SYM).sort("ts", descending=True).head(1)),
    ("newest 10 rows", "SELECT * FROM trades ORDER BY ts DESC LIMIT 10",
     lambda pl, t: t.sort("ts", descending=True).head(10)),
    ("newest 10 rows, size > 1000", "SELECT * FROM trades WHERE size > 1000 ORDER BY ts DESC LIMIT 10",
     lambda pl, t: t.filter(pl.col("size") > 1000).sort("ts", descending=True).head(10)),
    ("newest 10 rows, size > 4000", "SELECT * FROM trades WHERE size > 4000 ORDER BY ts DESC LIMIT 10",
     lambda pl, t: t.filter(pl.col("size") > 4000).sort("ts", descending=True).head(10)),
    ("10 highest prices, latest first", "SELECT * FROM trades ORDER BY price DESC, ts DESC LIMIT 10",
     lambda pl, t: t.sort(["price", "ts"], descending=[True, True]).head(10)),
    ("10 largest trades, oldest first", "SELECT * FROM trades ORDER BY size DESC, ts LIMIT 10",
     lambda pl, t: t.sort(["size", "ts"], descending=[True, False]).head(10)),
    ("rows under a rare filter", "SELECT * FROM trades WHERE size > 4000",
     lambda pl, t: t.filter(pl.col("size") > 4000)),
    ("count under two filters", "SELECT count(*) AS n FROM trades WHERE price > 100 AND size > 3000",
     lambda pl, t: t.filter((pl.col("price") > 100) & (pl.col("size") > 3000)).select(pl.len().alias("n"))),
    # DuckDB's last() is the last row it reads, not the latest: arg_max by time is.
    ("last price by symbol", "SELECT sym, last(price) AS price FROM trades GROUP BY sym",
     lambda pl, t: t.group_by("sym").agg(pl.col("price").last())),
    ("trades by symbol", "SELECT sym, count(*) AS n FROM trades GROUP BY sym",
     lambda pl, t: t.group_by("sym").agg(pl.len().alias("n"))),
]


def window_queries(lo, hi):
    """Aggregates over the middle 40% of the data's time span, which cuts every partition:
    ZeptoDB reads each partition's rows in that range in place (a view of its columns) and
    their whole blocks through the blocks' summaries."""
    a, b = lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.7
    where = f"ts >= TIMESTAMP '{a}' AND ts < TIMESTAMP '{b}'"

    def window(pl):
        return (pl.col("ts") >= a) & (pl.col("ts") < b)

    return [
        ("avg, max, count by symbol, 40% of the day",
         f"SELECT sym, avg(price) AS p, max(size) AS m, count(*) AS n FROM trades WHERE {where} GROUP BY sym",
         lambda pl, t: t.filter(window(pl)).group_by("sym").agg(
             pl.col("price").mean().alias("p"), pl.col("size").max().alias("m"), pl.len().alias("n"))),
        ("one symbol's avg and volume, 40% of the day",
         f"SELECT avg(price) AS p, sum(size) AS s FROM trades WHERE sym = '{SYM}' AND {where}",
         lambda pl, t: t.filter(window(pl) & (pl.col("sym") == SYM)).select(
             pl.col("price").mean().alias("p"), pl.col("size").sum().alias("s"))),
        ("VWAP by symbol, 40% of the day",
         f"SELECT sym, sum(price * size) / sum(size) AS vwap FROM trades WHERE {where} GROUP BY sym",
         lambda pl, t: t.filter(window(pl)).group_by("sym").agg(
             ((pl.col("price") * pl.col("size")).sum() / pl.col("size").sum()).alias("vwap"))),
    ]


def timed(f, iters: int):
    for _ in range(min(20, iters)):
        f()
    us = []
    for _ in range(iters):
        t = time.perf_counter()
        f()
        us.append((time.perf_counter() - t) * 1e6)
    return statistics.median(us)


def canonical(table) -> list:
    """Rows as sorted tuples (symbols as text), floats rounded: comparable across engines."""
    cols = [c.to_pylist() for c in table.columns]
    rows = [tuple(round(v, 6) if isinstance(v, float) else str(v) for v in r) for r in zip(*cols)]
    return sorted(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--symbols", type=int, default=100)
    ap.add_argument("--iters", type=int, default=500)
    a = ap.parse_args()
    path = os.path.join(dataset(a.rows, a.symbols), "trades.parquet")

    import duckdb
    import polars as pl
    import zeptodb

    con = duckdb.connect()
    con.execute(f"CREATE TABLE trades AS SELECT * FROM read_parquet('{path}')")
    frame = pl.read_parquet(path)
    db = zeptodb.connect()
    db.execute("CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)")
    db.execute(f"COPY trades FROM '{path}'")
    duck = {"SELECT sym, last(price) AS price FROM trades GROUP BY sym":
            "SELECT sym, arg_max(price, ts) AS price FROM trades GROUP BY sym"}
    engines = {
        "DuckDB": lambda sql, q: con.sql(duck.get(sql, sql)).to_arrow_table(),
        "Polars": lambda sql, q: q(pl, frame).to_arrow(),
        "ZeptoDB": lambda sql, q: db.sql(sql).to_arrow(),
    }
    lo, hi = con.execute("SELECT min(ts), max(ts) FROM trades").fetchall()[0]
    rows = []
    for name, sql, q in QUERIES + window_queries(lo, hi):
        us, answers = {}, {}
        for engine, run in engines.items():
            answers[engine] = canonical(run(sql, q))
            us[engine] = timed(lambda: run(sql, q), a.iters)
            print(f"dashboard: {engine} {name}: {us[engine]:.1f} us", file=sys.stderr)
        best = min(us["DuckDB"], us["Polars"])
        agree = "yes" if answers["DuckDB"] == answers["Polars"] == answers["ZeptoDB"] else "NO"
        rows.append([name, f"{us['DuckDB']:.1f}", f"{us['Polars']:.1f}", f"{us['ZeptoDB']:.1f}",
                     f"{us['ZeptoDB'] / best:.3f}", agree])
    print(f"\n{a.rows:,} trades over {a.symbols:,} symbols, in process from Python, medians us\n")
    md_table(["query", "DuckDB", "Polars", "ZeptoDB", "ratio to best peer", "results agree"], rows, "<>>>><")


if __name__ == "__main__":
    main()
