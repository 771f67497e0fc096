"""The Flight SQL door (`zeptodb serve --flight-sql`) through a real client: ADBC's Flight SQL
driver, as pandas, Polars and DBeaver users reach databases. Rows written through the door are
read back through it and compared with DuckDB's answers over the same generated rows; DDL and
DML report what they changed; keys are checked; metadata lists the tables."""

import random
import time

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import duckdb
import pyarrow as pa
import pytest

from conftest import API_KEY, free_port, hold_slot, serve

SYMS = [f"S{i}" for i in range(7)]


@pytest.fixture(scope="module")
def door():
    """grpc:// address of a server in memory with a Flight SQL door and one admin key."""
    port = free_port()
    proc = serve("--flight-sql", f"127.0.0.1:{port}")
    yield f"grpc://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


def connect(uri, key=API_KEY):
    return flight_sql.connect(uri, db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {key}"},
                              autocommit=True)


def rows(n, seed):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        px = None if rnd.random() < 0.05 else round(rnd.uniform(1, 500), 2)
        out.append((1_700_000_000_000_000_000 + i * 1_000_003, rnd.choice(SYMS), px, rnd.randrange(1, 900)))
    return out


def values(rs):
    return ", ".join(f"({ts}, '{s}', {'NULL' if p is None else p}, {q})" for ts, s, p, q in rs)


def test_rows_written_through_the_door_read_back_as_duckdb_reads_them(door):
    data = rows(3000, 11)
    with connect(door) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE fs_trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)")
        assert cur.fetchall() == [("CREATE TABLE",)]
        cur.execute(f"INSERT INTO fs_trades VALUES {values(data)}")
        assert cur.rowcount == 3000
        cur.execute("SELECT * FROM fs_trades")
        table = cur.fetch_arrow_table()
    assert table.schema.field("ts").type == pa.timestamp("ns")
    assert table.schema.field("sym").type == pa.string()
    assert table.num_rows == 3000
    ref = duckdb.connect()
    ref.execute("CREATE TABLE fs_trades (ts BIGINT, sym VARCHAR, price DOUBLE, size BIGINT)")
    ref.executemany("INSERT INTO fs_trades VALUES (?, ?, ?, ?)", data)
    queries = [
        "SELECT sym, count(*), count(price), sum(size), round(avg(price), 6), min(price), max(price) "
        "FROM fs_trades GROUP BY sym ORDER BY sym",
        "SELECT count(*), sum(size) FROM fs_trades WHERE price > 250 AND sym IN ('S1', 'S4')",
        "SELECT sym, size FROM fs_trades WHERE price IS NULL ORDER BY sym, size",
    ]
    with connect(door) as conn, conn.cursor() as cur:
        for q in queries:
            cur.execute(q)
            got = [tuple(r) for r in cur.fetchall()]
            want = [tuple(r) for r in ref.execute(q).fetchall()]
            assert got == want, q


def test_a_large_result_streams_in_batches(door):
    with connect(door) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE fs_big (ts TIMESTAMP, v BIGINT)")
        cur.fetchall()
        for chunk in range(4):
            vals = ", ".join(f"({chunk * 50_000 + i}, {i})" for i in range(50_000))
            cur.execute(f"INSERT INTO fs_big VALUES {vals}")
        cur.execute("SELECT ts, v FROM fs_big")
        reader = cur.fetch_record_batch()
        batches = list(reader)
    assert sum(b.num_rows for b in batches) == 200_000
    assert sum(pa.compute.sum(b.column("v")).as_py() for b in batches) == 4 * sum(range(50_000))


def test_errors_say_what_and_where(door):
    with connect(door) as conn, conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error, match="TABLE_NOT_FOUND.*line 1, column 15"):
            cur.execute("SELECT * FROM nowhere")
        with pytest.raises(adbc_driver_manager.Error, match="SQL_PARSE"):
            cur.execute("SELEC 1")


def test_a_wrong_key_is_refused(door):
    with pytest.raises(adbc_driver_manager.Error, match="(?i)unauthenticated|key"):
        with connect(door, key="not-a-key-0123456789") as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchall()


