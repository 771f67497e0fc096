#!/usr/bin/env python3
"""Durable ingest rate per sync mode (issue #5): ILP over HTTP into `zeptodb serve --data-dir`,
one keep-alive connection, batches of 1, 100 and 10,000 rows, for --sync always,
interval=100, none, and in memory (--in-memory); then the recovery rate of a restart after
kill -9 (the whole log replayed) and of the next one (the checkpoint written at the clean exit
loaded).
Standard library only.

Usage: bench/wal_ingest.py [--bin target/release/zeptodb] [--seconds 5]
"""
import argparse
import http.client
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import Columns  # noqa: E402
from served import Server  # noqa: E402


def body(batch, start):
    # No timestamps: the server stamps each batch with its arrival time, so rows arrive in time
    # order (as live feeds do) and the bodies can be reused.
    return "".join(f"ticks,sym=S{(start + i) % 100:03d} px={i % 1000}.25,size={i % 500}i\n"
                   for i in range(batch)).encode()


def run(port, batch, seconds):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    bodies = [body(batch, k * batch) for k in range(16)]
    rows, k, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        c.request("POST", "/write", body=bodies[k % 16])
        r = c.getresponse()
        r.read()
        assert r.status == 200, r.status
        rows += batch
        k += 1
    return rows / (time.perf_counter() - t0), rows


def recovery(binary, d, pattern, what, swap=False):
    """Restart on `d`, stop cleanly, and report the rate the startup message gives."""
    t0 = time.perf_counter()
    srv = Server(binary, d, "--checkpoint-mb", "0")
    secs = time.perf_counter() - t0
    srv.stop()
    m = re.search(pattern, "".join(srv.startup))
    if not m:
        return f"{what}: no message"
    t, rows = (float(m.group(2)), int(m.group(1))) if swap else (float(m.group(1)), int(m.group(2)))
    return f"{what} {rows:,} rows in {t:.2f} s ({rows / max(t, 1e-9) / 1e6:.1f}M rows/s, start {secs:.2f} s)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join("target", "release", "zeptodb"))
    ap.add_argument("--seconds", type=float, default=5)
    a = ap.parse_args()
    cols = Columns([14, 16, 16, 16], "<>>>", sep="")
    print(cols.line(["mode"] + [f"batch {b:,}" for b in (1, 100, 10_000)]) + "   (rows/s)")
    for mode in ("always", "interval=100", "none", "memory"):
        d = tempfile.mkdtemp(prefix="zepto-walbench-")
        # No automatic checkpoint: the whole run stays in the log, to time its replay.
        srv = Server(a.bin, None) if mode == "memory" else Server(a.bin, d, "--sync", mode, "--checkpoint-mb", "0")
        port = srv.port
        out, total = [], 0
        for b in (1, 100, 10_000):
            r, n = run(port, b, a.seconds)
            out.append(r)
            total += n
        line = cols.line([mode] + [f"{r:,.0f}" for r in out])
        if mode == "memory":
            srv.stop()
        else:
            # kill -9: no checkpoint at exit, so the restart replays the whole log ...
            srv.kill()
            line += "   " + recovery(a.bin, d, r"replayed \d+ log records after it in ([\d.]+) s \((\d+) rows", "log replay")
            # ... and that restart's clean exit checkpoints, so the next one loads the checkpoint.
            line += "; " + recovery(a.bin, d, r"loaded checkpoint \d+ \(\d+ tables, (\d+) rows\) in ([\d.]+) s", "checkpoint load", swap=True)
        print(line, flush=True)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
