#!/usr/bin/env python3
"""Huge pages, measured: the server under each `--huge-pages` mode, same data, same queries.

For each mode (`on`: transparent huge page advice, `off`, `reserved`: the reserved pool) a
fresh in-memory server loads ROWS rows into PARTS partitions by `INSERT ... SELECT ... FROM
range(ROWS)`, then runs a filtered GROUP BY (large intermediate columns per partition) and a
two-column sum REPEAT times. Printed per mode: load seconds, query medians and ranges (the
server's own `elapsed_us`), peak RSS (VmHWM), memory on reserved huge pages at the end
(HugetlbPages, not in RSS), and the server's huge page counters. The host's THP mode and pool
are printed first: run it with THP `madvise` and with `never` (as root: `echo never >
/sys/kernel/mm/transparent_hugepage/enabled`), with pages reserved (`echo 1536 >
/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`). Results: docs/operations.md, "Reserved huge pages".

    bench/huge_pages.py --bin target/release/zeptodb --rows 20000000 --parts 2 --modes reserved,off,on
"""

import argparse
import json
import os
import statistics
import sys
import time

from report import Columns
from served import Server, log

QUERIES = {
    "filtered group by": "SELECT sym, count(*), sum(q), avg(v) FROM t WHERE v > 0.5 GROUP BY sym",
    "sum": "SELECT sum(v), sum(q) FROM t",
}


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "not exposed"


def sql(s, q):
    st, out = s.request("POST", "/", q)
    if st != 200:
        sys.exit(f"{q}: {st} {out[:300]!r}")
    return json.loads(out)


def counters(s):
    st, out = s.request("GET", "/metrics")
    pairs = (line.split()[:2] for line in out.decode().splitlines() if line.startswith("zepto_huge"))
    return {name: int(float(value)) for name, value in pairs}


def run_mode(args, mode):
    s = Server(args.bin, None, "--pg", "off", "--ilp-tcp", "off", "--huge-pages", mode)
    try:
        sql(s, "CREATE TABLE t (sym SYMBOL, ts TIMESTAMP, v DOUBLE, q BIGINT) TIMESTAMP(ts) PARTITION BY sym")
        t0 = time.perf_counter()
        sql(s, f"INSERT INTO t SELECT 'S' || (x % {args.parts}), TIMESTAMP '2024-01-02' + x * INTERVAL '1 millisecond', "
               f"(x * 7919 % 1000) / 1000.0, x % 100 FROM range({args.rows}) r(x)")
        load = time.perf_counter() - t0
        times = {}
        for name, q in QUERIES.items():
            log(f"  {mode}: {name} x {args.repeat}")
            times[name] = [sql(s, q)["elapsed_us"] / 1000 for _ in range(args.repeat)]
        return load, times, s.rss_mib("VmHWM"), s.rss_mib("HugetlbPages"), counters(s)
    finally:
        s.stop(timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/zeptodb")
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--parts", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--modes", default="reserved,off,on")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin}: build it first (cargo build --release -p zepto-cli)")
    print(f"THP: {read('/sys/kernel/mm/transparent_hugepage/enabled')}; "
          f"reserved 2 MiB pages: {read('/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages')}; "
          f"{args.rows:,} rows in {args.parts} partitions; server medians of {args.repeat} runs (range)")
    cols = Columns([9, 7, 22, 22, 13, 17], "<>>>>>")
    print(cols.line(["mode", "load s", "filtered group by ms", "sum ms", "peak RSS MiB", "on the pool MiB"]))
    for mode in args.modes.split(","):
        log(f"--huge-pages {mode}: loading {args.rows:,} rows")
        load, times, hwm, pool, seen = run_mode(args, mode)
        cells = [mode, f"{load:.2f}"]
        for ts in times.values():
            cells.append(f"{statistics.median(ts):.1f} ({min(ts):.1f}-{max(ts):.1f})")
        cells += [f"{hwm:,.0f}", f"{pool:,.0f}"]
        print(cols.line(cells), flush=True)
        log(f"  {mode}: {seen}")


if __name__ == "__main__":
    main()
