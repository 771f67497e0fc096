"""The PostgreSQL wire protocol door (`zeptodb serve --pg`) through real clients: psycopg 3
(simple and extended protocol, text and binary results, typed parameters), SQLAlchemy's
`postgresql+psycopg` dialect and pandas `read_sql`. Rows written through the door are read back
and compared with DuckDB's answers over the same generated rows and with the HTTP door's
answers; errors carry SQLSTATEs and positions; keys are checked."""

import datetime as dt
import json
import random
import threading
import time
import urllib.request

import duckdb
import numpy as np
import pandas as pd
import psycopg
import pytest
import sqlalchemy

from conftest import API_KEY, admitted, free_port, hold_slot, serve, wait_running

SYMS = [f"S{i}" for i in range(7)]
T0 = dt.datetime(2024, 1, 2, 9, 30)


@pytest.fixture(scope="module")
def door():
    """(PostgreSQL port, HTTP URL) of a server in memory with one admin key."""
    pg, http = free_port(), free_port()
    proc = serve("--pg", f"127.0.0.1:{pg}", http=f"127.0.0.1:{http}")
    yield pg, f"http://127.0.0.1:{http}"
    proc.terminate()
    proc.wait(timeout=30)


def connect(port, password=API_KEY, **kw):
    return psycopg.connect(host="127.0.0.1", port=port, user="quant", password=password, dbname="zepto",
                           autocommit=True, **kw)


def generated(n, seed):
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        px = None if rnd.random() < 0.05 else round(rnd.uniform(1, 500), 2)
        rows.append((T0 + dt.timedelta(microseconds=i * 1_003), rnd.choice(SYMS), px, rnd.randrange(1, 900)))
    return rows


@pytest.fixture(scope="module")
def trades(door):
    """3,000 generated trades written through the door (extended protocol, typed parameters)."""
    data = generated(3000, 7)
    with connect(door[0]) as conn:
        conn.execute("CREATE TABLE pg_trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)")
        with conn.cursor() as cur:
            for i in range(0, len(data), 500):
                chunk = data[i:i + 500]
                values = ", ".join(["(%s, %s, %s, %s)"] * len(chunk))
                cur.execute(f"INSERT INTO pg_trades VALUES {values}", [v for r in chunk for v in r])
                assert cur.rowcount == len(chunk)
    return data


def oracle(data, sql):
    con = duckdb.connect()
    con.execute("CREATE TABLE pg_trades (ts TIMESTAMP, sym VARCHAR, price DOUBLE, size BIGINT)")
    con.executemany("INSERT INTO pg_trades VALUES (?, ?, ?, ?)", data)
    return con.execute(sql).fetchall()


QUERIES = [
    "SELECT sym, count(*), sum(size), min(price), max(price) FROM pg_trades GROUP BY sym ORDER BY sym",
    "SELECT ts, sym, price, size FROM pg_trades WHERE size > 850 ORDER BY ts",
    "SELECT count(*) FROM pg_trades WHERE price IS NULL",
]


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sql", QUERIES)
def test_answers_match_duckdb_in_text_and_binary(door, trades, sql, binary):
    with connect(door[0]) as conn, conn.cursor(binary=binary) as cur:
        cur.execute(sql)
        got = cur.fetchall()
    assert [tuple(r) for r in got] == oracle(trades, sql)


def test_the_simple_protocol_answers_like_the_http_door(door, trades):
    sql = "SELECT sym, count(*) AS n, avg(size) AS a FROM pg_trades GROUP BY sym ORDER BY sym"
    with connect(door[0]) as conn:
        # No parameters and a text cursor: psycopg sends a simple Query.
        got = conn.execute(psycopg.sql.SQL(sql)).fetchall()
    req = urllib.request.Request(door[1] + "/", data=sql.encode(), headers={"Authorization": f"Bearer {API_KEY}"})
    http = json.loads(urllib.request.urlopen(req, timeout=30).read())["data"]
    assert [list(r) for r in got] == http


