#!/usr/bin/env python3
"""Generate the golden sqllogictest corpus tests/slt/NN_topic.slt with DuckDB as the oracle.

    .venv/bin/python tests/gen/gen_slt.py

Deterministic: fixed seeds, DuckDB run single-threaded.  Every file is self-contained and
expects a fresh, empty database.  The SQL in the files is the ZeptoDB dialect (SYMBOL,
TIMESTAMP = ns, quantile = discrete); common.to_duck() translates it for DuckDB.

Safety checks performed while generating:
  * every `statement ok` must succeed and every `statement error` must fail in DuckDB;
  * every query is also run against a second database where all setup tables were loaded
    in reverse row order; the answers must agree (catches non-total ORDER BY / LIMIT);
  * a query whose result has a microsecond TIMESTAMP column (DuckDB truncates TIMESTAMP_NS
    in interval arithmetic / date_trunc) must be explicitly marked us_ok=True.
"""
import datetime as dt
import os
import random
import sys

sys.dont_write_bytecode = True  # no __pycache__ next to the sources
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
from common import TS  # noqa: E402

import duckdb  # noqa: E402

OUT_DIR = os.path.normpath(os.path.join(HERE, "..", "slt"))
SEED = 20240102


# ======================================================================================
# data
# ======================================================================================
class Table:
    def __init__(self, name, cols, rows):
        self.name, self.cols, self.rows = name, cols, rows

    def create_sql(self):
        return "CREATE TABLE %s (%s)" % (self.name, ", ".join("%s %s" % c for c in self.cols))


def ts_of(y, mo, d, h=0, mi=0, s=0, ns=0):
    return TS(int((dt.datetime(y, mo, d, h, mi, s) - common.EPOCH).total_seconds()) * 10**9 + ns)


def maybe(rng, p, v):
    return None if rng.random() < p else v


