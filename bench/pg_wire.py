#!/usr/bin/env python3
"""The PostgreSQL door beside QuestDB's PG wire, in one run, through psycopg 3 (issue "The doors
people already use"): the generated trades (bench/harness/gen_data.py, 1M rows by default)
loaded into both over ILP, then

- point queries: one symbol over a one-second window, parameters bound (extended protocol),
  `--points` of them one after another on one connection; p50 and p99 in milliseconds;
- `SELECT * FROM trades` (every row) through a binary cursor, median of `--reps`; rows/s,
  with the CPU seconds the client (psycopg making Python rows) and the server spent on it: the
  client's share caps what any server can reach through psycopg on this machine;
- the same `SELECT *` through `psql` (libpq, text format, rows discarded): a light C client, so
  this measures the server and the protocol;

with the ZeptoDB server's peak RSS. Prints a table and the ratios (ZeptoDB over QuestDB).

    python bench/pg_wire.py [--rows 1000000] [--points 2000] [--reps 3] [--no-questdb]

Needs psycopg (python/requirements-test.txt), Java and Maven for QuestDB
(bench/servers/questdb/questdb.sh).
"""
import argparse
import datetime as dt
import os
import random
import statistics
import subprocess
import sys
import time

import psycopg

import http_load
from engines import QuestDB, Zepto
from http_load import ilp_batches, ingest
from report import Columns
from served import free_port, log, pct, rss_mib

QUERY = "SELECT * FROM trades WHERE sym = %s AND ts >= %s AND ts < %s"


class ZeptoPg(Zepto):
    """`zeptodb serve` in memory with its PostgreSQL door on a free port."""

    def __init__(self, binary):
        self.pg_port = free_port()
        super().__init__(binary, extra=("--pg", f"127.0.0.1:{self.pg_port}"))

    def connect(self):
        return psycopg.connect(host="127.0.0.1", port=self.pg_port, user="bench", dbname="zepto", autocommit=True)


class QuestPg(QuestDB):
    def connect(self):
        return psycopg.connect(host="127.0.0.1", port=8812, user="admin", password="quest", dbname="qdb",
                               autocommit=True)


def points(eng, syms, t0, n, seed):
    """Latencies (ms) of n point queries, each a random symbol over a random second."""
    rnd = random.Random(seed)
    out = []
    with eng.connect() as conn, conn.cursor() as cur:
        for i in range(n + 50):
            start = t0 + dt.timedelta(seconds=rnd.randrange(0, 6 * 3600))
            args = (rnd.choice(syms), start, start + dt.timedelta(seconds=1))
            t = time.perf_counter()
            cur.execute(QUERY, args)
            cur.fetchall()
            if i >= 50:  # after a warm-up
                out.append((time.perf_counter() - t) * 1e3)
    return sorted(out)


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scan(eng, reps):
    """(median seconds, rows, median client CPU s, median server CPU s) of reading every row
    through a binary cursor."""
    times, client, server, rows = [], [], [], 0
    with eng.connect() as conn:
        for _ in range(reps):
            s0, c0, t = cpu_seconds(eng.pid), time.process_time(), time.perf_counter()
            with conn.cursor(binary=True) as cur:
                cur.execute("SELECT * FROM trades")
                rows = len(cur.fetchall())
            times.append(time.perf_counter() - t)
            client.append(time.process_time() - c0)
            server.append(cpu_seconds(eng.pid) - s0)
    return statistics.median(times), rows, statistics.median(client), statistics.median(server)


def psql_scan(eng, reps):
    """Median seconds of `SELECT * FROM trades` through psql, rows discarded."""
    with eng.connect() as conn:
        i = conn.info
        host, port, user, db, password = i.host, i.port, i.user, i.dbname, i.password
    env = dict(os.environ, PGPASSWORD=password or "")
    cmd = ["psql", "-h", host, "-p", str(port), "-U", user, "-d", db, "-At", "-o", "/dev/null", "-c", "SELECT * FROM trades"]
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--points", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-questdb", action="store_true")
    ap.add_argument("--bin", default=os.path.join(http_load.ROOT, "target", "release", "zeptodb"))
    a = ap.parse_args()

    import gen_data
    import pyarrow.parquet as pq
    data = gen_data.dataset(a.rows)
    trades = pq.read_table(f"{data}/trades.parquet")
    syms = sorted(set(trades.column("sym").cast("string").to_pylist()))
    t0 = trades.column("ts").to_pylist()[0].replace(tzinfo=None)
    ilp = ilp_batches(trades, 50_000)
    engines = [ZeptoPg(a.bin)] + ([] if a.no_questdb else [QuestPg()])
    res = {}
    try:
        for eng in engines:
            log(f"== {eng.name}: loading {trades.num_rows:,} rows over ILP")
            ingest(eng, eng.ilp_path(), ilp, trades.num_rows, "text/plain")
            log(f"== {eng.name}: {a.points} point queries")
            lat = points(eng, syms, t0, a.points, 7)
            log(f"== {eng.name}: SELECT * through a binary cursor, {a.reps} times")
            secs, rows, ccpu, scpu = scan(eng, a.reps)
            assert rows == trades.num_rows, (eng.name, rows)
            log(f"== {eng.name}: SELECT * through psql, {a.reps} times")
            psql = psql_scan(eng, a.reps)
            res[eng.name] = {"p50": pct(lat, 50), "p99": pct(lat, 99), "rows_s": rows / secs,
                             "client_cpu": ccpu, "server_cpu": scpu, "psql_rows_s": rows / psql,
                             "rss": rss_mib(eng.pid)}
    finally:
        for eng in engines:
            eng.stop()
    cols = Columns([8], ">", sep=" | ")
    print("\n" + " | ".join([f"{trades.num_rows:,} rows", "point query p50 ms", "p99 ms", "psycopg SELECT * rows/s",
                             "client CPU s", "server CPU s", "psql SELECT * rows/s", "server RSS MiB"]))
    for name, r in res.items():
        print(cols.line([name, f"{r['p50']:.3f}", f"{r['p99']:.3f}", f"{r['rows_s']:,.0f}", f"{r['client_cpu']:.3f}",
                         f"{r['server_cpu']:.3f}", f"{r['psql_rows_s']:,.0f}", f"{r['rss']:.0f}"]))
    if "questdb" in res:
        z, q = res["zeptodb"], res["questdb"]
        print(f"ratios zeptodb/questdb: p99 {z['p99'] / q['p99']:.2f}, psycopg rows/s {z['rows_s'] / q['rows_s']:.2f}x, "
              f"psql rows/s {z['psql_rows_s'] / q['psql_rows_s']:.2f}x, server CPU {z['server_cpu'] / q['server_cpu']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