def test_parameters_of_every_type(door, trades):
    with connect(door[0]) as conn:
        conn.execute("CREATE TABLE pg_params (ts TIMESTAMP, s VARCHAR, i BIGINT, f DOUBLE, b BOOLEAN)")
        ts = dt.datetime(2024, 3, 1, 12, 0, 0, 123456)
        conn.execute("INSERT INTO pg_params VALUES (%s, %s, %s, %s, %s)", (ts, "it's", 2**40, 2.5, True))
        conn.execute("INSERT INTO pg_params VALUES (%s, %s, %s, %s, %s)", (None, None, None, None, None))
        row = conn.execute("SELECT ts, s, i, f, b FROM pg_params WHERE i = %s AND s = %s AND b = %s AND ts = %s",
                           (2**40, "it's", True, ts)).fetchone()
        assert row == (ts, "it's", 2**40, 2.5, True)
        assert conn.execute("SELECT count(*) FROM pg_params WHERE i IS NULL").fetchone() == (1,)
        # Small ints go as int2, floats as float8, text as unknown: the context types them.
        n = conn.execute("SELECT count(*) FROM pg_trades WHERE size < %s AND price > %s AND sym = %s",
                         (100, 250.0, "S3")).fetchone()[0]
        want = sum(1 for _, s, p, q in trades if q < 100 and p is not None and p > 250.0 and s == "S3")
        assert n == want


def test_errors_carry_sqlstate_and_position(door, trades):
    with connect(door[0]) as conn:
        with pytest.raises(psycopg.errors.SyntaxError) as e:
            conn.execute("SELECT FROM WHERE")
        assert e.value.sqlstate == "42601" and e.value.diag.statement_position == "8"
        with pytest.raises(psycopg.errors.UndefinedTable) as e:
            conn.execute("SELECT * FROM no_such_table")
        assert "no_such_table" in str(e.value)
        with pytest.raises(psycopg.errors.UndefinedColumn):
            conn.execute("SELECT nope FROM pg_trades WHERE size > %s", (1,))
        # The connection is still good after errors in either protocol.
        assert conn.execute("SELECT count(*) FROM pg_trades").fetchone() == (3000,)


def test_a_wrong_key_is_refused(door):
    with pytest.raises(psycopg.OperationalError) as e:
        connect(door[0], password="not-a-key")
    assert "password authentication failed" in str(e.value).lower()


def test_transactions_set_and_show_are_accepted(door, trades):
    with psycopg.connect(host="127.0.0.1", port=door[0], user="quant", password=API_KEY) as conn:
        # autocommit off: psycopg sends BEGIN first, COMMIT at the end.
        assert conn.execute("SELECT count(*) FROM pg_trades").fetchone() == (3000,)
        conn.execute("SET application_name = 'notebook'")
        assert conn.execute("SHOW application_name").fetchone() == ("notebook",)
        conn.commit()


