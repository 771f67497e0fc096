#!/usr/bin/env python3
"""Run ZeptoDB (in-process, `zepto-bench`) and the peers of bench/harness/peers.py on the same
data in one run, then print one report: median/p99 per query and engine, peak RSS, and
ZeptoDB's time as a ratio to the best peer (its `report()`; < 1 means ZeptoDB is faster).

  python bench/compare.py --rows 1000000 [--engines duckdb,polars] [--queries Q1,Q2,Q7]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(HERE, "harness")
sys.path.insert(0, SHARED)
import peers  # noqa: E402  (the peer harness: engines, checksum, compare, report)
from report import write_json  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--data", help="data dir (default target/bench-data/<rows>; generated if missing)")
    ap.add_argument("--engines", default="duckdb,polars")
    ap.add_argument("--queries", default="Q1,Q2,Q3a,Q3b,Q4,Q5,Q6,Q7")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--budget", type=float, default=8.0)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "zepto-bench"))
    ap.add_argument("--json", help="write all results here")
    a = ap.parse_args()
    import gen_data
    data = a.data or gen_data.dataset(a.rows)

    results = []
    for eng in [e for e in a.engines.split(",") if e]:
        print(f"== {eng}", file=sys.stderr, flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            cmd = [sys.executable, os.path.join(SHARED, "peers.py"), "--child", eng, "--json", tmp.name,
                   "--data", data, "--queries", a.queries, "--iters", str(a.iters),
                   "--budget", str(a.budget), "--ingest-rows", "0", "--ingest-reps", "1"]
            if subprocess.run(cmd).returncode == 0:
                with open(tmp.name) as f:
                    results.append(json.load(f))
            else:
                print(f"!! {eng} failed", file=sys.stderr)
    print("== zeptodb-rs (in-process Rust, no Python materialization)", file=sys.stderr, flush=True)
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        subprocess.run([a.bin, "--data", data, "--queries", a.queries, "--iters", str(a.iters),
                        "--budget", str(a.budget), "--json", tmp.name], check=True)
        with open(tmp.name) as f:
            results.append(json.load(f))
    problems = peers.compare(results, 1e-9)
    print(peers.report(results, problems))
    write_json(a.json, {"rows": a.rows, "results": results, "mismatches": problems})


if __name__ == "__main__":
    main()
