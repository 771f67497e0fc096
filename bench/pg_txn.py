#!/usr/bin/env python3
"""DELETE and UPDATE held in a PostgreSQL-door transaction (`BEGIN ... COMMIT`) against the same
statements run one by one (autocommit), through psycopg 3: a table of `--rows` rows over
`--symbols` symbols (one row a millisecond), then `--edits` statements, each an UPDATE of one
symbol's rows in a one-second window (bound parameters, the extended protocol), with a SELECT of
the table's count after every `--read-every`-th.

- autocommit: every statement applies at once;
- one transaction: each is held and decided over the transaction's own copy of the table (kept
  between statements), and COMMIT decides them again over the stored table and applies all of
  them as one logged change;
- one transaction while another connection appends a row to the table before each statement:
  the transaction's copy is made again each time (the cost docs/pg.md warns of).

Reports p50/p99 per statement (ms), COMMIT's time and the server's peak RSS in each mode. Every
mode must leave the same table (checked by a sum over it). No peer: neither DuckDB nor Polars
has a PostgreSQL door, and QuestDB's has no DELETE.

    python bench/pg_txn.py [--rows 1000000] [--symbols 100] [--edits 500] [--read-every 10]
"""
import argparse
import datetime as dt
import os
import random
import time

import psycopg

import http_load
from engines import Zepto
from report import md_table
from served import free_port, log, pct, rss_mib

T0 = dt.datetime(2024, 1, 2, 9, 30)
UPDATE = "UPDATE trades SET size = size + 1 WHERE sym = %s AND ts >= %s AND ts < %s"


class ZeptoPg(Zepto):
    """`zeptodb serve` in memory with its PostgreSQL door on a free port."""

    def __init__(self, binary):
        self.pg_port = free_port()
        super().__init__(binary, extra=("--pg", f"127.0.0.1:{self.pg_port}"))

    def connect(self, autocommit):
        return psycopg.connect(host="127.0.0.1", port=self.pg_port, user="bench", dbname="zepto",
                               autocommit=autocommit)


def load(eng, rows, symbols):
    eng.create()
    eng.sql(f"INSERT INTO trades SELECT TIMESTAMP '2024-01-02 09:30:00' + INTERVAL '1 millisecond' * g, "
            f"'S' || CAST(g % {symbols} AS VARCHAR), 100.0 + g % 37, g % 500 FROM generate_series(0, {rows - 1}) AS s(g)")


def edits(n, rows, symbols, seed):
    """n (symbol, start, end): one symbol over a random second of the table's span."""
    rnd = random.Random(seed)
    span_s = max(1, rows // 1000 - 1)
    out = []
    for _ in range(n):
        t = T0 + dt.timedelta(seconds=rnd.randrange(span_s))
        out.append((f"S{rnd.randrange(symbols)}", t, t + dt.timedelta(seconds=1)))
    return out


def run(eng, mode, stmts, read_every):
    """Per-statement latencies (ms), COMMIT's seconds, and the table's sum of sizes after."""
    inside = mode != "autocommit"
    lat, commit_s = [], 0.0
    with eng.connect(autocommit=not inside) as conn, eng.connect(autocommit=True) as other:
        for k, params in enumerate(stmts):
            if mode == "transaction, others writing":
                other.execute("INSERT INTO trades VALUES ('2020-01-01', 'other', 0.0, 0)")
            t = time.perf_counter()
            conn.execute(UPDATE, params)
            if (k + 1) % read_every == 0:
                conn.execute("SELECT count(*) FROM trades").fetchone()
            lat.append((time.perf_counter() - t) * 1e3)
        if inside:
            t = time.perf_counter()
            conn.commit()
            commit_s = time.perf_counter() - t
        total = conn.execute("SELECT sum(size) FROM trades WHERE sym <> 'other'").fetchone()[0]
    return lat, commit_s, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--symbols", type=int, default=100)
    ap.add_argument("--edits", type=int, default=500)
    ap.add_argument("--read-every", type=int, default=10)
    ap.add_argument("--bin", default=os.path.join(http_load.ROOT, "target", "release", "zeptodb"))
    a = ap.parse_args()
    stmts = edits(a.edits, a.rows, a.symbols, seed=7)
    rows, sums = [], set()
    for mode in ["autocommit", "one transaction", "transaction, others writing"]:
        eng = ZeptoPg(a.bin)
        try:
            log(f"== {mode}: {a.rows:,} rows, {a.edits} UPDATEs")
            load(eng, a.rows, a.symbols)
            lat, commit_s, total = run(eng, mode, stmts, a.read_every)
            sums.add(total)
            rows.append([mode, f"{pct(lat, 50):.2f}", f"{pct(lat, 99):.2f}", f"{sum(lat) / 1e3:.2f}",
                       f"{commit_s:.3f}", f"{rss_mib(eng.pid, 'VmHWM'):.0f}"])
        finally:
            eng.stop()
    md_table(["mode", "p50 ms", "p99 ms", "statements s", "COMMIT s", "peak RSS MiB"], rows, "<>>>>>")
    assert len(sums) == 1, f"the modes left different tables: {sums}"
    print(f"every mode left the same table (sum of sizes {sums.pop():,})")


if __name__ == "__main__":
    main()
