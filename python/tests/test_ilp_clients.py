"""Line protocol as real clients write it: QuestDB's official Python client (`questdb`, ILP over
HTTP, its defaults: it reads /settings to pick the protocol version, version 2 here, sending
doubles and arrays in binary; and with protocol_version=1, text floats NaN/Infinity and timestamp
fields in microseconds) and InfluxDB's (`influxdb-client`, /api/v2/write). Every ZeptoDB type
they can carry is written, and the rows read back over HTTP equal what was sent."""

import datetime as dt
import json
import math
import random
import urllib.request

import pytest

from conftest import API_KEY, served

questdb = pytest.importorskip("questdb.ingress")
influx = pytest.importorskip("influxdb_client")


@pytest.fixture(scope="module")
def port():
    with served("--pg", "off") as p:
        yield p


def query(port, sql):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/query", data=sql.encode(), method="POST")
    req.add_header("Authorization", f"Bearer {API_KEY}")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def iso(ns):
    """ns since the epoch as the HTTP door writes a TIMESTAMP."""
    s, frac = divmod(ns, 1_000_000_000)
    return dt.datetime.fromtimestamp(s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def same_float(got, sent):
    if isinstance(sent, float) and math.isnan(sent):
        return got == "NaN"
    if isinstance(sent, float) and math.isinf(sent):
        return got == ("inf" if sent > 0 else "-inf")
    return got == sent


@pytest.mark.parametrize("version", ["auto", "1"])
def test_questdb_client_writes_every_type_with_its_defaults(port, version):
    rnd = random.Random(11)
    table = f"qd_{version}"
    base = 1_700_000_000_000_000_000
    specials = [float("nan"), float("inf"), float("-inf")]
    sent = []
    conf = f"http::addr=127.0.0.1:{port};token={API_KEY};" + ("" if version == "auto" else f"protocol_version={version};")
    with questdb.Sender.from_conf(conf) as sender:
        for i in range(300):
            row = {
                "sym": rnd.choice(["AAPL", "MSFT", "ES"]),
                "px": specials[i % 3] if i % 50 == 0 else round(rnd.uniform(1, 500), 6),
                "qty": rnd.randint(-2**40, 2**40),
                "ok": rnd.random() < 0.5,
                "note": rnd.choice(["a b", "x,y=z", 'q"uote', "é"]),
                "exch_us": base + i * 1_000_000 + rnd.randint(0, 999) * 1000,
                "exch_ns": base + i * 1_000_000 + rnd.randint(0, 999_999),
                "ts": base + i * 1_000_000,
            }
            sent.append(row)
            sender.row(
                table,
                symbols={"sym": row["sym"]},
                columns={
                    "px": row["px"], "qty": row["qty"], "ok": row["ok"], "note": row["note"],
                    "exch_us": questdb.TimestampMicros(row["exch_us"] // 1000),
                    "exch_ns": questdb.TimestampNanos(row["exch_ns"]),
                },
                at=questdb.TimestampNanos(row["ts"]),
            )
    r = query(port, f"SELECT sym, px, qty, ok, note, exch_us, exch_ns, timestamp FROM {table} ORDER BY timestamp")
    types = {c["name"]: c["type"] for c in r["columns"]}
    assert (types["exch_us"], types["exch_ns"], types["px"]) == ("TIMESTAMP", "TIMESTAMP", "DOUBLE")
    assert len(r["data"]) == len(sent)
    for got, want in zip(r["data"], sent):
        assert got[0] == want["sym"] and got[2:5] == [want["qty"], want["ok"], want["note"]]
        assert same_float(got[1], want["px"]), (got[1], want["px"])
        # Protocol version 1 carries timestamp fields in microseconds: the client sends a
        # nanosecond one as `<us>t`; version 2 sends it as `<ns>n`. The designated timestamp
        # keeps its ns in both.
        ns = want["exch_ns"] if version == "auto" else want["exch_ns"] // 1000 * 1000
        assert got[5:] == [iso(want["exch_us"]), iso(ns), iso(want["ts"])]


def test_questdb_client_arrays_fill_vector_columns(port):
    """Protocol version 2's double arrays: a 1-dimensional one creates and fills a vector
    column (FLOAT[n], 32-bit floats); a 2-dimensional one is refused by line, nothing applied."""
    np = pytest.importorskip("numpy")
    rnd = np.random.default_rng(3)
    vecs = rnd.standard_normal((50, 8))
    base = 1_700_000_000_000_000_000
    with questdb.Sender.from_conf(f"http::addr=127.0.0.1:{port};token={API_KEY};") as sender:
        for i, v in enumerate(vecs):
            sender.row("emb", symbols={"doc": f"d{i % 5}"}, columns={"v": v, "n": i},
                       at=questdb.TimestampNanos(base + i))
    r = query(port, "SELECT doc, v, n FROM emb ORDER BY n")
    assert {c["name"]: c["type"] for c in r["columns"]}["v"] == "FLOAT[8]"
    assert [row[2] for row in r["data"]] == list(range(50))
    got = np.array([row[1] for row in r["data"]], dtype=np.float32)
    assert np.array_equal(got, vecs.astype(np.float32))
    with pytest.raises(Exception) as e:
        with questdb.Sender.from_conf(f"http::addr=127.0.0.1:{port};token={API_KEY};") as sender:
            sender.row("emb", symbols={"doc": "x"}, columns={"v": vecs[0], "n": 100}, at=questdb.TimestampNanos(base + 100))
            sender.row("emb", symbols={"doc": "y"}, columns={"v": np.ones((2, 4)), "n": 101},
                       at=questdb.TimestampNanos(base + 101))
    assert "2-dimensional" in str(e.value) and "line 2" in str(e.value), str(e.value)
    assert query(port, "SELECT count(*) FROM emb")["data"] == [[50]]


def test_influxdb_client_writes_points(port):
    from influxdb_client import InfluxDBClient, Point, WritePrecision
    from influxdb_client.client.write_api import SYNCHRONOUS

    rnd = random.Random(5)
    base = 1_700_000_000_000_000_000
    points, sent = [], []
    for i in range(200):
        row = (rnd.choice(["h1", "h2"]), rnd.uniform(0, 100), rnd.randint(0, 10**12), rnd.random() < 0.5,
               rnd.choice(["idle", "busy load"]), base + i * 1000)
        sent.append(row)
        points.append(Point("cpu").tag("host", row[0]).field("usage", row[1]).field("ticks", row[2])
                      .field("up", row[3]).field("state", row[4]).time(row[5], WritePrecision.NS))
    with InfluxDBClient(url=f"http://127.0.0.1:{port}", token=API_KEY, org="zepto") as c:
        c.write_api(write_options=SYNCHRONOUS).write(bucket="zepto", record=points)
    r = query(port, "SELECT host, usage, ticks, up, state, timestamp FROM cpu ORDER BY timestamp")
    assert [tuple(x) for x in r["data"]] == [(h, u, t, b, s, iso(ts)) for h, u, t, b, s, ts in sent]


def test_settings_name_the_protocol_versions(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/settings") as r:
        s = json.loads(r.read())
    assert s["line.proto.support.versions"] == [1, 2] == s["config"]["line.proto.support.versions"]


def test_a_refused_flush_names_its_line_applies_nothing_and_the_next_applies_once(port):
    """The questdb client's flush after a bad row: the server refuses the whole batch (HTTP 400,
    so the client does not retry it), names the line, and changes nothing; the client drops the
    batch and its next flush lands exactly once."""
    ts = 1_700_000_000_000_000_000
    with questdb.Sender.from_conf(f"http::addr=127.0.0.1:{port};token={API_KEY};auto_flush=off;") as sender:
        sender.row("ilp_refused", symbols={"sym": "A"}, columns={"n": 1}, at=questdb.TimestampNanos(ts))
        sender.flush()
        sender.row("ilp_refused", symbols={"sym": "B"}, columns={"n": 2}, at=questdb.TimestampNanos(ts + 1))
        sender.row("ilp_refused", symbols={"sym": "C"}, columns={"n": "two"}, at=questdb.TimestampNanos(ts + 2))
        with pytest.raises(questdb.IngressError) as refused:
            sender.flush()
        assert '"line":2' in str(refused.value) and "does not fit column 'n'" in str(refused.value)
        assert len(sender) == 0, "the client dropped the refused batch"
        sender.row("ilp_refused", symbols={"sym": "D"}, columns={"n": 3}, at=questdb.TimestampNanos(ts + 3))
    got = query(port, "SELECT sym, n FROM ilp_refused ORDER BY n")["data"]
    assert got == [["A", 1], ["D", 3]]


def test_influxdb_client_gets_the_line_of_a_refused_batch(port):
    from influxdb_client.client.write_api import SYNCHRONOUS
    from influxdb_client.rest import ApiException

    with influx.InfluxDBClient(url=f"http://127.0.0.1:{port}", token=API_KEY, org="zepto") as client:
        api = client.write_api(write_options=SYNCHRONOUS)
        api.write("zepto", "zepto", "influx_refused,host=a v=1i 1700000000000000000")
        with pytest.raises(ApiException) as refused:
            api.write("zepto", "zepto", "influx_refused,host=b v=2i 1700000000000000001\ninflux_refused,host=c v=oops")
        assert refused.value.status == 400 and '"line":2' in refused.value.body
    assert query(port, "SELECT host, v FROM influx_refused")["data"] == [["a", 1]]


class LosingProxy:
    """A TCP proxy to the server that loses the answer to the first request it forwards: the
    server applies the request, and its answer never reaches the client (a network failure
    after the commit), whose request times out. Later connections are relayed."""

    def __init__(self, upstream_port):
        import socket
        import threading

        self.upstream_port = upstream_port
        self.lost = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        import socket
        import threading

        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        lose = self.lost == 0
        self.lost += int(lose)

        def up():
            try:
                while data := client.recv(65536):
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=up, daemon=True).start()
        try:
            while data := upstream.recv(65536):
                if not lose:  # else the request was applied and its answer goes nowhere
                    client.sendall(data)
        except OSError:
            pass
        for s in (client, upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.listener.close()


@pytest.mark.parametrize("dedup", [True, False])
def test_a_lost_answer_retried_by_the_client_applies_once_on_a_deduplicating_table(port, dedup):
    """The questdb client's default retry (a request that times out is sent again, for up to
    10 s) after the server applied a batch whose answer was lost: on a table with DEDUP UPSERT
    KEYS the retried rows replace themselves, so they are stored once; without it they are
    stored twice, which is what DEDUP is for. (request_timeout is shortened from 10 s to keep
    the test short.)"""
    table = f"ilp_retry_{int(dedup)}"
    clause = " DEDUP UPSERT KEYS(ts, sym)" if dedup else ""
    query(port, f"CREATE TABLE {table} (ts TIMESTAMP, sym SYMBOL, px DOUBLE) TIMESTAMP(ts){clause}")
    proxy = LosingProxy(port)
    ts = 1_700_000_000_000_000_000
    try:
        conf = f"http::addr=127.0.0.1:{proxy.port};token={API_KEY};auto_flush=off;protocol_version=1;request_timeout=500;"
        with questdb.Sender.from_conf(conf) as sender:
            for i in range(100):
                sender.row(table, symbols={"sym": "AB"[i % 2]}, columns={"px": float(i)}, at=questdb.TimestampNanos(ts + i))
            sender.flush()
    finally:
        proxy.close()
    assert proxy.lost == 1, "the first answer was lost and the client connected again"
    got = query(port, f"SELECT count(*), count(DISTINCT ts), sum(px) FROM {table}")["data"]
    assert got == ([[100, 100, 4950.0]] if dedup else [[200, 100, 9900.0]])
