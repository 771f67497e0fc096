#!/usr/bin/env python3
"""COPY over the PostgreSQL door (issue "The tools analysts already use"), in one run: the
generated trades (bench/harness/gen_data.py, 1M rows by default) as CSV

- into ZeptoDB through psycopg's `cursor.copy()` (`COPY trades FROM STDIN (FORMAT csv)`, 1 MiB
  blocks), and the same rows through ZeptoDB's own `/write` (CSV bodies of 50,000 rows, two
  keep-alive connections): rows/s, median of `--reps` fresh tables;
- out again through `COPY trades TO STDOUT (FORMAT csv)`: rows/s;
- into QuestDB 9 through the same `COPY ... FROM STDIN` on its PostgreSQL door: its answer is
  printed (QuestDB's door does not take COPY FROM STDIN; its bulk path is HTTP `/imp`), unless
  `--no-questdb`;

with ZeptoDB's peak RSS (VmHWM) after each phase. Prints a table and the ratios.

    python bench/pg_copy.py [--rows 1000000] [--reps 3] [--no-questdb]

Needs psycopg (python/requirements-test.txt); Java and Maven for QuestDB
(bench/servers/questdb/questdb.sh).
"""
import argparse
import io
import os
import statistics
import sys
import time

import psycopg

import http_load
from engines import QuestDB
from http_load import csv_batches, ingest
from served import log, rss_mib
from pg_wire import ZeptoPg
from report import Columns

# The table /write loads too (engines.Zepto.create).
CREATE = "CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)"


def csv_text(trades):
    """The trades as CSV lines (no header), timestamps as PostgreSQL writes them."""
    out = io.StringIO()
    for ts, sym, px, size in zip(*(trades.column(c).to_pylist() for c in ("ts", "sym", "price", "size"))):
        out.write(f"{ts.isoformat(' ')},{sym},{px!r},{size}\n")
    return out.getvalue().encode()


def copy_in(eng, data, rows):
    """Seconds to COPY `data` into a fresh `trades` through psycopg, in 1 MiB blocks."""
    with eng.connect() as conn, conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS trades")
        cur.execute(CREATE)
        t = time.perf_counter()
        with cur.copy("COPY trades FROM STDIN (FORMAT csv)") as cp:
            for i in range(0, len(data), 1 << 20):
                cp.write(data[i:i + (1 << 20)])
        secs = time.perf_counter() - t
        assert cur.rowcount == rows, cur.rowcount
    return secs


def copy_out(eng, rows):
    """Seconds to read every row out through COPY TO STDOUT."""
    with eng.connect() as conn, conn.cursor() as cur:
        t, n = time.perf_counter(), 0
        with cur.copy("COPY trades TO STDOUT (FORMAT csv)") as cp:
            for block in cp:
                n += len(block)
        secs = time.perf_counter() - t
        assert cur.rowcount == rows, cur.rowcount
    return secs


def write_in(eng, trades, rows):
    """Seconds to load the same rows through /write (CSV) into a fresh table."""
    t = time.perf_counter()
    ingest(eng, eng.csv_path(), csv_batches(trades, 50_000), rows, "text/csv")
    return time.perf_counter() - t


def questdb_copy(data):
    """What QuestDB's PostgreSQL door answers to the same COPY FROM STDIN."""
    q = QuestDB()
    try:
        with psycopg.connect(host="127.0.0.1", port=8812, user="admin", password="quest", dbname="qdb",
                             autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size LONG) "
                        "TIMESTAMP(ts) PARTITION BY DAY")
            t = time.perf_counter()
            with cur.copy("COPY trades FROM STDIN (FORMAT csv)") as cp:
                cp.write(data[: 1 << 20])
            return f"took 1 MiB in {time.perf_counter() - t:.3f} s"
    except psycopg.Error as e:
        return f"refused: {str(e).splitlines()[0]}"
    finally:
        q.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-questdb", action="store_true")
    ap.add_argument("--bin", default=os.path.join(http_load.ROOT, "target", "release", "zeptodb"))
    a = ap.parse_args()

    import gen_data
    import pyarrow.parquet as pq
    path = gen_data.dataset(a.rows)
    trades = pq.read_table(f"{path}/trades.parquet")
    rows = trades.num_rows
    data = csv_text(trades)
    log(f"{rows:,} rows, {len(data) / 2**20:.0f} MiB of CSV")
    eng = ZeptoPg(a.bin)
    res = {}
    try:
        for name, run in [("COPY FROM STDIN", lambda: copy_in(eng, data, rows)),
                          ("/write CSV", lambda: write_in(eng, trades, rows)),
                          ("COPY TO STDOUT", lambda: copy_out(eng, rows))]:
            times = []
            for r in range(a.reps):
                log(f"== {name}, run {r + 1} of {a.reps}")
                times.append(run())
            res[name] = (rows / statistics.median(times), rss_mib(eng.pid, "VmHWM"))
    finally:
        eng.stop()
    quest = None if a.no_questdb else questdb_copy(data)
    cols = Columns([16], ">", sep=" | ")
    print("\n" + " | ".join([f"{rows:,} rows", f"rows/s (median of {a.reps})", "zeptodb peak RSS MiB after"]))
    for name, (rate, rss) in res.items():
        print(cols.line([name, f"{rate:,.0f}", f"{rss:.0f}"]))
    print(f"ratio COPY FROM STDIN / /write CSV: {res['COPY FROM STDIN'][0] / res['/write CSV'][0]:.2f}x")
    if quest is not None:
        print(f"questdb COPY FROM STDIN over its PostgreSQL door: {quest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
