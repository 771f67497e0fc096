#!/usr/bin/env python3
"""Randomized DELETE / UPDATE differential test (DuckDB is the oracle).

    .venv/bin/python tests/gen/dml_diff.py --seed 123 --cases 30 --out /tmp/dml_123.slt

Each case builds a table d<k> (0..200 rows in shuffled time order, NULLs in every column but
`id`; a SYMBOL partition key and a designated timestamp), then applies a random sequence of
corrections, each followed by a full comparison of the table (and of one aggregate over it):

* DELETE with random predicates (comparisons, IN lists, IS NULL, BETWEEN, = and IN lists on the timestamp,
  AND/OR/NOT, an uncorrelated subquery over another table, no WHERE at all);
* UPDATE of value columns in place (arithmetic on the old values, CASE, NULL, strings into
  VARCHAR and SYMBOL), and of the partition key and the designated timestamp, which move rows
  between partitions and in time order;
* INSERTs between them, so later statements see appended rows and new partitions.

Statements whose result depends on nothing but the table contents are generated, so both
engines must agree row for row after every step.
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
SYMS = ["A", "B", "C", "D"]


def row(rng, i, null_rate):
    def maybe(v):
        return None if rng.random() < null_rate else v
    return (i, maybe(TS(BASE_NS + rng.randrange(2000) * 1_000_000_000)), maybe(rng.choice(SYMS)),
            maybe(round(rng.uniform(1, 100), 2)), maybe(rng.randrange(-50, 500)), maybe(rng.choice(["x", "yy", "", "zzz"])),
            maybe(rng.choice(["N", "Q", "P"])))


def make_table(rng, k):
    n = rng.choice([0, 1, 5, 50, 200])
    null_rate = rng.choice([0.0, 0.1, 0.3])
    rows = [row(rng, i, null_rate) for i in range(n)]
    rng.shuffle(rows)
    ddl = [f"CREATE TABLE d{k} (id BIGINT, ts TIMESTAMP, sym SYMBOL, px DOUBLE, qty BIGINT, note VARCHAR, venue SYMBOL)",
           f"CREATE TABLE bad{k} (sym VARCHAR)"]
    ddl += common.insert_sql(f"d{k}", rows)
    ddl += common.insert_sql(f"bad{k}", [(s,) for s in rng.sample(SYMS, 2)])
    return ddl, n, null_rate


def ts_lit(rng):
    return "TIMESTAMP '%s'" % common.fmt_ts_ns(BASE_NS + rng.randrange(2000) * 1_000_000_000)


def predicate(rng, k, depth=0):
    atoms = [
        lambda: f"px {rng.choice(['<', '<=', '>', '>=', '=', '<>'])} {round(rng.uniform(1, 100), 1)}",
        lambda: f"qty {rng.choice(['<', '>', '='])} {rng.randrange(-50, 500)}",
        lambda: f"sym = '{rng.choice(SYMS)}'",
        lambda: f"sym IN ({', '.join(repr(s) for s in rng.sample(SYMS, 2))})",
        lambda: f"{rng.choice(['px', 'qty', 'sym', 'ts', 'note', 'venue'])} IS {rng.choice(['', 'NOT '])}NULL",
        lambda: f"ts BETWEEN {ts_lit(rng)} AND {ts_lit(rng)}",
        lambda: f"ts < {ts_lit(rng)}",
        # Point lookups on the designated timestamp (found by binary search, not by a scan).
        lambda: f"ts = {ts_lit(rng)}",
        lambda: f"ts IN ({', '.join(ts_lit(rng) for _ in range(rng.randrange(1, 30)))}{', NULL' if rng.random() < 0.2 else ''})",
        lambda: f"note {rng.choice(['=', '<>'])} '{rng.choice(['x', 'yy', ''])}'",
        lambda: f"venue = '{rng.choice(['N', 'Q'])}'",
        lambda: f"id % {rng.randrange(2, 6)} = {rng.randrange(2)}",
        lambda: f"sym IN (SELECT sym FROM bad{k})",
        # The offset keeps px away from a tie with the average: when every px is equal, two
        # summation orders put the average a rounding error either side of it, and the row
        # count would then depend on the order, not on the SQL.
        lambda: f"px > (SELECT avg(px) FROM d{k}) + 0.0001234",
    ]
    if depth < 2 and rng.random() < 0.35:
        op = rng.choice(["AND", "OR"])
        return f"({predicate(rng, k, depth + 1)} {op} {predicate(rng, k, depth + 1)})"
    if rng.random() < 0.1:
        return f"NOT ({rng.choice(atoms)()})"
    return rng.choice(atoms)()


def set_clause(rng):
    options = [
        lambda: f"px = px * {rng.choice([2, 0.5, -1])}",
        lambda: f"px = {round(rng.uniform(1, 100), 2)}",
        lambda: "px = NULL",
        lambda: f"qty = qty + {rng.randrange(1, 100)}",
        lambda: "qty = CASE WHEN qty > 100 THEN 0 ELSE qty END",
        lambda: f"note = '{rng.choice(['fixed', '', 'z'])}'",
        lambda: "note = NULL",
        lambda: f"venue = '{rng.choice(['N', 'Q', 'X'])}'",
        lambda: "venue = NULL",
        # These move rows: to another partition, or elsewhere in time order.
        lambda: f"sym = '{rng.choice(SYMS + ['E'])}'",
        lambda: "sym = NULL",
        lambda: f"ts = ts + INTERVAL '{rng.randrange(1, 900)} seconds'",
        lambda: f"ts = {ts_lit(rng)}",
    ]
    picks = rng.sample(range(len(options)), rng.choice([1, 1, 2, 3]))
    cols = set()
    out = []
    for p in picks:
        c = options[p]()
        col = c.split(" ", 1)[0]
        if col not in cols:
            cols.add(col)
            out.append(c)
    return ", ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--steps", type=int, default=8, help="statements per case")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    con = common.connect()
    out = [f"# generated by tests/gen/dml_diff.py --seed {a.seed} --cases {a.cases}\n"]
    nstmt = 0

    def emit(sql):
        con.execute(common.to_duck(sql))
        out.append(common.slt_statement(sql))

    def check(k):
        for q in (f"SELECT id, ts, sym, px, qty, note, venue FROM d{k}",
                  f"SELECT sym, count(*), sum(qty), min(ts), max(px) FROM d{k} GROUP BY sym"):
            tbl = common.run_arrow(con, common.to_duck(q))
            letters, rows = common.format_table(tbl)
            out.append(common.slt_query(q, letters, "rowsort", common.result_lines(rows, "rowsort")))

    for k in range(a.cases):
        ddl, n, null_rate = make_table(rng, k)
        for s in ddl:
            emit(s)
        next_id = n
        for _ in range(a.steps):
            r = rng.random()
            if r < 0.4:
                where = "" if rng.random() < 0.05 else " WHERE " + predicate(rng, k)
                emit(f"DELETE FROM d{k}{where}")
            elif r < 0.85:
                where = "" if rng.random() < 0.1 else " WHERE " + predicate(rng, k)
                emit(f"UPDATE d{k} SET {set_clause(rng)}{where}")
            else:
                m = rng.randrange(1, 20)
                for s in common.insert_sql(f"d{k}", [row(rng, next_id + i, null_rate) for i in range(m)]):
                    emit(s)
                next_id += m
            nstmt += 1
            check(k)
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {nstmt} DELETE/UPDATE/INSERT steps over {a.cases} tables to {a.out}")


if __name__ == "__main__":
    main()
