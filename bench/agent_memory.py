#!/usr/bin/env python3
"""Agent memory through the HTTP door: a real `zeptodb serve` with a data directory.

    cargo build --release -p zepto-cli
    python3 bench/agent_memory.py [--records 100000] [--dim 384] [--queries 200] [--batch 500]

1. puts `--records` memories in `{"memories": [...]}` batches (clustered unit vectors, a session
   of 100 and a namespace of 10 each), timed, with the server's RSS after;
2. waits until the HNSW graphs hold every row (timed), then searches (k = 10) unfiltered, by namespace (10%) and by session (1%), and context assembly
   under a 2,000-token budget: p50/p95 over `--queries` requests, one at a time, each on a new
   connection (what a stateless client pays);
3. kills the server with SIGKILL and times the restart until `/ready`, then until the HNSW
   graphs hold every row again (`zepto_vector_index_rows` in /metrics), and checks a record.

Standard library only (no client package). Prints one JSON object.
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time

from served import Server, pct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def unit(v):
    n = sum(x * x for x in v) ** 0.5 or 1.0
    return [round(x / n, 6) for x in v]


class Tenant(Server):
    """The server, called as tenant `bench`; any status but 200 ends the benchmark."""

    def call(self, method, path, body=None, tenant="bench"):
        data = body if body is None or isinstance(body, str) else json.dumps(body)
        status, out = self.request(method, path, data, {"X-Zepto-Tenant-Id": tenant, "Content-Type": "application/json"})
        if status != 200:
            sys.exit(f"{method} {path}: {status} {out[:300]!r}")
        return json.loads(out) if out.startswith(b"{") else out.decode()


def wait_for_graphs(s, rows):
    """Until the HNSW graphs hold `rows` rows (`zepto_vector_index_rows` in /metrics)."""
    while True:
        m = s.call("GET", "/metrics")
        held = next((float(l.split()[1]) for l in m.splitlines() if l.startswith("zepto_vector_index_rows ")), 0)
        if held >= rows:
            return
        time.sleep(0.1)


def timed(n, f):
    t = []
    for i in range(n):
        t0 = time.perf_counter()
        f(i)
        t.append((time.perf_counter() - t0) * 1e6)
    return {"p50_us": round(pct(t, 50)), "p95_us": round(pct(t, 95))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "zeptodb"))
    a = ap.parse_args()
    rng = random.Random(7)
    centres = [unit([rng.gauss(0, 1) for _ in range(a.dim)]) for _ in range(max(1, a.records // 100))]

    def near(c):
        return unit([x + 0.08 * rng.uniform(-1, 1) for x in c])

    with tempfile.TemporaryDirectory() as data:
        # The request bodies are made before the clock starts: the rate is the server's.
        bodies = [{"memories": [{"content": f"memory {j}: a note an agent kept", "embedding": near(centres[j % len(centres)]),
                                 "namespace": f"ns{j % 10}", "session_id": f"s{j % 100}"}
                                for j in range(start, min(a.records, start + a.batch))]}
                  for start in range(0, a.records, a.batch)]
        bodies = [json.dumps(b) for b in bodies]
        s = Tenant(a.bin, data)
        t0, first_id = time.perf_counter(), None
        for k, body in enumerate(bodies):
            start = k * a.batch
            batch = range(start, min(a.records, start + a.batch))
            ids = s.call("POST", "/api/ai/memories", body)["memory_ids"]
            first_id = first_id or ids[0]
            if (start // a.batch) % max(1, a.records // a.batch // 10) == 0:
                print(f"put {start + len(batch)}/{a.records} ({(start + len(batch)) / (time.perf_counter() - t0):.0f}/s)",
                      file=sys.stderr)
        put_s = time.perf_counter() - t0
        out = {"records": a.records, "dim": a.dim, "put_per_s": round(a.records / put_s), "rss_after_put_mib": round(s.rss_mib())}
        qs = [near(centres[(q * 7919) % len(centres)]) for q in range(a.queries)]
        # Searches scan rows the graphs do not hold yet exactly: wait until they hold all.
        t1 = time.perf_counter()
        wait_for_graphs(s, a.records)
        out["graphs_caught_up_after_load_s"] = round(time.perf_counter() - t1, 2)
        search = lambda extra: timed(a.queries, lambda q: s.call(
            "POST", "/api/ai/memories/search", {"query_embedding": qs[q], "limit": 10, "update_access": False, **extra}))
        out["search"] = search({})
        out["search_namespace_10pct"] = search({"namespace": "ns3"})
        out["search_session_1pct"] = search({"session_id": "s42"})
        out["context_2000_tokens"] = timed(a.queries, lambda q: s.call(
            "POST", "/api/ai/context", {"query_embedding": qs[q], "token_budget": 2000}))
        out["rss_mib"] = round(s.rss_mib())
        s.kill()
        t0 = time.perf_counter()
        s = Tenant(a.bin, data)
        while True:
            try:
                if s.call("GET", "/ready").get("ready"):
                    break
            except SystemExit:
                pass
            time.sleep(0.01)
        out["restart_to_ready_s"] = round(time.perf_counter() - t0, 2)
        wait_for_graphs(s, a.records)
        out["restart_to_graphs_s"] = round(time.perf_counter() - t0, 2)
        assert s.call("GET", f"/api/ai/memories/{first_id}")["content"] == "memory 0: a note an agent kept"
        out["rss_after_restart_mib"] = round(s.rss_mib())
        s.kill()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
