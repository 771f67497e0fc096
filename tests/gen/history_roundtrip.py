"""Round trip through the Parquet history, checked by DuckDB.

Generates a table of every storable type (NULLs, empty and long strings, unicode, NaN,
-0.0, extreme integers, symbols incl. NULL keys) over several days, loads it into
`zeptodb sql --data-dir`, moves most days to the history with ALTER TABLE ... CONVERT
PARTITION TO PARQUET, and then checks three readers agree with what was loaded:

1. DuckDB reading our files directly (`read_parquet('DIR/history/t/*/*.parquet',
   hive_partitioning = true)`), for the rows before the cut;
2. ZeptoDB itself after a restart (memory + history), for all rows;
3. the Hive partition column DuckDB derives (`date`) equals each row's UTC day.

Usage: history_roundtrip.py --seed N [--rows N] [--bin target/debug/zeptodb]
"""

import argparse
import csv
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import duckdb

DAY = 86_400_000_000_000
T0 = 1_704_067_200_000_000_000  # 2024-01-01 00:00:00 UTC


def gen_rows(rng, n):
    rows = []
    for i in range(n):
        ts = T0 + rng.randrange(0, 6 * DAY)
        sym = rng.choice(["AAPL", "MSFT", "ü-sym", "x y", None, "Z"])
        px = rng.choice([rng.uniform(-1e6, 1e6), 0.0, -0.0, float("nan"), None, 1e300])
        n32 = rng.choice([rng.randrange(-(2**31), 2**31), 0, None, 2**31 - 1, -(2**31)])
        big = rng.choice([rng.randrange(-(2**63), 2**63), None, 2**63 - 1, -(2**63), 7])
        f = rng.choice([rng.uniform(-1e3, 1e3), None, 0.5])
        ok = rng.choice([True, False, None])
        note = rng.choice(["", None, "plain", "comma, \"quoted\"", "x" * 5000, "日本語", "line"])
        d = rng.choice([None, "2024-02-29", "1970-01-01", "1900-03-01", "2099-12-31"])
        rows.append((ts, sym, px, n32, big, f, ok, note, d))
    return rows


def csv_field(v):
    return "" if v is None else v


def write_csv(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_MINIMAL)
        w.writerow(["ts", "sym", "px", "n", "big", "f", "ok", "note", "d"])
        for ts, sym, px, n32, big, f, ok, note, d in rows:
            out = [str(ts), sym, None if px is None else repr(px), n32, big, None if f is None else repr(f),
                   None if ok is None else ("true" if ok else "false"), note, d]
            # NULL = empty unquoted field; the empty string = "" (quoted), per SPEC section 2.
            line = []
            for v in out:
                if v is None:
                    line.append("")
                elif v == "":
                    line.append('""')
                else:
                    s = str(v)
                    if any(c in s for c in ',"\n'):
                        s = '"' + s.replace('"', '""') + '"'
                    line.append(s)
            fh.write(",".join(line) + "\n")


def zsql(binary, data_dir, sql):
    r = subprocess.run([binary, "sql", "--data-dir", data_dir, "--format", "json", "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"zeptodb failed: {r.stderr}\n{sql}")
    return r.stdout


def norm(v, kind):
    if v is None:
        return None
    if kind == "f64":
        v = float(v)
        return "nan" if math.isnan(v) else repr(v)
    if kind == "f32":
        return struct.unpack("f", struct.pack("f", float(v)))[0]
    if kind == "bool":
        return bool(v)
    return v


KINDS = ["int", "str", "f64", "int", "int", "f32", "bool", "str", "str"]
SELECT = "SELECT epoch_ns(ts) AS ts, sym, px, n, big, f, ok, note, CAST(d AS VARCHAR) AS d FROM t"


def key(r):
    return tuple("" if x is None else str(x) for x in r)


def rows_of(records):
    return sorted((tuple(norm(v, k) for v, k in zip(r, KINDS)) for r in records), key=key)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--bin", default="target/debug/zeptodb")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    rows = gen_rows(rng, a.rows)
    tmp = tempfile.mkdtemp(prefix="zepto-hist-")
    try:
        data = os.path.join(tmp, "data")
        src = os.path.join(tmp, "rows.csv")
        write_csv(src, rows)
        cut = T0 + 4 * DAY + rng.randrange(0, DAY)
        zsql(a.bin, data, "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n INT, big BIGINT, f REAL, "
                          f"ok BOOLEAN, note VARCHAR, d DATE); COPY t FROM '{src}'; "
                          f"ALTER TABLE t CONVERT PARTITION TO PARQUET WHERE ts < {cut}")
        out = json.loads(zsql(a.bin, data, SELECT))
        got_all = rows_of(out["data"])
        want_all = rows_of([(ts, sym, px, n, big, f, ok, note, d) for ts, sym, px, n, big, f, ok, note, d in rows])
        checks = 0
        if got_all != want_all:
            bad = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
            sys.exit(f"ZeptoDB over memory + history differs from the input at row {bad}: "
                     f"{got_all[bad]} vs {want_all[bad]} ({len(got_all)} vs {len(want_all)} rows)")
        checks += 1
        files = os.path.join(data, "history", "t", "*", "*.parquet")
        con = duckdb.connect()
        duck = con.execute(
            f"SELECT epoch_ns(ts), sym, px, n, big, f, ok, note, CAST(d AS VARCHAR), "
            f"CAST(date AS VARCHAR) = strftime(CAST(ts AS TIMESTAMP), '%Y-%m-%d') "
            f"FROM read_parquet('{files}', hive_partitioning = true)").fetchall()
        if not all(r[-1] for r in duck):
            sys.exit("a row sits under a date=... directory that is not its UTC day")
        got_hist = rows_of([r[:-1] for r in duck])
        want_hist = rows_of([r for r in rows if r[0] < cut])
        if got_hist != want_hist:
            n = min(len(got_hist), len(want_hist))
            bad = next((i for i in range(n) if got_hist[i] != want_hist[i]), n)
            sys.exit(f"DuckDB reads our history differently at row {bad} "
                     f"({len(got_hist)} vs {len(want_hist)} rows): "
                     f"{got_hist[bad] if bad < len(got_hist) else None} vs "
                     f"{want_hist[bad] if bad < len(want_hist) else None}")
        checks += 1
        types = dict(con.execute(f"DESCRIBE SELECT * FROM read_parquet('{files}')").fetchall()[i][:2]
                     for i in range(9))
        want_types = {"ts": "TIMESTAMP_NS", "sym": "VARCHAR", "px": "DOUBLE", "n": "INTEGER", "big": "BIGINT",
                      "f": "FLOAT", "ok": "BOOLEAN", "note": "VARCHAR", "d": "DATE"}
        if types != want_types:
            sys.exit(f"DuckDB sees types {types}, expected {want_types}")
        checks += 1
        print(f"history round trip: {len(want_hist)} of {len(rows)} rows in "
              f"{len(os.listdir(os.path.join(data, 'history', 't')))} day directories; {checks} checks passed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
