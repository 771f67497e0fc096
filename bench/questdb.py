#!/usr/bin/env python3
"""Wide-row ingest and the TSBS DevOps queries: ZeptoDB beside QuestDB, same client, one run.

Issue 51 asks whether ZeptoDB takes wide rows at least twice as fast as QuestDB on the DevOps
shape, shows them to queries within 10 ms of the acknowledgement, and answers the two slow
queries (the last row of every series; a large wide JSON answer) in at most half QuestDB's
time. This script measures exactly that, on one machine, through one client:

  * Data: TSBS's "cpu-only" shape, generated deterministically (seeded) into memory before any
    clock starts: measurement `cpu`, 10 tags (hostname, region, datacenter, rack, os, arch,
    team, service, service_version, service_environment) and 10 integer fields (usage_user ..
    usage_guest_nice, random walks in 0..100 written `57i`), one line per host every 10 s
    (`--hosts 400 --hours 24`: 3.46M lines, about 1.2 GB of line protocol).
  * Load, each path into each engine in turn, same 10k-line batches from 2 client threads:
    ILP over HTTP (POST /write?precision=n..., keep-alive connections) and ILP over TCP (raw
    sockets to ZeptoDB's --ilp-tcp port and QuestDB's 9009). rows/s = lines / (first send ..
    `count()` shows every row): QuestDB applies WAL writes asynchronously, so its clock stops
    only when they are all visible. Peak RSS of each server, sampled during the load (VmRSS
    every 50 ms), and VmHWM at the end.
  * Visibility: after the loads, `--probes` single-line POSTs (ILP over HTTP), each followed by
    a tight loop of count queries; the time from the POST's acknowledgement to the first answer
    that counts the line (p50 / max; goal: within 10 ms).
  * Queries (TSBS devops names), each engine in its own dialect through its own HTTP door with
    JSON answers (ZeptoDB `GET /?query=`, QuestDB `GET /exec`; ZeptoDB is also asked QuestDB's
    own text on its `/exec`), median of `--repeat` runs after one warm-up, the timed region
    being the request until the whole JSON body is read; on the table of the last load. Every
    answer is parsed and checked against QuestDB's (rows, values; floats to 1e-9 relative); a
    disagreement, or an engine refusing its own dialect's text, is printed with the SQL and both
    answers and the script exits 1. QuestDB's text that ZeptoDB's /exec refuses is listed apart.

QuestDB is started with bench/servers/questdb/questdb.sh (Java 17+, Maven); if something
already answers on 127.0.0.1:9000 that server is used and left running, and only the table this
script created is dropped (it refuses to touch an existing table: pass --table). Client and
servers share the machine's cores; each load starts once the servers together have used
under 5% of a core for a second (at most 30 s of waiting), so no server's work left from a
load (QuestDB applying its WAL or dropping a table, ZeptoDB checkpointing) takes the cores
from the next one.

Usage: bench/questdb.py [--hosts 400] [--hours 24] [--repeat 9] [--only http|tcp]
                        [--no-questdb] [--bin target/release/zeptodb] [--json FILE]
"""
import argparse
import datetime as dt
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from engines import QuestDB, Zepto  # noqa: E402
from report import Columns, write_json  # noqa: E402
from served import free_port, log, post, rss_mib  # noqa: E402

T0 = dt.datetime(2016, 1, 1, tzinfo=dt.timezone.utc)  # TSBS's default start
STEP_S = 10
FIELDS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq",
          "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
REGIONS = {"us-east-1": "abcde", "us-west-1": "abc", "us-west-2": "abc", "eu-west-1": "abc",
           "eu-central-1": "ab", "ap-southeast-1": "ab", "ap-southeast-2": "ab",
           "ap-northeast-1": "ac", "sa-east-1": "abc"}
OSES = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]
TEAMS = ["SF", "NYC", "LON", "CHI"]
ENVS = ["production", "staging", "test"]
LOAD_TIMEOUT_S = 1800
PROBE_TIMEOUT_S = 5.0
ISO_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z$")


# ---------------------------------------------------------------- data


