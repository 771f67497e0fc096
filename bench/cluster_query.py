#!/usr/bin/env python3
"""Queries Q1-Q7 on a 3-node cluster against one node with the same rows.

    make kafka && cargo build --release -p zepto-cli
    .venv/bin/python bench/cluster_query.py [--rows 1000000] [--nodes 3] [--partitions 6] [--iters 9]

The trades and quotes of bench/harness/gen_data.py (the peer benchmark's shapes) go, as
Arrow IPC batches through POST /write, to a single `zeptodb serve` and, round-robin over
the nodes' doors, to a cluster of `--nodes` nodes on a real Kafka broker
(tests/kafka/broker.sh). The cluster's tables are created on every node first (DDL does not
travel through Kafka yet). Then each of the peer benchmark's queries Q1-Q7 (its ZeptoDB SQL)
runs `--iters` times through node a's HTTP door and through the single node's, results as
Arrow IPC; the medians and their ratio (cluster / single) are printed, with each server's
RSS. Both sides' answers are checked to have the same row count.

Prints progress to stderr and one JSON object to stdout.
"""
import argparse, json, os, statistics, sys, tempfile, time

import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "harness"))
import gen_data  # noqa: E402  (the peer benchmark's data generator)
from peers import ZEPTO_DDL, ZEPTO_SQL  # noqa: E402  (the peer benchmark's queries)
from served import Server, kafka  # noqa: E402

ROOT = os.path.dirname(HERE)
BIN = os.path.join(ROOT, "target", "release", "zeptodb")
QUERIES = ["Q1", "Q2", "Q3a", "Q3b", "Q4", "Q5", "Q6", "Q7"]


def ipc_chunks(table, rows_per_chunk=100_000):
    """The table as Arrow IPC stream bodies of `rows_per_chunk` rows, strings plain."""
    cols = [c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for c in table.columns]
    table = pa.table(cols, names=table.column_names)
    for start in range(0, table.num_rows, rows_per_chunk):
        sink = pa.BufferOutputStream()
        part = table.slice(start, rows_per_chunk)
        with pa.ipc.new_stream(sink, part.schema) as w:
            w.write_table(part)
        yield sink.getvalue().to_pybytes()


def load(servers, name, table):
    for i, body in enumerate(ipc_chunks(table)):
        s = servers[i % len(servers)]
        st, out = s.request("POST", f"/write?format=arrow&table={name}", body)
        if st != 200:
            sys.exit(f"/write {name} on {s.addr}: {st} {out[:300]!r}")


def wait_rows(server, table, want, timeout=900):
    t0 = time.time()
    while True:
        st, out = server.request("POST", "/", f"SELECT count(*) FROM {table}")
        if st == 200 and json.loads(out)["data"][0][0] == want:
            return time.time() - t0
        if time.time() - t0 > timeout:
            sys.exit(f"{table}: not {want} rows after {timeout} s: {st} {out[:200]!r}")
        time.sleep(0.2)


def timed(server, sql, iters):
    """Median ms of `iters` runs (after one warm-up) and the result's row count."""
    body = json.dumps({"query": sql, "format": "arrow"})
    times, rows = [], None
    for i in range(iters + 1):
        t0 = time.perf_counter()
        st, out = server.request("POST", "/", body, {"Content-Type": "application/json"})
        dt = (time.perf_counter() - t0) * 1000
        if st != 200:
            sys.exit(f"{sql[:60]}... on {server.addr}: {st} {out[:300]!r}")
        if i:
            times.append(dt)
        rows = pa.ipc.open_stream(out).read_all().num_rows
    return statistics.median(times), rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--iters", type=int, default=9)
    a = ap.parse_args()
    trades, quotes = gen_data.generate(a.rows)
    out = {"rows": a.rows, "nodes": a.nodes, "partitions": a.partitions, "queries": {}}
    with tempfile.TemporaryDirectory() as tmp:
        with kafka(tmp, a.partitions) as port:
            servers = []
            try:
                single = Server(BIN, os.path.join(tmp, "single"))
                servers.append(single)
                nodes = []
                for i in range(a.nodes):
                    args = ["--cluster", f"127.0.0.1:{port}", "--cluster-topic", "q", "--node-id", f"n{i}"]
                    nodes.append(Server(BIN, os.path.join(tmp, f"n{i}"), *args))
                    servers.append(nodes[-1])
                for s in [single] + nodes:
                    for t in ("trades", "quotes"):
                        s.request("POST", "/", ZEPTO_DDL[t])
                print(f"loading {a.rows} trades and quotes ...", file=sys.stderr, flush=True)
                for name, table in (("trades", trades), ("quotes", quotes)):
                    load([single], name, table)
                    t0 = time.time()
                    load(nodes, name, table)
                    wait_rows(nodes[0], name, table.num_rows)
                    out[f"cluster_{name}_load_s"] = round(time.time() - t0, 2)
                for q in QUERIES:
                    one, n1 = timed(single, ZEPTO_SQL[q], a.iters)
                    many, n2 = timed(nodes[0], ZEPTO_SQL[q], a.iters)
                    if n1 != n2:
                        sys.exit(f"{q}: {n1} rows on one node, {n2} on the cluster")
                    out["queries"][q] = {"single_ms": round(one, 2), "cluster_ms": round(many, 2),
                                         "ratio": round(many / one, 2), "rows": n1}
                    print(f"  {q}: single {one:.1f} ms, cluster {many:.1f} ms ({many / one:.2f}x)", file=sys.stderr, flush=True)
                out["single_rss_mib"] = round(single.rss_mib(), 1)
                out["node_rss_mib"] = [round(n.rss_mib(), 1) for n in nodes]
            finally:
                for s in servers:
                    s.stop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
