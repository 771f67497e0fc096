"""Resuming a subscription by position after the server is killed (`kill -9`): a client that
reconnects with the id of the last event it saw (Last-Event-ID, `from=`, `from_lsn=`, or the
Python package's `from_id`) gets every change committed after it, before and after the kill,
read back from the write-ahead log, and nothing twice; the rows equal DuckDB's answer to the
same query over the same generated batches. A position the log no longer holds (after a
checkpoint) is refused as gone, and so are the ids of a server that ran with a relaxed --sync
and crashed."""

import json
import subprocess
import threading
import urllib.parse

import duckdb
import pytest

from conftest import API_KEY, ROOT, free_port
import test_subscribe
from test_subscribe import QUERY, Stream, batches, events, ordered, position, rows, want

import os

BINARY = os.environ.get("ZEPTO_BIN") or str(ROOT / "target" / "debug" / "zeptodb")


class Server:
    """`zeptodb serve --data-dir DIR` on a free port, started and killed at will."""

    def __init__(self, data_dir, *args):
        self.data_dir, self.args, self.port, self.proc = str(data_dir), args, free_port(), None

    def start(self):
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--data-dir", self.data_dir, "--http", f"127.0.0.1:{self.port}",
             "--api-key", API_KEY, *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            if "listening on" in line:
                threading.Thread(target=self.proc.stderr.read, daemon=True).start()
                return self
        pytest.fail("the server did not start")

    def kill(self):
        self.proc.kill()  # SIGKILL: no checkpoint, no clean stop
        self.proc.wait(timeout=30)

    def sql(self, text):
        from test_subscribe import sql

        return sql(self.port, text)


def insert(server, oracle, rows_):
    test_subscribe.insert(server.port, oracle, rows_)


def test_a_subscriber_resumes_after_the_server_is_killed(tmp_path):
    import zeptodb

    server = Server(tmp_path / "db").start()
    try:
        server.sql("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
        oracle = duckdb.connect()
        oracle.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym VARCHAR, price DOUBLE)")
        def write():
            for b in batches(11, 6, 40) + [[(-1, "A", 99.0)]]:
                insert(server, oracle, b)

        seen = events(server.port, -1, write)
        ids = [i for i, _ in seen]
        assert rows(seen) == want(oracle) and ordered(ids) and len(seen) >= 3
        # Committed while nobody listens, then the server is killed.
        for b in batches(12, 4, 40):
            insert(server, oracle, b)
        server.kill()
        server.start()
        for b in batches(13, 3, 40) + [[(-2, "A", 98.0)]]:
            insert(server, oracle, b)
        missed = events(server.port, -2, last=ids[-1])
        assert sorted(rows(seen) + rows(missed)) == want(oracle), "nothing missed, nothing repeated"
        assert ordered(ids + [i for i, _ in missed]), "the same timeline, positions in order"
        # From an earlier id, and from the LSN of a whole record: the rest of the first stream again.
        assert events(server.port, -2, extra="&from=" + urllib.parse.quote(ids[1])) == seen[2:] + missed
        lsn, k = position(ids[1])
        by_lsn = events(server.port, -2, extra=f"&from_lsn={lsn}")
        assert by_lsn == [e for e in seen + missed if position(e[0])[0] > lsn]
        # A reconnecting EventSource sends Last-Event-ID with its first URL: the id wins.
        assert events(server.port, -2, last=ids[-1], extra=f"&from_lsn={lsn}") == missed
        # A WebSocket on the same path, resuming with from=: the same events.
        import websocket

        url = f"ws://127.0.0.1:{server.port}/subscribe?" + urllib.parse.urlencode({"query": QUERY, "from": ids[-1]})
        ws = websocket.create_connection(url, header=[f"Authorization: Bearer {API_KEY}"], timeout=20)
        over_ws = [json.loads(ws.recv()) for _ in missed]
        ws.close()
        assert [(m["id"], sorted(tuple(r) for r in m["data"]["result"]["data"])) for m in over_ws] == \
            [(i, sorted(r)) for i, r in missed]
        # The Python package over the same door, resuming by id.
        remote = zeptodb.connect(f"http://127.0.0.1:{server.port}", api_key=API_KEY, timeout=30)
        got = [r for c in remote.subscribe(QUERY, from_id=ids[-1], timeout=2) for r in c.result.fetchall()]
        assert sorted(got) == rows(missed)
        # Once a checkpoint dropped the log before it, an old position is gone.
        server.sql("CHECKPOINT")
        insert(server, oracle, [(-3, "A", 97.0)])
        server.sql("CHECKPOINT")
        gone = Stream(server.port, QUERY, last=ids[0])
        body = json.loads(gone.resp.read())
        assert gone.resp.status == 410 and body["error"]["code"] == "RESUME_GONE", body
        assert "no longer in the log" in body["error"]["message"], body
    finally:
        if server.proc.poll() is None:
            server.kill()


