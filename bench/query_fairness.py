#!/usr/bin/env python3
"""Fairness among queries: does a short query wait behind heavy ones?

Starts `zeptodb serve --in-memory --demo` (release build) and times short queries over HTTP,
one after another on a keep-alive connection (a point lookup: the last trade of one symbol;
a small join: one symbol's trades and quotes at equal times):
  * idle: nothing else running;
  * loaded: while 24 client processes (at the lowest CPU priority, so they do not take the
    measuring client's core) each send heavy statements back to back: an ASOF join over
    1M x 1M rows, 5-minute bars of every symbol, and a 3.4 MB IN list of 400k items.
The goal (issue 52): the short queries' p99 under 100 ms while the heavy ones run, and the heavy
ones still answered. Reports p50/p99/max per query and phase, the heavy statements answered by
status, and the server's peak RSS. `--heavy-door pg` sends the heavy statements through the
PostgreSQL door (psycopg) instead: every door shares the server's query slots, so they must
not starve the short HTTP queries either. `--light-door flight` times the short queries
through the Flight SQL door (ADBC's driver, one connection) instead of HTTP: small reads there
must not wait behind the heavy statements' slots either.

Usage: bench/query_fairness.py [--rows 1000000] [--light 200] [--heavy 24]
                               [--bin target/release/zeptodb] [--max-queries N] [--heavy-door pg]
                               [--light-door flight] [--heavy-queries asof,bars,inlist]
"""
import argparse
import http.client
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ingest_fairness import ROOT, heavy_queries, ms_cells, peak_rss_mib, start  # noqa: E402
from report import md_table  # noqa: E402
from served import free_port, log  # noqa: E402

LIGHT = {
    "point lookup": "SELECT * FROM trades WHERE sym = 'S050' ORDER BY ts DESC LIMIT 1",
    "small join": "SELECT count(*), avg(q.bid) FROM (SELECT * FROM trades WHERE sym = 'S090') t "
                  "JOIN (SELECT * FROM quotes WHERE sym = 'S090') q ON t.ts = q.ts",
}

# One heavy client over the PostgreSQL door: its statements in turn until killed; prints 200
# for an answer, the SQLSTATE for an error.
HEAVY_PG_CLIENT = """
import psycopg, sys
qs = [l for l in sys.stdin.read().split("\\n;;\\n") if l]
i = int(sys.argv[2])
conn = None
while True:
    try:
        conn = conn or psycopg.connect(host="127.0.0.1", port=int(sys.argv[1]), user="bench", dbname="zepto",
                                       autocommit=True)
        conn.execute(qs[i % len(qs)]).fetchall()
        print(200, flush=True)
    except psycopg.Error as e:
        print(getattr(e, "sqlstate", None) or "error", flush=True)
        if conn is not None and conn.closed:
            conn = None
    i += 1
"""

# One heavy client: its statements in turn until killed; prints each answer's status.
HEAVY_CLIENT = """
import http.client, sys
qs = [l for l in sys.stdin.read().split("\\n;;\\n") if l]
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=300)
i = int(sys.argv[2])
while True:
    try:
        conn.request("POST", "/", body=qs[i % len(qs)].encode())
        r = conn.getresponse()
        r.read()
        print(r.status, flush=True)
    except (OSError, http.client.HTTPException):
        conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=300)
    i += 1
"""


def light_latencies(port, n, tag):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    out = {k: [] for k in LIGHT}
    for i in range(n):
        for name, sql in LIGHT.items():
            t0 = time.perf_counter()
            conn.request("POST", "/", body=sql.encode())
            r = conn.getresponse()
            r.read()
            out[name].append(time.perf_counter() - t0)
            if r.status != 200:
                raise SystemExit(f"{name} failed: {r.status}")
        time.sleep(0.02)
        if (i + 1) % 50 == 0:
            log(f"  {tag}: {i + 1}/{n}")
    return out


def light_latencies_flight(port, n, tag):
    """`light_latencies` through the Flight SQL door: each query executed and fetched whole."""
    from adbc_driver_flightsql.dbapi import connect

    out = {k: [] for k in LIGHT}
    with connect(f"grpc://127.0.0.1:{port}") as conn, conn.cursor() as cur:
        for i in range(n):
            for name, sql in LIGHT.items():
                t0 = time.perf_counter()
                cur.execute(sql)
                cur.fetchall()
                out[name].append(time.perf_counter() - t0)
            time.sleep(0.02)
            if (i + 1) % 50 == 0:
                log(f"  {tag}: {i + 1}/{n}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--light", type=int, default=200, help="rounds of the short queries per phase")
    ap.add_argument("--heavy", type=int, default=24, help="heavy client processes")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "zeptodb"))
    ap.add_argument("--max-queries", type=int, help="the server's --max-queries (default: its own)")
    ap.add_argument("--heavy-door", choices=["http", "pg"], default="http", help="the heavy clients' door")
    ap.add_argument("--light-door", choices=["http", "flight"], default="http", help="the short queries' door")
    ap.add_argument("--heavy-queries", default="asof,bars,inlist",
                    help="the heavy statements the clients send in turn (of asof, bars, inlist)")
    a = ap.parse_args()
    log(f"starting the server with {a.rows} demo rows ...")
    pg_port, flight_port = free_port(), free_port()
    extra = (["--max-queries", str(a.max_queries)] if a.max_queries else []) + ["--pg", f"127.0.0.1:{pg_port}"]
    extra += ["--flight-sql", f"127.0.0.1:{flight_port}"] if a.light_door == "flight" else []
    srv = start(a.bin, a.rows, *extra)
    port = srv.port
    if a.light_door == "flight":
        light = lambda n, tag: light_latencies_flight(flight_port, n, tag)  # noqa: E731
    else:
        light = lambda n, tag: light_latencies(port, n, tag)  # noqa: E731
    client, heavy_port = (HEAVY_PG_CLIENT, pg_port) if a.heavy_door == "pg" else (HEAVY_CLIENT, port)
    clients = []
    try:
        log("idle ...")
        idle = light(a.light, "idle")
        body = "\n;;\n".join(heavy_queries(a.heavy_queries.split(",")))
        t0 = time.perf_counter()
        for k in range(a.heavy):
            c = subprocess.Popen([sys.executable, "-c", client, str(heavy_port), str(k)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, preexec_fn=lambda: os.nice(19))
            c.stdin.write(body)
            c.stdin.close()
            clients.append(c)
        time.sleep(3.0)  # let the heavy load fill the server
        log(f"under {a.heavy} heavy clients ({a.heavy_door}) ...")
        loaded = light(a.light, "loaded")
        secs = time.perf_counter() - t0
        for c in clients:
            c.kill()
        statuses = {}
        for c in clients:
            for line in c.stdout.read().split():
                statuses[line] = statuses.get(line, 0) + 1
        rss = peak_rss_mib(port)
    finally:
        for c in clients:
            c.kill()
        srv.stop()
    md_table([f"query ({a.light_door})", "phase", "p50 ms", "p99 ms", "max ms"],
             [[name, phase] + ms_cells(xs) for name in LIGHT
              for phase, xs in [("idle", idle[name]), (f"{a.heavy} heavy {a.heavy_door} clients", loaded[name])]])
    print(f"\nheavy statements answered from their start to the end of the loaded phase ({secs:.0f} s), by status: "
          f"{dict(sorted(statuses.items()))}, {sum(statuses.values()) / secs:.1f}/s; server peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
