#!/usr/bin/env python3
"""How ZeptoDB's cost grows: the benchmark queries (in process, `zepto-bench`) on data sets of
growing rows and growing symbol counts, one table per axis: load time, memory after load, peak
memory and each query's median, with the slope of each between the smallest and the largest
set (log-log: 1.0 grows as the data, below 1 slower than it, above 1 faster).

  python bench/growth.py [--rows 1000000,10000000,100000000] [--symbols 10,1000,100000]
                         [--symbol-rows 1000000] [--queries Q1,...] [--bin target/release/zepto-bench]

Data sets are generated with bench/harness/gen_data.py into target/bench-data/ when missing
(100M rows: about 2 GB of Parquet and 8 GB of memory to load). Progress goes to stderr.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from report import md_table  # noqa: E402

QUERIES = "Q1,Q2,Q3a,Q3b,Q4,Q5,Q6,Q7"


def dataset(rows: int, symbols: int) -> str:
    """The directory of trades/quotes with `rows` rows over `symbols` symbols, made if missing."""
    name = f"{rows}" if symbols == 100 else f"{rows}-sym{symbols}"
    path = os.path.join(ROOT, "target", "bench-data", name)
    if not os.path.exists(os.path.join(path, "quotes.parquet")):
        print(f"growth: generating {rows:,} rows over {symbols:,} symbols into {path}", file=sys.stderr)
        gen = os.path.join(HERE, "harness", "gen_data.py")
        cmd = [sys.executable, gen, "--rows", str(rows), "--symbols", str(symbols), "--out", path]
        subprocess.run(cmd, check=True)
    return path


def run(binary: str, data: str, queries: str, iters: int, budget: float) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [binary, "--data", data, "--queries", queries, "--iters", str(iters), "--budget", str(budget),
               "--json", out.name]
        t = time.time()
        subprocess.run(cmd, check=True)
        print(f"growth: {data} done in {time.time() - t:.0f} s", file=sys.stderr)
        with open(out.name) as f:
            return json.load(f)


def slope(xs: list, ys: list) -> str:
    pairs = [(x, y) for x, y in zip(xs, ys) if y and y > 0]
    if len(pairs) < 2 or pairs[0][0] == pairs[-1][0]:
        return "-"
    (x0, y0), (x1, y1) = pairs[0], pairs[-1]
    return f"{math.log(y1 / y0) / math.log(x1 / x0):.2f}"


def table(title: str, axis: str, xs: list, results: list, queries: list) -> None:
    print(f"\n{title}\n")
    rows = [
        ("load s", [r["load_s"] for r in results]),
        ("RSS after load MiB", [r["rss_after_load_mib"] for r in results]),
        ("peak RSS MiB", [r["peak_rss_mib"] for r in results]),
    ]
    for q in queries:
        rows.append((f"{q} ms", [r["queries"].get(q, {}).get("median_ms") for r in results]))
    md_table([axis] + [f"{x:,}" for x in xs] + ["slope"],
             [[name] + ["error" if y is None else f"{y:,.3f}" if y < 10 else f"{y:,.1f}" for y in ys] + [slope(xs, ys)]
              for name, ys in rows],
             "<" + ">" * (len(xs) + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="1000000,10000000,100000000")
    ap.add_argument("--symbols", default="10,1000,100000")
    ap.add_argument("--symbol-rows", type=int, default=1_000_000)
    ap.add_argument("--queries", default=QUERIES)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--budget", type=float, default=8.0)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "zepto-bench"))
    a = ap.parse_args()
    if not os.path.exists(a.bin):
        sys.exit(f"{a.bin} is missing: cargo build --release -p zepto-bench")
    queries = a.queries.split(",")
    sizes = [int(x) for x in a.rows.split(",") if x]
    symbols = [int(x) for x in a.symbols.split(",") if x]
    by_rows = [run(a.bin, dataset(n, 100), a.queries, a.iters, a.budget) for n in sizes]
    by_symbols = [run(a.bin, dataset(a.symbol_rows, s), a.queries, a.iters, a.budget) for s in symbols]
    if sizes:
        table("Rows (trades = quotes = rows, 100 symbols)", "rows", sizes, by_rows, queries)
    if symbols:
        table(f"Symbols ({a.symbol_rows:,} rows)", "symbols", symbols, by_symbols, queries)


if __name__ == "__main__":
    main()