def test_ids_of_a_relaxed_run_that_crashed_are_gone(tmp_path):
    """Under --sync interval a crash may lose what subscribers were sent; the restarted server
    starts a new timeline and refuses the old ids instead of resuming into other rows."""
    server = Server(tmp_path / "db", "--sync", "interval=10").start()
    try:
        server.sql("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
        oracle = duckdb.connect()
        oracle.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym VARCHAR, price DOUBLE)")
        [(last, _)] = events(server.port, -1, lambda: insert(server, oracle, [(-1, "A", 99.0)]))
        server.kill()
        server.start()
        old = Stream(server.port, QUERY, last=last)
        body = json.loads(old.resp.read())
        assert old.resp.status == 410 and "another history" in body["error"]["message"], body
    finally:
        if server.proc.poll() is None:
            server.kill()


def test_in_process_subscriber_resumes_from_the_log_after_reopening(tmp_path):
    """The embedded package: a database closed and opened again, a subscriber resuming from
    the id it last saw reads what followed from the log."""
    import zeptodb

    path = str(tmp_path / "local")
    query = QUERY
    with zeptodb.connect(path) as db:
        db.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
        changes = db.subscribe(query, timeout=1)
        db.execute("INSERT INTO t VALUES ('2024-01-02 09:30:00', 1, 'A', 70.0)")
        first = next(changes)
        db.execute("INSERT INTO t VALUES ('2024-01-02 09:30:00', 2, 'A', 80.0), ('2024-01-02', 3, 'B', 90.0)")
        del changes
    with zeptodb.connect(path) as db:
        db.execute("INSERT INTO t VALUES ('2024-01-02 09:30:00', 4, 'A', 60.0)")
        got = [r[0] for c in db.subscribe(query, from_id=first.id, timeout=0.5) for r in c.result.fetchall()]
        assert got == [2, 4]


def test_a_view_subscriber_resumes_after_the_server_is_killed(tmp_path):
    """A view's subscriber resuming after a kill: its first event is the whole answer over the
    view now (it holds nothing it can be told the difference from), equal to DuckDB's."""
    server = Server(tmp_path / "db").start()
    view_query = "SELECT sym, n, total FROM by_sym WHERE sym IN ('A', 'B')"
    oracle_query = "SELECT sym, count(*), sum(price) FROM t WHERE sym IN ('A', 'B') GROUP BY sym"
    try:
        server.sql("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
        server.sql("CREATE MATERIALIZED VIEW by_sym AS SELECT sym, count(*) AS n, sum(price) AS total FROM t GROUP BY sym")
        oracle = duckdb.connect()
        oracle.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym VARCHAR, price DOUBLE)")
        stream = Stream(server.port, view_query)
        insert(server, oracle, batches(21, 1, 30)[0])
        kind, last, _ = stream.next()
        assert kind == "rows"
        stream.close()
        for b in batches(22, 5, 30):
            insert(server, oracle, b)
        server.kill()
        server.start()
        insert(server, oracle, batches(23, 1, 30)[0])
        resumed = Stream(server.port, view_query, last=last)
        kind, ident, data = resumed.next()
        resumed.close()
        assert kind == "rows" and "removed" not in data and position(ident) > position(last), (kind, ident)
        got = sorted((s, n, round(t, 6)) for s, n, t in data["result"]["data"])
        assert got == sorted((s, n, round(t, 6)) for s, n, t in oracle.execute(oracle_query).fetchall())
    finally:
        if server.proc.poll() is None:
            server.kill()


def test_in_process_view_subscriber_resumes_from_the_log_after_reopening(tmp_path):
    """The embedded package over a view: resumed after the database was closed and opened
    again, its first change is the whole answer now (equal to DuckDB's), then nothing more."""
    import zeptodb

    path = str(tmp_path / "local")
    query = "SELECT sym, n, total FROM by_sym"
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym VARCHAR, price DOUBLE)")

    def put(db, rows_):
        db.execute("INSERT INTO t VALUES " + ", ".join(f"('2024-01-02', {i}, '{s}', {p})" for i, s, p in rows_))
        oracle.executemany("INSERT INTO t VALUES ('2024-01-02', ?, ?, ?)", rows_)

    with zeptodb.connect(path) as db:
        db.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
        db.execute("CREATE MATERIALIZED VIEW by_sym AS SELECT sym, count(*) AS n, sum(price) AS total FROM t GROUP BY sym")
        changes = db.subscribe(query, timeout=1)
        put(db, batches(31, 1, 20)[0])
        first = next(changes)
        for b in batches(32, 6, 20):
            put(db, b)
        del changes
    with zeptodb.connect(path) as db:
        put(db, batches(33, 1, 20)[0])
        resumed = list(db.subscribe(query, from_id=first.id, timeout=0.5))
    assert len(resumed) == 1, [c.id for c in resumed]
    got = sorted((s, n, round(t, 6)) for s, n, t in resumed[0].result.fetchall())
    want_ = oracle.execute("SELECT sym, count(*), sum(price) FROM t GROUP BY sym").fetchall()
    assert got == sorted((s, n, round(t, 6)) for s, n, t in want_)
