"""Durable directories (reopened by another process) and the same API against a server the
test starts (`zeptodb serve`: the `server` fixture of conftest.py)."""

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import zeptodb


def frame(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": pa.array(np.sort(rng.integers(0, 10**15, n)).astype("datetime64[ns]")),
            "sym": pa.array(rng.choice(["a", "b", "c"], n)),
            "px": pa.array(rng.normal(0, 1, n)),
        }
    )


def test_a_durable_directory_is_reopened_by_another_process(tmp_path):
    d = zeptodb.connect(tmp_path / "db")
    assert d.durable
    d.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE) TIMESTAMP(ts) PARTITION BY sym")
    data = frame(5000, 1)
    d.insert("t", data)
    want = d.sql("SELECT sym, count(*), sum(px) FROM t GROUP BY sym ORDER BY sym").fetchall()
    # One process per directory: a second open is refused while this one holds it.
    with pytest.raises(zeptodb.StorageError):
        zeptodb.connect(tmp_path / "db")
    d.close()
    script = textwrap.dedent(
        f"""
        import numpy as np
        import zeptodb
        d = zeptodb.connect({str(tmp_path / "db")!r})
        print(d.sql("SELECT sym, count(*), sum(px) FROM t GROUP BY sym ORDER BY sym").fetchall())
        d.insert("t", {{"ts": np.array([1], "datetime64[ns]"), "sym": ["z"], "px": [0.5]}})
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == repr(want)
    # The other process's acknowledged insert is here too.
    again = zeptodb.connect(tmp_path / "db")
    assert again.sql("SELECT count(*) FROM t").fetchone()[0] == 5001
    again.close()


def test_remote_and_in_process_give_the_same_answers(server):
    remote = zeptodb.connect(server, api_key="test-key-0123456789abcdef")
    local = zeptodb.connect()
    data = frame(3000, 2)
    for db in (remote, local):
        db.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE) TIMESTAMP(ts) PARTITION BY sym")
        assert db.insert("t", data) == 3000
        assert db.insert("u", data.to_pandas(), create=True) == 3000
    q = "SELECT sym, count(*) AS n, avg(px) AS a FROM t WHERE ts > ? GROUP BY sym ORDER BY sym"
    start = np.datetime64(5 * 10**14, "ns")
    r, l = remote.sql(q, [start]), local.sql(q, [start])
    assert r.columns == l.columns == ["sym", "n", "a"]
    assert r.fetchall() == l.fetchall()
    assert remote.sql("SELECT count(*), sum(px) FROM u").fetchall() == local.sql("SELECT count(*), sum(px) FROM u").fetchall()
    assert "t" in remote.tables() and "u" in remote.tables()
    assert r.to_pandas().equals(l.to_pandas())


def test_remote_errors_are_the_same_exceptions(server):
    remote = zeptodb.connect(server, api_key="test-key-0123456789abcdef")
    with pytest.raises(zeptodb.SqlError) as e:
        remote.sql("SELECT nosuch FROM nowhere_at_all")
    assert e.value.code == "TABLE_NOT_FOUND"
    with pytest.raises(zeptodb.SqlError) as e:
        remote.sql("SELEC 1")
    assert (e.value.code, e.value.line, e.value.column) == ("SQL_PARSE", 1, 1)
    with pytest.raises(zeptodb.PermissionDenied):
        zeptodb.connect(server, api_key="wrong").sql("SELECT 1")


def test_every_type_through_both_doors(server):
    remote = zeptodb.connect(server, api_key="test-key-0123456789abcdef")
    local = zeptodb.connect()
    ddl = (
        "CREATE TABLE every (ts TIMESTAMP, d DATE, i INTEGER, r REAL, s SYMBOL, v VARCHAR, "
        "b BOOLEAN, n BIGINT, x DOUBLE) TIMESTAMP(ts)"
    )
    data = pa.table(
        {
            "ts": pa.array([1, 1_700_000_000_123_456_789, None], pa.timestamp("ns")),
            "d": pa.array([0, 19_000, None], pa.date32()),
            "i": pa.array([-(2**31), 2**31 - 1, None], pa.int32()),
            "r": pa.array([1.5, -0.25, None], pa.float32()),
            "s": pa.array(["sym", "ü", None]),
            "v": pa.array(["", "漢字 ok", None]),
            "b": pa.array([True, False, None]),
            "n": pa.array([-(2**63), 2**63 - 1, None], pa.int64()),
            "x": pa.array([float("-inf"), 1e-300, None]),
        }
    )
    got = []
    for db in (local, remote):
        db.execute(ddl)
        assert db.insert("every", data) == 3
        got.append(db.sql("SELECT * FROM every ORDER BY n").to_arrow())
    l, r = got
    assert l.schema == r.schema, (l.schema, r.schema)
    assert l.to_pylist() == r.to_pylist()
    rows = l.to_pylist()
    assert rows[0]["n"] == -(2**63) and rows[1]["n"] == 2**63 - 1 and rows[2]["n"] is None
    assert rows[1]["ts"].value == 1_700_000_000_123_456_789
    assert rows[1]["d"] == __import__("datetime").date(2022, 1, 8)
    assert rows[0]["i"] == -(2**31) and rows[1]["r"] == -0.25
    assert [x["s"] for x in rows] == ["sym", "ü", None] and rows[1]["v"] == "漢字 ok"


def test_statements_without_rows_report_the_same_status(server):
    remote = zeptodb.connect(server, api_key="test-key-0123456789abcdef")
    local = zeptodb.connect()
    for db in (remote, local):
        r = db.execute("CREATE TABLE st (a BIGINT)")
        assert (r.status, r.columns, r.num_rows) == ("CREATE TABLE", [], 0)
        r = db.execute("INSERT INTO st VALUES (1), (2)")
        assert r.status == "INSERT 2", r.status
        assert db.sql("SELECT status FROM (SELECT 'x' AS status)").fetchall() == [("x",)]


def test_a_timestamp_parameter_is_a_timestamp_through_both_doors(server):
    import datetime as dt

    import pandas as pd

    remote = zeptodb.connect(server, api_key="test-key-0123456789abcdef")
    local = zeptodb.connect()
    ns = 1_700_000_000_123_456_789
    values = [
        (pd.Timestamp(ns), ns),
        (pd.Timestamp(ns, tz="UTC").tz_convert("Asia/Tokyo"), ns),  # aware: converted to UTC
        (np.datetime64(ns, "ns"), ns),
        (np.datetime64(ns // 1000, "us"), ns // 1000 * 1000),
        (dt.datetime(2023, 11, 14, 22, 13, 20, 123456), ns // 1000 * 1000),  # naive: UTC
        (dt.datetime(2023, 11, 15, 7, 13, 20, 123456, tzinfo=dt.timezone(dt.timedelta(hours=9))), ns // 1000 * 1000),
        (np.datetime64(-1, "ns"), -1),
    ]
    for db in (local, remote):
        for v, want in values:
            t = db.sql("SELECT ? AS t", [v]).to_arrow()
            assert t.schema.field("t").type == pa.timestamp("ns"), (db, v, t.schema)
            assert t.column("t").cast(pa.int64()).to_pylist() == [want], (db, v)
        # Several placeholders, numbered, beside other types, and not inside strings or names.
        t = db.sql("SELECT $2 AS a, '$1 ?' AS b, $1 AS c", [np.datetime64(5, "ns"), "x"]).to_arrow()
        assert t.to_pylist() == [{"a": "x", "b": "$1 ?", "c": pd.Timestamp(5)}]
        assert db.sql("SELECT ?", [np.datetime64("NaT")]).fetchone() == (None,)
        # An error after a timestamp placeholder points where the caller wrote it.
        with pytest.raises(zeptodb.SqlError) as e:
            db.sql("SELECT ?, nosuch", [pd.Timestamp(0)])
        assert (e.value.line, e.value.column) == (1, 11), (db, e.value.line, e.value.column)


def test_a_failed_create_insert_leaves_no_table_through_both_doors(server):
    remote = zeptodb.connect(server, api_key="test-key-0123456789abcdef")
    local = zeptodb.connect()
    # The table can be made from these types; the second row's value cannot be written.
    bad = pa.table({"ts": pa.array([1, 2], pa.timestamp("ns")), "a": pa.array([1, 2**63 + 5], pa.uint64())})
    for db in (local, remote):
        with pytest.raises(zeptodb.IngestError) as e:
            db.insert("made_then_failed", bad, create=True)
        assert e.value.row == 2, (db, e.value.row)
        assert "made_then_failed" not in db.tables(), db
        # A table that was there before stays, even empty.
        db.execute("CREATE TABLE kept (ts TIMESTAMP, a BIGINT)")
        with pytest.raises(zeptodb.IngestError):
            db.insert("kept", bad, create=True)
        assert "kept" in db.tables()


def test_remote_durable_is_unknown_and_close_refuses_calls(server):
    remote = zeptodb.connect(server, api_key="test-key-0123456789abcdef")
    assert remote.durable is None
    assert not remote.closed
    remote.close()
    remote.close()
    assert remote.closed
    with pytest.raises(zeptodb.Error):
        remote.sql("SELECT 1")
