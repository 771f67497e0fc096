#!/usr/bin/env python3
"""Randomized FLOAT[n] vector differential test (DuckDB is the oracle).

    .venv/bin/python tests/gen/vector_diff.py --seed 123 --cases 30 --out /tmp/vec_123.slt

Each case builds a table v<k> (0..150 rows, a random dimension from 1 to 384, NULL vectors at
a random rate, occasional zero and repeated vectors, elements of a random scale) and checks:

* the vectors themselves read back (each element as the REAL DuckDB stores);
* every distance function (array_cosine_similarity, array_cosine_distance, array_distance,
  array_inner_product, array_negative_inner_product) against a constant vector and between two
  columns (a self-join on id), and array_length;
* exact top-k: ORDER BY a distance, id LIMIT k.

Distance results are FLOAT in DuckDB (f32 sums) and DOUBLE here (f32 lanes summed in another
order): their columns get the slt type letter F, compared to a relative 1e-5 of the larger of
the column's magnitude and the query's `scale=` (the largest sum of the products' magnitudes:
a sum that cancels keeps the rounding of its large terms).
"""
import argparse
import os
import random
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
from common import TS  # noqa: E402

BASE_NS = 1_704_187_800_000_000_000  # 2024-01-02 09:30:00 UTC
FUNCS = ["array_cosine_similarity", "array_cosine_distance", "array_distance", "array_inner_product",
         "array_negative_inner_product"]


def vec(rng, dim, scale):
    r = rng.random()
    if r < 0.03:
        return [0.0] * dim
    if r < 0.1:
        return [float(rng.randrange(-3, 4)) for _ in range(dim)]
    # + 0.0: no -0.0, which DuckDB reads as the DECIMAL 0 in a list literal.
    return [round(rng.uniform(-scale, scale), 4) + 0.0 for _ in range(dim)]


def vec_lit(v, dim):
    return "[" + ", ".join(repr(x) for x in v) + "]::FLOAT[%d]" % dim