def test_writes_wait_for_commit_and_a_failed_transaction_stores_none(door):
    """Outside autocommit (psycopg's default), INSERT and COPY rows are stored at COMMIT, seen
    before it by the transaction's own reads alone; a transaction that fails, or that the client rolls back, stores none of
    them; a nested block (a savepoint) rolled back drops only its own rows."""
    with connect(door[0]) as admin:
        admin.execute("CREATE TABLE pg_txn (ts TIMESTAMP, sym SYMBOL, n BIGINT)")

        def syms():
            return sorted(r[0] for r in admin.execute("SELECT sym FROM pg_txn").fetchall())

        kw = dict(host="127.0.0.1", port=door[0], user="quant", password=API_KEY, dbname="zepto")
        with psycopg.connect(**kw) as conn:
            conn.execute("INSERT INTO pg_txn VALUES (%s, %s, %s)", (T0, "a", 1))
            with conn.cursor().copy("COPY pg_txn (sym, n) FROM STDIN") as cp:
                cp.write_row(("b", 2))
                cp.write_row(("c", 3))
            assert syms() == [], "not stored before COMMIT"
            own = conn.execute("SELECT sym FROM pg_txn ORDER BY sym").fetchall()
            assert [r[0] for r in own] == ["a", "b", "c"], "the transaction reads its own rows"
            n = conn.execute("SELECT count(*) FROM pg_txn WHERE n >= %s", (2,)).fetchone()[0]
            assert n == 2, "through the extended protocol too"
            conn.commit()
        assert syms() == ["a", "b", "c"]
        # An error inside: psycopg's block rolls back, and nothing of it is stored.
        with pytest.raises(psycopg.Error):
            with psycopg.connect(**kw) as conn:
                conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('d', 4)")
                conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('e', 'five')")
        # Refused after the error until the end; COMMIT then rolls back.
        with psycopg.connect(**kw) as conn:
            conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('f', 6)")
            with pytest.raises(psycopg.Error):
                conn.execute("SELECT count(*) FROM no_such_table")
            with pytest.raises(psycopg.errors.InFailedSqlTransaction):
                conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('g', 7)")
            conn.commit()
        assert syms() == ["a", "b", "c"]
        # Nested blocks are savepoints: the inner one rolled back, the outer committed.
        with psycopg.connect(**kw, autocommit=True) as conn:
            with conn.transaction():
                conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('h', 8)")
                with pytest.raises(RuntimeError):
                    with conn.transaction():
                        conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('i', 9)")
                        raise RuntimeError("the inner block fails")
                conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('j', 10)")
                # An error in a nested block: rolled back to its savepoint, the outer goes on.
                with pytest.raises(psycopg.Error):
                    with conn.transaction():
                        conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('k', 11)")
                        conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('l', 'twelve')")
                assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
                conn.execute("INSERT INTO pg_txn (sym, n) VALUES ('m', 13)")
                own = conn.execute("SELECT sym FROM pg_txn ORDER BY sym").fetchall()
                assert [r[0] for r in own] == ["a", "b", "c", "h", "j", "m"], "rolled-back rows unread"
                assert syms() == ["a", "b", "c"]
        assert syms() == ["a", "b", "c", "h", "j", "m"]