def make_tables():
    rng = random.Random(SEED)
    T = {}

    # ---------------- trades: ns timestamps, unique, increasing ----------------
    syms = ["AAPL", "MSFT", "GOOG", "AMZN", "IBM"]
    base = {"AAPL": 185.0, "MSFT": 370.0, "GOOG": 140.0, "AMZN": 150.0, "IBM": 160.0}
    venues = ["NYSE", "NASDAQ", "ARCA", "bats", ""]
    rows = []
    for day in (2, 3, 4):
        open_ns = ts_of(2024, 1, day, 9, 30)
        offs = sorted(rng.sample(range(0, 6 * 3600 * 1000), 100))  # ms offsets within 6h
        for k, off in enumerate(offs):
            frac = rng.choice([0, 0, rng.randrange(1000, 10**6) * 1000,
                               rng.randrange(1000, 10**9)])  # ns part; never in (0, 1000)
            sub = frac % 10**6
            if 0 < sub < 1000:
                sub += 1000  # sub-microsecond digits only together with microsecond digits
            ts = TS(open_ns + off * 10**6 + sub)
            if day == 2 and k == 0:
                ts = TS(open_ns)  # exactly at the open
            s = rng.choice(syms)
            base[s] = round(base[s] * (1 + rng.uniform(-0.004, 0.004)), 2)
            rows.append((ts, maybe(rng, 0.08, s), maybe(rng, 0.08, base[s]),
                         maybe(rng, 0.08, rng.choice([100, 200, 300, 500, 1000]) if rng.random() < 0.5
                               else rng.randint(1, 5000)),
                         maybe(rng, 0.12, rng.choice(venues)), maybe(rng, 0.2, rng.random() < 0.5)))
    rows.sort(key=lambda r: r[0])
    assert len({r[0] for r in rows}) == len(rows)
    T["trades"] = Table("trades", [("ts", "TIMESTAMP"), ("sym", "SYMBOL"), ("price", "DOUBLE"),
                                   ("size", "BIGINT"), ("venue", "VARCHAR"), ("flag", "BOOLEAN")], rows)

    # ---------------- quotes: whole-microsecond timestamps ----------------
    qsyms = ["AAPL", "MSFT", "GOOG", "TSLA"]
    qbase = {"AAPL": 185.0, "MSFT": 370.0, "GOOG": 140.0, "TSLA": 240.0}
    rows = []
    for day in (2, 3):
        open_ns = ts_of(2024, 1, day, 9, 30)
        offs = sorted(rng.sample(range(0, 6 * 3600 * 10**6), 100))  # us offsets
        for off in offs:
            s = rng.choice(qsyms)
            qbase[s] = round(qbase[s] * (1 + rng.uniform(-0.003, 0.003)), 2)
            spread = rng.choice([0.01, 0.02, 0.05, 0.1])
            rows.append((TS(open_ns + off * 1000), maybe(rng, 0.05, s), maybe(rng, 0.1, qbase[s]),
                         maybe(rng, 0.1, round(qbase[s] + spread, 2)),
                         maybe(rng, 0.1, rng.randint(1, 1000)), maybe(rng, 0.1, rng.randint(1, 1000))))
    T["quotes"] = Table("quotes", [("ts", "TIMESTAMP"), ("sym", "SYMBOL"), ("bid", "DOUBLE"),
                                   ("ask", "DOUBLE"), ("bid_size", "INT"), ("ask_size", "INT")], rows)

    # ---------------- people ----------------
    names = ["Alice", "bob", "CHARLIE", "dave", "Eve", "", "Émile", "Zoë", "東京太郎", "O'Brien",
             "back\\slash", "Ωmega", "alice", "Bob", "user_1", "user%2", "Anna-Lena", "li", "Li",
             "José", "Ångström", "Mallory", "trent", "Peggy", "victor", "Walter", "ß-free", "Yusuf",
             "zed", "Zed", "Ölaf", "ünder", "Chen Wei", "María", "mike", "NINA", "oscar", "Pat",
             "quinn", "Rosa", "Sam", "tina", "Uma", "Vik", "wendy", "Xena", "yan", "Zara", "amy",
             "Ben", "carl", "Dana", "ed", "Fay", "gus", "Hana", "ivan", "Jo", "kim", "Lu"]
    names[26] = "Sven"  # keep case mapping 1:1 (no sharp s)
    depts = ["eng", "ops", "sales", "hr", "Eng"]
    rows = []
    for i in range(1, 61):
        nm = names[i - 1]
        if i in (13, 27, 41, 55, 59):
            nm = None
        born = dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(0, 55 * 365))
        mgr = None if rng.random() < 0.3 else (999 if rng.random() < 0.08 else rng.randint(1, 60))
        rows.append((i, nm, maybe(rng, 0.12, rng.choice(depts[:4]) if rng.random() < 0.93 else "Eng"),
                     maybe(rng, 0.15, rng.randint(18, 70)),
                     maybe(rng, 0.12, float(rng.randint(120, 800) * 250)),
                     maybe(rng, 0.2, rng.randint(0, 800) / 8.0),
                     maybe(rng, 0.2, rng.random() < 0.6),
                     maybe(rng, 0.15, born), mgr))
    T["people"] = Table("people", [("id", "INT"), ("name", "VARCHAR"), ("dept", "SYMBOL"), ("age", "INT"),
                                   ("salary", "DOUBLE"), ("score", "REAL"), ("active", "BOOLEAN"),
                                   ("born", "DATE"), ("manager_id", "INT")], rows)

    # ---------------- depts ----------------
    T["depts"] = Table("depts", [("dept", "SYMBOL"), ("budget", "BIGINT"), ("floor_no", "INT")],
                       [("eng", 1000000, 3), ("ops", 250000, 1), ("sales", 500000, 2),
                        ("legal", 150000, None), (None, 1, 0), ("Eng", 7, 9)])

    # ---------------- orders ----------------
    items = ["widget", "gadget", "Widget", "gizmo", "doohickey", "", None]
    rows = []
    for oid in range(1, 121):
        r = rng.random()
        pid = None if r < 0.12 else (rng.randint(70, 75) if r < 0.18 else rng.randint(1, 60))
        rows.append((oid, pid, rng.choice(items), maybe(rng, 0.1, rng.randint(1, 20)),
                     maybe(rng, 0.08, rng.randint(4, 2000) / 4.0),
                     maybe(rng, 0.1, dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(0, 366)))))
    T["orders"] = Table("orders", [("oid", "INT"), ("pid", "INT"), ("item", "VARCHAR"), ("qty", "INT"),
                                   ("amount", "DOUBLE"), ("od", "DATE")], rows)

    # ---------------- nums: hand-picked arithmetic corner cases ----------------
    xs = [2.5, -2.5, 0.5, -0.5, 1.5, 3.5, 0.25, -3.75, 10.0, 0.0, None, 7.125, -1.0, 100.75,
          None, 4.0, -0.25, 2.0, 1.0, 8.5, 64.0, 0.125, -6.5, 12.25]
    rows = []
    for i in range(24):
        n = None if i in (4, 13, 19) else [-7, 7, 0, 3, -3, 2, 10, -10, 1, 5, 4, -1, 6, 9, -9, 8, 0, 11, -2, 12,
                                          13, -13, 14, 15][i]
        m = None if i in (2, 16) else [2000000000, -2000000000, 5, -5, 123456789, 0, 7, -7, 1, 1999999999,
                                       3, 42, -42, 1000000, 1, 17, 9, 10, -11, 25, 30, 31, -2, 64][i]
        y = None if i in (6, 15) else [2.0, 0.0, 4.0, -2.0, 0.0, 0.5, 1.0, 8.0, 0.25, 3.0, 1.0, 0.0, 2.0,
                                       -4.0, 5.0, 0.5, 10.0, 16.0, 0.0, -0.5, 2.0, 4.0, 8.0, 1.0][i]
        s = None if i in (3, 11) else ["12", "-3", "007", "0", "42", "100", "5", "-17", "8", "1",
                                       "2", "3", "64", "99", "-1", "10", "11", "13", "14", "15",
                                       "16", "18", "19", "20"][i]
        b = None if i % 5 == 4 else (i % 3 == 0)
        rows.append((i + 1, n, m, xs[i], y, s, b))
    T["nums"] = Table("nums", [("k", "INT"), ("n", "INT"), ("m", "BIGINT"), ("x", "DOUBLE"), ("y", "DOUBLE"),
                               ("s", "VARCHAR"), ("b", "BOOLEAN")], rows)

    # ---------------- empty & single-row ----------------
    T["empty_t"] = Table("empty_t", [("a", "INT"), ("b", "VARCHAR"), ("c", "DOUBLE"), ("t", "TIMESTAMP")], [])
    T["one_row"] = Table("one_row", [("k", "INT"), ("v", "VARCHAR"), ("x", "DOUBLE"), ("t", "TIMESTAMP"),
                                     ("d", "DATE")],
                         [(1, "only", 2.5, ts_of(2024, 1, 2, 9, 30, 0, 123456789), dt.date(2024, 1, 2))])
    return T


