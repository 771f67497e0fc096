#!/usr/bin/env python3
"""Replay the hostile and unlucky cases of issue "Hostile and unlucky users" against a release
build of `zeptodb serve --query-timeout 8 --query-memory-mb 512`, and report for each case
the answer, how long it took, whether the server stayed up, and its RSS (now and peak over the
case, read from /proc) against the memory limit. Stdlib only; Linux (for /proc).

  cargo build --release -p zepto-cli
  python3 bench/hostile_replay.py [--bin target/release/zeptodb]

A measurement, not a test: the tests of each case are in crates/zepto-cli/tests/hostile.rs and
the unit tests of the crates they touch. Disk full needs a full file system, which this script
does not make (the WAL's fault-injecting storage tests it: crates/zepto-wal).
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import served  # noqa: E402
from report import write_json  # noqa: E402

LIMIT_MB = 512
MiB = 1 << 20


class Server(served.Server):
    """`zeptodb serve --data-dir D --query-timeout 8 --query-memory-mb 512`, its log appended to
    server.log beside D (case 8 reads what recovery said there)."""

    def __init__(self, binary, data_dir, extra=()):
        super().__init__(binary, data_dir, "--query-timeout", "8", "--query-memory-mb", str(LIMIT_MB), *extra,
                         log=os.path.join(os.path.dirname(data_dir), "server.log"))

    def reset_peak(self):
        with open(f"/proc/{self.pid}/clear_refs", "w") as f:
            f.write("5")

    def up(self):
        if self.proc.poll() is not None:
            return False
        try:
            return urllib.request.urlopen(self.url + "/ping", timeout=5).status == 200
        except Exception:
            return False

    def stop(self):
        super().stop(timeout=30)


def post(url, path, body, timeout=60, ctype="text/plain"):
    data = body if isinstance(body, bytes) else body.encode()
    req = urllib.request.Request(url + path, data=data, method="POST", headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception as e:  # connection reset, timeout: the answer is the exception
        return type(e).__name__, b""


def announce(url, path, length):
    """Send only the head of a POST of `length` bytes and return the status the server answers
    with before any of the body arrives (a limit checked on Content-Length)."""
    host, port = url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {length}\r\n\r\n".encode())
        head = s.recv(4096).decode(errors="replace")
    status = head.split(" ")[1] if head.startswith("HTTP/") else "no answer"
    body = head.split("\r\n\r\n", 1)[-1]
    return f"{status} {code_of(body.encode())} (before the body was sent)"


def code_of(body):
    try:
        return json.loads(body)["error"]["code"]
    except Exception:
        return ""


def run_case(srv, name, fn, rows):
    srv.reset_peak()
    t0 = time.monotonic()
    answer = fn()
    secs = time.monotonic() - t0
    rows.append({
        "case": name, "answer": answer, "seconds": round(secs, 2), "up": srv.up(),
        "rss_mib": int(srv.rss_mib()), "peak_mib": int(srv.rss_mib("VmHWM")),
    })
    print(f"{name}: {answer} in {secs:.2f} s, up={rows[-1]['up']}, RSS {rows[-1]['rss_mib']} MiB, "
          f"peak {rows[-1]['peak_mib']} MiB", flush=True)


def cases(srv, data_dir):
    u = srv.url
    post(u, "/", "CREATE TABLE t (ts TIMESTAMP, a BIGINT, s SYMBOL)")
    post(u, "/", "INSERT INTO t VALUES ('2024-01-01', 1, 'x'), ('2024-01-02', 2, 'y')")
    post(u, "/", "CHECKPOINT")
    wal = next(os.path.join(r, f) for r, _, fs in os.walk(os.path.join(data_dir, "wal")) for f in fs)

    def one(path_or_sql, body=None):
        s, b = post(u, "/", path_or_sql) if body is None else post(u, path_or_sql, body)
        return f"{s} {code_of(b)}".strip()

    yield "1 COPY TO the server's own WAL segment", lambda: one(f"COPY (SELECT * FROM t) TO '{wal}' (FORMAT csv)")
    yield "2a 1,000-term AND chain (12 KB)", lambda: one("SELECT count(*) FROM t WHERE " + " AND ".join(["a = 1"] * 1000))
    yield "2b 100,000-term AND chain", lambda: one("SELECT count(*) FROM t WHERE " + " AND ".join(["a = 1"] * 100_000))
    yield "2c 1+1+... 4 KB", lambda: one("SELECT " + "+".join(["1"] * 2000))
    yield "3 50 MB of 'SELECT 1;'", lambda: announce(u, "/", 50 * MiB)
    yield "4 COPY FROM /dev/zero", lambda: one("COPY t FROM '/dev/zero'")
    yield "5 1M-item IN list", lambda: one("SELECT count(*) FROM t WHERE a IN (" + ",".join(map(str, range(1_000_000))) + ")")

    def ilp_ms(i):
        t0 = time.monotonic()
        post(u, "/write?precision=ns", f"cpu,host=a usage={i} {1_700_000_000_000_000_000 + i}")
        return (time.monotonic() - t0) * 1000

    def flood():
        idle = [ilp_ms(i) for i in range(50)]
        # The heavy clients are processes of their own (so the ILP timings below never wait for
        # this interpreter's GIL) at the lowest priority (so on 2 cores they do not starve the
        # measuring client itself: the server's threads are what is measured).
        client = ("import sys, urllib.request, urllib.error\n"
                  "q = 'SELECT count(*) FROM t WHERE a IN (' + ','.join(map(str, range(400_000))) + ')'\n"
                  "try:\n    print(urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=q.encode()),"
                  " timeout=120).status)\nexcept urllib.error.HTTPError as e:\n    print(e.code)\n")
        procs = [subprocess.Popen([sys.executable, "-c", client, u + "/"], stdout=subprocess.PIPE, text=True,
                                  preexec_fn=lambda: os.nice(19)) for _ in range(24)]
        time.sleep(0.5)  # let them start sending
        lat = []
        for i in range(50):
            lat.append(ilp_ms(100 + i))
            time.sleep(0.02)
        done = [p.communicate()[0].strip() for p in procs]
        codes = {c: done.count(c) for c in set(done)}
        return (f"24 x 3.4 MB IN lists {codes}; ILP ack p50/max {served.pct(lat, 50):.1f}/{max(lat):.1f} ms "
                f"(idle {served.pct(idle, 50):.1f}/{max(idle):.1f} ms)")

    yield "6 24 heavy queries beside ILP writes", flood
    yield "9a COPY FROM a missing file", lambda: one("COPY t FROM '/nonexistent/x.csv'")
    bad = os.path.join(os.path.dirname(data_dir), "bad.parquet")
    with open(bad, "wb") as f:
        f.write(b"not parquet at all")
    yield "9b COPY FROM a malformed Parquet file", lambda: one(f"COPY t FROM '{bad}' (FORMAT parquet)")


def flipped_record(binary, work):
    """Case 8: one byte flipped in the last, complete, fsynced WAL record."""
    data = os.path.join(work, "flip", "data")
    os.makedirs(data)
    srv = Server(binary, data, ["--checkpoint-mb", "0"])
    post(srv.url, "/", "CREATE TABLE f (a BIGINT)")
    post(srv.url, "/", "INSERT INTO f VALUES (1), (2), (3)")
    srv.kill()
    segs = sorted(os.path.join(r, f) for r, _, fs in os.walk(os.path.join(data, "wal")) for f in fs)
    with open(segs[-1], "r+b") as f:
        f.seek(-5, os.SEEK_END)
        b = f.read(1)
        f.seek(-5, os.SEEK_END)
        f.write(bytes([b[0] ^ 0x40]))
    srv = Server(binary, data)
    s, body = post(srv.url, "/", "SELECT count(*) FROM f")
    health = urllib.request.urlopen(srv.url + "/health").read().decode()
    srv.stop()
    with open(os.path.join(work, "flip", "server.log"), errors="replace") as f:
        said = [line.strip() for line in f if "corruption" in line.lower()]
    return f"restart {s}, /health mentions corruption: {'corrupt' in health.lower()}, log: {said[:1]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join("target", "release", "zeptodb"))
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="zepto-hostile-")
    rows = []
    try:
        data = os.path.join(work, "main", "data")
        os.makedirs(data)
        srv = Server(a.bin, data)
        base = int(srv.rss_mib())
        print(f"server up, RSS {base} MiB, --query-memory-mb {LIMIT_MB}", flush=True)
        for name, fn in cases(srv, data):
            run_case(srv, name, fn, rows)
        srv.stop()
        t0 = time.monotonic()
        answer = flipped_record(a.bin, work)
        rows.append({"case": "8 flipped byte in the last WAL record", "answer": answer,
                     "seconds": round(time.monotonic() - t0, 2), "up": True, "rss_mib": None, "peak_mib": None})
        print(f"8 flipped byte in the last WAL record: {answer}", flush=True)
        worst = max(r["peak_mib"] or 0 for r in rows)
        print(f"\nhighest peak RSS over any case: {worst} MiB (limit {LIMIT_MB} MiB per query, server "
              f"base {base} MiB); every case left the server up: {all(r['up'] for r in rows)}")
        write_json(a.json, rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
