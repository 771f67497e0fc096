#!/usr/bin/env python3
"""How near a query runs to this machine's memory speed: ZeptoDB's time for a harness query
from Python (`harness/peers.py`'s engine), the time NumPy takes only to stream the columns that
query must read (a sum of each, split over every core: no grouping, no result), and Polars'
time, taken in turn in every round so that all three see the same minute of a shared machine.

  python bench/memory_floor.py --data DIR [--queries Q3b,Q2,Q7] [--rounds 8] [--iters 30]

DIR holds `harness/gen_data.py`'s trades.parquet. Reported per query: medians of the rounds'
medians in ms, ours over the floor (1: as fast as streaming those bytes, from memory or from
the cache, whichever holds them between calls) and the floor over Polars (the lowest ratio to
Polars an engine streaming those bytes can reach in these minutes). The floor assumes each
column is read whole and leaves out the symbol column, which ZeptoDB's partitions stand for
(Polars reads it): Q3b's bucket walk reads only a window of times per bucket, so its floor is
an upper bound; Q2 and Q7 come out under 1 because ours reads the partitions' block summaries
and narrow blocks (zepto_storage::summary, ::narrow) instead of every row. Progress goes to
stderr.
"""
import argparse
import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "harness"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import peers  # noqa: E402

sys.path.insert(0, HERE)
from report import md_table  # noqa: E402

# The columns each query's answer depends on, every row of them.
READS = {
    "Q2": ["price", "size"],
    "Q3b": ["ts", "price", "size"],
    "Q7": ["price", "size"],
}


def median_ms(fn, iters):
    """The median of `iters` timed calls after one untimed call, in ms (the harness's `timed`,
    its budget wide enough for every call)."""
    return peers.timed(fn, iters, 3600.0)[1]["median_ms"]


def floor_fn(arrays, pool, cores):
    """A sum of every array, each core summing its slice of all of them, side by side (NumPy
    lets go of the GIL in a reduction): one task a core."""
    def share(k):
        return [np.sum(a[len(a) * k // cores:len(a) * (k + 1) // cores]) for a in arrays]
    return lambda: list(pool.map(share, range(cores)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="directory of gen_data.py's trades.parquet")
    ap.add_argument("--queries", default="Q3b,Q2,Q7")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iters", type=int, default=30)
    args = ap.parse_args()
    queries = args.queries.split(",")
    unknown = [q for q in queries if q not in READS]
    if unknown:
        sys.exit(f"no column list for {unknown}: known are {sorted(READS)}")
    table = pq.read_table(os.path.join(args.data, "trades.parquet"))
    cols = {c: np.ascontiguousarray(table[c].to_numpy().view(np.int64) if c == "ts" else table[c].to_numpy())
            for c in ("ts", "price", "size")}
    print(f"loading {table.num_rows:,} rows into ZeptoDB and Polars", file=sys.stderr)
    ours, polars = peers.ZeptoPyEngine(), peers.PolarsEngine()
    ours.load(args.data)
    polars.load(args.data)
    cores = len(os.sched_getaffinity(0))
    out = []
    with ThreadPoolExecutor(cores) as pool:
        for q in queries:
            arrays = [cols[c] for c in READS[q]]
            floor = floor_fn(arrays, pool, cores)
            runs = {"ours": [], "floor": [], "polars": []}
            for r in range(args.rounds):
                runs["ours"].append(median_ms(lambda: ours.query(q), args.iters))
                runs["floor"].append(median_ms(floor, args.iters))
                runs["polars"].append(median_ms(lambda: polars.query(q), max(3, args.iters // 5)))
                print(f"{q} round {r + 1}/{args.rounds}: " + " ".join(f"{k} {v[-1]:.2f}" for k, v in runs.items()),
                      file=sys.stderr)
            m = {k: statistics.median(v) for k, v in runs.items()}
            mb = sum(a.nbytes for a in arrays) / 1e6
            out.append([q, f"{mb:.0f}", f"{m['ours']:.2f}", f"{m['floor']:.2f}", f"{m['polars']:.2f}",
                        f"{m['ours'] / m['floor']:.2f}", f"{m['floor'] / m['polars']:.3f}"])
    md_table(["query", "MB read", "ZeptoDB ms", "floor ms", "Polars ms", "ZeptoDB / floor", "floor / Polars"],
             out, "<>>>>>>")

if __name__ == "__main__":
    main()