def test_ready_for_query_reports_the_transaction_as_it_stands(door):
    """The status byte of ReadyForQuery (libpq's transaction_status) follows the transaction in
    the corners where the statements' answers alone do not tell it: a COPY after BEGIN in one
    query, a ROLLBACK TO followed by more in one query, and a COMMIT that failed (rolled back)."""
    from psycopg import pq

    with connect(door[0]) as admin:
        admin.execute("CREATE TABLE pg_rfq (ts TIMESTAMP, sym SYMBOL, n BIGINT)")
        admin.execute("CREATE TABLE pg_rfq2 (ts TIMESTAMP, sym SYMBOL, n BIGINT)")
        kw = dict(host="127.0.0.1", port=door[0], user="quant", password=API_KEY, dbname="zepto")
        with psycopg.connect(**kw, autocommit=True) as conn:
            pg = conn.pgconn

            def run(sql, want=pq.ExecStatus.COMMAND_OK):
                r = pg.exec_(sql.encode())
                assert r.status == want, (sql, r.status, r.error_message)

            # BEGIN and a COPY FROM STDIN in one query: still in the transaction after the COPY.
            run("BEGIN; COPY pg_rfq (sym, n) FROM STDIN", pq.ExecStatus.COPY_IN)
            pg.put_copy_data(b"a\t1\nb\t2\n")
            pg.put_copy_end()
            assert pg.get_result().status == pq.ExecStatus.COMMAND_OK
            assert pg.get_result() is None
            assert pg.transaction_status == pq.TransactionStatus.INTRANS
            run("SAVEPOINT s")
            run("INSERT INTO pg_rfq (sym, n) VALUES ('c', 3)")
            # A failed statement; then ROLLBACK TO and more statements in one query.
            run("SELECT * FROM no_such_table", pq.ExecStatus.FATAL_ERROR)
            assert pg.transaction_status == pq.TransactionStatus.INERROR
            pg.send_query(b"ROLLBACK TO SAVEPOINT s; INSERT INTO pg_rfq (sym, n) VALUES ('d', 4)")
            statuses = []
            while (r := pg.get_result()) is not None:
                statuses.append(r.status)
            assert statuses == [pq.ExecStatus.COMMAND_OK] * 2, statuses
            assert pg.transaction_status == pq.TransactionStatus.INTRANS
            run("COMMIT")
            assert pg.transaction_status == pq.TransactionStatus.IDLE
            assert sorted(r[0] for r in admin.execute("SELECT sym FROM pg_rfq").fetchall()) == ["a", "b", "d"]
            # A COMMIT that fails (a table changed under it) has rolled back: idle, not failed.
            run("BEGIN")
            run("INSERT INTO pg_rfq2 (sym, n) VALUES ('e', 5)")
            admin.execute("DROP TABLE pg_rfq2")
            admin.execute("CREATE TABLE pg_rfq2 (ts TIMESTAMP, s VARCHAR)")
            run("COMMIT", pq.ExecStatus.FATAL_ERROR)
            assert pg.transaction_status == pq.TransactionStatus.IDLE
            # The same over the extended protocol (psycopg's prepared path): its Sync reports.
            run("BEGIN")
            run("INSERT INTO pg_rfq (sym, n) VALUES ('f', 6)")
            admin.execute("DROP TABLE pg_rfq")
            admin.execute("CREATE TABLE pg_rfq (ts TIMESTAMP, s VARCHAR)")
            r = pg.exec_params(b"COMMIT", [])
            assert r.status == pq.ExecStatus.FATAL_ERROR, r.status
            assert pg.transaction_status == pq.TransactionStatus.IDLE
            run("INSERT INTO pg_rfq (s) VALUES ('stored at once: no transaction')")
        assert admin.execute("SELECT s FROM pg_rfq").fetchall() == [("stored at once: no transaction",)]


def test_a_transaction_holds_the_budget_its_rows_need_and_no_more(door):
    """The rows a transaction holds draw on the server's budget of client data in memory
    (zepto_request_body_bytes_in_flight); ROLLBACK TO SAVEPOINT gives back what it dropped,
    COMMIT what it stored."""

    def in_flight():
        req = urllib.request.Request(door[1] + "/metrics", headers={"Authorization": f"Bearer {API_KEY}"})
        text = urllib.request.urlopen(req, timeout=5).read().decode()
        return int(next(line.split()[1] for line in text.splitlines()
                        if line.startswith("zepto_request_body_bytes_in_flight ")))

    with connect(door[0]) as conn:
        conn.execute("CREATE TABLE pg_share (ts TIMESTAMP, sym SYMBOL, n BIGINT)")
        many = "INSERT INTO pg_share SELECT CAST(x AS TIMESTAMP), 'a', x FROM generate_series(1, 50000) AS g(x)"
        assert in_flight() == 0
        conn.execute("BEGIN")
        conn.execute("INSERT INTO pg_share (sym, n) VALUES ('first', 1)")
        small = in_flight()
        conn.execute("SAVEPOINT s")
        conn.execute(many)
        assert in_flight() > small + 50000 * 16
        conn.execute("ROLLBACK TO SAVEPOINT s")
        assert in_flight() == small, "the rows dropped gave their share back"
        conn.execute(many)
        conn.execute("COMMIT")
        assert in_flight() == 0
        assert conn.execute("SELECT count(*) FROM pg_share").fetchone()[0] == 50001