# ======================================================================================
# file builder
# ======================================================================================
class SltFile:
    def __init__(self, name, title, tables, T):
        self.name, self.title = name, title
        self.records = []       # (kind, payload)
        self.nq = 0
        self.tables = [T[t] for t in tables]
        for t in self.tables:
            self.records.append(("setup", t))

    def comment(self, text):
        self.records.append(("comment", text))

    def q(self, sql, sort="rowsort", duck=None, us_ok=False):
        assert sort in ("rowsort", "nosort"), sort
        self.records.append(("query", (sql, sort, duck, us_ok)))
        self.nq += 1

    def ok(self, sql, duck=None):
        self.records.append(("stmt", (sql, True, duck)))

    def err(self, sql, duck=None):
        self.records.append(("stmt", (sql, False, duck)))

    # ----------------------------------------------------------------------------------
    def render(self):
        con_a, con_b = common.connect(), common.connect()
        out = ["# %s\n# Generated by tests/gen/gen_slt.py from DuckDB %s -- do not edit by hand.\n"
               "# Self-contained: expects a fresh, empty database.\n" % (self.title, duckdb.__version__)]
        nq = 0
        for kind, p in self.records:
            if kind == "comment":
                out.append("".join("# %s\n" % l for l in p.split("\n")))
            elif kind == "setup":
                t = p
                out.append(common.slt_statement(t.create_sql()))
                for con in (con_a, con_b):
                    con.execute(common.to_duck(t.create_sql()))
                ins_a = common.insert_sql(t.name, t.rows)
                ins_b = common.insert_sql(t.name, list(reversed(t.rows)))
                for s in ins_a:
                    out.append(common.slt_statement(s))
                    con_a.execute(common.to_duck(s))
                for s in ins_b:
                    con_b.execute(common.to_duck(s))
            elif kind == "stmt":
                sql, ok, duck = p
                dsql = common.to_duck(duck or sql)
                for con in (con_a, con_b):
                    try:
                        con.execute(dsql)
                        failed = None
                    except duckdb.Error as e:
                        failed = e
                    if ok and failed is not None:
                        raise SystemExit("%s: statement failed in DuckDB: %s\n  %s" % (self.name, sql, failed))
                    if not ok and failed is None:
                        raise SystemExit("%s: statement unexpectedly succeeded in DuckDB: %s" % (self.name, sql))
                out.append(common.slt_statement(sql, ok))
            elif kind == "query":
                sql, sort, duck, us_ok = p
                dsql = common.to_duck(duck or sql)
                try:
                    ta = common.run_arrow(con_a, dsql)
                    tb = common.run_arrow(con_b, dsql)
                except duckdb.Error as e:
                    raise SystemExit("%s: DuckDB rejected query: %s\n  %s\n  %s" % (self.name, sql, dsql, e))
                for f in ta.schema:
                    if str(f.type).startswith("timestamp[") and f.type.unit != "ns" and not us_ok:
                        raise SystemExit("%s: result column %s is %s (ns truncated?): %s"
                                         % (self.name, f.name, f.type, sql))
                letters, rows_a = common.format_table(ta)
                _, rows_b = common.format_table(tb)
                if not common.rows_equal(rows_a, rows_b, sort):
                    raise SystemExit("%s: answer depends on row order (non-total ORDER BY?): %s"
                                     % (self.name, sql))
                if len(rows_a) > 300:
                    raise SystemExit("%s: too many rows (%d): %s" % (self.name, len(rows_a), sql))
                out.append(common.slt_query(sql, letters, sort, common.result_lines(rows_a, sort)))
                nq += 1
        con_a.close()
        con_b.close()
        return "\n".join(out), nq