def host_tags(rnd, hosts):
    """The 10 tags of every host, as the `cpu,...` prefix of its lines (TSBS's value sets)."""
    out = []
    for h in range(hosts):
        region = rnd.choice(list(REGIONS))
        tags = [("hostname", f"host_{h}"), ("region", region),
                ("datacenter", region + rnd.choice(REGIONS[region])), ("rack", str(rnd.randrange(100))),
                ("os", rnd.choice(OSES)), ("arch", rnd.choice(["x64", "x86"])), ("team", rnd.choice(TEAMS)),
                ("service", str(rnd.randrange(20))), ("service_version", str(rnd.randrange(2))),
                ("service_environment", rnd.choice(ENVS))]
        out.append(",".join(f"{k}={v}" for k, v in tags))
    return out


def walk(rng, hosts):
    """Yield, per timestamp, the (hosts x 10) field values: random walks in 0..100, steps -5..5."""
    v = rng.integers(0, 101, size=(hosts, len(FIELDS)))
    while True:
        yield v
        v = np.clip(v + rng.integers(-5, 6, size=v.shape), 0, 100)


def generate(table, hosts, hours, seed, batch):
    """The whole data set as ILP bodies of `batch` lines (time-major, as TSBS writes it)."""
    rnd, rng = random.Random(seed), np.random.default_rng(seed)
    prefixes = [f"{table},{t} " for t in host_tags(rnd, hosts)]
    fmt = ",".join(f"{f}=%di" for f in FIELDS) + " %d\n"
    steps, t0 = hours * 3600 // STEP_S, int(T0.timestamp()) * 10**9
    bodies, lines, nbytes, values = [], [], 0, walk(rng, hosts)
    for i in range(steps):
        ts = t0 + i * STEP_S * 10**9
        for p, row in zip(prefixes, next(values).tolist()):
            lines.append(p + fmt % (*row, ts))
            if len(lines) == batch:
                bodies.append("".join(lines).encode())
                nbytes, lines = nbytes + len(bodies[-1]), []
        if i % max(1, steps // 10) == 0:
            log(f"  generating: {i * hosts:,} of {steps * hosts:,} lines")
    if lines:
        bodies.append("".join(lines).encode())
        nbytes += len(bodies[-1])
    return {"bodies": bodies, "rows": steps * hosts, "bytes": nbytes, "t0_ns": t0,
            "end_ns": t0 + steps * STEP_S * 10**9, "hosts": hosts, "hours": hours}


# ---------------------------------------------------------------- servers


class HttpClient:
    """One keep-alive connection; GET returns (status, body), reconnecting once on a drop."""

    def __init__(self, port):
        self.port, self.conn = port, None

    def get(self, path):
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (ConnectionError, http.client.HTTPException):
                self.conn = None
                if attempt:
                    raise


class ZeptoServer(Zepto):
    """`zeptodb serve` (engines.py's wrapper), in memory or durable (`--sync`), with its ILP/TCP door on a free port."""

    def __init__(self, binary, sync=None):
        self.tcp_port = free_port() if has_ilp_tcp(binary) else None
        extra = ["--ilp-tcp", f"127.0.0.1:{self.tcp_port}"] if self.tcp_port else []
        extra += ["--pg", "off"]  # its default port is QuestDB's (8812)
        self.data_dir = tempfile.mkdtemp(prefix="zepto-questdb-bench-") if sync else None
        extra += ["--sync", sync] if sync else []
        super().__init__(binary, extra=extra, data=self.data_dir)
        self.client = HttpClient(self.port)
        self.reused = self.loaded = False

    def count_sql(self, table, where=""):
        return f"SELECT count(*) FROM {table}{where}"

    def exists(self, table):
        st, body = self.client.get("/tables")
        return st == 200 and any(t["name"] == table for t in json.loads(body)["tables"])

    def drop(self, table):
        self.sql(f"DROP TABLE IF EXISTS {table}")

    def stop(self):
        super().stop()
        if self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


class QuestServer(QuestDB):
    """QuestDB through engines.py's wrapper, or the one already on :9000 (left running)."""

    def __init__(self):
        self.port, self.tcp_port = 9000, 9009
        self.reused = answers(self.port)
        if self.reused:
            self.pid = questdb_pid()
            log(f"QuestDB already answers on 127.0.0.1:9000 (pid {self.pid}): reusing it, it stays up")
        else:
            super().__init__()
        self.client = HttpClient(self.port)
        self.loaded = False  # set once this script has written its table: only then is it dropped

    def count_sql(self, table, where=""):
        return f"SELECT count() FROM {table}{where}"

    def exists(self, table):
        st, body = self.client.get(self.query_path("SELECT table_name FROM tables()"))
        return st == 200 and [table] in json.loads(body)["dataset"]

    def drop(self, table):
        st, body = self.client.get(self.query_path(f"DROP TABLE IF EXISTS {table}"))
        if st != 200:
            raise RuntimeError(f"questdb: DROP TABLE {table}: {st} {body[:200]!r}")

    def stop(self):
        if not self.reused:
            super().stop()


def has_ilp_tcp(binary):
    out = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True).stdout
    return "--ilp-tcp" in out