def make_table(rng, k):
    dim = rng.choice([1, 2, 3, 7, 8, 9, 16, 31, 64, 384])
    n = rng.choice([0, 1, 10, 60, 150])
    null_rate = rng.choice([0.0, 0.1, 0.4])
    scale = rng.choice([1.0, 100.0, 0.01])
    pool = [vec(rng, dim, scale) for _ in range(max(1, n // 3))]
    rows = []
    for i in range(n):
        v = None if rng.random() < null_rate else (rng.choice(pool) if rng.random() < 0.2 else vec(rng, dim, scale))
        rows.append((TS(BASE_NS + rng.randrange(5000) * 1_000_000_000), rng.choice(["A", "B", "C"]), i, v))
    ddl = [f"CREATE TABLE v{k} (ts TIMESTAMP, sym SYMBOL, id BIGINT, v FLOAT[{dim}])"]
    for i in range(0, len(rows), 50):
        vals = ", ".join("(%s, %s, %d, %s)" % (common.sql_literal(ts), common.sql_literal(s), i_,
                                                  "NULL" if v is None else "[" + ", ".join(repr(x) for x in v) + "]")
                         for ts, s, i_, v in rows[i:i + 50])
        ddl.append(f"INSERT INTO v{k} VALUES {vals}")
    return ddl, dim, scale, {i_: v for _, _, i_, v in rows}


def magnitude(f, pairs):
    """The largest sum of |x_i * y_i| over the vector pairs a distance `f` is computed on (for
    the cosine functions divided by the norms): how far an f32 sum of those products may round,
    times epsilon, however much it cancels. 0 for array_distance, whose terms never cancel."""
    if f == "array_distance":
        return 0.0
    out = 0.0
    for x, y in pairs:
        if x is None or y is None:
            continue
        m = sum(abs(a * b) for a, b in zip(x, y))
        if f.startswith("array_cosine"):
            nx, ny = sum(a * a for a in x) ** 0.5, sum(b * b for b in y) ** 0.5
            m = m / (nx * ny) if nx > 0 and ny > 0 else 0.0
        out = max(out, m)
    return out


def exact(f, x, y):
    """`f(x, y)` in float64, as DuckDB defines it (a zero vector's cosine similarity is -1)."""
    dot = sum(a * b for a, b in zip(x, y))
    if f == "array_distance":
        return sum((a - b) ** 2 for a, b in zip(x, y)) ** 0.5
    if f == "array_inner_product":
        return dot
    if f == "array_negative_inner_product":
        return -dot
    nx, ny = sum(a * a for a in x) ** 0.5, sum(b * b for b in y) ** 0.5
    sim = max(-1.0, min(1.0, dot / (nx * ny))) if nx > 0 and ny > 0 else -1.0
    return sim if f == "array_cosine_similarity" else 1.0 - sim


def near_tie(f, by_id, q, lim, scale):
    """True when the first `lim` rows of ORDER BY f(v, q), id are not settled by the distances:
    two different values within f32 rounding of each other around the cut, so that either
    engine may rank them either way."""
    ds = sorted((exact(f, v, q), i) for i, v in by_id.items() if v is not None)
    tol = 1e-5 * max(scale, max((abs(d) for d, _ in ds), default=0.0), 1e-6)
    head = ds[:lim + 1]
    return any(0 < abs(b[0] - a[0]) <= tol for a, b in zip(head, head[1:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    con = common.connect()
    out = [f"# generated by tests/gen/vector_diff.py --seed {a.seed} --cases {a.cases}\n"]
    nq = 0

    def emit(sql):
        con.execute(common.to_duck(sql))
        out.append(common.slt_statement(sql))

    def check(q, sort, f_cols=(), scale=0.0):
        nonlocal nq
        tbl = common.run_arrow(con, common.to_duck(q))
        letters, rows = common.format_table(tbl)
        letters = "".join("F" if i in f_cols else c for i, c in enumerate(letters))
        mode = sort + (" scale=%.6g" % scale if scale > 0 else "")
        out.append(common.slt_query(q, letters, mode, common.result_lines(rows, sort)))
        nq += 1

    for k in range(a.cases):
        ddl, dim, scale, by_id = make_table(rng, k)
        for s in ddl:
            emit(s)
        check(f"SELECT id, v FROM v{k}", "rowsort")
        check(f"SELECT count(*), count(v), sum(array_length(v)) FROM v{k} WHERE v IS NOT NULL OR id % 2 = 0", "nosort")
        qv = vec(rng, dim, scale)
        q = vec_lit(qv, dim)
        to_q = [(v, qv) for v in by_id.values()]
        to_prev = [(v, by_id[i - 1]) for i, v in by_id.items() if i - 1 in by_id]
        for f in FUNCS:
            check(f"SELECT id, {f}(v, {q}) FROM v{k}", "rowsort", f_cols=(1,), scale=magnitude(f, to_q))
            check(f"SELECT a.id, {f}(a.v, b.v) FROM v{k} a JOIN v{k} b ON a.id = b.id + 1", "rowsort", f_cols=(1,),
                  scale=magnitude(f, to_prev))
        if dim < 3:
            continue  # collinear vectors: cosine distances that tie within f32 rounding
        f = rng.choice(FUNCS)
        lim = rng.choice([1, 5, 10])
        if near_tie(f, by_id, qv, lim, magnitude(f, to_q)):
            continue
        check(f"SELECT id, {f}(v, {q}) AS d FROM v{k} WHERE v IS NOT NULL ORDER BY d, id LIMIT {lim}", "nosort",
              f_cols=(1,), scale=magnitude(f, to_q))
    with open(a.out, "w") as fh:
        fh.write("\n".join(out))
    print(f"wrote {nq} vector queries over {a.cases} tables to {a.out}")


if __name__ == "__main__":
    main()
