#!/usr/bin/env python3
"""Resuming a subscription (`GET /subscribe`, Server-Sent Events): how fast a subscriber that
was away catches up, from the server's buffer (the ring) and from the write-ahead log after
the server was killed (`kill -9`) and restarted.

A durable server (`--data-dir`, `--sync always`) gets a first ILP line into `trades`; a
subscriber takes that event's id and goes. Then `--rows` rows are written as ILP `/write`
bodies of 10,000 lines (1,000 symbols). Two subscribers resume from the first id, one after
the other, and read until they hold every row, timing from the request to the last event:
  * from the ring: right away (the server keeps capturing for a minute after the last
    subscriber left, `--subscribe-buffer-mb` large enough to hold the rows);
  * from the log: after SIGKILL and a restart (recovery time reported beside), the ring empty.
Each resumes with `SELECT * FROM trades` (every row: the cost is reading plus encoding) and
with `... WHERE sym = 'S0001'` (a thousandth of the rows: the cost is reading back). Format:
Arrow (what the Python package reads), base64 in the event's data.

No peer has this: QuestDB, DuckDB and Polars have no subscriptions, so nothing is beside it.

Usage: bench/resume.py [--bin target/release/zeptodb] [--rows 1000000] [--repeat 3] [--json F]
"""
import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
from report import write_json  # noqa: E402
from served import Server, log, post  # noqa: E402

BODY_ROWS = 10_000
BASE_NS = 1795910400 * 10**9  # 2026-11-29T00:00:00Z


def bodies(rows):
    for start in range(0, rows, BODY_ROWS):
        n = min(BODY_ROWS, rows - start)
        yield "".join(
            f"trades,sym=S{(start + i) % 1000:04d} price={100 + (start + i) % 97 / 7:.4f},size={(start + i) % 500}i "
            f"{BASE_NS + (start + i) * 1000}\n" for i in range(n)).encode()


def events(srv, query, last_id):
    """(kind, id, data) of a subscription resumed after `last_id`, as they come."""
    from zeptodb._subscribe import _events

    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=600)
    qs = urllib.parse.urlencode({"query": query, "format": "arrow"})
    conn.request("GET", f"/subscribe?{qs}", headers={"Accept": "text/event-stream", "Last-Event-ID": last_id})
    resp = conn.getresponse()
    if resp.status != 200:
        sys.exit(f"resume refused: {resp.status} {resp.read()[:300]}")
    yield from _events(resp)


def catch_up(srv, query, last_id, want):
    """Seconds from the request to holding `want` rows, and the events it took."""
    import pyarrow as pa
    import base64

    t0, rows, n = time.perf_counter(), 0, 0
    for kind, _, data in events(srv, query, last_id):
        if kind != "rows":
            sys.exit(f"unexpected event {kind}: {str(data)[:200]}")
        rows += pa.ipc.open_stream(base64.b64decode(data["arrow"])).read_all().num_rows
        n += 1
        if rows >= want:
            return time.perf_counter() - t0, n
    sys.exit(f"the stream ended at {rows} of {want} rows")


def first_id(srv):
    """Write one row and take its event's id from a subscriber from now."""
    gen = events_from_now(srv)
    post(srv.port, "/write?precision=ns", f"trades,sym=S0000 price=1.0,size=1i {BASE_NS - 1}\n".encode(), "text/plain")
    kind, ident, _ = next(gen)
    assert kind == "rows", kind
    return ident


def events_from_now(srv):
    from zeptodb._subscribe import _events

    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=60)
    qs = urllib.parse.urlencode({"query": "SELECT sym FROM trades", "format": "arrow"})
    conn.request("GET", f"/subscribe?{qs}", headers={"Accept": "text/event-stream"})
    resp = conn.getresponse()
    return _events(resp)


def run(args, tmp):
    data = os.path.join(tmp, "db")
    shutil.rmtree(data, ignore_errors=True)
    srv = Server(args.bin, data, "--subscribe-buffer-mb", "2048")
    post(srv.port, "/write?precision=ns", f"trades,sym=S0000 price=1.0,size=1i {BASE_NS - 2}\n".encode(), "text/plain")
    last = first_id(srv)
    t0 = time.perf_counter()
    for body in bodies(args.rows):
        post(srv.port, "/write?precision=ns", body, "text/plain")
    write_s = time.perf_counter() - t0
    out = {"write_s": write_s}
    sel = args.rows // 1000
    for name, query, want in [("all", "SELECT * FROM trades", args.rows),
                              ("one symbol", "SELECT * FROM trades WHERE sym = 'S0001'", sel)]:
        out[f"ring {name}"] = catch_up(srv, query, last, want)
    srv.kill()
    t0 = time.perf_counter()
    srv = Server(args.bin, data)
    out["restart_s"] = time.perf_counter() - t0
    for name, query, want in [("all", "SELECT * FROM trades", args.rows),
                              ("one symbol", "SELECT * FROM trades WHERE sym = 'S0001'", sel)]:
        out[f"log {name}"] = catch_up(srv, query, last, want)
    srv.stop(timeout=60)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "zeptodb"))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="zepto-resume-") as tmp:
        for i in range(args.repeat):
            log(f"run {i + 1} of {args.repeat}: {args.rows:,} rows")
            runs.append(run(args, tmp))
    print(f"Resuming a subscriber after {args.rows:,} rows ({args.rows // BODY_ROWS} ILP bodies), "
          f"{args.bin}, --sync always; best of {args.repeat} (all runs in brackets)")
    print(f"writing: {min(r['write_s'] for r in runs):.2f} s; restart after kill -9: "
          f"{min(r['restart_s'] for r in runs):.2f} s")
    print("(catch-up: rows of the table caught up per second; sent: rows the subscriber got)")
    for key in ["ring all", "log all", "ring one symbol", "log one symbol"]:
        secs = [r[key][0] for r in runs]
        sent = args.rows if key.endswith("all") else args.rows // 1000
        print(f"{key:16} {min(secs) * 1000:9.1f} ms  catch-up {args.rows / min(secs):>12,.0f} rows/s  "
              f"sent {sent:>9,} rows in {runs[0][key][1]:4d} events  [{', '.join(f'{s * 1000:.0f}' for s in secs)}]")
    if args.json:
        write_json(args.json, {"rows": args.rows, "runs": runs})


if __name__ == "__main__":
    main()
