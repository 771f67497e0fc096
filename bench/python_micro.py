#!/usr/bin/env python3
"""Micro-benchmarks of the Python package in process, beside DuckDB and Polars in one run:

  A. one column of a result to NumPy / to a DLPack tensor (per call, many iterations)
  B. a 10k-row result to pandas (query + conversion)
  C. one 1M-row pandas DataFrame inserted (beside Polars concat and DuckDB INSERT ... FROM df)

Data: synthetic trades (ts, sym of 100 symbols, price, size), 1M rows by default, made with
NumPy (no files). Prints a Markdown table per part; bench/README.md records a run.

    .venv/bin/python bench/python_micro.py [--rows 1000000] [--reps 15]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa

import zeptodb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import md_table  # noqa: E402


def trades(n: int, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    syms = np.array([f"S{k:02d}" for k in range(100)], dtype=object)
    return pd.DataFrame(
        {
            "ts": np.sort(rng.integers(1_700_000_000_000_000_000, 1_700_086_400_000_000_000, n)).astype(
                "datetime64[ns]"
            ),
            "sym": syms[rng.integers(0, 100, n)],
            "price": rng.normal(100, 5, n),
            "size": rng.integers(1, 10_000, n),
        }
    )


DDL = "CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT) TIMESTAMP(ts) PARTITION BY sym"


def per_call_ns(fn, min_time=0.5) -> float:
    """Median over 7 rounds of the mean time per call, each round at least `min_time / 7` s."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        if time.perf_counter_ns() - t0 > min_time / 7 * 1e9:
            break
        n *= 2
    rounds = []
    for _ in range(7):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(rounds)


def median_ms(fn, reps: int, setup=None) -> float:
    fn() if setup is None else (setup(), fn())
    out = []
    for _ in range(reps):
        if setup is not None:
            setup()
        gc.collect()
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(out)


def column_to_numpy(db, df_pl: pl.DataFrame, df_pd: pd.DataFrame):
    """Part A: a result kept, one column taken out again and again (the view, not a copy)."""
    q = "SELECT price, size FROM trades WHERE sym = 'S07'"
    r = db.sql(q)
    assert r._src.num_batches == 1
    price = r.to_numpy()["price"]
    assert price.ctypes.data == r._src.buffer_address(0, 0)
    rows = [
        ("`r.tensor(\"price\")` (the DLPack-able object)", per_call_ns(lambda: r.tensor("price"))),
        ("`np.from_dlpack(r.tensor(\"price\"))`", per_call_ns(lambda: np.from_dlpack(r.tensor("price")))),
        ("`r.column_chunks(\"price\")`", per_call_ns(lambda: r.column_chunks("price"))),
        ("`r.to_numpy()[\"price\"]` (both columns converted)", per_call_ns(lambda: r.to_numpy()["price"])),
        ("`db.sql(q).to_numpy()` (query + result + both columns)", per_call_ns(lambda: db.sql(q).to_numpy())),
        ("`db.sql(q)` alone", per_call_ns(lambda: db.sql(q))),
    ]
    peers = [
        ("Polars `df[\"price\"].to_numpy()` (a frame kept)", per_call_ns(lambda: df_pl["price"].to_numpy())),
        ("pandas `df[\"price\"].to_numpy()` (a frame kept)", per_call_ns(lambda: df_pd["price"].to_numpy())),
    ]
    print(f"\nA. one column of a {r.num_rows}-row result to NumPy, per call")
    md_table(["call", "ns per call"], [[name, f"{ns:,.0f}"] for name, ns in rows + peers])
    return rows + peers


