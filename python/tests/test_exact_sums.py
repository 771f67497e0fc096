"""Exact integer sums: `sum` of BIGINT is a HUGEINT (PostgreSQL's numeric, DuckDB's HUGEINT),
exact past 2^63 and below -2^63, checked against DuckDB on generated groups of values near
BIGINT's limits, through every door: in process (fetchall as Python ints, pandas, NumPy,
Polars, Arrow decimal128(38, 0)), HTTP JSON, and the PostgreSQL door (numeric). A sum of
INTEGER stays BIGINT; a sum past HUGEINT's range is still an error."""

import json
import random
import urllib.request

import duckdb
import pyarrow as pa
import pytest

import zeptodb
from conftest import API_KEY, pg_connect

BIG = 2**63 - 1


def data(seed):
    """Groups whose sums pass 2^63, stay inside, or pass -2^63; NULLs among the values."""
    rnd = random.Random(seed)
    rows = []
    for g in range(40):
        kind = g % 4
        for _ in range(rnd.randrange(1, 30)):
            if rnd.random() < 0.1:
                v = None
            elif kind == 0:
                v = rnd.randrange(BIG // 2, BIG)
            elif kind == 1:
                v = -rnd.randrange(BIG // 2, BIG)
            else:
                v = rnd.randrange(-(10**12), 10**12)
            rows.append((g, v, rnd.randrange(-1000, 1000)))
    return pa.table({
        "g": pa.array([r[0] for r in rows], pa.int64()),
        "x": pa.array([r[1] for r in rows], pa.int64()),
        "i": pa.array([r[2] for r in rows], pa.int32()),
    })


QUERIES = [
    "SELECT g, sum(x) AS s, sum(i) AS si FROM t GROUP BY g ORDER BY g",
    "SELECT sum(x) AS s FROM t",
    "SELECT g, sum(x) AS s FROM t GROUP BY g HAVING sum(x) > 9223372036854775807 ORDER BY g",
    "SELECT g, sum(x) - 1 AS s, -sum(x) AS n FROM t GROUP BY g ORDER BY g",
    "SELECT sum(s) AS s FROM (SELECT g, sum(x) AS s FROM t GROUP BY g)",
    "SELECT g, x, sum(x) OVER (PARTITION BY g ORDER BY i, x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s "
    "FROM t ORDER BY g, i, x",
]


@pytest.fixture(scope="module")
def tables():
    t = data(7)
    con = duckdb.connect()
    con.register("t", t)
    return t, con


def oracle(con, q):
    return [tuple(int(v) if isinstance(v, int) else v for v in row) for row in con.sql(q).fetchall()]


def test_sums_of_bigint_are_exact_in_process(tables):
    t, con = tables
    db = zeptodb.connect()
    db.insert("t", t, create=True)
    for q in QUERIES:
        got = db.sql(q).fetchall()
        assert got == oracle(con, q), q
    assert any(abs(r[1]) > BIG for r in db.sql(QUERIES[0]).fetchall() if r[1] is not None)
    r = db.sql("SELECT g, sum(x) AS s, sum(i) AS si FROM t GROUP BY g ORDER BY g")
    assert r.to_arrow().schema.field("s").type == pa.decimal128(38, 0)
    assert r.to_arrow().schema.field("si").type == pa.int64()
    # pandas and NumPy: Python ints where a sum does not fit BIGINT, int64 where all do.
    df = r.to_pandas()
    assert [None if v is None else int(v) for v in df["s"]] == [row[1] for row in oracle(con, QUERIES[0])]
    small = db.sql("SELECT g, sum(x) AS s FROM t WHERE g % 4 >= 2 GROUP BY g HAVING count(x) > 0 ORDER BY g")
    assert str(small.to_pandas()["s"].dtype) == "int64"
    assert small.to_numpy()["s"].dtype.name == "int64"
    assert r.to_numpy()["s"].dtype == object
    assert r.to_polars()["s"].to_list() == [row[1] for row in oracle(con, QUERIES[0])]


def test_a_sum_past_hugeint_is_an_error(tables):
    db = zeptodb.connect()
    db.sql("CREATE TABLE h (x BIGINT)")
    db.sql("INSERT INTO h VALUES (1)")
    with pytest.raises(Exception, match="HUGEINT"):
        db.sql("SELECT sum(s) FROM (SELECT 170141183460469231731687303715884105727 AS s FROM h "
               "UNION ALL SELECT 1 FROM h)").fetchall()


def test_the_http_door_answers_exact_json_numbers(tables, server):
    t, con = tables

    def post(sql):
        req = urllib.request.Request(server + "/query", data=json.dumps({"sql": sql}).encode(),
                                     headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    # The session's server is shared with other modules: a table name of this test's own.
    post("CREATE TABLE sums_http (g BIGINT, x BIGINT, i INTEGER)")
    rows = ", ".join(f"({g}, {'NULL' if x is None else x}, {i})"
                     for g, x, i in zip(*(t.column(k).to_pylist() for k in range(3))))
    post(f"INSERT INTO sums_http VALUES {rows}")
    for q in QUERIES:
        body = post(q.replace("FROM t", "FROM sums_http"))
        # JSON numbers of any size read back exactly as Python ints.
        assert [tuple(r) for r in body["data"]] == oracle(con, q), q


def test_the_postgresql_door_sends_numeric(tables, pg_port):
    t, con = tables
    with pg_connect(pg_port) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (g BIGINT, x BIGINT, i INTEGER)")
        with cur.copy("COPY t FROM STDIN") as cp:
            for row in zip(*(t.column(k).to_pylist() for k in range(3))):
                cp.write_row(row)
        for binary in (False, True):
            cur.execute(QUERIES[0], binary=binary)
            assert cur.description[1].type_code == 1700  # numeric
            got = [tuple(None if v is None else int(v) for v in row) for row in cur.fetchall()]
            assert got == oracle(con, QUERIES[0]), binary
