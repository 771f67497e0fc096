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
    make_asof_tables(T)
    return T


def make_asof_tables(T):
    """Small hand-made tables for 16_asof.slt (ASOF JOIN); they use their own rng, so the data of
    the other files is unaffected.

    Right-side times (ts, n and x alike) are unique over the whole table, so every match is
    unambiguous with 0, 1 or 2 equality keys. Left tables stay far below DuckDB's
    asof_loop_join_threshold (64 left rows): above it DuckDB 1.5.6 switches to an operator that
    matches NULL left times (with equality keys) and NULL = NULL second keys."""
    def at(sec, ns=0):  # 2024-01-02 09:30:00 + sec seconds + ns
        return ts_of(2024, 1, 2, 9, 30, 0, sec * 10**9 + ns)

    # quotes (right side): (sec, ns, sym, venue, bid, ask); n = sec (BIGINT), x = sec / 4 (DOUBLE)
    q = [(10, 0, "AAPL", 1, 100.0, 100.25), (20, 500, "AAPL", 2, 100.5, 100.75),
         (30, 0, "AAPL", 1, None, 101.0), (40, 123456789, "AAPL", 2, 101.25, 101.5),
         (50, 0, "AAPL", 1, 101.5, 101.75), (80, 0, "AAPL", 2, 102.0, 102.25),
         (33, 0, "AAPL", None, 100.875, 101.125),
         (15, 0, "MSFT", 1, 200.0, 200.5), (25, 0, "MSFT", 1, 200.25, 200.75),
         (35, 0, "MSFT", 2, 200.5, 201.0), (45, 1, "MSFT", 2, 200.75, 201.25),
         (65, 0, "MSFT", 1, 201.0, 201.5), (38, 0, "MSFT", None, 200.375, 200.875),
         (60, 0, "GOOG", 1, 140.0, 140.125), (70, 0, "GOOG", 3, 140.25, 140.5), (75, 0, "GOOG", 1, 140.75, 141.0),
         (12, 0, "TSLA", 1, 240.0, 240.5), (22, 0, "TSLA", 1, 241.0, 241.5),   # right side only
         (5, 0, None, 1, 1.0, 1.5), (55, 0, None, 2, 2.0, 2.5),               # NULL key
         (None, 0, "AAPL", 1, 99.0, 99.5), (None, 0, "MSFT", 2, 199.0, 199.5)]  # NULL time
    rows = [(None if s is None else at(s, ns), sym, v, bid, ask, s, None if s is None else s / 4.0)
            for s, ns, sym, v, bid, ask in q]
    secs = [r[5] for r in rows if r[5] is not None]
    assert len(set(secs)) == len(secs)
    random.Random(SEED + 16).shuffle(rows)  # right rows in no particular time order
    T["qa"] = Table("qa", [("ts", "TIMESTAMP"), ("sym", "SYMBOL"), ("venue", "INT"), ("bid", "DOUBLE"),
                           ("ask", "DOUBLE"), ("n", "BIGINT"), ("x", "DOUBLE")], rows)

    # trades (left side): (id, sec, ns, sym, venue, px, qty); n = sec, x = sec / 4 unless given
    t = [(1, 0, 0, "AAPL", 1, 99.5, 100),               # before every quote
         (2, 10, 0, "AAPL", 1, 100.125, 200),           # same time as a quote
         (3, 10, 1, "AAPL", 1, 100.25, 300),            # 1 ns after it
         (4, 9, 999999999, "AAPL", 1, 99.875, 50),      # 1 ns before it
         (5, 20, 500, "AAPL", 2, 100.625, 10),          # same ns time as a quote
         (6, 27, 0, "AAPL", 1, 100.75, 400),            # 6, 7, 24 meet the same quotes
         (7, 28, 0, "AAPL", 1, 100.5, 100),
         (8, 30, 0, "AAPL", 1, 101.0, 250),             # same time as the quote with a NULL bid
         (9, 34, 0, "AAPL", 2, 101.125, 75),
         (10, 90, 0, "AAPL", 1, 102.5, 600),            # after every AAPL quote
         (11, 15, 0, "MSFT", 1, 200.25, 100),
         (12, 16, 0, "MSFT", 2, 200.125, 20),
         (13, 46, 0, "MSFT", 2, 201.0, 30),
         (14, 14, 0, "MSFT", 1, 199.75, 40),            # before the first MSFT quote
         (15, 65, 0, "GOOG", 3, 140.5, 500),
         (16, 61, 0, "GOOG", 1, 140.25, 60),
         (17, 30, 0, "IBM", 1, 160.0, 70),              # left side only
         (18, 40, 0, "IBM", 2, 160.5, 80),
         (19, 25, 0, None, 1, 50.0, 90),                # NULL key
         (20, None, 0, "AAPL", 1, 100.0, 10),           # NULL time
         (21, None, 0, None, 2, 1.0, 1),
         (22, 36, 0, "AAPL", None, 101.25, 35),         # NULL second key
         (23, 45, 1, "MSFT", 2, 200.875, 45),
         (24, 28, 0, "AAPL", 1, 100.625, 15)]           # duplicate of 7's time and key
    rows = [(i, None if s is None else at(s, ns), sym, v, px, qty, None if s is None else s,
             None if s is None else s / 4.0) for i, s, ns, sym, v, px, qty in t]
    rows[18] = rows[18][:6] + (None, None)  # id 19: NULL n and x as well
    T["ta"] = Table("ta", [("id", "INT"), ("ts", "TIMESTAMP"), ("sym", "SYMBOL"), ("venue", "INT"), ("px", "DOUBLE"),
                           ("qty", "BIGINT"), ("n", "BIGINT"), ("x", "DOUBLE")], rows)

    # the same kind of left table with a VARCHAR key column
    tv = [(1, 11, "AAPL", 100.0), (2, 25, "MSFT", 200.0), (3, 25, "TSLA", 240.5), (4, 45, "AAPL", 101.0),
          (5, 3, "TSLA", 239.0), (6, 80, "AAPL", 102.0), (7, 50, "NFLX", 480.0), (8, 60, None, 1.0),
          (9, None, "GOOG", 140.0), (10, 22, "", 0.5)]
    T["tv"] = Table("tv", [("id", "INT"), ("ts", "TIMESTAMP"), ("sym", "VARCHAR"), ("px", "DOUBLE")],
                    [(i, None if s is None else at(s), sym, px) for i, s, sym, px in tv])

    # empty and one-row tables
    T["t_empty"] = Table("t_empty", [("id", "INT"), ("ts", "TIMESTAMP"), ("sym", "SYMBOL"), ("px", "DOUBLE")], [])
    T["q_empty"] = Table("q_empty", [("ts", "TIMESTAMP"), ("sym", "SYMBOL"), ("bid", "DOUBLE")], [])
    T["t_one"] = Table("t_one", [("id", "INT"), ("ts", "TIMESTAMP"), ("sym", "SYMBOL"), ("px", "DOUBLE")],
                       [(1, at(30), "AAPL", 101.0)])
    T["q_one"] = Table("q_one", [("ts", "TIMESTAMP"), ("sym", "SYMBOL"), ("bid", "DOUBLE")],
                       [(at(30), "AAPL", 100.5)])


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