def result_to_pandas(db, con, df_pl: pl.DataFrame, reps: int):
    """Part B: one symbol's 10k rows, query and conversion to a pandas DataFrame."""
    q = "SELECT * FROM trades WHERE sym = 'S07'"
    n = db.sql(q).num_rows
    got = {
        "ZeptoDB `db.sql(q).to_pandas()`": median_ms(lambda: db.sql(q).to_pandas(), reps),
        "DuckDB `con.sql(q).df()`": median_ms(lambda: con.sql(q).df(), reps),
        "Polars `df.filter(sym == 'S07').to_pandas()`": median_ms(
            lambda: df_pl.filter(pl.col("sym") == "S07").to_pandas(), reps
        ),
    }
    r = db.sql(q)
    got["ZeptoDB conversion alone (`to_pandas()` of a fresh result)"] = median_ms(
        lambda: zeptodb.Result(r._src).to_pandas(), reps
    )
    a, b, c = (
        db.sql(q).to_pandas().sort_values("ts", kind="stable").reset_index(drop=True),
        con.sql(q).df().sort_values("ts", kind="stable").reset_index(drop=True),
        df_pl.filter(pl.col("sym") == "S07").to_pandas(),
    )
    assert len(a) == len(b) == len(c) == n
    assert np.allclose(a["price"].sum(), b["price"].sum()) and a["size"].sum() == b["size"].sum() == c["size"].sum()
    print(f"\nB. a {n}-row result to pandas, median of {reps}")
    md_table(["engine", "ms"], [[k, f"{v:.3f}"] for k, v in got.items()])
    return got


def insert_frame(df: pd.DataFrame, reps: int):
    """Part C: one DataFrame of all the rows into an empty table."""
    got = {}
    for label, frame in (("sym as str", df), ("sym as category", df.astype({"sym": "category"}))):
        state = {}

        def z_setup():
            d = zeptodb.connect()
            d.execute(DDL)
            state["db"] = d

        def duck_setup():
            c = duckdb.connect()
            c.execute("CREATE TABLE trades (ts TIMESTAMP_NS, sym VARCHAR, price DOUBLE, size BIGINT)")
            state["con"] = c

        def pl_setup():
            state["pl"] = pl.DataFrame(
                schema={"ts": pl.Datetime("ns"), "sym": pl.String, "price": pl.Float64, "size": pl.Int64}
            )

        def duck_insert():
            f = frame  # noqa: F841 - read by name by DuckDB's replacement scan
            state["con"].execute("INSERT INTO trades SELECT * FROM f")

        def pl_concat():
            state["pl"] = pl.concat([state["pl"], pl.from_pandas(frame).cast({"sym": pl.String})])

        got[f"ZeptoDB `db.insert(df)`, {label}"] = median_ms(lambda: state["db"].insert("trades", frame), reps, z_setup)
        got[f"Polars `pl.concat([t, pl.from_pandas(df)])`, {label}"] = median_ms(pl_concat, reps, pl_setup)
        got[f"DuckDB `INSERT INTO t SELECT * FROM df`, {label}"] = median_ms(duck_insert, reps, duck_setup)
        assert state["db"].sql("SELECT count(*) FROM trades").fetchone()[0] == len(frame)
        assert state["con"].sql("SELECT count(*) FROM trades").fetchone()[0] == len(frame)
        assert state["pl"].height == len(frame)
    print(f"\nC. one {len(df):,}-row pandas DataFrame into an empty table, median of {reps}")
    md_table(["engine", "ms", "M rows/s"], [[k, f"{v:.1f}", f"{len(df) / v / 1e3:.1f}"] for k, v in got.items()])
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    df = trades(args.rows)
    db = zeptodb.connect()
    db.execute(DDL)
    db.insert("trades", df)
    con = duckdb.connect()
    con.execute("CREATE TABLE trades AS SELECT * FROM df")
    df_pl = pl.from_pandas(df)
    one = df[df["sym"] == "S07"].reset_index(drop=True)
    print(
        f"zeptodb {zeptodb.__version__}, duckdb {duckdb.__version__}, polars {pl.__version__}, "
        f"pandas {pd.__version__}, pyarrow {pa.__version__}, numpy {np.__version__}; {args.rows:,} rows"
    )
    column_to_numpy(db, pl.from_pandas(one), one)
    result_to_pandas(db, con, df_pl, args.reps)
    insert_frame(df, args.reps)


if __name__ == "__main__":
    main()
