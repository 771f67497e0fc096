"""Arrow IPC answers over HTTP, read by pyarrow as any Arrow client would: plain, and with
buffer compression (LZ4 or ZSTD) asked for by `compression=` or the Accept header's
`codecs` parameter. Compressed answers decode to the same table in fewer bytes."""

import json
import urllib.request

import pytest

from conftest import API_KEY, free_port, serve

pa = pytest.importorskip("pyarrow")
ipc = pytest.importorskip("pyarrow.ipc")


@pytest.fixture(scope="module")
def port():
    p = free_port()
    proc = serve("--pg", "off", http=f"127.0.0.1:{p}")
    sql(p, "CREATE TABLE q (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, note VARCHAR)")
    sql(p, "INSERT INTO q SELECT TIMESTAMP '2024-01-02' + INTERVAL '1 second' * i, "
           "CASE WHEN i % 3 = 0 THEN 'AAPL' WHEN i % 3 = 1 THEN 'MSFT' ELSE NULL END, "
           "100 + (i % 997) * 0.01, i, CASE WHEN i % 5 = 0 THEN NULL ELSE 'n' || (i % 7) END "
           "FROM range(200000) AS r(i)")
    yield p
    proc.terminate()
    proc.wait(timeout=30)


def post(port, path, body, headers=()):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body.encode(), method="POST")
    req.add_header("Authorization", f"Bearer {API_KEY}")
    for k, v in headers:
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def sql(port, q):
    status, body = post(port, "/query", q)
    assert status == 200, body
    return json.loads(body)


QUERY = "SELECT * FROM q ORDER BY ts"


@pytest.mark.parametrize("how", [("?format=arrow&compression=zstd", ()), ("?format=arrow&compression=lz4", ()),
                                 ("", (("Accept", 'application/vnd.apache.arrow.stream; codecs="brotli, zstd"'),))])
def test_compressed_arrow_answers_decode_to_the_same_table_in_fewer_bytes(port, how):
    path, headers = how
    status, plain = post(port, "/query?format=arrow", QUERY)
    assert status == 200
    status, packed = post(port, "/query" + path, QUERY, headers)
    assert status == 200, packed
    want = ipc.open_stream(plain).read_all()
    got = ipc.open_stream(packed).read_all()
    assert want.num_rows == 200_000
    assert got.equals(want)
    assert len(packed) < len(plain) / 2, (len(packed), len(plain))


def test_compression_is_checked_and_compressed_input_is_refused_whole(port):
    status, body = post(port, "/query?format=csv&compression=zstd", "SELECT 1")
    assert status == 400 and b"format=arrow" in body
    status, body = post(port, "/query?format=arrow&compression=snappy", "SELECT 1")
    assert status == 400 and b"lz4, zstd or none" in body
    # pyarrow's own compressed stream as an ingest body: refused, naming the way to send it.
    sink = pa.BufferOutputStream()
    table = pa.table({"ts": pa.array([1], pa.timestamp("ns")), "n": pa.array([7], pa.int64())})
    with ipc.new_stream(sink, table.schema, options=ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table)
    sql(port, "CREATE TABLE w (ts TIMESTAMP, n BIGINT)")
    req = urllib.request.Request(f"http://127.0.0.1:{port}/write?table=w&format=arrow",
                                 data=sink.getvalue().to_pybytes(), method="POST")
    req.add_header("Authorization", f"Bearer {API_KEY}")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req)
    assert refused.value.code == 400 and b"Content-Encoding: gzip" in refused.value.read()
    assert sql(port, "SELECT count(*) FROM w")["data"] == [[0]]