def test_username_and_password_log_in_by_handshake(door):
    kwargs = {"username": "anyone", "password": API_KEY}
    with flight_sql.connect(door, db_kwargs=kwargs, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT 41 + 1")
        assert cur.fetchall() == [(42,)]


def test_metadata_names_the_server_and_its_tables(door):
    with connect(door) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE fs_meta (ts TIMESTAMP, sym SYMBOL, x DOUBLE)")
        cur.fetchall()
        assert conn.adbc_get_info()["vendor_name"] == "ZeptoDB"
        objects = conn.adbc_get_objects(table_name_filter="fs_meta").read_all().to_pylist()
        tables = [t for c in objects for s in c["catalog_db_schemas"] for t in s["db_schema_tables"]]
        assert [t["table_name"] for t in tables] == ["fs_meta"]
        assert [c["column_name"] for c in tables[0]["table_columns"]] == ["ts", "sym", "x"]
        schema = conn.adbc_get_table_schema("fs_meta")
        assert schema.names == ["ts", "sym", "x"]


def test_statements_share_the_servers_query_slots():
    """While an HTTP statement holds the only query slot (`--max-queries 1`), a Flight SQL
    statement waits `--queue-timeout` and is refused as Unavailable (retry later), while small
    reads answer (bound on the door's thread; a small join on the quick lane); once the slot
    is free the statement runs, and the small reads answer the same."""
    slow = "SELECT count(*) FROM trades a JOIN trades b ON a.price < b.price - 1000000 AND a.size > b.size"
    point = "SELECT ts, price FROM trades WHERE sym = 'S090'"
    small = ("SELECT count(*) FROM (SELECT * FROM trades WHERE sym = 'S090') t "
             "JOIN (SELECT * FROM quotes WHERE sym = 'S090') q ON t.ts <= q.ts")
    http, grpc = free_port(), free_port()
    proc = serve("--demo", "--rows", "50000", "--max-queries", "1", "--queue-timeout", "0.3",
                 "--flight-sql", f"127.0.0.1:{grpc}", http=f"127.0.0.1:{http}")
    hold = None
    try:
        hold = hold_slot(http, slow)
        with connect(f"grpc://127.0.0.1:{grpc}") as conn, conn.cursor() as cur:
            with pytest.raises(adbc_driver_manager.Error) as e:
                cur.execute("CREATE TABLE x (a BIGINT)")
            assert "Unavailable" in str(e.value) and "--queue-timeout" in str(e.value), str(e.value)
            # Small reads never wait behind heavy statements: a point query is bound and run
            # on the door's thread, a small join takes the quick lane, as over HTTP.
            cur.execute(point)
            busy_point = cur.fetchall()
            cur.execute(small)
            busy_small = cur.fetchall()
        hold.close()  # cancels the slow query
        deadline = time.monotonic() + 10
        while True:
            try:
                with connect(f"grpc://127.0.0.1:{grpc}") as conn, conn.cursor() as cur:
                    cur.execute("CREATE TABLE x (a BIGINT)")
                    assert cur.fetchall() == [("CREATE TABLE",)]
                    cur.execute(f"SELECT count(*) FROM ({point}) p")
                    assert cur.fetchall() == [(len(busy_point),)] and len(busy_point) > 0
                    cur.execute(f"SELECT * FROM ({small}) s")
                    assert cur.fetchall() == busy_small and busy_small[0][0] > 0, busy_small
                    # Run on the door's thread (20k rows scanned), made into batches off it
                    # (over 4,096 rows); and a read of every row, on a slot.
                    syms = ", ".join(f"'S{i:03d}'" for i in range(40))
                    cur.execute(f"SELECT ts, price FROM trades WHERE sym IN ({syms}) ORDER BY ts, price")
                    wide = cur.fetch_arrow_table()
                    cur.execute(f"SELECT count(*), sum(price) FROM trades WHERE sym IN ({syms})")
                    n, total = cur.fetchall()[0]
                    assert wide.num_rows == n > 4096 and abs(sum(wide["price"].to_pylist()) - total) < 1e-6 * abs(total)
                    cur.execute("SELECT ts, price FROM trades")
                    assert cur.fetch_arrow_table().num_rows == 50_000
                break
            except adbc_driver_manager.Error as e:
                assert "Unavailable" in str(e), str(e)
                assert time.monotonic() < deadline, "the slot never came back"
                time.sleep(0.05)
    finally:
        if hold is not None:
            hold.close()
        proc.terminate()
        proc.wait(timeout=30)
