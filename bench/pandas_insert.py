#!/usr/bin/env python3
"""A pandas DataFrame into each engine, in process from Python: ZeptoDB's `db.insert` beside
Polars' `from_pandas` and DuckDB's `CREATE TABLE ... AS SELECT * FROM df`.

A frame of --rows synthetic trades (ts, sym over 100 symbols, price, size) is inserted whole,
--reps times, with its `sym` column in each of the forms pandas users hold strings in:
`str` (pandas 3's default, Arrow-backed), `object` with every row its own string object (as
`astype(object)` makes them), `object` with rows sharing one object per value (as `read_csv`
makes them before pandas 3), and `category`. ZeptoDB's table exists before each insert
(`DROP` and `CREATE` outside the timed region). Reports the median time per engine and form
and the ratio to the best peer; each engine runs in its own child process (peak RSS is its
own).

    .venv/bin/python bench/pandas_insert.py [--rows 1000000] [--reps 9] [--engines zeptodb,polars,duckdb]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import md_table, run_children  # noqa: E402

FORMS = ["str", "object, an object a row", "object, shared objects", "category"]


def frame(n: int, form: str) -> pd.DataFrame:
    """`n` trades over 100 symbols, `sym` in `form` (module docs)."""
    rng = np.random.default_rng(7)
    names = [f"S{k:03d}" for k in range(100)]
    pick = rng.integers(0, 100, n)
    if form == "object, an object a row":
        sym = pd.Series(["".join(["S", names[k][1:]]) for k in pick], dtype=object)
    elif form == "object, shared objects":
        sym = pd.Series([names[k] for k in pick], dtype=object)
    else:
        sym = pd.Series(np.array(names)[pick]).astype(form)
    ts = np.sort(rng.integers(1_700_000_000_000_000_000, 1_700_086_400_000_000_000, n))
    return pd.DataFrame({"ts": pd.to_datetime(ts, unit="ns"), "sym": sym,
                         "price": rng.normal(100, 5, n), "size": rng.integers(1, 10_000, n)})


def inserter(engine: str):
    """A function inserting a frame, and one run before each insert, untimed."""
    if engine == "zeptodb":
        import zeptodb

        db = zeptodb.connect()

        def fresh():
            db.execute("DROP TABLE IF EXISTS t")
            db.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT) "
                       "TIMESTAMP(ts) PARTITION BY sym")

        return (lambda df: db.insert("t", df)), fresh
    if engine == "polars":
        import polars as pl

        return pl.from_pandas, lambda: None
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()

        def insert(df):
            con.register("df", df)
            con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM df")
            con.unregister("df")

        return insert, lambda: None
    raise SystemExit(f"unknown engine {engine}")


def child(args) -> dict:
    insert, fresh = inserter(args.child)
    out = {}
    for form in FORMS:
        df = frame(args.rows, form)
        times = []
        for _ in range(args.reps):
            fresh()
            t0 = time.perf_counter()
            insert(df)
            times.append(time.perf_counter() - t0)
        out[form] = statistics.median(times) * 1e3
        print(f"{args.child}: {form}: {out[form]:.1f} ms", file=sys.stderr)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"engine": args.child, "ms": out, "peak_rss_mib": peak}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--engines", default="zeptodb,polars,duckdb")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    res = run_children(__file__, args.engines.split(","), [f"--rows={args.rows}", f"--reps={args.reps}"])
    rows = []
    for form in FORMS:
        peers = [res[e]["ms"][form] for e in res if e != "zeptodb"]
        best = min(peers) if peers else None
        for e in res:
            ms = res[e]["ms"][form]
            ratio = f"{ms / best:.2f}" if e == "zeptodb" and best else ""
            rows.append([form, e, f"{ms:.1f}", ratio, f"{res[e]['peak_rss_mib']:.0f}"])
    print(f"\nA {args.rows:,}-row pandas DataFrame inserted whole, median of {args.reps}:\n")
    md_table(["sym as", "engine", "ms", "ZeptoDB / best peer", "peak RSS MiB"], rows)


if __name__ == "__main__":
    main()
