#!/usr/bin/env python3
"""Fairness benchmark: does a heavy query load hold up ingestion?

Starts `zeptodb serve --in-memory --demo` (release build), then measures the acknowledgement
latency of small InfluxDB line-protocol batches (POST /write, 20 rows each, one keep-alive
connection, one batch after another):
  * idle: nothing else running;
  * loaded: while 2 x cores client threads each run heavy statements back to back (an ASOF
    join over 1M x 1M rows, a 5-minute-bar aggregation, and a 3.4 MB IN list of 400k items),
    so every core is busy with queries and the query slots stay full.
The goal (issue "hostile and unlucky users"): p99 under load within 2x of idle. Reports p50,
p99 and max per phase, the queries completed, and the server's peak RSS.

Usage: bench/ingest_fairness.py [--rows 1000000] [--batches 400] [--bin target/release/zeptodb]
"""
import argparse
import http.client
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from report import md_table  # noqa: E402
from served import Server, log, pct  # noqa: E402


def start(binary, rows, *extra):
    """`zeptodb serve --in-memory --demo --rows ROWS [EXTRA...]`, up."""
    return Server(binary, None, "--demo", "--rows", str(rows), *extra)


def heavy_queries(which):
    in_list = ",".join(str(i) for i in range(400_000))
    qs = [
        "SELECT t.sym, count(*), avg(q.bid) FROM trades t ASOF LEFT JOIN quotes q "
        "ON t.sym = q.sym AND t.ts >= q.ts GROUP BY t.sym",
        "SELECT sym, xbar(INTERVAL '5 minutes', ts) AS bar, first(price), max(price), min(price), last(price), "
        "sum(size) FROM trades GROUP BY sym, bar ORDER BY sym, bar",
        f"SELECT count(*) FROM trades WHERE size IN ({in_list})",
    ]
    return [q for k, q in zip(["asof", "bars", "inlist"], qs) if k in which]


def query_loop(port, stop, done, k, which):
    qs = heavy_queries(which)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    i = k
    while not stop.is_set():
        body = qs[i % len(qs)].encode()
        i += 1
        try:
            conn.request("POST", "/", body=body)
            r = conn.getresponse()
            r.read()
            done[r.status] = done.get(r.status, 0) + 1
        except (OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)


def ingest_latencies(port, batches, tag):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    out = []
    base = 1_800_000_000_000_000_000
    for b in range(batches):
        lines = "\n".join(f"ticks,host=h{j % 4},tag={tag} v={b * 20 + j}i {base + b * 1000 + j}" for j in range(20))
        t0 = time.perf_counter()
        conn.request("POST", "/write", body=lines.encode())
        r = conn.getresponse()
        r.read()
        out.append(time.perf_counter() - t0)
        if r.status >= 300:
            raise SystemExit(f"ingest failed: {r.status}")
        if (b + 1) % 100 == 0:
            log(f"  {tag}: {b + 1}/{batches} batches")
    return out


def ms_cells(xs):
    """p50, p99 and max of latencies in seconds, as table cells in ms."""
    return [f"{pct(xs, 50) * 1e3:.2f}", f"{pct(xs, 99) * 1e3:.2f}", f"{max(xs) * 1e3:.2f}"]


def peak_rss_mib(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    for line in conn.getresponse().read().decode().splitlines():
        if line.startswith("zepto_memory_peak_resident_bytes"):
            return float(line.split()[-1]) / (1 << 20)
    return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batches", type=int, default=400)
    ap.add_argument("--queries", default="asof,bars,inlist", help="heavy statements: asof,bars,inlist")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "zeptodb"))
    a = ap.parse_args()
    cores = os.cpu_count() or 2
    log(f"starting the server with {a.rows} demo rows ...")
    srv = start(a.bin, a.rows)
    port = srv.port
    try:
        log("idle ingest ...")
        idle = ingest_latencies(port, a.batches, "idle")
        stop, done = threading.Event(), {}
        threads = [threading.Thread(target=query_loop, args=(port, stop, done, k, a.queries.split(",")),
                                    daemon=True)
                   for k in range(2 * cores)]
        for t in threads:
            t.start()
        time.sleep(2.0)  # let the query load build up
        log(f"ingest under {2 * cores} heavy query clients ...")
        loaded = ingest_latencies(port, a.batches, "loaded")
        stop.set()
        for t in threads:
            t.join(timeout=120)
        rss = peak_rss_mib(port)
    finally:
        srv.stop()
    md_table(["phase", "p50 ms", "p99 ms", "max ms"],
             [[name] + ms_cells(xs) for name, xs in [("idle", idle), (f"{2 * cores} heavy query clients", loaded)]])
    print(f"\np99 under load / idle: {pct(loaded, 99) / pct(idle, 99):.2f}; "
          f"statements answered during the loaded phase by status: {dict(sorted(done.items()))}; "
          f"server peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
