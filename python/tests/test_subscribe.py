"""GET /subscribe: a query's rows as each write commits them, as Server-Sent Events. The rows a
subscriber receives over generated batches equal DuckDB's answer to the same query over all of
them; a subscriber that reconnects with Last-Event-ID misses and repeats nothing; deletes and
drops are events; queries a stream cannot answer, and resume points that are gone, are refused;
a subscriber that stops reading is cut off with SLOW_CONSUMER while writes go on."""

import http.client
import json
import random
import urllib.parse

import duckdb
import pytest

from conftest import API_KEY, admitted, hold_slot, served, wait_running
from zeptodb._subscribe import _events

AUTH = {"Authorization": f"Bearer {API_KEY}"}
QUERY = "SELECT id, sym, price * 2 AS p2 FROM t WHERE sym = 'A' AND price > 50"


@pytest.fixture(scope="module")
def port():
    with served("--subscribe-buffer-mb", "1") as p:
        yield p


def sql(port, text):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/query", body=text, headers=AUTH)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    assert r.status == 200, body
    return json.loads(body) if body else None


class Stream:
    """One subscription's event stream."""

    def __init__(self, port, query, last=None, extra=""):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = dict(AUTH, Accept="text/event-stream")
        if last:
            headers["Last-Event-ID"] = last
        self.conn.request("GET", "/subscribe?" + urllib.parse.urlencode({"query": query}) + extra, headers=headers)
        self.resp = self.conn.getresponse()

    def next(self):
        """The next event as (kind, id, data), comments skipped; None at the stream's end
        (read by the package's own event-stream reader)."""
        if not hasattr(self, "_events"):
            self._events = _events(self.resp)
        return next(self._events, None)

    def events_until(self, marker):
        """The `rows` events up to the one holding id `marker`: (event id, rows) each."""
        events = []
        while True:
            kind, ident, data = self.next()
            assert kind == "rows", (kind, data)
            got = [tuple(r) for r in data["result"]["data"]]
            events.append((ident, got))
            if any(r[0] == marker for r in got):
                return events

    def close(self):
        self.conn.close()


def events(port, until, write=lambda: None, query=QUERY, **stream):
    """A new subscription's `rows` events up to the one holding id `until` (see
    `Stream.events_until`), `write()` run once it is open; `stream`: `Stream`'s other arguments."""
    s = Stream(port, query, **stream)
    try:
        write()
        return s.events_until(until)
    finally:
        s.close()


def batches(seed, n, size):
    rnd = random.Random(seed)
    return [[(rnd.randrange(1_000_000), rnd.choice("ABC"), round(rnd.uniform(0, 100), 2)) for _ in range(size)]
            for _ in range(n)]


def insert(port, oracle, rows):
    values = ", ".join(f"('2024-01-02 09:30:00', {i}, '{s}', {p})" for i, s, p in rows)
    sql(port, f"INSERT INTO t VALUES {values}")
    oracle.executemany("INSERT INTO t VALUES ('2024-01-02 09:30:00', ?, ?, ?)", rows)


def want(oracle, where=""):
    q = QUERY.replace("FROM t WHERE", f"FROM t WHERE {where}") if where else QUERY
    return sorted(tuple(r) for r in oracle.execute(q).fetchall())


def position(event_id):
    """An event id's place in the log: TIMELINE-LSN, or TIMELINE-LSN.K before a record's last."""
    lsn, _, k = event_id.split("-")[1].partition(".")
    return int(lsn), int(k) if k else 2**32


def ordered(ids):
    at = [position(i) for i in ids]
    return len({i.split("-")[0] for i in ids}) == 1 and at == sorted(set(at))


def rows(events):
    return sorted(r for _, rs in events for r in rs)


def test_rows_stream_as_written_and_resume_after_the_last_event_seen(port):
    sql(port, "CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym VARCHAR, price DOUBLE)")
    first = Stream(port, QUERY)
    assert first.resp.status == 200 and first.resp.getheader("content-type") == "text/event-stream"
    for b in batches(1, 6, 40):
        insert(port, oracle, b)
    insert(port, oracle, [(-1, "A", 99.0)])
    seen = first.events_until(-1)
    first.close()
    ids = [i for i, _ in seen]
    assert rows(seen) == want(oracle) and ordered(ids) and len(seen) >= 3
    # Written while nobody listens, read by a client resuming after the last event it saw.
    for b in batches(2, 4, 40):
        insert(port, oracle, b)
    insert(port, oracle, [(-2, "A", 98.0)])
    missed = events(port, -2, last=ids[-1])
    assert sorted(rows(seen) + rows(missed)) == want(oracle), "nothing missed, nothing repeated"
    assert ordered(ids + [i for i, _ in missed])
    # Resuming from an earlier event (`from=`) gives the rest of the first stream again, then the same.
    from_second = Stream(port, QUERY, extra="&from=" + urllib.parse.quote(ids[1]))
    again = from_second.events_until(-2)
    from_second.close()
    assert again == seen[2:] + missed