def test_unaliased_columns_are_named_as_postgresql_names_them(door, trades):
    """psycopg's `description`, and so pandas' columns, carry PostgreSQL's names for unaliased
    entries (`count`, not `count(*)`); the HTTP door keeps the text."""
    url = f"postgresql+psycopg://quant:{API_KEY}@127.0.0.1:{door[0]}/zepto"
    sql = ("SELECT sym, count(*), SUM(size), size + 1, CAST(size AS BIGINT), CAST(1 AS BIGINT), 'a', "
           "(SELECT max(size) FROM pg_trades), CASE WHEN size > 1 THEN 'big' END "
           "FROM pg_trades GROUP BY sym, size ORDER BY sym, size LIMIT 1")
    want = ["sym", "count", "sum", "?column?", "size", "int8", "?column?", "max", "case"]
    with connect(door[0]) as conn:
        assert [d.name for d in conn.execute(sql).description] == want
        # A BI tool's wrapper around a query it ran alone finds the names it got.
        wrapped = conn.execute('SELECT "count" FROM (SELECT sym, count(*) FROM pg_trades GROUP BY sym) q')
        assert [d.name for d in wrapped.description] == ["count"]
        assert sum(r[0] for r in wrapped.fetchall()) == len(trades)
    engine = sqlalchemy.create_engine(url)
    assert list(pd.read_sql("SELECT sym, count(*), avg(size) FROM pg_trades GROUP BY sym", engine).columns) == [
        "sym", "count", "avg"]
    engine.dispose()
    req = urllib.request.Request(door[1] + "/", data=b"SELECT count(*) FROM pg_trades",
                                 headers={"Authorization": f"Bearer {API_KEY}"})
    assert json.loads(urllib.request.urlopen(req, timeout=30).read())["columns"][0]["name"] == "count(*)"


def test_sqlalchemy_and_pandas_read_sql(door, trades):
    url = f"postgresql+psycopg://quant:{API_KEY}@127.0.0.1:{door[0]}/zepto"
    engine = sqlalchemy.create_engine(url)
    sql = "SELECT sym, count(*) AS n FROM pg_trades GROUP BY sym ORDER BY sym"
    df = pd.read_sql(sql, engine)
    assert list(df.columns) == ["sym", "n"]
    assert [tuple(r) for r in df.itertuples(index=False)] == oracle(trades, sql)
    with engine.connect() as c:
        got = c.execute(sqlalchemy.text("SELECT max(size) FROM pg_trades WHERE sym = :s"), {"s": "S1"}).scalar()
    assert got == max(q for _, s, _, q in trades if s == "S1")
    engine.dispose()


def test_cancel_stops_a_running_statement(door):
    with connect(door[0]) as conn:
        conn.execute("CREATE TABLE pg_slow (x DOUBLE)")
        for i in range(0, 200_000, 20_000):
            conn.execute("INSERT INTO pg_slow VALUES " + ", ".join(f"({x}.0)" for x in range(i, i + 20_000)))
        timer = threading.Timer(0.5, conn.cancel)
        timer.start()
        t0 = time.monotonic()
        # 200,000 correlated subqueries would take minutes.
        with pytest.raises(psycopg.errors.QueryCanceled) as e:
            conn.execute("SELECT count(*) FROM pg_slow a WHERE a.x > (SELECT avg(b.x) FROM pg_slow b WHERE b.x < a.x)")
        assert e.value.sqlstate == "57014"
        assert time.monotonic() - t0 < 10
        assert conn.execute("SELECT count(*) FROM pg_slow").fetchone() == (200_000,)
        # A cancel in a transaction begun by the same query (the simple protocol: a
        # ClientCursor) fails it, as any error in it does: ReadyForQuery says so (it said idle,
        # with the transaction left open), and its rows are not stored.
        timer = threading.Timer(0.5, conn.cancel)
        timer.start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            psycopg.ClientCursor(conn).execute(
                "BEGIN; INSERT INTO pg_slow VALUES (-1.0); SELECT count(*) FROM pg_slow a "
                "WHERE a.x > (SELECT avg(b.x) FROM pg_slow b WHERE b.x < a.x)")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        conn.execute("ROLLBACK")
        assert conn.execute("SELECT count(*) FROM pg_slow").fetchone() == (200_000,)


