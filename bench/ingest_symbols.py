#!/usr/bin/env python3
"""ILP ingest rate by symbol count: ZeptoDB beside QuestDB, same lines, one run.

The table is created, every symbol gets a first row (so each has its partition already), then
the timed part POSTs `--batches` batches of `--batch` lines, each line a random symbol of
`--symbols`, over one keep-alive connection (ILP over HTTP). QuestDB applies writes
asynchronously: its clock stops when count() shows every row. Reports rows/s, ms per batch
and the server's peak RSS. Its servers are `bench/engines.py`'s, as `bench/http_load.py`'s.

Usage: bench/ingest_symbols.py [--symbols 10,1000,100000] [--batch 1000] [--batches 200]
                               [--no-questdb] [--bin target/release/zeptodb] [--json FILE]
"""
import argparse
import http.client
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from engines import QuestDB, Zepto  # noqa: E402
from report import Columns, write_json  # noqa: E402
from served import log, post, rss_mib  # noqa: E402

T0 = 1_704_153_600_000_000_000  # 2024-01-02T00:00:00Z in ns


def lines(syms, ts0):
    return "".join(f"trades,sym=S{s:06d} price={100 + (i % 97) / 8},size={i % 500}i {ts0 + i}\n"
                   for i, s in enumerate(syms)).encode()


def run(eng, nsym, batch, nbatches):
    eng.create()
    conn = http.client.HTTPConnection("127.0.0.1", eng.port, timeout=600)
    path = eng.ilp_path()
    for k in range(0, nsym, 50_000):
        post(eng.port, path, lines(range(k, min(nsym, k + 50_000)), T0), "text/plain", conn)
    rnd = random.Random(7)
    bodies = [lines([rnd.randrange(nsym) for _ in range(batch)], T0 + 10**9 * (j + 1)) for j in range(nbatches)]
    while eng.count() < nsym:
        time.sleep(0.05)
    total = nsym + batch * nbatches
    t0 = time.perf_counter()
    for j, b in enumerate(bodies):
        post(eng.port, path, b, "text/plain", conn)
        if j and j % 100 == 0:
            log(f"  {eng.name}: {j}/{nbatches} batches")
    while eng.count() < total:
        if time.perf_counter() - t0 > 600:
            raise RuntimeError(f"{eng.name}: rows never all visible")
        time.sleep(0.01)
    secs = time.perf_counter() - t0
    return {"rows_per_s": batch * nbatches / secs, "ms_per_batch": 1000 * secs / nbatches,
            "peak_rss_mib": rss_mib(eng.pid, "VmHWM")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--symbols", default="10,1000,100000")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--no-questdb", action="store_true")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(HERE), "target", "release", "zeptodb"))
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args()
    results = {}
    for nsym in [int(s) for s in a.symbols.split(",")]:
        engines = [lambda: Zepto(a.bin)] + ([] if a.no_questdb else [QuestDB])
        for make in engines:
            eng = make()
            try:
                log(f"{eng.name}: {nsym} symbols, {a.batches} batches of {a.batch}")
                results.setdefault(str(nsym), {})[eng.name] = run(eng, nsym, a.batch, a.batches)
            finally:
                eng.stop()
    cols = Columns([8, 8, 12, 9, 13], ">>>>>")
    print(cols.line(["symbols", "engine", "rows/s", "ms/batch", "peak RSS MiB"]))
    for nsym, by in results.items():
        for name, r in by.items():
            print(cols.line([nsym, name, f"{r['rows_per_s']:,.0f}", f"{r['ms_per_batch']:.2f}", f"{r['peak_rss_mib']:.0f}"]))
        if "questdb" in by:
            print(cols.line([nsym, f"ratio ZeptoDB/QuestDB rows/s: {by['zeptodb']['rows_per_s'] / by['questdb']['rows_per_s']:.2f}"]))
    write_json(a.json, results)


if __name__ == "__main__":
    main()
