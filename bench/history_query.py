#!/usr/bin/env python3
"""Queries over the Parquet history: ZeptoDB vs DuckDB reading the same files.

Data: the bench generator's trades shape (bench/harness/gen_data.py) (ts, sym, price, size; Zipf symbols), spread over
10 trading days. ZeptoDB loads it, moves every row to its history
(`ALTER TABLE trades CONVERT PARTITION TO PARQUET`), and answers over HTTP; DuckDB (same run,
same machine) queries the very files ZeptoDB wrote:
`read_parquet('DIR/history/trades/*/*.parquet', hive_partitioning = true)`.

Reports the median of --reps runs per query, the ratio DuckDB/ZeptoDB (> 1: ZeptoDB faster),
and peak RSS of the ZeptoDB server and of the DuckDB process.

Usage: bench/history_query.py [--rows 10000000] [--reps 5] [--bin target/release/zeptodb]
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import duckdb

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "harness", "gen_data.py")
sys.path.insert(0, HERE)
from report import Columns  # noqa: E402
from served import Server, rss_mib  # noqa: E402

QUERIES = {
    "all days, by symbol": "SELECT sym, count(*) AS n, avg(price) AS px, sum(size) AS vol FROM trades GROUP BY sym ORDER BY sym",
    "one symbol, one day": "SELECT count(*) AS n, avg(price) AS px, max(price) AS hi FROM trades "
                           "WHERE sym = 'S007' AND ts >= '2024-01-05' AND ts < '2024-01-06'",
    "one hour, all symbols": "SELECT sym, count(*) AS n, sum(price * size) / sum(size) AS vwap FROM trades "
                             "WHERE ts >= '2024-01-08 10:00:00' AND ts < '2024-01-08 11:00:00' GROUP BY sym ORDER BY sym",
    "5-minute bars, one symbol, all days": "SELECT xbar(INTERVAL '5 minutes', ts) AS bar, first(price) AS o, max(price) AS h, "
                                           "min(price) AS l, last(price) AS c FROM trades WHERE sym = 'S001' GROUP BY bar ORDER BY bar",
}
# DuckDB spelling of the same questions (first/last by time: arg_min/arg_max).
DUCK = {
    "5-minute bars, one symbol, all days": "SELECT time_bucket(INTERVAL '5 minutes', ts) AS bar, arg_min(price, ts) AS o, "
                                           "max(price) AS h, min(price) AS l, arg_max(price, ts) AS c FROM trades "
                                           "WHERE sym = 'S001' GROUP BY bar ORDER BY bar",
}


def post(port, sql):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/query", data=sql.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bin", default="target/release/zeptodb")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="zepto-hq-")
    srv = None
    try:
        print(f"generating {a.rows:,} trades ...", flush=True)
        subprocess.run([sys.executable, GEN, "--rows", str(a.rows), "--out", os.path.join(tmp, "gen")], check=True,
                       stdout=subprocess.DEVNULL)
        src = os.path.join(tmp, "gen", "trades.parquet")
        spread = os.path.join(tmp, "trades10d.parquet")
        # Ten trading days: row i goes to day i % 10, then time order.
        duckdb.sql(f"COPY (SELECT ts + to_days(CAST((row_number() OVER () - 1) % 10 AS INTEGER)) AS ts, sym, price, size "
                   f"FROM read_parquet('{src}') ORDER BY ts) TO '{spread}' (FORMAT parquet)")
        data = os.path.join(tmp, "data")
        t0 = time.time()
        r = subprocess.run([a.bin, "sql", "--data-dir", data, "-c",
                            "CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT); "
                            f"COPY trades FROM '{spread}'; "
                            "ALTER TABLE trades CONVERT PARTITION TO PARQUET WHERE ts < '2100-01-01'; "
                            # Start the server from a checkpoint, not a replay of the load.
                            "CHECKPOINT"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(r.stderr)
        print(f"loaded and tiered in {time.time() - t0:.1f} s: {r.stdout.strip().splitlines()[-1] if r.stdout else ''}")
        files = os.path.join(data, "history", "trades", "*", "*.parquet")
        nfiles = sum(len(fs) for _, _, fs in os.walk(os.path.join(data, "history")))
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(data, "history")) for f in fs)
        print(f"history: {nfiles} files, {size / 2**20:.0f} MiB")

        srv = Server(a.bin, data, access_log="-")  # the access log on, as `serve` has it by default
        port = srv.port
        rss_idle = rss_mib(srv.pid, "VmHWM")
        con = duckdb.connect()
        con.execute(f"CREATE VIEW trades AS SELECT * FROM read_parquet('{files}', hive_partitioning = true)")
        cols = Columns([40, 11, 10, 10], "<>>>")
        print("\n" + cols.line(["query", "zeptodb ms", "duckdb ms", "duck/zepto"]))
        for name, sql in QUERIES.items():
            z = []
            for _ in range(a.reps):
                t = time.perf_counter()
                zr = post(port, sql)
                z.append(time.perf_counter() - t)
            d = []
            for _ in range(a.reps):
                t = time.perf_counter()
                dr = con.execute(DUCK.get(name, sql)).fetchall()
                d.append(time.perf_counter() - t)
            if zr["rows"] != len(dr):
                sys.exit(f"{name}: zeptodb {zr['rows']} rows, duckdb {len(dr)}")
            zm, dm = statistics.median(z) * 1e3, statistics.median(d) * 1e3
            print(cols.line([name, f"{zm:.1f}", f"{dm:.1f}", f"{dm / zm:.2f}"]))
        print(f"\npeak RSS: zeptodb server {rss_mib(srv.pid, 'VmHWM'):.0f} MiB (after start {rss_idle:.0f}); "
              f"duckdb process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