def test_dates_intervals_vectors_and_infinities_as_psycopg_sends_them(door):
    with connect(door[0]) as conn:
        conn.execute("CREATE TABLE pg_kinds (d DATE, v FLOAT[3], x DOUBLE)")
        conn.execute("INSERT INTO pg_kinds VALUES ('2024-01-01', [1, 0, 0], 'inf'::DOUBLE)")
        conn.execute("INSERT INTO pg_kinds VALUES ('2024-02-01', [0, 1, 0], 1.5)")
        # psycopg sends date and timedelta in binary, a list of floats as float8[].
        assert conn.execute("SELECT count(*) FROM pg_kinds WHERE d = %s", (dt.date(2024, 1, 1),)).fetchone() == (1,)
        assert conn.execute("SELECT %s > INTERVAL '1 minute'", (dt.timedelta(minutes=2),)).fetchone() == (True,)
        row = conn.execute("SELECT d FROM pg_kinds ORDER BY array_distance(v, %s) LIMIT 1", ([0.0, 0.9, 0.1],)).fetchone()
        assert row == (dt.date(2024, 2, 1),)
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                cur.execute("SELECT x, d, INTERVAL '90 seconds' AS span FROM pg_kinds ORDER BY d")
                assert cur.fetchall() == [(float("inf"), dt.date(2024, 1, 1), dt.timedelta(seconds=90)),
                                          (1.5, dt.date(2024, 2, 1), dt.timedelta(seconds=90))]
        # A prepared statement holds one command.
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("SELECT 1; SELECT %s", (2,))


def test_information_schema_and_qualified_names_through_the_door(door, trades):
    """The system catalogs answer through the door as tables (filtered, joined), and a
    schema-qualified name reads the same table; DuckDB, given the same CREATE TABLE, lists the
    same columns in the same order."""
    with connect(door[0]) as conn:
        cols = conn.execute(
            "SELECT c.column_name, c.ordinal_position, c.udt_name FROM information_schema.columns c "
            "JOIN information_schema.tables t ON t.table_name = c.table_name AND t.table_schema = c.table_schema "
            "WHERE t.table_schema = 'public' AND t.table_name = 'pg_trades' ORDER BY c.ordinal_position"
        ).fetchall()
        n = conn.execute('SELECT count(*) FROM "public"."pg_trades"').fetchone()[0]
    assert cols == [("ts", 1, "timestamp"), ("sym", 2, "text"), ("price", 3, "float8"), ("size", 4, "int8")]
    assert n == 3000
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE pg_trades (ts TIMESTAMP, sym VARCHAR, price DOUBLE, size BIGINT)")
    want = oracle.execute(
        "SELECT column_name, ordinal_position FROM information_schema.columns "
        "WHERE table_name = 'pg_trades' ORDER BY ordinal_position"
    ).fetchall()
    assert [(c, p) for c, p, _ in cols] == want


