#!/usr/bin/env python3
"""kill -9 loop against the real server (issue #5): ingest ILP over HTTP with --sync always,
SIGKILL the server at a random moment, restart it on the same data directory, and check that
every acknowledged batch is there exactly once (and no batch is there in part). Repeats N times
in a row on one data directory (default 50). Standard library only.

Usage: tests/crash/crash_loop.py [--bin target/release/zeptodb] [--rounds 50] [--seed S]
"""
import argparse
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROWS_PER_BATCH = 100


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, data, port):
    p = subprocess.Popen([binary, "serve", "--http", f"127.0.0.1:{port}", "--data-dir", data, "--sync", "always",
                          "--access-log", "off"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/ping")
            if c.getresponse().read() == b"Ok":
                return p
        except OSError:
            pass
        if p.poll() is not None:
            raise SystemExit(f"server exited: {p.stderr.read()}")
        if time.time() - t0 > 120:
            raise SystemExit("server did not start")
        time.sleep(0.02)


def sql(port, q):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/?query=" + urllib.parse.quote(q))
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit(f"{q}: {r.status} {body[:300]!r}")
    return json.loads(body)


def writer(port, first, acked, stop):
    b = first
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while not stop.is_set():
            lines = "".join(f"ticks,sym=S{(b * ROWS_PER_BATCH + i) % 7} id={b * ROWS_PER_BATCH + i}i,px={i}.5 "
                            f"{1_700_000_000_000_000_000 + b * ROWS_PER_BATCH + i}\n" for i in range(ROWS_PER_BATCH))
            c.request("POST", "/write", body=lines.encode())
            r = c.getresponse()
            r.read()
            if r.status != 200:
                return
            acked.append(b)
            b += 1
    except (OSError, http.client.HTTPException):
        return  # the server died under us: this batch was not acknowledged


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join("target", "release", "zeptodb"))
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    data = tempfile.mkdtemp(prefix="zepto-crash-")
    acked, next_batch = [], 0
    t_start = time.time()
    try:
        for rnd in range(a.rounds):
            port = free_port()
            p = start(a.bin, data, port)
            if rnd == 0:
                sql_post = http.client.HTTPConnection("127.0.0.1", port)
                sql_post.request("POST", "/", body=b"CREATE TABLE ticks (ts TIMESTAMP, sym SYMBOL, id BIGINT, px DOUBLE)")
                assert sql_post.getresponse().status == 200
            else:
                check(port, acked)
            got, stop = [], threading.Event()
            t = threading.Thread(target=writer, args=(port, next_batch, got, stop))
            t.start()
            time.sleep(rng.uniform(0.05, 0.6))
            p.kill()
            p.wait()
            stop.set()
            t.join()
            acked.extend(got)
            next_batch = (max(acked) + 2) if acked else next_batch + 1
            print(f"round {rnd + 1}/{a.rounds}: {len(got)} batches acknowledged before kill -9, "
                  f"{len(acked) * ROWS_PER_BATCH:,} rows acknowledged in all", flush=True)
        port = free_port()
        p = start(a.bin, data, port)
        n = check(port, acked)
        p.terminate()
        p.wait()
        print(f"OK: {a.rounds} kill -9 rounds (seed {a.seed}), {n:,} rows, every acknowledged batch present "
              f"exactly once, no partial batch ({time.time() - t_start:.0f} s)")
    finally:
        shutil.rmtree(data, ignore_errors=True)


def check(port, acked):
    j = sql(port, "SELECT count(*), count(DISTINCT id) FROM ticks")
    total, distinct = j["data"][0]
    if total != distinct:
        raise SystemExit(f"{total - distinct} rows are there twice")
    present = {r[0] for r in sql(port, "SELECT DISTINCT id // 100 FROM ticks")["data"]}
    lost = [b for b in acked if b not in present]
    if lost:
        raise SystemExit(f"acknowledged batches lost: {lost[:10]}")
    partial = sql(port, "SELECT id // 100 AS b, count(*) FROM ticks GROUP BY b HAVING count(*) <> 100")
    if partial["rows"]:
        raise SystemExit(f"partial batches: {partial['data'][:5]}")
    return total


if __name__ == "__main__":
    main()