def answers(port):
    try:
        HttpClient(port).get("/exec?query=select%201")
        return True
    except OSError:
        return False


def questdb_pid():
    out = subprocess.run(["pgrep", "-f", "io.questdb.ServerMain"], capture_output=True, text=True).stdout.split()
    if not out:
        raise RuntimeError("something answers on :9000 but no io.questdb.ServerMain process was found")
    if len(out) > 1:
        log(f"warning: several QuestDB processes ({', '.join(out)}); RSS is read from {out[0]}")
    return int(out[0])


def pick_binary(path):
    if path:
        return path
    release = os.path.join(os.path.dirname(HERE), "target", "release", "zeptodb")
    if os.path.exists(release):
        return release
    log("WARNING: target/release/zeptodb is missing: using target/debug/zeptodb; its numbers are not "
        "the release measurement")
    return os.path.join(os.path.dirname(HERE), "target", "debug", "zeptodb")


def count(eng, table, where=""):
    """Rows of `table` (0 while it does not exist yet). QuestDB lists a table that ILP/TCP is
    still creating before a query may read it: such an answer counts as 0 too."""
    st, body = eng.client.get(eng.query_path(eng.count_sql(table, where)))
    if st != 200:
        if eng.exists(table) and b"does not exist" not in body:
            raise RuntimeError(f"{eng.name}: {eng.count_sql(table, where)}: {st} {body[:300]!r}")
        return 0
    return rows_of(json.loads(body))[0][0]


def rows_of(answer):
    """The rows of a JSON answer: ZeptoDB's own (`data`) or QuestDB's (`dataset`)."""
    if "error" in answer:
        raise RuntimeError(str(answer["error"])[:300])
    return answer["data"] if "data" in answer else answer["dataset"]


# ---------------------------------------------------------------- loads


