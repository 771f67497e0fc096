#!/usr/bin/env python3
"""Long `IN` lists beside DuckDB, both in process from Python: `count(*)` of a 10k-row table
whose BIGINT (or VARCHAR) column is in (or not in) a list of 10 to 1M constants written into
the SQL text, as a client that pastes its ids sends it. The time is the whole statement:
parsing the text, binding the list and running it. Each engine runs in a child process of its
own, so its peak RSS is its own. Results are checked to agree.

  python bench/in_list.py [--rows 10000] [--sizes 10,1000,100000,1000000] [--iters 3]

ZeptoDB is the package in python/ (its release extension, `cargo build --release -p
zeptodb-python` copied to python/zeptodb/_native.abi3.so). Progress goes to stderr.
"""
import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from report import md_table  # noqa: E402


def table(rows: int):
    rnd = random.Random(7)
    a = [rnd.randrange(0, 2_000_000) for _ in range(rows)]
    return [(i * 1_000_000_000, x, f"k{x}") for i, x in enumerate(a)]


def queries(sizes):
    """(name, SQL) for every list size: integers and strings, IN and NOT IN; half of each
    list's items are under 2M (so some rows match), one is NULL in the NOT IN form (no row is
    then true)."""
    rnd = random.Random(11)
    for n in sizes:
        ints = [rnd.randrange(0, 4_000_000) for _ in range(n)]
        ilist = ",".join(map(str, ints))
        slist = ",".join(f"'k{x}'" for x in ints)
        yield f"int IN {n:,}", f"SELECT count(*) FROM t WHERE a IN ({ilist})"
        yield f"int NOT IN {n:,}", f"SELECT count(*) FROM t WHERE a NOT IN ({ilist})"
        yield f"int NOT IN +NULL {n:,}", f"SELECT count(*) FROM t WHERE a NOT IN ({ilist},NULL)"
        yield f"str IN {n:,}", f"SELECT count(*) FROM t WHERE s IN ({slist})"


class Zepto:
    name = "zeptodb"

    def __init__(self, rows):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import pyarrow as pa
        import zeptodb
        self.db = zeptodb.connect()
        self.db.execute("CREATE TABLE t (ts TIMESTAMP, a BIGINT, s VARCHAR)")
        ts, a, s = zip(*rows)
        self.db.insert("t", pa.table({"ts": pa.array(ts, pa.timestamp("ns")), "a": pa.array(a, pa.int64()),
                                      "s": pa.array(s, pa.string())}))

    def run(self, sql):
        return self.db.sql(sql).fetchall()[0][0]


class Duck:
    name = "duckdb"

    def __init__(self, rows):
        import duckdb
        self.con = duckdb.connect()
        self.con.execute("CREATE TABLE t (ts BIGINT, a BIGINT, s VARCHAR)")
        self.con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)

    def run(self, sql):
        return self.con.execute(sql).fetchall()[0][0]


def child(engine, args):
    rows = table(args.rows)
    e = {"zeptodb": Zepto, "duckdb": Duck}[engine](rows)
    out = {}
    for name, sql in queries(args.sizes):
        ms, answer = [], None
        for _ in range(args.iters):
            t = time.perf_counter()
            answer = e.run(sql)
            ms.append((time.perf_counter() - t) * 1e3)
        out[name] = {"ms": statistics.median(ms), "answer": answer}
        print(f"  {engine:8s} {name:24s} {out[name]['ms']:10.1f} ms  -> {answer}", file=sys.stderr, flush=True)
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--sizes", default="10,1000,100000,1000000")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--engines", default="zeptodb,duckdb")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.sizes = [int(x) for x in args.sizes.split(",")]
    if args.child:
        print(json.dumps(child(args.child, args)))
        return
    results = {}
    for e in args.engines.split(","):
        print(f"== {e}", file=sys.stderr, flush=True)
        cmd = [sys.executable, __file__, "--child", e, "--rows", str(args.rows),
               "--sizes", ",".join(map(str, args.sizes)), "--iters", str(args.iters)]
        results[e] = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout)
    names = [n for n, _ in queries(args.sizes)]
    engines = list(results)
    agree, rows = True, []
    for n in names:
        row = [results[e][n]["ms"] for e in engines]
        answers = {results[e][n]["answer"] for e in engines}
        agree &= len(answers) == 1
        ratio = row[0] / min(row[1:]) if len(row) > 1 else float("nan")
        rows.append([n] + [f"{x:,.1f}" for x in row] + [f"{ratio:.3f}"])
    md_table(["query"] + [f"{e} ms" for e in engines] + ["ratio"], rows)
    print("peak RSS MiB: " + ", ".join(f"{e} {results[e]['peak_rss_mib']:.0f}" for e in engines))
    print("results " + ("agree" if agree else "DIFFER"))


if __name__ == "__main__":
    main()