def test_the_extended_protocol_reads_long_sql_under_a_query_slot():
    """Parse and Describe of SQL over 64 KiB (a long `IN` list) take a query slot, as the simple
    protocol and the HTTP door parse a long script: while an HTTP statement holds the only slot
    (`--max-queries 1`), a long statement with a syntax error is refused as busy (53000), where
    parsing it at once would have answered 42601; with the slot free, a long query answers as
    over HTTP, with its bound parameter, and the long syntax error is 42601 at its place. A
    statement prepared (Parse) while the slot was free is described under a slot as well."""
    from psycopg import pq

    def sqlstate(res):
        return (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()

    pg, http = free_port(), free_port()
    proc = serve("--pg", f"127.0.0.1:{pg}", "--max-queries", "1", "--queue-timeout", "0.3",
                 http=f"127.0.0.1:{http}")
    slow = ("SELECT count(*) FROM range(100000) a JOIN range(100000) b "
            "ON a.range < b.range - 1000000 AND a.range > b.range")
    items = ",".join(str(i) for i in range(0, 60_000, 3))
    good = f"SELECT count(*) FROM range(%s) WHERE range IN ({items})"
    broken = f"SELECT count(*) FROM range(%s) WHERE range IN ({items}"
    hold = None
    try:
        with connect(pg) as conn:
            conn.execute("SELECT 1")
            # Parse only (no Describe): the text is one statement with one parameter.
            parsed = conn.pgconn.prepare(b"long_broken", broken.replace("%s", "$1").encode())
            assert parsed.status == pq.ExecStatus.COMMAND_OK, sqlstate(parsed)
            hold = hold_slot(http, slow)
            with pytest.raises(psycopg.Error) as e:
                conn.execute(broken, [30_000])
            assert e.value.sqlstate == "53000", (e.value.sqlstate, str(e.value)[:300])
            assert sqlstate(conn.pgconn.describe_prepared(b"long_broken")) == "53000"
            hold.close()  # cancels the slow query
            wait_running(http, 0, "the slot never came back")
            refused = lambda a: isinstance(a, psycopg.errors.InsufficientResources)  # noqa: E731
            rows = admitted(lambda: conn.execute(good, [30_000]).fetchall(), refused, "the slot never came back")
            assert rows == [(10_000,)]
            with pytest.raises(psycopg.Error) as e:
                conn.execute(broken, [30_000])
            assert e.value.sqlstate == "42601", (e.value.sqlstate, str(e.value)[:300])
            assert sqlstate(conn.pgconn.describe_prepared(b"long_broken")) == "42601"
    finally:
        if hold is not None:
            hold.close()
        proc.terminate()
        proc.wait(timeout=30)


def test_a_table_replaced_in_a_sqlalchemy_transaction_is_all_or_nothing(door):
    """DROP TABLE, CREATE TABLE and INSERTs in one SQLAlchemy transaction (`engine.begin()`):
    one that fails halfway leaves the old table and its rows (the DROP is held until COMMIT),
    one that finishes leaves the new table whole; pandas' `to_sql(if_exists="replace")`
    replaces a table the same way."""
    url = f"postgresql+psycopg://quant:{API_KEY}@127.0.0.1:{door[0]}/zepto"
    engine = sqlalchemy.create_engine(url)
    old = pd.DataFrame({"k": np.arange(1000, dtype=np.int64), "v": np.arange(1000) / 8.0})
    old.to_sql("pg_replaced", engine, if_exists="replace", index=False)
    new = pd.DataFrame({"name": [f"n{i}" for i in range(600)], "w": np.arange(600, dtype=np.int64)})
    rows = [{"a": a, "b": int(b)} for a, b in zip(new["name"], new["w"])]

    def replace(fail_after):
        with engine.begin() as c:
            c.execute(sqlalchemy.text("DROP TABLE IF EXISTS pg_replaced"))
            c.execute(sqlalchemy.text("CREATE TABLE pg_replaced (name VARCHAR, w BIGINT)"))
            for i in range(0, 600, 200):
                if i == fail_after:
                    raise RuntimeError("the load fails halfway")
                c.execute(sqlalchemy.text("INSERT INTO pg_replaced VALUES (:a, :b)"), rows[i:i + 200])
            assert c.execute(sqlalchemy.text("SELECT count(*) FROM pg_replaced")).scalar() == 600

    with pytest.raises(RuntimeError):
        replace(fail_after=400)
    pd.testing.assert_frame_equal(pd.read_sql("SELECT * FROM pg_replaced ORDER BY k", engine), old)
    replace(fail_after=None)
    pd.testing.assert_frame_equal(pd.read_sql("SELECT * FROM pg_replaced ORDER BY w", engine), new)
    old.to_sql("pg_replaced", engine, if_exists="replace", index=False)
    pd.testing.assert_frame_equal(pd.read_sql("SELECT * FROM pg_replaced ORDER BY k", engine), old)
    engine.dispose()


def test_sqlalchemy_drop_all_and_create_all_in_one_transaction(door):
    """`metadata.drop_all` then `create_all` in one transaction: `create_all` asks `pg_class`
    whether each table exists, and finds the held drops gone, so it makes every table again;
    rolled back, the old tables and rows stay."""
    url = f"postgresql+psycopg://quant:{API_KEY}@127.0.0.1:{door[0]}/zepto"
    engine = sqlalchemy.create_engine(url)
    meta = sqlalchemy.MetaData()
    tables = [sqlalchemy.Table(f"pg_meta_{i}", meta, sqlalchemy.Column("k", sqlalchemy.BigInteger),
                               sqlalchemy.Column("s", sqlalchemy.String)) for i in range(2)]
    meta.create_all(engine)
    with engine.begin() as c:
        for t in tables:
            c.execute(t.insert(), [{"k": i, "s": f"old{i}"} for i in range(5)])
    with pytest.raises(RuntimeError):
        with engine.begin() as c:
            meta.drop_all(c)
            assert not sqlalchemy.inspect(c).has_table("pg_meta_0")
            meta.create_all(c)
            assert sqlalchemy.inspect(c).has_table("pg_meta_0")
            raise RuntimeError("rolled back")
    count = "SELECT count(*) FROM pg_meta_{}"
    with engine.connect() as c:
        assert [c.execute(sqlalchemy.text(count.format(i))).scalar() for i in range(2)] == [5, 5]
    with engine.begin() as c:
        meta.drop_all(c)
        meta.create_all(c)
        c.execute(tables[1].insert(), [{"k": 1, "s": "new"}])
    with engine.connect() as c:
        assert [c.execute(sqlalchemy.text(count.format(i))).scalar() for i in range(2)] == [0, 1]
    engine.dispose()


def test_a_migration_that_fails_leaves_no_table_behind(door):
    """CREATE TABLE in a transaction is held as PostgreSQL holds it: a migration run in one
    transaction (SQLAlchemy's `engine.begin()`, as Alembic runs one) that fails leaves none of
    its tables; one that finishes leaves all of them with their rows, and an HNSW index made
    on a new table comes with it."""
    url = f"postgresql+psycopg://quant:{API_KEY}@127.0.0.1:{door[0]}/zepto"
    engine = sqlalchemy.create_engine(url)
    meta = sqlalchemy.MetaData()
    plain = sqlalchemy.Table("pg_migrated", meta, sqlalchemy.Column("k", sqlalchemy.BigInteger),
                             sqlalchemy.Column("s", sqlalchemy.String))

    def migrate(fail):
        with engine.begin() as c:
            meta.create_all(c)
            c.execute(sqlalchemy.text("CREATE TABLE pg_vectors (id BIGINT, v FLOAT[2])"))
            c.execute(sqlalchemy.text("CREATE INDEX pg_vectors_v ON pg_vectors USING hnsw (v)"))
            c.execute(plain.insert(), [{"k": i, "s": f"s{i}"} for i in range(3)])
            c.execute(sqlalchemy.text("INSERT INTO pg_vectors VALUES (1, [0, 1]), (2, [1, 0])"))
            assert sqlalchemy.inspect(c).has_table("pg_vectors")
            if fail:
                raise RuntimeError("the migration fails")

    with pytest.raises(RuntimeError):
        migrate(fail=True)
    inspector = sqlalchemy.inspect(engine)
    assert not inspector.has_table("pg_migrated") and not inspector.has_table("pg_vectors")
    migrate(fail=False)
    with engine.connect() as c:
        assert c.execute(sqlalchemy.text("SELECT count(*) FROM pg_migrated")).scalar() == 3
        near = "SELECT id FROM pg_vectors ORDER BY array_cosine_distance(v, [0.9, 0.1]) LIMIT 1"
        assert c.execute(sqlalchemy.text(near)).scalar() == 2
        listed = "SELECT indexname FROM pg_indexes WHERE tablename = 'pg_vectors'"
        assert c.execute(sqlalchemy.text(listed)).scalars().all() == ["pg_vectors_v"]
    engine.dispose()