class RssSampler(threading.Thread):
    """Peak VmRSS of a process, sampled every 50 ms until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0.0, threading.Event()

    def run(self):
        while not self.done.is_set():
            self.peak = max(self.peak, rss_mib(self.pid))
            self.done.wait(0.05)

    def stop(self):
        self.done.set()
        self.join()
        return max(self.peak, rss_mib(self.pid))


def send_http(eng, bodies, progress):
    conn = http.client.HTTPConnection("127.0.0.1", eng.port, timeout=600)
    for b in bodies:
        post(eng.port, eng.ilp_path(), b, "text/plain", conn)
        progress.append(1)
    conn.close()


def send_tcp(eng, bodies, progress):
    with socket.create_connection(("127.0.0.1", eng.tcp_port)) as s:
        for b in bodies:
            s.sendall(b)
            progress.append(1)


def send_all(eng, send, bodies, clients):
    """Send every body over `clients` connections; returns when all are sent or acknowledged."""
    progress, errors = [], []

    def worker(k):
        try:
            send(eng, bodies[k::clients], progress)
        except Exception as e:  # noqa: BLE001 - raised below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    last = time.perf_counter()
    while any(t.is_alive() for t in threads):
        threads[0].join(0.1)
        if time.perf_counter() - last >= 2:
            last = time.perf_counter()
            log(f"    {eng.name}: {len(progress):,} of {len(bodies):,} batches sent")
    if errors:
        raise errors[0]


def wait_visible(eng, table, rows, t0):
    """Poll count() until every row shows; returns the time they did."""
    last, n = time.perf_counter(), 0
    while (n := count(eng, table)) < rows:
        now = time.perf_counter()
        if now - t0 > LOAD_TIMEOUT_S:
            raise RuntimeError(f"{eng.name}: {n:,} of {rows:,} rows visible after {LOAD_TIMEOUT_S} s")
        if now - last >= 2:
            last = now
            log(f"    {eng.name}: {n:,} of {rows:,} rows visible")
        time.sleep(0.005)
    if n != rows:
        raise RuntimeError(f"{eng.name}: {n:,} rows visible, {rows:,} sent")
    return time.perf_counter()


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far (Linux /proc), 0 if unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def wait_quiet(engines, limit_s=30.0):
    """Wait until the servers together use under 5% of a core over a second, or `limit_s` passed:
    a server still busy after its own load (QuestDB applying or purging its WAL, a JVM
    collecting, ZeptoDB checkpointing) would take the cores from the next engine's load."""
    t0 = time.perf_counter()
    while True:
        before = sum(cpu_seconds(e.pid) for e in engines)
        time.sleep(1.0)
        busy = sum(cpu_seconds(e.pid) for e in engines) - before
        if busy < 0.05:
            return
        if time.perf_counter() - t0 > limit_s:
            log(f"  servers still busy ({busy:.2f} CPU s in the last second) after {limit_s:.0f} s: loading anyway")
            return


def load(eng, path, data, table, clients):
    """One load into `table` (dropped by the caller): rows/s until all visible, rows/s until
    all acknowledged/sent, peak RSS."""
    send = send_http if path == "http" else send_tcp
    sampler, before = RssSampler(eng.pid), rss_mib(eng.pid)
    sampler.start()
    t0 = time.perf_counter()
    send_all(eng, send, data["bodies"], clients)
    sent = time.perf_counter()
    done = wait_visible(eng, table, data["rows"], t0)
    peak = sampler.stop()
    r = {"rows_per_s": data["rows"] / (done - t0), "sent_rows_per_s": data["rows"] / (sent - t0),
         "seconds": done - t0, "visible_after_sent_s": done - sent, "peak_rss_mib": peak,
         "rss_before_mib": before}
    log(f"  {eng.name} ILP/{path.upper()}: {r['rows_per_s']:,.0f} rows/s ({r['seconds']:.2f} s; "
        f"all sent after {sent - t0:.2f} s), peak RSS {peak:,.0f} MiB")
    return r


# ---------------------------------------------------------------- visibility


def probe_line(table, data, k):
    ts = data["end_ns"] + k * 1000  # microseconds apart: QuestDB keeps microseconds
    vals = ",".join(f"{f}={k % 100}i" for f in FIELDS)
    return f"{table},hostname=probe,region=probe {vals} {ts}\n".encode()


def visibility(eng, table, data, probes):
    """ms from a one-line POST's acknowledgement to the first count() that includes it."""
    where = f" WHERE timestamp >= '{iso(data['end_ns'])}'"
    conn, lags = http.client.HTTPConnection("127.0.0.1", eng.port, timeout=60), []
    for k in range(probes):
        post(eng.port, eng.ilp_path(), probe_line(table, data, k), "text/plain", conn)
        acked = time.perf_counter()
        while count(eng, table, where) < k + 1:
            if time.perf_counter() - acked > PROBE_TIMEOUT_S:
                raise RuntimeError(f"{eng.name}: probe {k} not visible after {PROBE_TIMEOUT_S} s")
        lags.append(1000 * (time.perf_counter() - acked))
    r = {"p50_ms": statistics.median(lags), "max_ms": max(lags), "probes": probes,
         "within_10ms": sum(x <= 10 for x in lags)}
    log(f"  {eng.name}: visible {r['p50_ms']:.2f} ms (p50), {r['max_ms']:.2f} ms (max) after the ack")
    return r


