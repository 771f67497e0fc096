"""Line protocol over TCP (`serve --ilp-tcp`, QuestDB's port 9009) as QuestDB's official Python
client (`questdb`, its `tcp::` sender, protocol version 1) writes it: rows of every type it
carries, and a pandas DataFrame, read back through the HTTP door equal to what was sent. The
server has an API key, so the door is opened with --ilp-tcp-unauthenticated."""

import datetime as dt
import json
import math
import random
import time
import urllib.request

import pytest

from conftest import API_KEY, free_port, serve

questdb = pytest.importorskip("questdb.ingress")


@pytest.fixture(scope="module")
def ports():
    http, ilp = free_port(), free_port()
    proc = serve("--pg", "off", "--ilp-tcp", f"127.0.0.1:{ilp}", "--ilp-tcp-unauthenticated",
                 http=f"127.0.0.1:{http}")
    yield http, ilp
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def query(port, sql):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/query", data=sql.encode(), method="POST")
    req.add_header("Authorization", f"Bearer {API_KEY}")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def rows_once(port, table, n, sql):
    """`sql`'s rows once `table` holds `n` rows (TCP has no answer to wait for: poll)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        names = [t[0] for t in query(port, "SHOW TABLES")["data"]]
        if table in names and query(port, f"SELECT count(*) FROM {table}")["data"] == [[n]]:
            return query(port, sql)
        time.sleep(0.02)
    pytest.fail(f"{table} never held {n} rows")


def iso(ns):
    """ns since the epoch as the HTTP door writes a TIMESTAMP."""
    s, frac = divmod(ns, 1_000_000_000)
    return dt.datetime.fromtimestamp(s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def same_float(got, sent):
    if math.isnan(sent):
        return got == "NaN"
    if math.isinf(sent):
        return got == ("inf" if sent > 0 else "-inf")
    return got == sent


def test_tcp_sender_writes_every_type(ports):
    http, ilp = ports
    rnd = random.Random(17)
    base = 1_700_000_000_000_000_000
    specials = [float("nan"), float("inf"), float("-inf")]
    sent = []
    with questdb.Sender.from_conf(f"tcp::addr=127.0.0.1:{ilp};") as sender:
        for i in range(3000):
            row = {
                "sym": rnd.choice(["AAPL", "MSFT", "ES", "a b"]),
                "px": specials[i % 3] if i % 500 == 0 else round(rnd.uniform(1, 500), 6),
                "qty": rnd.randint(-2**40, 2**40),
                "ok": rnd.random() < 0.5,
                "note": rnd.choice(["a b", "x,y=z", 'q"uote', "é", "line\\two"]),
                "exch": base + i * 1_000_000 + rnd.randint(0, 999_999),
                "ts": base + i * 1_000_000,
            }
            sent.append(row)
            sender.row(
                "tcp_ticks",
                symbols={"sym": row["sym"]},
                columns={"px": row["px"], "qty": row["qty"], "ok": row["ok"], "note": row["note"],
                         "exch": questdb.TimestampNanos(row["exch"])},
                at=questdb.TimestampNanos(row["ts"]),
            )
            if i % 700 == 0:
                sender.flush()
    r = rows_once(http, "tcp_ticks", len(sent),
                  "SELECT sym, px, qty, ok, note, exch, timestamp FROM tcp_ticks ORDER BY timestamp")
    types = {c["name"]: c["type"] for c in r["columns"]}
    assert types == {"sym": "SYMBOL", "px": "DOUBLE", "qty": "BIGINT", "ok": "BOOLEAN", "note": "VARCHAR",
                     "exch": "TIMESTAMP", "timestamp": "TIMESTAMP"}, types
    assert len(r["data"]) == len(sent)
    for got, want in zip(r["data"], sent):
        assert got[0] == want["sym"] and got[2:5] == [want["qty"], want["ok"], want["note"]], (got, want)
        assert same_float(got[1], want["px"]), (got[1], want["px"])
        # Protocol version 1 carries a timestamp field in microseconds (`<us>t`).
        assert got[5:] == [iso(want["exch"] // 1000 * 1000), iso(want["ts"])]


def test_tcp_sender_writes_a_dataframe(ports):
    pd = pytest.importorskip("pandas")
    http, ilp = ports
    n = 2000
    base = pd.Timestamp("2024-03-01T00:00:00Z")
    df = pd.DataFrame({
        "venue": pd.Categorical([["XNAS", "XNYS", "BATS"][i % 3] for i in range(n)]),
        "px": [100 + i / 8 for i in range(n)],
        "size": [i * 3 for i in range(n)],
        "buy": [i % 4 == 0 for i in range(n)],
        "trader": [f"t{i % 11}" for i in range(n)],
        "ts": [base + pd.Timedelta(microseconds=i * 250) for i in range(n)],
    })
    with questdb.Sender.from_conf(f"tcp::addr=127.0.0.1:{ilp};") as sender:
        sender.dataframe(df, table_name="tcp_df", symbols=["venue"], at="ts")
    r = rows_once(http, "tcp_df", n, "SELECT venue, px, size, buy, trader, timestamp FROM tcp_df ORDER BY timestamp")
    types = {c["name"]: c["type"] for c in r["columns"]}
    assert (types["venue"], types["size"], types["buy"]) == ("SYMBOL", "BIGINT", "BOOLEAN"), types
    want = [[row.venue, row.px, row.size, row.buy, row.trader, iso(row.ts.value)] for row in df.itertuples()]
    assert r["data"] == want
    agg = query(http, "SELECT sum(size), sum(px), count(DISTINCT trader) FROM tcp_df")["data"][0]
    assert agg == [int(df["size"].sum()), float(df["px"].sum()), 11]
