#!/usr/bin/env python3
"""Run every Rust test binary of the workspace, several at a time, beside other test commands.

`cargo test` runs its test binaries one after another, and the slow ones mostly wait: a Kafka
broker's JVM starting, three hosts in network namespaces, QuickFIX/J, an S3 server, the
browser tests on the Python side. Here the binaries `cargo test --workspace --no-run` built
run side by side (JOBS at a time, slowest first: by the last run's times when
target/test-times.json has them, else the server-starting `zepto-cli` tests first), each in
its package's directory as cargo would run it, the doc tests through `cargo test --doc`, and
each `--with COMMAND` as one more job. Their temporary directories, brokers and servers are
per process and on ephemeral ports, so nothing is shared.

A job's output is printed whole when it fails, its summary line when it passes, and kept in
target/test-logs/. The end: the slowest jobs, the number of tests passed, and exit 1 if any
job failed. With ZEPTO_PHASES set, the build and each job's time are appended to that file
(tab-separated; `.ci/run` prints it as its phase table).

    tests/run_tests.py [--jobs N] [--with 'COMMAND'] ...
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMES = ROOT / "target" / "test-times.json"
LOGS = ROOT / "target" / "test-logs"
# A binary still running after this long is stopped and counted as a failure (cargo test
# would wait forever).
TIMEOUT_S = 20 * 60


def phase(name: str, secs: float) -> None:
    """Append one phase to $ZEPTO_PHASES, if set."""
    path = os.environ.get("ZEPTO_PHASES")
    if path:
        with open(path, "a") as f:
            f.write(f"{name}\t{secs:.0f}\n")


def package_name(package_id: str) -> str:
    """`path+file:///w/crates/zepto-sql#0.1.0` -> zepto-sql; `...python#zeptodb-python@0.1.0`
    -> zeptodb-python (cargo names the package only when it differs from its directory)."""
    where, _, frag = package_id.rpartition("#")
    return frag.split("@")[0] if "@" in frag else where.rstrip("/").rsplit("/", 1)[-1]


def build() -> list[dict]:
    """Build every test target (as `cargo test --workspace` would) and list its binaries."""
    cargo = os.environ.get("CARGO", "cargo")
    cmd = [cargo, "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"run_tests: `{' '.join(cmd)}` failed")
    jobs = []
    for line in out.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg["profile"]["test"]:
            continue
        target = msg["target"]
        package = package_name(msg["package_id"])
        kind = "unit" if target["kind"] != ["test"] else "test"
        jobs.append({
            "name": f"{package} {kind} {target['name']}",
            "cmd": [msg["executable"]],
            "cwd": str(Path(msg["manifest_path"]).parent),
            "server": package == "zepto-cli" and kind == "test",
        })
    jobs.append({"name": "doc tests", "cmd": [cargo, "test", "--workspace", "--doc"], "cwd": str(ROOT)})
    return jobs


def order(jobs: list[dict]) -> list[dict]:
    """Slowest first: the last run's times, else the server-starting tests first."""
    try:
        last = json.loads(TIMES.read_text())
    except (OSError, ValueError):
        last = {}
    return sorted(jobs, key=lambda j: (-last.get(j["name"], 0.0), not j.get("server", False)))


def run(job: dict, lock: threading.Lock, results: dict) -> None:
    t0 = time.monotonic()
    log = LOGS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", job["name"]) + ".log")
    with open(log, "w") as f:
        try:
            p = subprocess.run(job["cmd"], cwd=job["cwd"], stdout=f, stderr=subprocess.STDOUT,
                               shell=isinstance(job["cmd"], str), timeout=TIMEOUT_S)
            code = p.returncode
        except subprocess.TimeoutExpired:
            f.write(f"\nrun_tests: stopped after {TIMEOUT_S} s\n")
            code = -1
    secs = time.monotonic() - t0
    text = log.read_text(errors="replace")
    passed = sum(int(n) for n in re.findall(r"test result: \w+\. (\d+) passed", text))
    passed += sum(int(n) for n in re.findall(r"^(\d+) passed in ", text, re.M))  # pytest
    passed += sum(int(n) for n in re.findall(r"^slt: (\d+) passed", text, re.M))
    with lock:
        results[job["name"]] = (code, secs, passed)
        summary = [l for l in text.splitlines() if re.search(r"test result:|^\d+ passed|^slt: ", l)]
        status = "ok" if code == 0 else f"FAILED (exit {code})"
        print(f"== {job['name']}: {status} in {secs:.1f} s; {passed} passed", flush=True)
        if code != 0:
            print(text, flush=True)
        elif len(summary) > 1:
            print("\n".join(summary[-3:]), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("TEST_JOBS", "4")))
    ap.add_argument("--with", dest="extra", action="append", default=[], metavar="COMMAND")
    args = ap.parse_args()
    LOGS.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    jobs = build()
    phase("cargo test: build", time.monotonic() - t0)
    jobs = [{"name": c, "cmd": c, "cwd": str(ROOT)} for c in args.extra] + order(jobs)
    t1 = time.monotonic()
    results: dict = {}
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for j in jobs:
            pool.submit(run, j, lock, results)
    wall = time.monotonic() - t1
    times = {name: round(secs, 1) for name, (_, secs, _) in results.items()}
    TIMES.write_text(json.dumps(times, indent=1, sort_keys=True))
    failed = [name for name, (code, _, _) in results.items() if code != 0]
    print(f"\n== {len(results)} jobs, {args.jobs} at a time, in {wall:.0f} s; the slowest:")
    for name, (code, secs, passed) in sorted(results.items(), key=lambda r: -r[1][1])[:12]:
        phase(f"  {name}", secs)
        print(f"   {secs:7.1f} s  {name} ({passed} passed)")
    phase("tests, side by side", wall)
    print(f"== {sum(p for _, _, p in results.values())} tests passed; {len(failed)} jobs failed")
    for name in failed:
        print(f"   FAILED: {name} (log: target/test-logs/)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