# ======================================================================================
# the corpus
# ======================================================================================
def build_files(T):
    files = []

    def new(name, title, tables):
        f = SltFile(name, title, tables, T)
        files.append(f)
        return f

    from corpus import ALL_SECTIONS  # noqa: E402  (the queries themselves live in corpus.py)
    for name, title, tables, fn in ALL_SECTIONS:
        fn(new(name, title, tables))
    return files


def pinned_duckdb_version():
    with open(os.path.join(HERE, "requirements.txt")) as fh:
        for line in fh:
            if line.strip().startswith("duckdb=="):
                return line.strip().split("==", 1)[1]
    return None


def main():
    pinned = pinned_duckdb_version()
    if pinned and duckdb.__version__ != pinned:
        print("WARNING: DuckDB %s installed, requirements.txt pins %s; the expected answers may change"
              % (duckdb.__version__, pinned), file=sys.stderr)
    T = make_tables()
    files = build_files(T)
    os.makedirs(OUT_DIR, exist_ok=True)
    # remove stale generated files
    for fn in os.listdir(OUT_DIR):
        if fn.endswith(".slt") and fn[:2].isdigit() and fn[2] == "_":
            os.remove(os.path.join(OUT_DIR, fn))
    total = 0
    for f in files:
        text, nq = f.render()
        with open(os.path.join(OUT_DIR, f.name + ".slt"), "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        print("%-32s %4d queries" % (f.name + ".slt", nq))
        total += nq
    print("%-32s %4d queries (DuckDB %s)" % ("TOTAL", total, duckdb.__version__))
    if total < 450:
        raise SystemExit("fewer than 450 queries")


if __name__ == "__main__":
    main()