def test_deletes_and_drops_are_events(port):
    sql(port, "CREATE TABLE d (ts TIMESTAMP, id BIGINT, sym SYMBOL)")
    sql(port, "INSERT INTO d VALUES ('2024-01-02', 1, 'A'), ('2024-01-02', 2, 'B'), ('2024-01-02', 3, 'B')")
    s = Stream(port, "SELECT id FROM d")
    sql(port, "DELETE FROM d WHERE sym = 'B'")
    sql(port, "INSERT INTO d VALUES ('2024-01-03', 4, 'C')")
    sql(port, "DROP TABLE d")
    events = [s.next() for _ in range(3)]
    assert [(k, d) for k, _, d in events] == [
        ("delete", {"table": "d", "rows": 2}),
        ("rows", {"table": "d", "result": events[1][2]["result"]}),
        ("drop", {"table": "d"}),
    ]
    assert events[1][2]["result"]["data"] == [[4]]
    assert s.next() is None, "a drop ends the stream"


@pytest.mark.parametrize("query, why", [
    ("SELECT sym, count(*) FROM t GROUP BY sym", "GROUP BY"),
    ("SELECT sum(price) FROM t", "aggregates"),
    ("SELECT * FROM t ORDER BY id", "ORDER BY"),
    ("SELECT * FROM t WHERE id IN (SELECT id FROM t)", "subqueries"),
    ("SELECT * FROM t a JOIN t b ON a.id = b.id", "one table"),
    ("SELECT row_number() OVER () FROM t", "window"),
])
def test_queries_a_stream_cannot_answer_are_refused(port, query, why):
    s = Stream(port, query)
    body = json.loads(s.resp.read())
    assert s.resp.status == 400 and why in body["error"]["message"], body


def test_resume_points_that_are_gone_or_bad_are_refused(port):
    for last, status in [("nonsense", 400), ("1-5", 410)]:
        s = Stream(port, "SELECT id FROM t", last=last)
        body = json.loads(s.resp.read())
        assert s.resp.status == status, body
    s = Stream(port, "SELECT id FROM nope")
    assert s.resp.status == 404, s.resp.read()


