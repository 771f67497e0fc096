#!/usr/bin/env python3
"""A table replaced over the PostgreSQL door (`DROP TABLE`, `CREATE TABLE`, `COPY ... FROM
STDIN` of `--rows` rows), one by one (autocommit) against one transaction (`BEGIN ... COMMIT`:
the drop, the creation and the rows held until COMMIT stores them as one logged change), on a
durable server (`--data-dir`), through psycopg 3. Meanwhile another connection reads another
table (`SELECT count(*)`) in a loop: its p50/p99/max latency during the replace shows how long
other sessions wait (a COMMIT that drops or makes tables holds the catalog while it logs).

With `--fresh` there is no table to drop: `CREATE TABLE` and `COPY` of a new table, as pandas'
`to_sql` or a migration makes one (held until COMMIT in a transaction since stop 123).

Reports the replace's time, COMMIT's share, the reader's latencies and the server's peak RSS
in each mode; both must leave the same table. No peer: neither DuckDB nor Polars has a
PostgreSQL door, and QuestDB's has no transactions.

    python bench/pg_replace.py [--rows 1000000] [--reps 3] [--fresh]
"""
import argparse
import os
import shutil
import tempfile
import threading
import time

import psycopg

import http_load
from engines import Zepto
from report import md_table
from served import free_port, log, pct, rss_mib


def rows_csv(n):
    return "".join(f"2024-01-02 09:30:{i % 60:02d},S{i % 100},{100.0 + i % 37},{i % 500}\n" for i in range(n))


def replace(conn, data, fresh):
    if not fresh:
        conn.execute("DROP TABLE IF EXISTS trades")
    conn.execute("CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)")
    with conn.cursor().copy("COPY trades FROM STDIN (FORMAT csv)") as cp:
        cp.write(data)


def reader(port, stop, lat):
    with psycopg.connect(host="127.0.0.1", port=port, user="bench", dbname="zepto", autocommit=True) as c:
        while not stop.is_set():
            t = time.perf_counter()
            c.execute("SELECT count(*) FROM other").fetchone()
            lat.append((time.perf_counter() - t) * 1e3)


def run(eng, port, mode, data, fresh):
    """(seconds of the replace, seconds of its COMMIT, the reader's latencies in ms, sum after)."""
    lat, stop = [], threading.Event()
    th = threading.Thread(target=reader, args=(port, stop, lat))
    th.start()
    time.sleep(0.2)
    inside = mode == "one transaction"
    with psycopg.connect(host="127.0.0.1", port=port, user="bench", dbname="zepto", autocommit=not inside) as c:
        t = time.perf_counter()
        replace(c, data, fresh)
        t_commit = time.perf_counter()
        if inside:
            c.commit()
        done = time.perf_counter()
        total = c.execute("SELECT sum(size) FROM trades").fetchone()[0]
    stop.set()
    th.join()
    return done - t, done - t_commit, lat, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fresh", action="store_true", help="make a new table: nothing to drop")
    ap.add_argument("--bin", default=os.path.join(http_load.ROOT, "target", "release", "zeptodb"))
    a = ap.parse_args()
    data = rows_csv(a.rows)
    out, sums = [], set()
    for mode in ["autocommit", "one transaction"] * a.reps:
        port, tmp = free_port(), tempfile.mkdtemp(prefix="zepto-replace-")
        eng = Zepto(a.bin, extra=("--pg", f"127.0.0.1:{port}"), data=os.path.join(tmp, "data"))
        try:
            log(f"== {mode}: replace {a.rows:,} rows")
            eng.sql("CREATE TABLE other (n BIGINT)")
            eng.sql("INSERT INTO other VALUES (1), (2)")
            if not a.fresh:
                eng.sql("CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)")
            secs, commit_s, lat, total = run(eng, port, mode, data, a.fresh)
            sums.add(total)
            out.append([mode, f"{secs:.3f}", f"{commit_s:.3f}", str(len(lat)), f"{pct(lat, 50):.2f}",
                        f"{pct(lat, 99):.2f}", f"{max(lat):.1f}", f"{rss_mib(eng.pid, 'VmHWM'):.0f}"])
        finally:
            eng.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    md_table(["mode", "replace s", "COMMIT s", "reads", "read p50 ms", "read p99 ms", "read max ms",
              "peak RSS MiB"], out, "<>>>>>>>")
    assert len(sums) == 1, f"the modes left different tables: {sums}"
    print(f"both modes left the same table (sum of sizes {sums.pop():,})")


if __name__ == "__main__":
    main()
