"""QuestDB's SQL as its users write it, answered by a running QuestDB (the oracle for its
dialect, as DuckDB is for standard SQL) and by ZeptoDB, both through QuestDB's `GET /exec`:
the same DDL (`timestamp(ts) PARTITION BY DAY WAL`, QuestDB's type names), the same generated
rows, then a corpus of queries (interval literals `ts IN '...'`, `LATEST ON`, `SAMPLE BY`
with its alignments and fills, `count()`, `count_distinct`, `dateadd`, `datediff`,
`timestamp_floor`/`_ceil`, `to_timestamp` with a pattern, `LIMIT -n` and `LIMIT lo, hi`)
whose datasets must agree value for value.

QuestDB comes from Maven Central (`make questdb`, part of `make setup`); `make test` sets
ZEPTO_REQUIRE_QUESTDB=1, so a missing jar or JDK fails instead of skipping."""

import json
import os
import random
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import API_KEY, free_port, serve

VERSION = os.environ.get("QUESTDB_VERSION") or "9.3.4"
JAR = Path.home() / ".m2" / "repository" / "org" / "questdb" / "questdb" / VERSION / f"questdb-{VERSION}.jar"

if not (JAR.exists() and shutil.which("java")):
    if os.environ.get("ZEPTO_REQUIRE_QUESTDB") == "1":
        pytest.fail(f"{JAR} or java is missing (make questdb fetches QuestDB from Maven Central)", pytrace=False)
    pytest.skip("no QuestDB jar (make questdb)", allow_module_level=True)


def exec_sql(url, sql, key=None):
    """`GET /exec?query=sql` on `url`: the decoded JSON answer (an error answer too)."""
    req = urllib.request.Request(f"{url}/exec?" + urllib.parse.urlencode({"query": sql}))
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())


@pytest.fixture(scope="module")
def questdb():
    """A QuestDB server from its jar, on free ports, in a temporary directory."""
    root = tempfile.mkdtemp(prefix="zepto-questdb-")
    port = free_port()
    env = dict(os.environ, QDB_HTTP_BIND_TO=f"127.0.0.1:{port}", QDB_HTTP_MIN_NET_BIND_TO=f"127.0.0.1:{free_port()}",
               QDB_PG_NET_BIND_TO=f"127.0.0.1:{free_port()}", QDB_LINE_TCP_NET_BIND_TO=f"127.0.0.1:{free_port()}",
               QDB_LINE_UDP_ENABLED="false", QDB_TELEMETRY_ENABLED="false")
    proc = subprocess.Popen(["java", "-Xms128m", "-Xmx768m", "-XX:+UseParallelGC",
                             "--add-exports", "java.base/jdk.internal.math=ALL-UNNAMED", "-cp", str(JAR),
                             "io.questdb.ServerMain", "-d", root],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(url + "/exec?query=select%201", timeout=2)
            break
        except Exception:
            if time.time() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("QuestDB did not start")
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=60)
    shutil.rmtree(root, ignore_errors=True)


DDL = ("CREATE TABLE cpu (ts TIMESTAMP, hostname SYMBOL, region SYMBOL, usage_user DOUBLE, usage_system LONG, "
       "io INT, flag BOOLEAN, note STRING) timestamp(ts) PARTITION BY DAY WAL")
START = 1704067200_000000  # 2024-01-01, microseconds


def rows():
    """1,500 rows over three days at distinct microsecond times, 6 hosts in 2 regions, NULLs
    among the measures."""
    rnd = random.Random(17)
    times = sorted(rnd.sample(range(0, 3 * 86_400_000_000, 7_919), 1500))
    out = []
    for t in times:
        h = rnd.randrange(6)
        out.append((START + t, f"h{h}", "eu" if h % 2 else "us",
                    None if rnd.random() < 0.05 else round(rnd.uniform(0, 100), 3),
                    None if rnd.random() < 0.05 else rnd.randrange(-50, 10_000), rnd.randrange(0, 1000),
                    rnd.random() < 0.5, rnd.choice(["a", "b c", "x'y"])))
    return out


