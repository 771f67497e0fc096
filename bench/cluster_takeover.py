#!/usr/bin/env python3
"""Taking a dead node's partitions over: from shared history, against replaying Kafka's log.

    make kafka && cargo build --release -p zepto-cli
    python3 bench/cluster_takeover.py [--rows 2000000] [--batch 10000] [--symbols 100] [--partitions 6]

1. A node with `--shared-history` (a directory) and `--seal-every 2s`: `--rows` trades through
   /write (half of them three days old, so `--tier-after 1d` seals them as history files),
   until every row is queryable and every partition sealed at the offset it applied.
2. `kill -9`, then a new node with an empty data directory, in a group of its own (so that it
   gets every partition at once rather than after the dead node's 6 s session timeout):
   seconds until every row is queryable (each partition taken over from shared storage, then
   the log after its manifest), and its RSS.
3. The same new node without shared history, in another group of its own: seconds until every
   row is queryable (the whole log replayed), and its RSS.

Standard library only. Prints progress to stderr and one JSON object to stdout.
"""
import argparse, json, os, random, sys, tempfile, time

from served import Server, kafka

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "zeptodb")
DAY = 86_400_000_000_000


def batches(rows, batch, symbols, now):
    rng = random.Random(42)
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        yield "\n".join(f"trades,sym=S{i % symbols} price={rng.uniform(10, 500):.2f},size={rng.randrange(1, 5000)}i "
                        f"{now - (3 * DAY if (i // batch) % 2 == 0 else DAY // 2) + i * 1000 + rng.randrange(1000)}"
                        for i in range(start, start + n)).encode()


def cluster(node):
    return json.loads(node.request("GET", "/cluster")[1])


def wait(what, f, timeout=900):
    t0 = time.time()
    while not f():
        if time.time() - t0 > timeout:
            sys.exit(f"{what}: not after {timeout} s")
        time.sleep(0.05)
    return time.time() - t0


def all_sealed(node, partitions):
    ps = cluster(node)["partitions"]
    return len(ps) == partitions and all(p["sealed_offset"] is not None and p["sealed_offset"] == p["applied_offset"]
                                         for p in ps)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--symbols", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=6)
    a = ap.parse_args()
    out = {"rows": a.rows, "batch": a.batch, "symbols": a.symbols, "partitions": a.partitions}
    now = time.time_ns()
    with tempfile.TemporaryDirectory() as tmp:
        with kafka(tmp, a.partitions) as port:
            shared = os.path.join(tmp, "shared")
            common = ["--cluster", f"127.0.0.1:{port}", "--cluster-topic", "takeover", "--tier-after", "1d"]
            with_shared = common + ["--shared-history", shared, "--seal-every", "2s"]
            a_node = Server(BIN, os.path.join(tmp, "a"), *with_shared, "--node-id", "a")
            print("ingest ...", file=sys.stderr, flush=True)
            t0 = time.time()
            for i, b in enumerate(batches(a.rows, a.batch, a.symbols, now)):
                st, body = a_node.request("POST", "/write", b)
                if st != 200:
                    sys.exit(f"/write {st} {body[:200]!r}")
                if i % 50 == 49:
                    print(f"  {i + 1} batches", file=sys.stderr, flush=True)
            wait("every row on a", lambda: a_node.count("trades") == a.rows)
            out["ingest_queryable_s"] = round(time.time() - t0, 2)
            out["sealed_after_s"] = round(wait("every partition sealed", lambda: all_sealed(a_node, a.partitions)), 2)
            out["a_rss_mib"] = round(a_node.rss_mib(), 1)
            out["shared_mib"] = round(sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(shared)
                                          for f in fs) / 2**20, 1)
            a_node.kill()

            print("take over from shared history ...", file=sys.stderr, flush=True)
            t0 = time.time()
            b_node = Server(BIN, os.path.join(tmp, "b"), *with_shared, "--cluster-group", "shared", "--node-id", "b")
            wait("every row on b", lambda: b_node.count("trades") == a.rows)
            out["takeover_shared_s"] = round(time.time() - t0, 2)
            out["takeover_shared_rss_mib"] = round(b_node.rss_mib(), 1)
            b_node.stop()

            print("replay the whole log ...", file=sys.stderr, flush=True)
            t0 = time.time()
            c_node = Server(BIN, os.path.join(tmp, "c"), *common, "--cluster-group", "replay", "--node-id", "c")
            wait("every row on c", lambda: c_node.count("trades") == a.rows)
            out["replay_log_s"] = round(time.time() - t0, 2)
            out["replay_log_rss_mib"] = round(c_node.rss_mib(), 1)
            c_node.stop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