# ---------------------------------------------------------------- queries


def iso(ns):
    return dt.datetime.fromtimestamp(ns // 10**9, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def windows(data, seed):
    """Seeded query windows inside the data: 1 host/1 h, 8 hosts, a 12 h span, an end time."""
    rnd, hour = random.Random(seed + 1), 3600 * 10**9
    span = min(12, data["hours"])
    start12 = data["t0_ns"] + rnd.randrange(data["hours"] - span + 1) * hour
    start1 = data["t0_ns"] + rnd.randrange(data["hours"]) * hour
    hosts = rnd.sample(range(data["hosts"]), min(8, data["hosts"]))
    before = data["t0_ns"] + rnd.randrange(data["hours"] * 60 // 2, data["hours"] * 60) * 60 * 10**9
    return {"host": f"host_{hosts[0]}", "hosts": ", ".join(f"'host_{h}'" for h in hosts),
            "a1": iso(start1), "b1": iso(start1 + hour), "a12": iso(start12),
            "b12": iso(start12 + span * hour), "span": span, "before": iso(before)}


def queries(table, w):
    """name -> (ZeptoDB's text, QuestDB's text, what it asks)."""
    win12 = f"timestamp >= '{w['a12']}' AND timestamp < '{w['b12']}'"
    five = ", ".join(f"avg({f}) AS avg_{f}" for f in FIELDS[:5])
    same = {
        "single-groupby-1-1-1": (
            f"SELECT timestamp, max(usage_user) AS max_usage_user FROM {table} WHERE hostname = '{w['host']}' "
            f"AND timestamp >= '{w['a1']}' AND timestamp < '{w['b1']}' SAMPLE BY 1m",
            "max of one metric per minute, 1 host, 1 h"),
        f"single-groupby-5-8-{w['span']}": (
            f"SELECT timestamp, hostname, {five} FROM {table} WHERE hostname IN ({w['hosts']}) AND {win12} SAMPLE BY 1h",
            f"hourly averages of 5 metrics, 8 hosts, {w['span']} h"),
        f"double-groupby-1-{w['span']}": (
            f"SELECT timestamp, hostname, avg(usage_user) AS avg_usage_user FROM {table} WHERE {win12} SAMPLE BY 1h",
            f"avg usage_user per host per hour, all hosts, {w['span']} h"),
        "lastpoint": (f"SELECT * FROM {table} LATEST ON timestamp PARTITION BY hostname",
                      "the last row of every host"),
        f"high-cpu-all-{w['span']}": (f"SELECT * FROM {table} WHERE usage_user > 90 AND {win12}",
                                      f"every wide row with usage_user > 90 in {w['span']} h"),
    }
    out = {name: (q, q, what) for name, (q, what) in same.items()}
    tail = (f"max(usage_user) AS max_usage_user FROM {table} WHERE timestamp < '{w['before']}' "
            f"GROUP BY minute ORDER BY minute DESC LIMIT 5")
    out["groupby-orderby-limit"] = (f"SELECT time_bucket(INTERVAL '1 minute', timestamp) AS minute, {tail}",
                                    f"SELECT timestamp_floor('m', timestamp) AS minute, {tail}",
                                    "the last 5 minutes' max before a time")
    return out


def timed_runs(client, path, repeat):
    """One warm-up (its body kept for the check), then `repeat` timed GETs to the last byte."""
    st, body = client.get(path)
    times = []
    for _ in range(repeat if st == 200 else 0):
        t = time.perf_counter()
        client.get(path)
        times.append(1000 * (time.perf_counter() - t))
    return st, body, times


def answer(status, body):
    """(column names, rows) of a JSON answer, or raise with the server's error."""
    doc = json.loads(body)
    if status != 200 or "error" in doc:
        raise RuntimeError(f"{status}: {str(doc.get('error', doc))[:300]}")
    return [c["name"] for c in doc["columns"]], rows_of(doc)


def norm(v):
    """Timestamps (ns or us ISO text) to integer microseconds; other values as they are."""
    if isinstance(v, str) and (m := ISO_TS.match(v)):
        whole = dt.datetime.fromisoformat(m.group(1)).replace(tzinfo=dt.timezone.utc)
        return int(whole.timestamp()) * 10**6 + int(((m.group(2) or "") + "000000")[:6])
    return v


def canonical(cols, rows):
    """Rows with columns in name order, values normalized, sorted by their non-float values."""
    order = sorted(range(len(cols)), key=lambda i: cols[i])
    out = [tuple(norm(r[i]) for i in order) for r in rows]
    out.sort(key=lambda r: tuple(repr(x) for x in r if not isinstance(x, float)))
    return [cols[i] for i in order], out


def same_value(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def diff(mine, theirs):
    """None if two canonical answers agree, else a description of the first difference."""
    (mc, mr), (tc, tr) = mine, theirs
    if mc != tc:
        return f"columns differ: {mc} vs {tc}"
    if len(mr) != len(tr):
        return f"{len(mr):,} rows vs {len(tr):,}; first rows {mr[:2]} vs {tr[:2]}"
    for i, (a, b) in enumerate(zip(mr, tr)):
        if not all(same_value(x, y) for x, y in zip(a, b)):
            return f"row {i} differs: {a} vs {b}"
    return None


def run_query(eng, path_of, q, repeat):
    """Median ms, rows, bytes and the canonical answer (or the error) of one engine's text."""
    st, body, times = timed_runs(eng.client, path_of(q), repeat)
    try:
        ans = canonical(*answer(st, body))
    except (RuntimeError, ValueError) as e:
        return {"error": str(e)}
    return {"median_ms": statistics.median(times), "min_ms": min(times), "rows": len(ans[1]),
            "bytes": len(body), "answer": ans}


def run_queries(engines, table, w, repeat):
    """Every query on every engine (ZeptoDB also through /exec with QuestDB's text), checked."""
    res, problems, gaps = {}, [], []
    for name, (zq, qq, what) in queries(table, w).items():
        r = res[name] = {"what": what, "zeptodb_sql": zq, "questdb_sql": qq}
        for eng in engines:
            if eng.name == "zeptodb":
                r["zeptodb"] = run_query(eng, eng.query_path, zq, repeat)
                r["zeptodb-exec"] = run_query(eng, lambda s: "/exec?query=" + urllib.parse.quote(s), qq, repeat)
            else:
                r["questdb"] = run_query(eng, eng.query_path, qq, repeat)
        for p in check(name, r):
            (gaps if p.startswith(f"{name} [zeptodb-exec]: ") else problems).append(p)
        log(f"  {name}: " + ", ".join(f"{k} {v['median_ms']:.2f} ms ({v['rows']:,} rows)" if "median_ms" in v
                                      else f"{k} ERROR" for k, v in r.items() if isinstance(v, dict)))
    return res, problems, gaps


def check(name, r):
    """Disagreements of this query's answers: ZeptoDB's against QuestDB's (or its /exec's)."""
    ref_key = "questdb" if "questdb" in r else "zeptodb-exec"
    ref, problems = r.get(ref_key, {}), []
    for key in ("zeptodb", "zeptodb-exec", "questdb"):
        got = r.get(key)
        if got is None:
            continue
        if "error" in got:
            problems.append(f"{name} [{key}]: {got['error']}\n    SQL: {r['questdb_sql' if key != 'zeptodb' else 'zeptodb_sql']}")
        elif key != ref_key and "answer" in ref and (d := diff(got["answer"], ref["answer"])):
            problems.append(f"{name} [{key} vs {ref_key}]: {d}\n    SQL: {r['zeptodb_sql' if key == 'zeptodb' else 'questdb_sql']}")
    return problems


# ---------------------------------------------------------------- report


def ratio(z, q, key):
    try:
        return z[key] / q[key]
    except (KeyError, TypeError, ZeroDivisionError):
        return float("nan")


def report_loads(res):
    print(f"\nLoad: {res['rows']:,} lines ({res['hosts']} hosts x {res['hours']} h), {res['bytes'] / 1e6:,.1f} MB "
          f"of ILP, {res['batch']:,}-line batches from {res['clients']} clients")
    cols = Columns([9, 8, 17, 14, 7, 15, 13], "<<>>>>>")
    print(cols.line(["path", "engine", "rows/s (visible)", "rows/s (sent)", "s", "RSS before MiB", "peak RSS MiB"]))
    for path, by in res["loads"].items():
        for name, r in by.items():
            print(cols.line([path, name, f"{r['rows_per_s']:,.0f}", f"{r['sent_rows_per_s']:,.0f}", f"{r['seconds']:.2f}",
                             f"{r['rss_before_mib']:,.0f}", f"{r['peak_rss_mib']:,.0f}"]))
        if "questdb" in by:
            print(cols.line([path, f"ratio ZeptoDB/QuestDB rows/s: {ratio(by['zeptodb'], by['questdb'], 'rows_per_s'):.2f} "
                                   f"(goal >= 2); peak RSS {ratio(by['zeptodb'], by['questdb'], 'peak_rss_mib'):.2f}"]))
    for name, r in res.get("visibility", {}).items():
        print(f"visible after the HTTP ack, {name}: p50 {r['p50_ms']:.2f} ms, max {r['max_ms']:.2f} ms, "
              f"{r['within_10ms']}/{r['probes']} within 10 ms (goal: all)")
    for name, mib in res.get("vm_hwm_mib", {}).items():
        since = " (a reused server: its peak since it started)" if name == "questdb" and res["questdb_reused"] else ""
        print(f"VmHWM at the end, {name}: {mib:,.0f} MiB{since}")


def cell(r):
    return f"{r['median_ms']:.2f}" if r and "median_ms" in r else ("ERROR" if r else "-")


def report_queries(res, repeat):
    print(f"\nQueries: median ms of {repeat} runs after a warm-up, JSON over HTTP to the last byte")
    print("ratio = ZeptoDB's own door (/) over QuestDB; ratio /exec = ZeptoDB's /exec (QuestDB's text) over QuestDB")
    cols = Columns([26, 8, 10, 14, 14, 6, 12, 5], "<>>>>>>>")
    print(cols.line(["query", "rows", "ZeptoDB /", "ZeptoDB /exec", "QuestDB /exec", "ratio", "ratio /exec", "goal"]))
    for name, r in res["queries"].items():
        z, ze, q = r.get("zeptodb"), r.get("zeptodb-exec"), r.get("questdb")
        rows = next((v["rows"] for v in (z, ze, q) if v and "rows" in v), 0)
        goal = "0.5" if name.startswith(("lastpoint", "high-cpu")) else ""
        print(cols.line([name, f"{rows:,}", cell(z), cell(ze), cell(q), f"{ratio(z, q, 'median_ms'):.2f}",
                         f"{ratio(ze, q, 'median_ms'):.2f}", goal]))


def fmt_load(avg):
    return "/".join(f"{x:.2f}" for x in avg)


def strip_answers(res):
    for r in res.get("queries", {}).values():
        for v in r.values():
            if isinstance(v, dict):
                v.pop("answer", None)
    return res


# ---------------------------------------------------------------- main


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--hours", type=int, default=24, help="hours of data, a line per host every 10 s "
                    "(--hours 2 for a quick run)")
    ap.add_argument("--repeat", type=int, default=9, help="timed runs per query")
    ap.add_argument("--only", choices=["http", "tcp"], help="one load path")
    ap.add_argument("--no-questdb", action="store_true", help="ZeptoDB only")
    ap.add_argument("--bin", help="zeptodb binary (default target/release/zeptodb, else target/debug)")
    ap.add_argument("--json", help="write the numbers here")
    ap.add_argument("--table", default="cpu", help="measurement / table name")
    ap.add_argument("--batch", type=int, default=10_000, help="lines per POST / per TCP write")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--probes", type=int, default=50, help="visibility probes per engine")
    ap.add_argument("--seed", type=int, default=51)
    ap.add_argument("--sync", help="ZeptoDB durable in a temporary --data-dir with this --sync "
                    "(always, interval=<ms>, none); default: --in-memory")
    return ap.parse_args()


def start_engines(a, binary):
    engines = []
    try:
        engines.append(ZeptoServer(binary, a.sync))
        if not engines[0].tcp_port:
            log(f"WARNING: {binary} has no --ilp-tcp: the ILP/TCP load is skipped")
        if not a.no_questdb:
            engines.append(QuestServer())
            if engines[-1].exists(a.table):  # questdb.sh's data directory is shared: never drop others' tables
                raise SystemExit(f"QuestDB already has a table {a.table!r} that this run did not create; "
                                 "drop it or pass --table NAME")
    except BaseException:
        stop_engines(engines, a.table)
        raise
    return engines


def stop_engines(engines, table):
    for eng in engines:
        try:
            if eng.loaded:
                eng.drop(table)
            eng.stop()
        except Exception as e:  # noqa: BLE001 - keep stopping the others
            log(f"stopping {eng.name}: {e}")


def measure(a, engines, data, res):
    """Every load path (each into a new table), then the queries and the visibility probes on
    the last one's table (so no query's memory is in a load's peak RSS). Returns the problems."""
    for path in [p for p in ("http", "tcp") if a.only in (None, p)]:
        by = res["loads"][f"ILP/{path.upper()}"] = {}
        for eng in engines:
            if path == "tcp" and not eng.tcp_port:
                continue
            eng.loaded = True
            eng.drop(a.table)  # the last load's table: its freeing is done before the clock starts
            wait_quiet(engines)
            log(f"== {eng.name}: ILP over {path.upper()}, {data['rows']:,} lines")
            by[eng.name] = load(eng, path, data, a.table, a.clients)
    loaded = [e for e in engines if e.loaded]
    log(f"== queries, {a.repeat} runs each")
    res["queries"], problems, res["gaps"] = run_queries(loaded, a.table, windows(data, a.seed), a.repeat)
    log("== visibility after the acknowledgement")
    res["visibility"] = {e.name: visibility(e, a.table, data, a.probes) for e in loaded}
    res["vm_hwm_mib"] = {e.name: rss_mib(e.pid, "VmHWM") for e in engines}
    return problems


def on_sigterm(*_):
    raise KeyboardInterrupt  # so the finally below stops the servers


def main():
    a = parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with SIGINT ignored
    binary = pick_binary(a.bin)
    est = a.hosts * a.hours * 3600 // STEP_S
    log(f"generating {a.hosts} hosts x {a.hours} h (seed {a.seed}): {est:,} lines, about {est * 346 / 1e9:.2f} GB "
        "held in memory ...")
    data = generate(a.table, a.hosts, a.hours, a.seed, a.batch)
    log(f"generated {data['rows']:,} lines, {data['bytes']:,} bytes in {len(data['bodies']):,} batches")
    res = {"binary": os.path.relpath(binary, os.path.dirname(HERE)), "rows": data["rows"], "bytes": data["bytes"],
           "hosts": a.hosts, "hours": a.hours, "batch": a.batch, "clients": a.clients, "loads": {},
           "zeptodb_storage": f"--data-dir (temporary) --sync {a.sync}" if a.sync else "--in-memory"}
    res["loadavg_start"] = os.getloadavg()
    engines = start_engines(a, binary)
    res["questdb_reused"] = any(e.reused for e in engines)
    try:
        problems = measure(a, engines, data, res)
    finally:
        stop_engines(engines, a.table)
    res["loadavg_end"] = os.getloadavg()
    print(f"\nbinary {res['binary']} ({res['zeptodb_storage']}); load average (1/5/15 min) at the start {fmt_load(res['loadavg_start'])}, "
          f"at the end {fmt_load(res['loadavg_end'])} on {os.cpu_count()} cores")
    report_loads(res)
    report_queries(res, a.repeat)
    if a.json:
        write_json(a.json, strip_answers(res) | {"problems": problems})
    if res.get("gaps"):
        print("\nQuestDB's text that ZeptoDB's /exec refuses (timed in ZeptoDB's own dialect above):\n  "
              + "\n  ".join(res["gaps"]))
    if problems:
        print("\nANSWERS DISAGREE OR FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("\nEvery answer agrees between the engines.")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted: both servers stopped (a reused QuestDB left running), the table dropped")
        sys.exit(130)