DST_DDL = "CREATE TABLE dst (ts TIMESTAMP, hostname SYMBOL, v LONG) timestamp(ts) PARTITION BY DAY WAL"
# Europe/Berlin and America/New_York change their clocks inside both windows (spring forward
# on 2024-03-10 / 03-31, fall back on 2024-10-27 / 11-03).
DST_WINDOWS = [(1709856000_000000, 6 * 86_400_000_000), (1711670400_000000, 4 * 86_400_000_000),
               (1729814400_000000, 10 * 86_400_000_000)]


def dst_rows():
    """900 rows around the daylight-saving changes of two zones, 3 hosts."""
    rnd = random.Random(23)
    out = []
    for start, span in DST_WINDOWS:
        for t in sorted(rnd.sample(range(0, span, 6_007_000), 300)):
            out.append((start + t, f"h{rnd.randrange(3)}", rnd.randrange(-100, 1000)))
    return out


def sql_value(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(v)


def iso(us):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(us // 1_000_000)) + f".{us % 1_000_000:06d}Z"


@pytest.fixture(scope="module")
def engines(questdb):
    """QuestDB and ZeptoDB (its /exec door), the same table and rows in each."""
    port = free_port()
    zepto = serve(http=f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    try:
        for table, ddl, data in [("cpu", DDL, rows()), ("dst", DST_DDL, dst_rows())]:
            for base, key in [(questdb, None), (url, API_KEY)]:
                assert exec_sql(base, ddl, key).get("ddl") == "OK"
                for k in range(0, len(data), 250):
                    values = ", ".join("(" + ", ".join([f"'{iso(r[0])}'"] + [sql_value(v) for v in r[1:]]) + ")"
                                       for r in data[k:k + 250])
                    got = exec_sql(base, f"INSERT INTO {table} VALUES {values}", key)
                    assert got.get("dml") == "OK", got
            # QuestDB applies a WAL table's rows in the background.
            deadline = time.time() + 60
            while exec_sql(questdb, f"SELECT count() FROM {table}")["dataset"] != [[len(data)]]:
                assert time.time() < deadline, "QuestDB did not apply the rows"
                time.sleep(0.2)
        yield questdb, url
    finally:
        zepto.terminate()
        zepto.wait(timeout=30)


CORPUS = [
    # Interval literals: a partial timestamp, a length, repeats; NOT IN; IN a string on a symbol.
    "SELECT * FROM cpu WHERE ts IN '2024-01-02' ORDER BY ts",
    "SELECT * FROM cpu WHERE ts IN '2024-01-02T10;2h' ORDER BY ts",
    "SELECT * FROM cpu WHERE ts IN '2024-01-01T23:00;1h;1d;3' ORDER BY ts",
    "SELECT * FROM cpu WHERE ts IN '2024-01-02T10:30;45m;-6h;4' ORDER BY ts",
    "SELECT count() FROM cpu WHERE ts NOT IN '2024-01-02'",
    "SELECT count() FROM cpu WHERE ts IN '2024-01' AND hostname = 'h3'",
    "SELECT ts, usage_user FROM cpu WHERE hostname IN 'h1' AND ts IN '2024-01-03T05' ORDER BY ts",
    # The last row of every series.
    "SELECT * FROM cpu LATEST ON ts PARTITION BY hostname ORDER BY hostname",
    "SELECT * FROM cpu LATEST ON ts PARTITION BY region ORDER BY region",
    "SELECT ts, hostname, usage_user FROM cpu WHERE usage_user > 50 LATEST ON ts PARTITION BY hostname "
    "ORDER BY hostname",
    # SAMPLE BY: keys from the non-aggregate columns, alignments, fills, FROM/TO.
    "SELECT ts, hostname, avg(usage_user), max(usage_system), count() FROM cpu SAMPLE BY 6h "
    "ORDER BY ts, hostname",
    "SELECT ts, sum(io), min(usage_user) FROM cpu SAMPLE BY 1d ALIGN TO CALENDAR ORDER BY ts",
    "SELECT ts, sum(io) FROM cpu SAMPLE BY 1h ALIGN TO CALENDAR WITH OFFSET '00:30' ORDER BY ts",
    "SELECT ts, count() FROM cpu WHERE hostname = 'h2' SAMPLE BY 30m FILL(NULL) ORDER BY ts",
    "SELECT ts, avg(usage_user) FROM cpu WHERE hostname = 'h2' SAMPLE BY 30m FILL(PREV) ORDER BY ts",
    "SELECT ts, max(io) FROM cpu WHERE hostname = 'h4' SAMPLE BY 20m FILL(LINEAR) ORDER BY ts",
    "SELECT ts, max(io) FROM cpu WHERE hostname = 'h5' SAMPLE BY 20m FILL(-1) ORDER BY ts",
    "SELECT ts, count() FROM cpu SAMPLE BY 1d FROM '2023-12-30' TO '2024-01-06' FILL(0) ORDER BY ts",
    "SELECT ts, first(usage_user), last(usage_user) FROM cpu SAMPLE BY 12h ORDER BY ts",
    # Time zones: buckets on a zone's wall clock across daylight-saving changes (days of 23
    # and 25 hours, a repeated hour), fixed offsets, WITH OFFSET in local time; the functions.
    "SELECT ts, count(), sum(v) FROM dst SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin' ORDER BY ts",
    "SELECT ts, count(), min(v) FROM dst SAMPLE BY 6h ALIGN TO CALENDAR TIME ZONE 'America/New_York' ORDER BY ts",
    "SELECT ts, count(), max(v) FROM dst SAMPLE BY 1h ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin' ORDER BY ts",
    "SELECT ts, hostname, count() FROM dst SAMPLE BY 90m ALIGN TO CALENDAR TIME ZONE 'Asia/Kolkata' "
    "ORDER BY ts, hostname",
    "SELECT ts, sum(v) FROM dst SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin' WITH OFFSET '06:30' "
    "ORDER BY ts",
    "SELECT ts, count() FROM dst SAMPLE BY 4h ALIGN TO CALENDAR TIME ZONE '+05:30' ORDER BY ts",
    "SELECT ts, count() FROM dst SAMPLE BY 1M ALIGN TO CALENDAR TIME ZONE 'America/New_York' ORDER BY ts",
    # FILL steps on the zone's wall clock too: an hour-by-hour day of 23 or 25 rows. Other fills
    # across a daylight-saving change are not compared: QuestDB 9.3 then steps filled buckets
    # in UTC from the first, repeats some instants and fills the repeated hour twice (see
    # docs/questdb.md); crates/zepto-sql/tests/sql/time_zones.rs checks ours on the wall clock.
    "SELECT ts, count(), sum(v) FROM dst SAMPLE BY 1h FILL(NULL) ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin' "
    "ORDER BY ts",
    "SELECT ts, max(v) FROM dst WHERE hostname = 'h1' SAMPLE BY 2h FILL(PREV) ALIGN TO CALENDAR "
    "TIME ZONE 'Asia/Kolkata' ORDER BY ts",
    "SELECT ts, count() FROM dst SAMPLE BY 30m FILL(0) ALIGN TO CALENDAR TIME ZONE '+05:30' ORDER BY ts",
    "SELECT ts, hostname, min(v) FROM dst SAMPLE BY 6h FILL(NULL) ALIGN TO CALENDAR TIME ZONE '-03:00' "
    "ORDER BY ts, hostname",
    # FROM ... TO with a time zone: local days from FROM up to TO, filled, on bounds outside the
    # rows. Where the bounds cut rows QuestDB 9.3 filters on them as UTC instants, and with
    # FILL(PREV) or LINEAR it skips the first bucket and fills from memory it never wrote
    # (docs/questdb.md); time_zones.rs checks those cases on ours.
    "SELECT ts, count(), sum(v) FROM dst SAMPLE BY 1d FROM '2024-03-27' TO '2024-04-05' FILL(NULL) "
    "ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin' ORDER BY ts",
    "SELECT ts, count() FROM dst SAMPLE BY 1d FROM '2024-03-06' TO '2024-03-16' FILL(0) "
    "ALIGN TO CALENDAR TIME ZONE '+05:30' ORDER BY ts",
    "SELECT ts, max(v) FROM dst SAMPLE BY 1d FROM '2024-10-24' TO '2024-11-06' "
    "ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin' ORDER BY ts",
    "SELECT ts, count() FROM dst SAMPLE BY 1d FROM '2024-03-06' TO '2024-03-16' FILL(NULL) "
    "ALIGN TO CALENDAR TIME ZONE 'America/New_York' ORDER BY ts",
    "SELECT ts, to_timezone(ts, 'Europe/Berlin'), to_utc(ts, 'America/New_York'), to_timezone(ts, '-03:00') "
    "FROM dst ORDER BY ts",
    # Aggregates and functions as QuestDB spells them.
    "SELECT count(), count(*), count(usage_user), count_distinct(hostname), count_distinct(io) FROM cpu",
    "SELECT hostname, count(), sum(usage_system), first(io), last(io) FROM cpu ORDER BY hostname",
    "SELECT ts, dateadd('h', 5, ts), dateadd('d', -1, ts), dateadd('M', 1, ts), dateadd('y', 1, ts), "
    "dateadd('w', 1, ts), dateadd('m', 90, ts), dateadd('s', 30, ts) FROM cpu WHERE io < 100 ORDER BY ts",
    "SELECT ts, datediff('h', ts, '2024-01-05'), datediff('d', '2023-12-01', ts), datediff('m', ts, "
    "'2024-01-02T12:00:00.000000Z'), datediff('s', ts, '2024-01-02'), datediff('M', ts, '2024-03-15'), "
    "datediff('w', ts, '2024-02-01'), datediff('y', ts, '2027-01-01') FROM cpu WHERE io < 100 ORDER BY ts",
    "SELECT ts, timestamp_floor('h', ts), timestamp_floor('15m', ts), timestamp_floor('d', ts), "
    "timestamp_floor('M', ts), timestamp_floor('y', ts), timestamp_floor('w', ts), timestamp_floor('s', ts) "
    "FROM cpu WHERE io < 100 ORDER BY ts",
    "SELECT ts, timestamp_ceil('h', ts), timestamp_ceil('d', ts), timestamp_ceil('M', ts), "
    "timestamp_ceil('m', ts) FROM cpu WHERE io < 100 ORDER BY ts",
    "SELECT timestamp_floor('h', ts) h, count() FROM cpu WHERE ts IN '2024-01-02' GROUP BY 1 ORDER BY 1",
    "SELECT to_timestamp('2024-01-02', 'yyyy-MM-dd'), to_timestamp('02/01/2024 10:30:05.123', "
    "'dd/MM/yyyy HH:mm:ss.SSS'), to_timestamp('2024-01-02T10:30:05.123456Z', 'yyyy-MM-ddTHH:mm:ss.SSSUUUZ'), "
    "to_timestamp('bad', 'yyyy') FROM cpu LIMIT 1",
    "SELECT cast(io AS long), cast(usage_system AS int), cast(io AS string), cast(hostname AS string), "
    "cast(io AS double) FROM cpu WHERE io < 50 ORDER BY ts",
    # QuestDB's LIMIT forms.
    "SELECT * FROM cpu ORDER BY ts LIMIT -3",
    "SELECT * FROM cpu ORDER BY ts LIMIT 10, 14",
    "SELECT * FROM cpu ORDER BY ts LIMIT 14, 10",
    "SELECT * FROM cpu ORDER BY ts LIMIT -10, -7",
    "SELECT * FROM cpu ORDER BY ts LIMIT 1495, -2",
    "SELECT hostname, max(usage_user) FROM cpu ORDER BY 2 DESC LIMIT -2",
]


def same(a, b):
    """Whether two cells agree (floats to 1e-9 relative)."""
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)
    return a == b


@pytest.mark.parametrize("sql", CORPUS)
def test_questdb_dialect_agrees_with_questdb(engines, sql):
    questdb, zepto = engines
    want = exec_sql(questdb, sql)
    got = exec_sql(zepto, sql, API_KEY)
    assert "error" not in want, f"QuestDB refused the corpus query: {want}"
    assert "error" not in got, f"ZeptoDB: {got.get('error')} (QuestDB answered {want['dataset'][:3]}...)"
    # Column names as QuestDB gives them, but where QuestDB's text of an expression is its own:
    # a cast (`x::long`), a negative literal (`-(1)`), a name past 64 characters (cut, quoted).
    if not any(w in sql for w in ["cast(", "-1, ts", "'2024-01-02T12:00:00.000000Z'", "dd/MM/yyyy"]):
        assert [c["name"] for c in got["columns"]] == [c["name"] for c in want["columns"]]
    w, g = want["dataset"], got["dataset"]
    assert len(g) == len(w), f"{len(g)} rows, QuestDB {len(w)}: {g[:3]} vs {w[:3]}"
    for i, (gr, wr) in enumerate(zip(g, w)):
        assert len(gr) == len(wr) and all(same(x, y) for x, y in zip(gr, wr)), f"row {i}: {gr} vs QuestDB {wr}"


def test_questdb_errors_name_the_position(engines):
    questdb, zepto = engines
    for sql in ["SELECT * FROM cpu WHERE ts IN 'garbage'", "SELECT * FROM cpu LIMIT -1, 2"]:
        want, got = exec_sql(questdb, sql), exec_sql(zepto, sql, API_KEY)
        assert "error" in want and "error" in got, (want, got)
        assert isinstance(got["position"], int) and got["position"] >= 0


def post_imp(url, query, csv, key=None):
    """`POST /imp?query` of `csv` as the multipart `data` part: the decoded JSON answer."""
    boundary = "zeptoimpboundary7f3a"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"data\"; filename=\"data.csv\"\r\n"
            f"Content-Type: text/csv\r\n\r\n{csv}\r\n--{boundary}--\r\n").encode()
    req = urllib.request.Request(f"{url}/imp?{query}", data=body, method="POST")
    req.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def imp_csv():
    """3,000 rows: microsecond timestamps, host and region names, doubles, longs past 2^31, small
    ints, text with commas and quotes, booleans; empty cells among the numbers and the text."""
    rnd = random.Random(29)
    times = sorted(rnd.sample(range(0, 2 * 86_400_000_000, 1_009), 3000))
    lines = ["ts,host,region,price,volume,io,note,flag"]
    for t in times:
        h = rnd.randrange(8)
        price = "" if rnd.random() < 0.05 else repr(round(rnd.uniform(-100, 1000), 4))
        volume = "" if rnd.random() < 0.05 else str(rnd.randrange(-10**12, 10**12))
        io = "" if rnd.random() < 0.05 else str(rnd.randrange(-500, 500))
        note = rnd.choice(["", "plain", "\"a, b\"", "\"say \"\"hi\"\"\"", "x y z"])
        lines.append(f"{iso(START + t)},host{h},{'eu' if h % 2 else 'us'}-west,{price},{volume},{io},{note},"
                     f"{'true' if rnd.random() < 0.5 else 'false'}")
    return "\n".join(lines) + "\n"


def test_imp_agrees_with_questdb(questdb):
    """One generated CSV file posted to both servers' `POST /imp`: the same answer (rows
    imported and rejected, the guessed columns' names and types), then the same rows."""
    port = free_port()
    zepto = serve(http=f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    try:
        csv = imp_csv()
        query = "fmt=json&timestamp=ts&partitionBy=DAY&name=imp_trades"
        want, got = post_imp(questdb, query, csv), post_imp(url, query, csv, API_KEY)
        assert want["status"] == "OK" and got["status"] == "OK", (want, got)
        for k in ["location", "rowsImported", "rowsRejected", "header", "partitionBy", "timestamp"]:
            assert got[k] == want[k], (k, got, want)
        assert [(c["name"], c["type"], c["errors"]) for c in got["columns"]] == \
            [(c["name"], c["type"], c["errors"]) for c in want["columns"]]
        assert got["rowsImported"] == 3000
        sql = "SELECT * FROM imp_trades ORDER BY ts"
        deadline = time.time() + 60
        while (w := exec_sql(questdb, sql)).get("count") != 3000:
            assert time.time() < deadline, f"QuestDB did not apply the rows: {w}"
            time.sleep(0.2)
        g = exec_sql(url, sql, API_KEY)
        assert [c["name"] for c in g["columns"]] == [c["name"] for c in w["columns"]]
        assert [c["type"] for c in g["columns"]] == [c["type"] for c in w["columns"]]
        assert len(g["dataset"]) == len(w["dataset"]) == 3000
        for i, (gr, wr) in enumerate(zip(g["dataset"], w["dataset"])):
            assert len(gr) == len(wr) and all(same(x, y) for x, y in zip(gr, wr)), f"row {i}: {gr} vs QuestDB {wr}"
        # The same file again appends to the table, in both.
        want, got = post_imp(questdb, query, csv), post_imp(url, query, csv, API_KEY)
        assert (got["rowsImported"], got["rowsRejected"]) == (want["rowsImported"], want["rowsRejected"]), (got, want)
    finally:
        exec_sql(questdb, "DROP TABLE IF EXISTS imp_trades")
        zepto.terminate()
        zepto.wait(timeout=30)
