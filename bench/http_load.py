#!/usr/bin/env python3
"""Load benchmark of the HTTP door: ZeptoDB beside QuestDB, same data and workload, one run.

Measures (loopback only, every run bounded in time):
  * ILP ingest rows/s: the benchmark trades as InfluxDB line protocol, POSTed in batches over
    keep-alive connections to ZeptoDB's /write and QuestDB's /write (ILP over HTTP); QuestDB
    applies writes asynchronously, so its clock stops when count() shows every row;
  * CSV ingest rows/s (ZeptoDB /write?format=csv; QuestDB /imp);
  * requests/s and p50/p99 latency (wrk, closed loop: as fast as the server answers) of a
    point query (one symbol, one second of trades) and of SELECT 1, at 64/512/4096 connections;
  * p50/p99 of the point query at a fixed offered rate over 512 connections (oha, open loop
    with latency correction), the number a latency goal is about: at saturation a closed loop
    only measures queueing (512 connections / throughput);
  * ZeptoDB throughput at 1, 2 and 4 worker threads (point query, 512 connections);
  * server RSS with 4096 idle keep-alive connections, per connection.

Needs wrk (Debian: apt-get install wrk), oha (cargo install oha) and, for the peer, Java 17+ and Maven
(bench/servers/questdb/questdb.sh). Both servers are engines.py's. Results: a table on stdout, JSON with --json.

Usage: bench/http_load.py [--rows 1000000] [--duration 10] [--no-questdb]
"""
import argparse
import http.client
import json
import os
import re
import resource
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "harness"))
from engines import QuestDB, Zepto  # noqa: E402
from report import Columns, write_json  # noqa: E402
from served import log, post, rss_mib  # noqa: E402

POINT_TS = "2024-01-02T12:00:00"
POINT = ("SELECT * FROM trades WHERE sym = 'S042' AND ts >= '2024-01-02T12:00:00' "
         "AND ts < '2024-01-02T12:00:01'")


def bodies(trades, batch_rows, line, header=""):
    """The trades cut into POST bodies of `batch_rows` rows, each row rendered by `line`."""
    cols = (trades.column("ts").cast("int64").to_pylist(), trades.column("sym").cast("string").to_pylist(),
            trades.column("price").to_pylist(), trades.column("size").to_pylist())
    rows = list(zip(*cols))
    return [(header + "".join(line(*r) for r in rows[s:s + batch_rows])).encode()
            for s in range(0, len(rows), batch_rows)]


def ilp_batches(trades, batch_rows):
    return bodies(trades, batch_rows, lambda ts, sym, px, size: f"trades,sym={sym} price={px!r},size={size}i {ts}\n")


def csv_batches(trades, batch_rows):
    return bodies(trades, batch_rows, lambda ts, sym, px, size: f"{ts},{sym},{px!r},{size}\n",
                  header="ts,sym,price,size\n")


def ingest(eng, path, batches, rows, ctype, clients=2):
    """POST all batches over `clients` keep-alive connections; rows/s until all are visible."""
    import threading
    eng.create()
    conns = [http.client.HTTPConnection("127.0.0.1", eng.port, timeout=600) for _ in range(clients)]
    errors = []

    def worker(k):
        try:
            for b in batches[k::clients]:
                post(eng.port, path, b, ctype, conns[k])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    while eng.count() < rows:
        if time.perf_counter() - t0 > 600:
            raise RuntimeError(f"{eng.name}: rows never all visible")
        time.sleep(0.02)
    secs = time.perf_counter() - t0
    return rows / secs


def wrk(port, path, conns, duration):
    threads = min(conns, 2)
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{conns}", f"-d{duration}s", "--latency", "--timeout", "10s",
                          f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout

    def lat(label):
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not m:
            return float("nan")
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errs = re.search(r"Socket errors:.*", out)
    return {"rps": rps, "p50_ms": lat("50"), "p99_ms": lat("99"),
            "non2xx": int(non2xx.group(1)) if non2xx else 0, "socket_errors": errs.group(0) if errs else ""}


def fmt_run(r):
    bad = " (errors)" if r.get("non2xx") or r.get("socket_errors") or r.get("error") else ""
    return f"{r['rps']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f}{bad}"


