#!/usr/bin/env python3
"""Ingest through Kafka: a real broker and a cluster node, against the same node without Kafka.

    make kafka && cargo build --release -p zepto-cli
    python3 bench/cluster_ingest.py [--rows 2000000] [--batch 10000] [--symbols 100] [--partitions 6]

1. Local: `zeptodb serve --data-dir` without a cluster; POST /write line-protocol batches of
   `--batch` rows (trades of `--symbols` symbols), one at a time; rows/s.
2. Through Kafka: the same batches to `zeptodb serve --cluster` (tests/kafka/broker.sh starts
   the broker, `--partitions` partitions): rows/s until every batch is acknowledged (Kafka has
   it) and until every row is queryable (the node applied it), and the node's RSS.
3. Recovery: another `--rows / 4` rows, `kill -9` right after the last acknowledgement,
   restart on the same data directory: seconds until every row is queryable again.
4. Scale: for each count in `--nodes` (default 2,3), that many nodes on a topic of their own,
   one poster thread per node's door sending its share of the batches: rows/s until every
   batch is acknowledged and until every row is queryable (counted through the first node,
   which asks the others), and each node's RSS. On this 2-core machine judge it per core.

Standard library only. Prints progress to stderr and one JSON object to stdout.
"""
import argparse, json, os, sys, tempfile, threading, time

from served import Server, kafka

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "zeptodb")


class Node(Server):
    def __init__(self, data, *extra):
        super().__init__(BIN, data, *extra)

    def call(self, method, path, body=None):
        return self.request(method, path, body)

    def count(self):
        return super().count("trades")


def batches(first, rows, batch, symbols):
    for start in range(first, first + rows, batch):
        n = min(batch, first + rows - start)
        yield "\n".join(f"trades,sym=S{i % symbols} price={100 + i % 97}.25,size={i % 1000}i {1_700_000_000_000_000_000 + i}"
                        for i in range(start, start + n)).encode()


def post_all(node, bodies, label):
    t0 = time.time(); sent = 0
    for b in bodies:
        st, out = node.call("POST", "/write", b)
        if st != 200:
            sys.exit(f"{label}: /write {st} {out[:200]!r}")
        sent += 1
        if sent % 50 == 0:
            print(f"  {label}: {sent} batches", file=sys.stderr, flush=True)
    return time.time() - t0


def wait_rows(node, want, timeout=600):
    t0 = time.time()
    while node.count() < want:
        if time.time() - t0 > timeout:
            sys.exit(f"only {node.count()} of {want} rows after {timeout} s")
        time.sleep(0.02)
    return time.time() - t0


def scale(n, port, tmp, a):
    """Ingest through `n` nodes at once (see the module docs, step 4)."""
    args = lambda i: ["--cluster", f"127.0.0.1:{port}", "--cluster-topic", f"bench-n{n}", "--node-id", f"n{n}-{i}"]
    nodes = [Node(os.path.join(tmp, f"scale{n}-{i}"), *args(i)) for i in range(n)]
    try:
        # Timed from a settled group: every partition owned and replayed, every node seen.
        def settled():
            views = [json.loads(x.call("GET", "/cluster")[1]) for x in nodes]
            ready = sum(1 for v in views for p in v["partitions"] if p.get("ready"))
            return ready == a.partitions and all(len(v["members"]) == n for v in views)
        t0 = time.time()
        while not settled():
            if time.time() - t0 > 120:
                sys.exit(f"{n} nodes did not settle in 120 s")
            time.sleep(0.2)
        bodies = list(batches(0, a.rows, a.batch, a.symbols))
        done = [0.0] * n
        def post(i):
            done[i] = post_all(nodes[i], bodies[i::n], f"{n} nodes, door {i}")
        t0 = time.time()
        threads = [threading.Thread(target=post, args=(i,)) for i in range(n)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        acked = time.time() - t0
        wait_rows(nodes[0], a.rows)
        total = time.time() - t0
        return {"acked_rows_per_s": round(a.rows / acked), "queryable_rows_per_s": round(a.rows / total),
                "rss_mib": [round(x.rss_mib(), 1) for x in nodes]}
    finally:
        for x in nodes:
            x.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--symbols", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--nodes", default="2,3", help="node counts for the scale step (comma-separated)")
    a = ap.parse_args()
    out = {"rows": a.rows, "batch": a.batch, "symbols": a.symbols, "partitions": a.partitions}
    with tempfile.TemporaryDirectory() as tmp:
        print("local /write ...", file=sys.stderr, flush=True)
        local = Node(os.path.join(tmp, "local"))
        secs = post_all(local, batches(0, a.rows, a.batch, a.symbols), "local")
        out["local_rows_per_s"] = round(a.rows / secs)
        out["local_rss_mib"] = round(local.rss_mib(), 1)
        local.stop()

        with kafka(tmp, a.partitions) as port:
            data = os.path.join(tmp, "node")
            args = ["--cluster", f"127.0.0.1:{port}", "--cluster-topic", "bench", "--node-id", "bench"]
            node = Node(data, *args)
            print("through Kafka ...", file=sys.stderr, flush=True)
            t0 = time.time()
            acked = post_all(node, batches(0, a.rows, a.batch, a.symbols), "kafka")
            wait_rows(node, a.rows)
            total = time.time() - t0
            out["kafka_acked_rows_per_s"] = round(a.rows / acked)
            out["kafka_queryable_rows_per_s"] = round(a.rows / total)
            out["kafka_node_rss_mib"] = round(node.rss_mib(), 1)
            st, body = node.call("GET", "/cluster")
            out["records_applied"] = json.loads(body)["records_applied"]

            print("kill -9 and catch up ...", file=sys.stderr, flush=True)
            more = a.rows // 4
            post_all(node, batches(a.rows, more, a.batch, a.symbols), "more")
            node.kill()
            t0 = time.time()
            node = Node(data, *args)
            out["restart_ready_s"] = round(time.time() - t0, 2)
            wait_rows(node, a.rows + more)
            out["restart_all_rows_s"] = round(time.time() - t0, 2)
            if node.count() != a.rows + more:
                sys.exit(f"{node.count()} rows after the restart, want {a.rows + more}")
            node.stop()

            for n in [int(x) for x in a.nodes.split(",") if x.strip()]:
                print(f"{n} nodes ...", file=sys.stderr, flush=True)
                out[f"nodes_{n}"] = scale(n, port, tmp, a)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