def test_a_subscriber_that_stops_reading_is_cut_off_while_writes_go_on(port):
    sql(port, "CREATE TABLE big (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
    slow = Stream(port, "SELECT id, sym, price FROM big")
    # 60 batches of 10,000 rows: far more than the 1 MiB ring and the socket's buffers hold.
    for _ in range(60):
        sql(port, "INSERT INTO big SELECT now(), i, 'A', 60.0 + i % 10 FROM range(10000) r(i)")
    assert sql(port, "SELECT count(*) FROM big")["data"] == [[600_000]]
    kinds, last = [], None
    while (e := slow.next()) is not None:
        kinds.append(e[0])
        if e[0] == "error":
            assert e[2]["error"] == "SLOW_CONSUMER", e
            # Where it stands: after the last event it was sent (its start if it got none).
            assert last is None or e[2]["resume_from"] == last, (e, last)
            break
        last = e[1]
    assert kinds[-1] == "error" and set(kinds[:-1]) <= {"rows"}, kinds[-3:]
    assert slow.next() is None


def test_python_subscribes_in_process_and_remotely_alike(port):
    """db.subscribe in this process (from the catalog's feed) and on a server (its event
    stream, in Arrow): the same rows as DuckDB over the same batches, resumable by id."""
    import threading

    import zeptodb

    def run(db, name):
        db.execute(f"CREATE TABLE {name} (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
        oracle = duckdb.connect()
        oracle.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym VARCHAR, price DOUBLE)")
        query = QUERY.replace("FROM t", f"FROM {name}")
        got, ids = [], []
        ready = threading.Event()

        def read():
            stream = db.subscribe(query, timeout=10)
            ready.set()
            for change in stream:
                assert change.kind == "rows"
                ids.append(change.id)
                got.extend(change.result.fetchall())
                if any(r[0] == -9 for r in got):
                    return

        reader = threading.Thread(target=read)
        reader.start()
        ready.wait(10)
        for b in batches(7, 5, 30) + [[(-9, "A", 97.0)]]:
            rows = ", ".join(f"('2024-01-02 09:30:00', {i}, '{s}', {p})" for i, s, p in b)
            db.execute(f"INSERT INTO {name} VALUES {rows}")
            oracle.executemany("INSERT INTO t VALUES ('2024-01-02 09:30:00', ?, ?, ?)", b)
        reader.join(30)
        assert sorted(got) == want(oracle) and ordered(ids)
        # Resumed after the first change: the rest again, then the end of the wait.
        rest = [r for c in db.subscribe(query, from_id=ids[0], timeout=1) for r in c.result.fetchall()]
        first = len(got) - len(rest)
        assert sorted(rest) == sorted(got[first:]) and first > 0
        db.execute(f"DELETE FROM {name} WHERE sym = 'A'")
        [deleted] = list(db.subscribe(query, from_id=ids[-1], timeout=1))
        assert (deleted.kind, deleted.rows) == ("delete", sum(1 for b in batches(7, 5, 30) for r in b if r[1] == "A") + 1)
        with pytest.raises(zeptodb.SqlError, match="row by row"):
            next(db.subscribe(f"SELECT count(*) FROM {name}", timeout=0.1))

    with zeptodb.connect() as local:
        run(local, "p_local")
    remote = zeptodb.connect(f"http://127.0.0.1:{port}", api_key=API_KEY, timeout=30)
    run(remote, "p_remote")


def test_a_websocket_on_the_same_path_carries_the_same_events(port):
    """GET /subscribe upgraded to a WebSocket: one text message per event,
    {"event", "id", "data"}, the data as the event stream's."""
    import websocket

    sql(port, "CREATE TABLE w (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
    url = f"ws://127.0.0.1:{port}/subscribe?" + urllib.parse.urlencode({"query": "SELECT id FROM w WHERE price > 10"})
    ws = websocket.create_connection(url, header=[f"Authorization: Bearer {API_KEY}"], timeout=20)
    sql(port, "INSERT INTO w VALUES ('2024-01-02', 1, 'A', 5), ('2024-01-02', 2, 'A', 50)")
    sql(port, "INSERT INTO w VALUES ('2024-01-02', 3, 'B', 1)")
    sql(port, "DELETE FROM w WHERE id = 1")
    first, second = json.loads(ws.recv()), json.loads(ws.recv())
    assert (first["event"], first["data"]["result"]["data"]) == ("rows", [[2]]), first
    assert (second["event"], second["data"]) == ("delete", {"table": "w", "rows": 1}), second
    assert ordered([first["id"], second["id"]])
    ws.close()
    # Resumed from the first event with from=: the delete again, nothing before it.
    ws = websocket.create_connection(url + "&from=" + urllib.parse.quote(first["id"]),
                                     header=[f"Authorization: Bearer {API_KEY}"], timeout=20)
    again = json.loads(ws.recv())
    assert (again["event"], again["id"]) == ("delete", second["id"]), again
    ws.close()


def test_a_subscription_starts_when_subscribe_returns():
    """Rows committed between `db.subscribe(...)` and the first `next` are not missed, in
    process and on a server; a bad query is refused at the call, not at the first `next`."""
    import zeptodb

    db = zeptodb.connect()
    db.execute("CREATE TABLE early (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
    stream = db.subscribe(QUERY.replace("FROM t", "FROM early"), timeout=1)
    db.execute("INSERT INTO early VALUES ('2024-01-02 09:30:00', 1, 'A', 60.0)")
    assert [r for c in stream for r in c.result.fetchall()] == [(1, "A", 120.0)]
    with pytest.raises(zeptodb.Error):
        db.subscribe("SELECT nope FROM early")


def test_a_view_streams_its_new_and_changed_rows(port):
    """A subscription to a materialized view: after each change of the view's table (append,
    delete), the rows of the query over the view that are new or changed since the last
    event, and the rows it no longer has, checked against DuckDB's answers before and after;
    in process and on a server."""
    import zeptodb

    def run(db, name, stream_of):
        db.execute(f"CREATE TABLE {name} (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
        db.execute(f"CREATE MATERIALIZED VIEW {name}_v AS SELECT sym, count(*) AS n, max(id) AS top "
                   f"FROM {name} GROUP BY sym")
        oracle = duckdb.connect()
        oracle.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym VARCHAR, price DOUBLE)")
        query = f"SELECT sym, n, top FROM {name}_v WHERE sym IN ('A', 'B')"
        view = "SELECT sym, count(*), max(id) FROM t WHERE sym IN ('A', 'B') GROUP BY sym"
        db.execute(f"INSERT INTO {name} VALUES ('2024-01-02', 1, 'A', 1.0)")
        oracle.execute("INSERT INTO t VALUES ('2024-01-02', 1, 'A', 1.0)")
        events = stream_of(db, query)
        removals = 0
        for k, b in enumerate(batches(11, 6, 5)):
            before = set(oracle.execute(view).fetchall())
            if k in (3, 4):
                # A delete that changes groups, then one that empties group B.
                where = "id % 2 = 0" if k == 3 else "sym = 'B'"
                db.execute(f"DELETE FROM {name} WHERE {where}")
                oracle.execute(f"DELETE FROM t WHERE {where}")
            else:
                rows = ", ".join(f"('2024-01-02 09:30:00', {i}, '{s}', {p})" for i, s, p in b)
                db.execute(f"INSERT INTO {name} VALUES {rows}")
                oracle.executemany("INSERT INTO t VALUES ('2024-01-02 09:30:00', ?, ?, ?)", b)
            after = set(oracle.execute(view).fetchall())
            if after != before:
                added, removed = next(events)
                assert (sorted(added), sorted(removed)) == (sorted(after - before), sorted(before - after)), k
                removals += bool(removed)
        assert removals >= 2, "the deletes took rows away"

    def local(db, query):
        stream = db.subscribe(query, timeout=10)  # subscribed now, read as the changes come

        def rows():
            for change in stream:
                assert change.kind == "rows", change.kind
                gone = [] if change.removed is None else [tuple(r) for r in change.removed.fetchall()]
                yield [tuple(r) for r in change.result.fetchall()], gone
        return rows()

    with zeptodb.connect() as db:
        run(db, "vw_local", local)
    remote = zeptodb.connect(f"http://127.0.0.1:{port}", api_key=API_KEY, timeout=30)
    run(remote, "vw_remote", local)

    def sse(db, query):
        s = Stream(port, query)

        def rows():
            while True:
                kind, _, data = s.next()
                assert kind == "rows", (kind, data)
                gone = data.get("removed", {"data": []})["data"]
                yield [tuple(r) for r in data["result"]["data"]], [tuple(r) for r in gone]
        return rows()

    run(remote, "vw_sse", sse)


def test_subscribers_of_one_view_in_step_late_and_resumed_each_keep_its_answer(port):
    """Several SSE subscribers of the same query over a view, under one key: two from the
    start, one that joins after two changes, one that resumes from the first event. Each
    applies its events (drop the removed rows, add the new ones) to a copy of the answer, and
    after every change each copy equals DuckDB's answer, however the server shares the work."""
    sql(port, "CREATE TABLE vs (ts TIMESTAMP, id BIGINT, sym SYMBOL, price DOUBLE)")
    sql(port, "CREATE MATERIALIZED VIEW vs_v AS SELECT sym, count(*) AS n, max(id) AS top FROM vs GROUP BY sym")
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE t (ts TIMESTAMP, id BIGINT, sym VARCHAR, price DOUBLE)")
    query = "SELECT sym, n, top FROM vs_v WHERE sym IN ('A', 'B')"
    view = "SELECT sym, count(*), max(id) FROM t WHERE sym IN ('A', 'B') GROUP BY sym"
    answer = lambda: sorted(tuple(r) for r in oracle.execute(view).fetchall())  # noqa: E731
    rnd = random.Random(5)
    next_id = iter(range(1, 10_000))

    def change(k):
        # Every change moves the answer: a new top id in A or B (and rows elsewhere), or a
        # delete of B's newest rows.
        if k % 4 == 3:
            where = "sym = 'B' AND id > (SELECT max(id) - 3 FROM vs WHERE sym = 'B')"
            cut = oracle.execute("SELECT max(id) - 3 FROM t WHERE sym = 'B'").fetchone()[0]
            sql(port, f"DELETE FROM vs WHERE {where}")
            oracle.execute(f"DELETE FROM t WHERE sym = 'B' AND id > {cut}")
            return
        rows = [(next(next_id), rnd.choice("ABC"), round(rnd.uniform(0, 100), 2)) for _ in range(4)]
        rows.append((next(next_id), rnd.choice("AB"), 1.0))
        values = ", ".join(f"('2024-01-02 09:30:00', {i}, '{s}', {p})" for i, s, p in rows)
        sql(port, f"INSERT INTO vs VALUES {values}")
        oracle.executemany("INSERT INTO t VALUES ('2024-01-02 09:30:00', ?, ?, ?)", rows)

    class Copy:
        """A subscriber's answer as its events build it."""

        def __init__(self, stream, name):
            self.stream, self.rows, self.name = stream, [], name
            self.first_id = self.last_id = None

        def take(self):
            kind, ident, data = self.stream.next()
            assert kind == "rows", (kind, data)
            self.first_id, self.last_id = self.first_id or ident, ident
            for r in data.get("removed", {"data": []})["data"]:
                assert tuple(r) in self.rows, (self.name, ident, self.rows, data)
                self.rows.remove(tuple(r))
            self.rows = sorted(self.rows + [tuple(r) for r in data["result"]["data"]])

    for k in range(2):
        change(k)
    first, second = Copy(Stream(port, query), "first"), Copy(Stream(port, query), "second")
    first.rows, second.rows = answer(), answer()  # subscribed from now: copies start as the answer
    late = resumed = None
    for k in range(2, 14):
        change(k)
        for c in (first, second, late, resumed):
            if c is not None:
                c.take()
                assert c.rows == answer(), (c.name, k, c.rows, answer())
        if k == 5:
            # Subscribed after this change: its copy starts as the answer now.
            late = Copy(Stream(port, query), "late")
            late.rows = answer()
        if k == 7:
            # Resumed after the first event: it gets an event for each change since (a
            # subscriber with nothing yet starts from every row), up to the latest.
            resumed = Copy(Stream(port, query, last=first.first_id), "resumed")
            while resumed.last_id != first.last_id:
                resumed.take()
            assert resumed.rows == answer(), (resumed.rows, answer())
    for c in (first, second, late, resumed):
        c.stream.close()



def test_a_views_subscription_runs_under_the_query_slots():
    """A view's subscription runs its query under the server's query slots (`--max-queries 1`):
    subscribed from now while an HTTP statement holds the only slot, it is refused as a
    statement is (503 SERVER_BUSY after `--queue-timeout`); a change written meanwhile (ILP
    takes no slot) is answered only once the slot is free, and the stream outlives the wait,
    while a table's subscription answers the same write at once (the quick lane)."""
    import threading

    slow = ("SELECT count(*) FROM range(100000) a JOIN range(100000) b "
            "ON a.range < b.range - 1000000 AND a.range > b.range")
    held = []  # connections running the slow query: closing one cancels it

    def hold(p):
        held.append(hold_slot(p, slow))
        return held[-1]

    with served("--max-queries", "1", "--queue-timeout", "0.3") as p:
        try:
            sql(p, "CREATE TABLE ev (ts TIMESTAMP, id BIGINT, sym SYMBOL)")
            sql(p, "CREATE MATERIALIZED VIEW ev_v AS SELECT sym, count(*) AS n FROM ev GROUP BY sym")
            sql(p, "INSERT INTO ev VALUES ('2024-01-02 09:30:00', 1, 'A')")
            query = "SELECT sym, n FROM ev_v"
            slot = hold(p)
            refused = Stream(p, query)
            status = refused.resp.status
            body = b"" if status == 200 else refused.resp.read()  # 200 would stream
            refused.close()
            assert status == 503 and b"SERVER_BUSY" in body, (status, body)
            slot.close()
            wait_running(p, 0, "the slot never came back")

            def busy(s):
                if s.resp.status == 503:
                    s.close()
                return s.resp.status == 503

            stream = admitted(lambda: Stream(p, query), busy, "the slot never came back")
            table = Stream(p, "SELECT id, sym FROM ev WHERE sym = 'A'")
            assert stream.resp.status == 200 and table.resp.status == 200
            slot = hold(p)
            conn = http.client.HTTPConnection("127.0.0.1", p, timeout=10)
            conn.request("POST", "/write", body=b"ev,sym=A id=2i 1704187800000000000\n", headers=AUTH)
            assert conn.getresponse().status in (200, 204)
            conn.close()
            # A table's query over a small batch takes the quick lane: it answers meanwhile.
            kind, _, data = table.next()
            assert kind == "rows" and data["result"]["data"] == [[2, "A"]], (kind, data)
            got = []
            reader = threading.Thread(target=lambda: got.append(stream.next()), daemon=True)
            reader.start()
            reader.join(1.5)  # five queue timeouts
            assert not got, f"a view's event was made beside a busy slot: {got}"
            slot.close()
            reader.join(10)
            assert got and got[0][0] == "rows", got
            assert got[0][2]["result"]["data"] == [["A", 2]], got
            assert got[0][2]["removed"]["data"] == [["A", 1]], got
            stream.close()
            table.close()
        finally:
            for s in held:
                s.close()