def oha_fixed_rate(port, path, conns, rate, duration):
    out = subprocess.run(["oha", "-z", f"{duration}s", "-c", str(conns), "-q", str(rate), "--latency-correction",
                          "--no-tui", "--output-format", "json", f"http://127.0.0.1:{port}{path}"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    p = d["latencyPercentiles"]
    return {"rate": rate, "rps": d["summary"]["requestsPerSec"], "success": d["summary"]["successRate"],
            "p50_ms": p["p50"] * 1e3, "p99_ms": p["p99"] * 1e3, "p999_ms": p["p99.9"] * 1e3}


def idle_connections(eng, n):
    """RSS growth of the server with n idle keep-alive connections (each served one request)."""
    before = rss_mib(eng.pid)
    socks = []
    req = b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n"
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", eng.port), timeout=10)
            s.sendall(req)
            socks.append(s)
        except OSError:
            break  # the server's connection limit (QuestDB's default is below 4096)
    live = 0
    for s in socks:
        try:
            live += bool(s.recv(4096))
        except OSError:
            pass
    time.sleep(1.0)
    after = rss_mib(eng.pid)
    for s in socks:
        s.close()
    return {"connections": live, "rss_before_mib": before, "rss_after_mib": after,
            "kib_per_connection": (after - before) * 1024 / max(live, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    ap.add_argument("--conns", default="64,512,4096")
    ap.add_argument("--batch", type=int, default=50_000, help="rows per ingest POST")
    ap.add_argument("--rate", type=int, default=5000, help="offered req/s for the fixed-rate latency run")
    ap.add_argument("--no-questdb", action="store_true")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "zeptodb"))
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    conns = [int(c) for c in a.conns.split(",")]

    import gen_data
    import pyarrow.parquet as pq
    data = gen_data.dataset(a.rows)
    trades = pq.read_table(f"{data}/trades.parquet")
    log("preparing ILP and CSV bodies ...")
    ilp = ilp_batches(trades, a.batch)
    csv = csv_batches(trades, a.batch)
    rows = trades.num_rows

    engines = [Zepto(a.bin)]
    if not a.no_questdb:
        engines.append(QuestDB())
    res = {"rows": rows, "engines": {}}
    try:
        for eng in engines:
            r = res["engines"][eng.name] = {}
            log(f"== {eng.name}: ILP ingest of {rows:,} rows")
            r["ilp_rows_per_s"] = ingest(eng, eng.ilp_path(), ilp, rows, "text/plain")
            if eng.csv_path():
                log(f"== {eng.name}: CSV ingest")
                r["csv_rows_per_s"] = ingest(eng, eng.csv_path(), csv, rows, "text/csv")
                ingest(eng, eng.ilp_path(), ilp, rows, "text/plain")  # leave the ILP-loaded table
            r["rss_loaded_mib"] = rss_mib(eng.pid)
            for qname, q in (("point", POINT), ("select1", "SELECT 1")):
                for c in conns:
                    log(f"== {eng.name}: {qname} at {c} connections")
                    try:
                        r[f"{qname}_c{c}"] = wrk(eng.port, eng.query_path(q), c, a.duration)
                    except Exception as e:  # noqa: BLE001 - a peer failing a run is a result
                        log(f"   failed: {e}")
                        r[f"{qname}_c{c}"] = {"rps": float("nan"), "p50_ms": float("nan"),
                                              "p99_ms": float("nan"), "error": str(e)[:200]}
            log(f"== {eng.name}: point at {a.rate} req/s over 512 connections")
            try:
                r["point_fixed_rate"] = oha_fixed_rate(eng.port, eng.query_path(POINT), 512, a.rate, a.duration)
            except Exception as e:  # noqa: BLE001
                log(f"   failed: {e}")
                r["point_fixed_rate"] = {"p50_ms": float("nan"), "p99_ms": float("nan"), "error": str(e)[:200]}
            log(f"== {eng.name}: 4096 idle connections")
            r["idle"] = idle_connections(eng, 4096)
            r["rss_peak_mib"] = max(r["rss_loaded_mib"], r["idle"]["rss_after_mib"])
    finally:
        for eng in engines:
            eng.stop()
    # An empty server's footprint with 4096 idle keep-alive connections (the goal's setting).
    z = Zepto(a.bin)
    try:
        res["idle_empty"] = idle_connections(z, 4096)
    finally:
        z.stop()
    # Worker-thread sweep (ZeptoDB only).
    sweep = res["threads"] = {}
    for t in (1, 2, 4):
        z = Zepto(a.bin, threads=t)
        try:
            ingest(z, z.ilp_path(), ilp, rows, "text/plain")
            log(f"== zeptodb --threads {t}: point at 512 connections")
            sweep[t] = wrk(z.port, z.query_path(POINT), 512, a.duration)
        finally:
            z.stop()

    print(f"\nHTTP load, {rows:,} trades, loopback, wrk -t2, {a.duration} s per run (client and server share the cores)")
    names = list(res["engines"])
    cols = Columns([38] + [30] * len(names), "<" + ">" * len(names), sep="")
    print(cols.line(["measure"] + names))

    def row(label, f):
        print(cols.line([label] + [f(res["engines"][n]) for n in names]))

    row("ILP ingest rows/s", lambda r: f"{r['ilp_rows_per_s']:,.0f}")
    row("CSV ingest rows/s", lambda r: f"{r['csv_rows_per_s']:,.0f}" if "csv_rows_per_s" in r else "-")
    for qname in ("point", "select1"):
        for c in conns:
            row(f"{qname} c={c} req/s | p50 | p99 ms", lambda r, k=f"{qname}_c{c}": fmt_run(r[k]))
    row(f"point @{a.rate}/s c=512 p50 | p99 ms",
        lambda r: f"{r['point_fixed_rate']['p50_ms']:.2f} | {r['point_fixed_rate']['p99_ms']:.2f}")
    row("RSS loaded MiB", lambda r: f"{r['rss_loaded_mib']:,.0f}")
    row("RSS +4096 idle conns MiB", lambda r: f"{r['idle']['rss_after_mib'] - r['idle']['rss_before_mib']:,.1f}")
    row("idle connections held", lambda r: f"{r['idle']['connections']:,}")
    row("KiB per idle connection", lambda r: f"{r['idle']['kib_per_connection']:,.1f}")
    e = res["idle_empty"]
    print(f"zeptodb, no data: RSS {e['rss_before_mib']:.1f} MiB idle, {e['rss_after_mib']:.1f} MiB with "
          f"{e['connections']:,} idle connections ({e['kib_per_connection']:.1f} KiB each)")
    for t, v in sweep.items():
        print(f"zeptodb --threads {t}: point c=512 {v['rps']:,.0f} req/s, p50 {v['p50_ms']:.2f} ms, p99 {v['p99_ms']:.2f} ms")
    if "questdb" in res["engines"]:
        z, q = res["engines"]["zeptodb"], res["engines"]["questdb"]
        print(f"ILP ingest ratio zeptodb/questdb: {z['ilp_rows_per_s'] / q['ilp_rows_per_s']:.2f}x")
    write_json(a.json, res)


if __name__ == "__main__":
    main()
