#!/usr/bin/env python3
"""Results through the doors: the same queries over the demo's trades (1M rows by default) read
through Arrow Flight SQL (ADBC's driver, as a pandas/Polars user reads them), through HTTP as an
Arrow IPC stream (`/?format=arrow`) and through HTTP as JSON, in one run, with the server's peak
RSS. Prints milliseconds per query (median of REPS) and each door's ratio to Flight SQL.

    python bench/flight_sql.py [--bin target/release/zeptodb] [--rows 1000000] [--reps 5]

Needs pyarrow and adbc-driver-flightsql (python/requirements-test.txt).
"""
import argparse
import json
import statistics
import sys
import tempfile
import time

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa

from report import Columns
from served import Server, free_port

QUERIES = {
    "all 1M rows": "SELECT * FROM trades",
    "one symbol": "SELECT * FROM trades WHERE sym = 'S001'",
    "vwap by sym": "SELECT sym, vwap(price, size), count(*) FROM trades GROUP BY sym",
}


def timed(f, reps):
    out, times = None, []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/zeptodb")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        srv = Server(a.bin, d, "--demo", "--rows", str(a.rows), "--flight-sql", f"127.0.0.1:{port}")
        conn = flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True)
        cur = conn.cursor()

        def via_flight(q):
            cur.execute(q)
            return cur.fetch_arrow_table().num_rows

        def via_arrow(q):
            st, body = srv.request("POST", "/?format=arrow", q.encode())
            assert st == 200, body[:200]
            return pa.ipc.open_stream(body).read_all().num_rows

        def via_json(q):
            st, body = srv.request("POST", "/", q.encode())
            assert st == 200, body[:200]
            return len(json.loads(body)["data"])

        print(f"{a.rows:,} trades; median of {a.reps} (ms); ratio to Flight SQL", file=sys.stderr)
        cols = Columns([14, 9, 11, 17, 17], "<>>>>")
        print(cols.line(["query", "rows", "flight_sql", "http_arrow", "http_json"]))
        for name, q in QUERIES.items():
            f_ms, n = timed(lambda: via_flight(q), a.reps)
            a_ms, n2 = timed(lambda: via_arrow(q), a.reps)
            j_ms, n3 = timed(lambda: via_json(q), a.reps)
            assert n == n2 == n3, (n, n2, n3)
            print(cols.line([name, f"{n:,}", f"{f_ms:9.1f} ms", f"{a_ms:9.1f} ({a_ms / f_ms:4.2f}x)",
                             f"{j_ms:9.1f} ({j_ms / f_ms:4.2f}x)"]))
        with open(f"/proc/{srv.proc.pid}/status") as f:
            hwm = next((int(l.split()[1]) / 1024 for l in f if l.startswith("VmHWM:")), 0.0)
        print(f"server peak RSS {hwm:.0f} MiB")
        cur.close()
        conn.close()
        srv.stop()


if __name__ == "__main__":
    main()
