#!/usr/bin/env python3
"""Appends while queries read the same table, in process from Python, beside DuckDB.

A table of --rows synthetic trades (100 symbols) is loaded, then --append-rows more rows are
inserted in --batch-row Arrow batches, their times after the table's: first with nothing else
running, then while --readers threads each run `SELECT sym, avg(price), max(size), count(*)
FROM trades GROUP BY sym` back to back. Reports, per phase, the appends' total time, the p50
and p99 of one insert, and the queries answered; each engine runs in its own child process
(peak RSS is its own). ZeptoDB: `zeptodb.connect()` and `db.insert`; DuckDB: one cursor per
thread, `INSERT INTO trades SELECT * FROM batch`.

    .venv/bin/python bench/append_under_reads.py [--rows 10000000] [--append-rows 1000000]
        [--batch-rows 10000] [--readers 1] [--engines zeptodb,duckdb] [--text]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import md_table, run_children  # noqa: E402

QUERY = "SELECT sym, avg(price), max(size), count(*) FROM trades GROUP BY sym"
DAY_NS = 86_400_000_000_000


def trades(n: int, day: int, seed: int, text: bool) -> pa.Table:
    """`n` trades over 100 symbols on day `day` (times sorted within the day); with `text`, a
    VARCHAR column of venue names too."""
    rng = np.random.default_rng(seed)
    syms = np.array([f"S{k:02d}" for k in range(100)], dtype=object)
    t0 = 1_700_000_000_000_000_000 + day * DAY_NS
    cols = {
        "ts": pa.array(np.sort(rng.integers(t0, t0 + DAY_NS, n)), pa.timestamp("ns")),
        "sym": pa.array(syms[rng.integers(0, 100, n)], pa.string()),
        "price": rng.normal(100, 5, n),
        "size": rng.integers(1, 10_000, n),
    }
    if text:
        venues = np.array(["XNAS", "XNYS", "ARCX", "BATS", "IEXG", "EDGX"], dtype=object)
        cols["venue"] = pa.array(venues[rng.integers(0, len(venues), n)], pa.string())
    return pa.table(cols)


class Zepto:
    def __init__(self, text):
        import zeptodb

        self.db = zeptodb.connect()
        venue = ", venue VARCHAR" if text else ""
        self.db.execute(f"CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT{venue})")

    def insert(self, batch):
        self.db.insert("trades", batch)

    def reader(self):
        return lambda: self.db.execute(QUERY).to_arrow()


class Duck:
    def __init__(self, text):
        import duckdb

        self.con = duckdb.connect()
        venue = ", venue VARCHAR" if text else ""
        self.con.execute(f"CREATE TABLE trades (ts TIMESTAMP_NS, sym VARCHAR, price DOUBLE, size BIGINT{venue})")
        self.writer = self.con.cursor()

    def insert(self, batch):
        self.writer.execute("INSERT INTO trades SELECT * FROM batch")

    def reader(self):
        cur = self.con.cursor()
        return lambda: cur.execute(QUERY).to_arrow_table()


def phase(eng, batches, readers: int) -> dict:
    """Insert `batches` one after another while `readers` threads query; the numbers."""
    stop = threading.Event()
    answered = [0] * readers
    failed = []

    def loop(k, run):
        try:
            while not stop.is_set():
                run()
                answered[k] += 1
        except Exception as e:  # reported after the phase: a reader that died measured nothing
            failed.append(e)

    threads = [threading.Thread(target=loop, args=(k, eng.reader())) for k in range(readers)]
    for t in threads:
        t.start()
    if readers:
        time.sleep(0.2)  # the readers running before the first insert
    lat = []
    t0 = time.perf_counter()
    for b in batches:
        a = time.perf_counter()
        eng.insert(b)
        lat.append(time.perf_counter() - a)
    total = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3  # noqa: E731
    return {"readers": readers, "total_ms": total * 1e3, "p50_ms": pick(0.5), "p99_ms": pick(0.99), "queries": sum(answered)}


def child(args) -> dict:
    eng = {"zeptodb": Zepto, "duckdb": Duck}[args.child](args.text)
    load = trades(args.rows, 0, 1, args.text)
    t0 = time.perf_counter()
    for k in range(0, args.rows, 1_000_000):
        eng.insert(load.slice(k, 1_000_000))
    print(f"{args.child}: {args.rows:,} rows loaded in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    out = []
    for day, readers in enumerate([0, args.readers, 0, args.readers], start=1):
        more = trades(args.append_rows, day, day + 1, args.text)
        batches = [more.slice(k, args.batch_rows) for k in range(0, args.append_rows, args.batch_rows)]
        r = phase(eng, batches, readers)
        print(f"{args.child}: {readers} readers: {r['total_ms']:.0f} ms", file=sys.stderr)
        out.append(r)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"engine": args.child, "phases": out, "peak_rss_mib": peak}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--append-rows", type=int, default=1_000_000)
    ap.add_argument("--batch-rows", type=int, default=10_000)
    ap.add_argument("--readers", type=int, default=1)
    ap.add_argument("--engines", default="zeptodb,duckdb")
    ap.add_argument("--text", action="store_true", help="a VARCHAR column (venue) too")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    rows = []
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k not in ("child", "engines", "text")]
    results = run_children(__file__, args.engines.split(","), flags + (["--text"] if args.text else []))
    for e, res in results.items():
        for p in res["phases"]:
            rows.append([e, p["readers"], f"{p['total_ms']:.0f}", f"{p['p50_ms']:.2f}", f"{p['p99_ms']:.2f}",
                         p["queries"], f"{res['peak_rss_mib']:.0f}"])
    print(f"\n{args.append_rows:,} rows appended in {args.batch_rows:,}-row batches to a table of "
          f"{args.rows:,}, four phases (none, {args.readers}, none, {args.readers} readers):\n")
    md_table(["engine", "readers", "appends ms", "insert p50 ms", "insert p99 ms", "queries", "peak RSS MiB"], rows)


if __name__ == "__main__":
    main()
