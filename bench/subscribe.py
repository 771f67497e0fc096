#!/usr/bin/env python3
"""Subscriptions (`GET /subscribe`, Server-Sent Events): latency from a write's acknowledgement
to a subscriber's receipt, and what subscribers cost the server.

Every phase starts a fresh `zeptodb serve --in-memory` (nothing on disk, so no fsync in the
acknowledgement), creates `trades` by one ILP line, attaches N subscribers and writes for
`--duration` seconds:
  * subscribers: N concurrent SSE streams of `GET /subscribe?query=SELECT sym, sent FROM trades
    WHERE sym = 'PROBE'` (raw asyncio streams, `Accept: text/event-stream`, chunked body
    decoded by hand), spread over client processes of at most `--per-proc` streams each. The
    server runs every committed append through every subscriber's filter; a subscriber
    receives only the probe rows;
  * writer: one keep-alive connection POSTs /write bodies of 10,000 ILP lines of 1,000
    ordinary symbols (`trades,sym=S0042 price=...,size=...i,sent=0i <ts>`), at a target rate
    (`--rate`, 100k rows/s) or back to back (max); beside it, a probe thread on its own
    connection POSTs every 50 ms one line `trades,sym=PROBE ...,sent=<id>i <ts>` and records
    the time its POST returned 200 per id;
  * latency = receipt - acknowledgement, both `time.monotonic_ns()` (CLOCK_MONOTONIC, one clock
    for every process of this machine); the receipt time is taken when the bytes holding the
    event are read, before parsing. Reported over every (subscriber, probe) pair: p50/p99/max,
    and receipt - send (the POST's start) beside it. A probe a subscriber never got is missed;
    `event: error` SLOW_CONSUMER (the server cut a reader that fell behind its ring), other
    errors and streams that ended early are counted.
With --view, `trades_v` is made right after `trades` (`CREATE MATERIALIZED VIEW trades_v AS
SELECT sym, max(sent) AS sent, count(*) AS n FROM trades GROUP BY sym`, POST /) and the
subscribers follow `SELECT sym, sent FROM trades_v WHERE sym = 'PROBE'` instead: the server
re-answers it over the view per committed append and sends what changed. An event's `result`
rows are the new or changed rows (the PROBE group's new max(sent)), its `removed` rows their old
versions: ids are taken from `result` only. The event holds the max, not every probe: with two
probes between two events a subscriber sees only the later one, so a probe id counts as
received with the first event whose result holds a sent value >= it (ids increase); the pairs
received so, by a later id, are counted (coalesced). The memory step subscribes to the view too.
Phases: N = 1, 100, 1000 at both rates, and N = 0 at both rates for the ingest rate without
subscribers. Then memory: a fresh server's RSS with 0, 100 and 1,000 idle subscribers, per
subscriber, beside 1,000 idle keep-alive connections. CPU seconds per second of the server,
the writer process and the subscriber processes are reported per phase, to show who was short.

Usage: bench/subscribe.py [--bin target/release/zeptodb] [--duration 30] [--quick] [--view] [--json F]
       (--quick: 5-second phases, about a minute)
"""
import argparse
import asyncio
import bisect
import http.client
import json
import multiprocessing as mp
import os
import re
import resource
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from report import md_table, write_json  # noqa: E402
from served import Server, log, post, rss_mib  # noqa: E402

QUERY = "SELECT sym, sent FROM trades WHERE sym = 'PROBE'"
VIEW_SQL = "CREATE MATERIALIZED VIEW trades_v AS SELECT sym, max(sent) AS sent, count(*) AS n FROM trades GROUP BY sym"
VIEW_QUERY = "SELECT sym, sent FROM trades_v WHERE sym = 'PROBE'"
BATCH_ROWS = 10_000
SYMBOLS = 1_000
PROBE_EVERY = 0.05
STEP_NS = 10_000  # event time between two bulk rows; a body spans 100 ms of event time
BASE_HI = 1795910400 * 10  # 2026-11-29T00:00:00Z in units of 100 ms
PROBE_RE = re.compile(rb'\["PROBE",(\d+)\]')
TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- subscribers (client processes)

class Stream:
    """One SSE subscriber: what it received (probe id -> receipt ns) and how it ended."""

    def __init__(self):
        self.recv = {}
        self.dups = 0
        self.slow = 0
        self.errors = []
        self.ended = False  # the server ended the stream before we stopped
        self.done = False   # got the final probe


def request_bytes(host, port, query):
    from urllib.parse import quote
    return (f"GET /subscribe?query={quote(query)} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Accept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n").encode()


async def open_stream(host, port, req):
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    writer.write(req)
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0]
    if b" 200 " not in status + b" ":
        body = await asyncio.wait_for(reader.read(2000), 5)
        raise RuntimeError(f"subscribe: {status!r} {body[:300]!r}")
    if b"chunked" not in head.lower():
        raise RuntimeError(f"subscribe: expected a chunked body: {head!r}")
    return reader, writer


def table_ids(ev):
    """The probe ids of a table subscription's `rows` event: every PROBE row."""
    return [int(m.group(1)) for m in PROBE_RE.finditer(ev)]


def view_ids(ev):
    """The probe ids of a view subscription's `rows` event: its `result` rows only (the
    `removed` ones are old versions, already received)."""
    data = b"\n".join(line[6:] for line in ev.split(b"\n") if line.startswith(b"data: "))
    return [sent for sym, sent in json.loads(data)["result"]["data"] if sym == "PROBE"]


async def pump(s, reader, shared, ids):
    """Read the chunked SSE body: record each probe id's first receipt (`ids`: an event's)."""
    buf = b""   # chunked transfer encoding, undecoded
    sse = b""   # decoded event stream
    final = shared["final"]
    while True:
        data = await reader.read(1 << 16)
        t = time.monotonic_ns()
        if not data:
            s.ended = True
            return
        buf += data
        chunks = []
        while True:
            i = buf.find(b"\r\n")
            if i < 0:
                break
            size = int(buf[:i].split(b";")[0], 16)
            if len(buf) < i + 2 + size + 2:
                break
            chunks.append(buf[i + 2:i + 2 + size])
            buf = buf[i + 4 + size:]
            if size == 0:
                s.ended = True
                return
        if not chunks:
            continue
        sse += b"".join(chunks)
        *events, sse = sse.split(b"\n\n")
        for ev in events:
            if ev.startswith(b"event: rows"):
                try:
                    got = ids(ev)
                except (ValueError, KeyError, TypeError) as e:
                    s.errors.append(f"unparsed event ({e!r}): {ev[:200].decode(errors='replace')}")
                    continue
                for pid in got:
                    if pid in s.recv:
                        s.dups += 1
                    else:
                        s.recv[pid] = t
                    f = final.value
                    if f and pid >= f and not s.done:
                        s.done = True
                        with shared["done"].get_lock():
                            shared["done"].value += 1
            elif ev.startswith(b"event: error"):
                if b"SLOW_CONSUMER" in ev:
                    s.slow += 1
                else:
                    s.errors.append(ev[:300].decode(errors="replace"))
            elif ev.startswith(b"event: "):
                s.errors.append(ev[:300].decode(errors="replace"))
            # ": keepalive" comments: nothing to do


async def run_subscribers(host, port, count, view, shared, conn_only):
    """Attach `count` streams of the table's query (or, view, the view's; or, conn_only, plain
    idle keep-alive connections), report attachment, then read until told to stop; return what
    each received."""
    req = request_bytes(host, port, VIEW_QUERY if view else QUERY)
    ids = view_ids if view else table_ids
    streams, writers, tasks = [], [], []
    attach_errors = []

    async def one():
        try:
            if conn_only:
                reader, writer = await asyncio.open_connection(host, port)
                writer.write(f"GET /ping HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
                await reader.readuntil(b"Ok")
                writers.append(writer)
            else:
                reader, writer = await open_stream(host, port, req)
                s = Stream()
                streams.append(s)
                writers.append(writer)
                tasks.append(asyncio.ensure_future(pump(s, reader, shared, ids)))
            with shared["attached"].get_lock():
                shared["attached"].value += 1
        except Exception as e:  # noqa: BLE001 - reported
            attach_errors.append(repr(e))

    for k in range(0, count, 100):  # waves of 100 connects
        await asyncio.gather(*(one() for _ in range(min(100, count - k))))
    # event-loop lag (a sleep of 10 ms overshooting) while the phase runs: the client's load
    lags = []
    cpu0 = None
    while not shared["stop"].is_set():
        if cpu0 is None and shared["go"].is_set():
            r = resource.getrusage(resource.RUSAGE_SELF)
            cpu0 = r.ru_utime + r.ru_stime
        a = time.monotonic()
        await asyncio.sleep(0.01)
        if cpu0 is not None:
            lags.append(time.monotonic() - a - 0.01)
    r = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r.ru_utime + r.ru_stime) - (cpu0 if cpu0 is not None else 0.0)
    for t in tasks:
        t.cancel()
    for w in writers:
        w.close()
    lags.sort()
    return {
        "streams": [{"recv": s.recv, "dups": s.dups, "slow": s.slow, "errors": s.errors[:5],
                     "ended": s.ended} for s in streams],
        "attach_errors": attach_errors[:5], "attach_failed": len(attach_errors),
        "cpu_s": cpu, "lag_p99_ms": 1e3 * lags[int(0.99 * (len(lags) - 1))] if lags else 0.0,
        "lag_max_ms": 1e3 * lags[-1] if lags else 0.0,
        "maxrss_mib": r.ru_maxrss / 1024,
    }


def subscriber_proc(host, port, count, view, shared, out, conn_only):
    out.put(asyncio.run(run_subscribers(host, port, count, view, shared, conn_only)))


class Subscribers:
    """N subscribers (of the view's query, if view) over ceil(N / per_proc) client processes."""

    def __init__(self, ctx, host, port, n, per_proc, view=False, conn_only=False):
        self.n = n
        self.shared = {"attached": ctx.Value("q", 0), "done": ctx.Value("q", 0), "final": ctx.Value("q", 0),
                       "go": ctx.Event(), "stop": ctx.Event()}
        self.out = ctx.Queue()
        nproc = max(1, -(-n // per_proc)) if n else 0
        counts = [n // nproc + (1 if i < n % nproc else 0) for i in range(nproc)]
        self.procs = [ctx.Process(target=subscriber_proc, daemon=True,
                                  args=(host, port, c, view, self.shared, self.out, conn_only))
                      for c in counts]
        for p in self.procs:
            p.start()
        t0 = time.monotonic()
        while self.shared["attached"].value < n:
            if time.monotonic() - t0 > 120 or not all(p.is_alive() for p in self.procs):
                break
            time.sleep(0.05)
        self.attach_s = time.monotonic() - t0
        self.attached = self.shared["attached"].value

    def wait_final(self, timeout):
        """Until every stream got the final probe (or `timeout` seconds): seconds waited."""
        t0 = time.monotonic()
        while self.shared["done"].value < self.attached and time.monotonic() - t0 < timeout:
            time.sleep(0.02)
        return time.monotonic() - t0

    def stop(self):
        self.shared["stop"].set()
        res = [self.out.get(timeout=120) for _ in self.procs]
        for p in self.procs:
            p.join(timeout=30)
        return res


# ---------------------------------------------------------------- writer

def body_segments():
    """The bulk body cut at every timestamp's high digits: `hi.join(segments)` is a body whose
    row i is at event time hi * 100 ms + i * 10 us, without formatting 10,000 lines per body."""
    segs = []
    prefix = ""
    for i in range(BATCH_ROWS):
        px = 100 + (i * 7919 % 10_000) / 100
        segs.append(prefix + f"trades,sym=S{i % SYMBOLS:04d} price={px!r},size={i % 97 + 1}i,sent=0i ")
        prefix = f"{i * STEP_NS:08d}\n"
    segs.append(prefix)
    return [s.encode() for s in segs]


class Writer:
    """Bulk bodies on one connection (at `rate` rows/s, or back to back when rate is 0) and a
    probe every 50 ms on another, for `duration` seconds; then a final probe."""

    def __init__(self, srv, segs, rate, duration, shared, first_id):
        self.srv, self.segs, self.rate, self.duration = srv, segs, rate, duration
        self.shared = shared
        self.next_id = first_id
        self.acks = {}  # probe id -> (send ns, ack ns)
        self.hi = BASE_HI
        self.rows = 0
        self.bodies = 0
        self.errors = []
        self.bulk_s = 0.0

    def bulk(self, t_end):
        conn = http.client.HTTPConnection(self.srv.host, self.srv.port, timeout=600)
        interval = BATCH_ROWS / self.rate if self.rate else 0.0
        t0 = time.monotonic()
        k = 0
        try:
            while True:
                now = time.monotonic()
                if now >= t_end:
                    break
                if interval:
                    due = t0 + k * interval
                    if due > now:
                        time.sleep(due - now)
                        if due >= t_end:
                            break
                body = str(self.hi).encode().join(self.segs)
                post(self.srv.port, "/write?precision=ns", body, "text/plain", conn)
                self.hi += 1
                k += 1
                self.rows += BATCH_ROWS
        except Exception as e:  # noqa: BLE001 - reported
            self.errors.append(repr(e))
        self.bulk_s = time.monotonic() - t0
        self.bodies = k
        conn.close()

    def probe(self, conn, pid):
        line = f"trades,sym=PROBE price=0.0,size=0i,sent={pid}i {self.hi}{STEP_NS // 2:08d}\n".encode()
        t0 = time.monotonic_ns()
        post(self.srv.port, "/write?precision=ns", line, "text/plain", conn)
        self.acks[pid] = (t0, time.monotonic_ns())

    def probes(self, t_end):
        conn = http.client.HTTPConnection(self.srv.host, self.srv.port, timeout=600)
        due = time.monotonic()
        try:
            while True:
                due += PROBE_EVERY
                now = time.monotonic()
                if due >= t_end:
                    break
                if due > now:
                    time.sleep(due - now)
                self.probe(conn, self.next_id)
                self.next_id += 1
        except Exception as e:  # noqa: BLE001 - reported
            self.errors.append(repr(e))
        self.probe_conn = conn

    def run(self):
        t_end = time.monotonic() + self.duration
        threads = [threading.Thread(target=self.bulk, args=(t_end,)),
                   threading.Thread(target=self.probes, args=(t_end,))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # the final probe: streams count themselves done when they see it
        if self.shared is not None:
            self.shared["final"].value = self.next_id
        try:
            self.probe(self.probe_conn, self.next_id)
        except Exception as e:  # noqa: BLE001 - reported
            self.errors.append(repr(e))
        self.next_id += 1
        self.probe_conn.close()


# ---------------------------------------------------------------- measures

def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def pct(sorted_vals, q):
    """Quantile q (0..1) of sorted values, the rank rounded over n - 1: not served.pct's rule,
    kept so that numbers stay comparable with the results already reported."""
    return sorted_vals[min(len(sorted_vals) - 1, int(q * (len(sorted_vals) - 1) + 0.5))]


def start_server(binary, view):
    """A fresh server with `trades` (and, view, `trades_v` over it)."""
    srv = Server(binary, None)
    post(srv.port, "/write?precision=ns", f"trades,sym=S0000 price=1.0,size=1i,sent=0i {BASE_HI - 1}00000000\n"
         .encode(), "text/plain")
    if view:
        post(srv.port, "/", VIEW_SQL.encode(), "text/plain")
    return srv


def receipts(recv, view):
    """A stream's receipt ns of a probe id (None: missed). A view's event holds the PROBE
    group's max(sent) only, so there an id is received with the first event holding it or a
    later id (ids increase)."""
    if not view:
        return recv.get
    keys = sorted(recv)
    first = [recv[k] for k in keys]  # first[i]: the earliest receipt of keys[i:]
    for i in range(len(first) - 2, -1, -1):
        first[i] = min(first[i], first[i + 1])

    def at(pid):
        i = bisect.bisect_left(keys, pid)
        return first[i] if i < len(keys) else None
    return at


def phase(args, ctx, segs, n, rate, first_id):
    label = f"{n} subscribers, {'max' if not rate else f'{rate:,} rows/s'}"
    srv = start_server(args.bin, args.view)
    subs = Subscribers(ctx, srv.host, srv.port, n, args.per_proc, args.view) if n else None
    shared = subs.shared if subs else None
    if subs and subs.attached < n:
        res = subs.stop()
        srv.stop()
        errs = [e for r in res for e in r["attach_errors"]]
        sys.exit(f"{label}: only {subs.attached} of {n} subscribers attached: {errs[:3]}")
    time.sleep(0.5)
    rss0 = srv.rss_mib()
    if subs:
        subs.shared["go"].set()
    w = Writer(srv, segs, rate, args.duration, shared, first_id)
    c0, r0 = cpu_s(srv.proc.pid), resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    w.run()
    wall = time.monotonic() - t0
    c1, r1 = cpu_s(srv.proc.pid), resource.getrusage(resource.RUSAGE_SELF)
    waited = subs.wait_final(args.drain) if subs else 0.0
    res = subs.stop() if subs else []
    peak = rss_mib(srv.proc.pid, "VmHWM")
    rss1 = srv.rss_mib()
    count = srv.count("trades")
    srv.stop()

    out = {"subscribers": n, "target_rate": rate, "rows": w.rows, "bodies": w.bodies,
           "rows_per_s": w.rows / w.bulk_s if w.bulk_s else 0.0, "probes": len(w.acks),
           "rows_in_table": count, "writer_errors": w.errors[:5],
           "server_cpu": (c1 - c0) / wall,
           "writer_cpu": ((r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)) / wall,
           "server_rss_before_mib": rss0, "server_rss_after_mib": rss1, "server_peak_rss_mib": peak,
           "drain_s": waited, "attach_s": subs.attach_s if subs else 0.0, "client_procs": len(res)}
    ack_lat = [(a - s) / 1e6 for s, a in w.acks.values()]
    ack_lat.sort()
    out["ack_ms"] = {"p50": pct(ack_lat, 0.5), "p99": pct(ack_lat, 0.99), "max": ack_lat[-1]} if ack_lat else {}
    if subs:
        lat, lat_send, missed, dups, slow, ended, coalesced, errors = [], [], [], 0, 0, 0, 0, []
        ids = sorted(w.acks)
        tenth = max(1, len(ids) // 10)
        first, last = set(ids[:tenth]), set(ids[-tenth:])
        lat_first, lat_last = [], []
        sub_p50 = []  # each subscriber's own median
        for r in res:
            for s in r["streams"]:
                m = 0
                mine = []
                got = receipts(s["recv"], args.view)
                for pid, (sent, ack) in w.acks.items():
                    t = got(pid)
                    if t is None:
                        m += 1
                    else:
                        coalesced += pid not in s["recv"]
                        lat.append((t - ack) / 1e6)
                        mine.append(lat[-1])
                        if pid in first:
                            lat_first.append(lat[-1])
                        elif pid in last:
                            lat_last.append(lat[-1])
                        lat_send.append((t - sent) / 1e6)
                missed.append(m)
                if mine:
                    mine.sort()
                    sub_p50.append(pct(mine, 0.5))
                dups += s["dups"]
                slow += s["slow"]
                ended += s["ended"]
                errors += s["errors"]
        lat.sort()
        lat_send.sort()
        out.update({
            "pairs": len(lat), "missed_total": sum(missed), "missed_max_per_sub": max(missed),
            "subs_missing_any": sum(1 for m in missed if m), "duplicates": dups, "slow_consumer": slow,
            "ended_early": ended, "errors": errors[:5], "negative": sum(1 for x in lat if x < 0),
            "client_cpu": sum(r["cpu_s"] for r in res) / wall,
            "client_lag_p99_ms": max(r["lag_p99_ms"] for r in res),
            "client_lag_max_ms": max(r["lag_max_ms"] for r in res),
            "client_peak_rss_mib": max(r["maxrss_mib"] for r in res),
        })
        if args.view:
            out["coalesced"] = coalesced  # pairs received by a later id
        if lat:
            out["after_ack_ms"] = {"p50": pct(lat, 0.5), "p99": pct(lat, 0.99), "max": lat[-1], "min": lat[0]}
            sub_p50.sort()
            out["sub_p50_ms"] = {"best": sub_p50[0], "median": pct(sub_p50, 0.5), "worst": sub_p50[-1]}
            out["p50_first_tenth_ms"] = pct(sorted(lat_first), 0.5) if lat_first else None
            out["p50_last_tenth_ms"] = pct(sorted(lat_last), 0.5) if lat_last else None
            out["after_send_ms"] = {"p50": pct(lat_send, 0.5), "p99": pct(lat_send, 0.99), "max": lat_send[-1]}
    return out, w.next_id


def fmt_phase(r):
    tgt = "max" if not r["target_rate"] else f"{r['target_rate']:,}"
    s = (f"{r['subscribers']:>5} subs  {tgt:>8}: "
         f"{r['rows_per_s']:>10,.0f} rows/s, {r['probes']} probes (ack p50 {r['ack_ms'].get('p50', 0):.2f} ms)")
    if r["subscribers"]:
        a = r.get("after_ack_ms")
        if a:
            s += (f"; receipt - ack p50 {a['p50']:.2f} / p99 {a['p99']:.2f} / max {a['max']:.2f} ms"
                  f" (min {a['min']:.2f})")
        if r.get("p50_last_tenth_ms") is not None:
            q = r["sub_p50_ms"]
            s += f"; per-subscriber p50 best/median/worst {q['best']:.2f}/{q['median']:.2f}/{q['worst']:.2f} ms"
            s += f"; p50 first/last tenth {r['p50_first_tenth_ms']:.2f}/{r['p50_last_tenth_ms']:.2f} ms"
        s += (f"; last probe in {r['drain_s']:.1f} s after the writer stopped; missed {r['missed_total']} (worst sub {r['missed_max_per_sub']}),"
              + (f" coalesced {r['coalesced']}," if "coalesced" in r else "") + f" slow {r['slow_consumer']},"
              f" ended {r['ended_early']}; client cpu {r['client_cpu']:.2f}, lag p99 {r['client_lag_p99_ms']:.1f} ms")
    s += f"; server cpu {r['server_cpu']:.2f}, writer cpu {r['writer_cpu']:.2f}, peak RSS {r['server_peak_rss_mib']:,.0f} MiB"
    if r["writer_errors"]:
        s += f"; WRITER ERRORS {r['writer_errors']}"
    return s


def memory(args, ctx):
    """RSS of a fresh server with 0, 100 and 1,000 idle subscribers; 1,000 idle connections."""
    out = {}
    srv = start_server(args.bin, args.view)
    time.sleep(1)
    base = srv.rss_mib()
    out["rss_0_mib"] = base
    held = []
    for n in sorted({min(100, args.mem_subs), args.mem_subs}):
        s = Subscribers(ctx, srv.host, srv.port, n - sum(h.n for h in held), args.per_proc, args.view)
        held.append(s)
        time.sleep(2)
        out[f"rss_{n}_mib"] = srv.rss_mib()
        log(f"memory: {n} idle subscribers: RSS {out[f'rss_{n}_mib']:.1f} MiB (0: {base:.1f}), "
            f"{1024 * (out[f'rss_{n}_mib'] - base) / n:.1f} KiB per subscriber")
    out["subscribers_attached"] = sum(h.attached for h in held)
    for h in held:
        h.stop()
    srv.stop()
    # the same with plain keep-alive connections (after one GET /ping), for comparison
    srv = start_server(args.bin, args.view)
    time.sleep(1)
    base = srv.rss_mib()
    c = Subscribers(ctx, srv.host, srv.port, args.mem_subs, args.per_proc, conn_only=True)
    time.sleep(2)
    out["conn_rss_0_mib"] = base
    out["conn_rss_mib"] = srv.rss_mib()
    out["connections"] = c.attached
    c.stop()
    srv.stop()
    log(f"memory: {args.mem_subs} idle keep-alive connections: RSS {out['conn_rss_mib']:.1f} MiB (0: {base:.1f})")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "zeptodb"))
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of writing per phase")
    ap.add_argument("--rate", type=int, default=100_000, help="the paced rate, rows/s")
    ap.add_argument("--subs", default="1,100,1000", help="subscriber counts")
    ap.add_argument("--per-proc", type=int, default=500, help="subscriber streams per client process")
    ap.add_argument("--mem-subs", type=int, default=1000)
    ap.add_argument("--drain", type=float, default=60.0, help="seconds to wait for the last probe")
    ap.add_argument("--quick", action="store_true", help="5-second phases (about a minute)")
    ap.add_argument("--view", action="store_true", help="subscribe to a materialized view over trades")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.quick:
        args.duration = min(args.duration, 5.0)
        args.drain = min(args.drain, 30.0)
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} not found: cargo build --release -p zepto-cli")
    ctx = mp.get_context("spawn")
    segs = body_segments()
    subs = [int(x) for x in args.subs.split(",")]
    mode, query = ("view", VIEW_QUERY) if args.view else ("table", QUERY)
    log(f"subscribe.py: {args.bin}, in memory, {args.duration:g} s per phase, {os.cpu_count()} cores, "
        f"<= {args.per_proc} streams per client process, {mode} mode, query: {query}")
    t_start = time.monotonic()
    phases = []
    next_id = 1
    for n in [0] + subs:
        for rate in (args.rate, 0):
            r, next_id = phase(args, ctx, segs, n, rate, next_id)
            phases.append(r)
            log(fmt_phase(r))
    mem = memory(args, ctx)
    total = time.monotonic() - t_start

    print(f"\nzeptodb serve --in-memory, {os.cpu_count()} cores shared by server, writer and subscribers; "
          f"{args.duration:g} s of writing per phase; {mode} mode, subscribers: {query!r}"
          + (f" over {VIEW_SQL!r} (a probe is received with an event holding it or a later id)" if args.view else ""))
    rows = []
    for r in phases:
        tgt = "max" if not r["target_rate"] else f"{r['target_rate']:,}"
        if r["subscribers"]:
            a, b = r.get("after_ack_ms", {}), r.get("after_send_ms", {})
            lat = f"{a.get('p50', 0):.2f} / {a.get('p99', 0):.2f} / {a.get('max', 0):.2f}" if a else "-"
            trend = (f"{r['p50_first_tenth_ms']:.2f} / {r['p50_last_tenth_ms']:.2f}"
                     if r.get("p50_last_tenth_ms") is not None else "-")
            q = r.get("sub_p50_ms")
            spread = f"{q['best']:.2f} / {q['median']:.2f} / {q['worst']:.2f}" if q else "-"
            lat2 = f"{b.get('p50', 0):.2f} / {b.get('p99', 0):.2f} / {b.get('max', 0):.2f}" if b else "-"
            miss = f"{r['missed_total']} (worst sub {r['missed_max_per_sub']})"
            if "coalesced" in r:
                miss += f", coalesced {r['coalesced']}"
            slow = str(r["slow_consumer"])
            cl = f"{r['client_cpu']:.2f}"
        else:
            lat = lat2 = trend = spread = miss = slow = cl = "-"
        rows.append([f"{r['subscribers']:,}", tgt, f"{r['rows_per_s']:,.0f}", r["probes"], lat, trend, spread, lat2, miss,
                     slow, f"{r['server_cpu']:.2f} / {r['writer_cpu']:.2f} / {cl}"])
    print()
    md_table(["subscribers", "target", "rows/s reached", "probes", "receipt - ack p50 / p99 / max ms",
              "p50 first / last tenth ms", "a subscriber's p50: best / median / worst ms",
              "receipt - send p50 / p99 / max ms", "missed", "slow consumer", "server / writer / client CPU"], rows)
    by = {(r["subscribers"], r["target_rate"]): r for r in phases}
    top = max(subs)
    if (0, 0) in by and (top, 0) in by:
        a, b = by[(0, 0)]["rows_per_s"], by[(top, 0)]["rows_per_s"]
        print(f"\nIngest as fast as one writer goes: {a:,.0f} rows/s with 0 subscribers, {b:,.0f} with {top:,} "
              f"({b / a:.2f}x)")
    print(f"Probe acknowledgement (POST of one line) p50 / p99 ms: " + ", ".join(
        f"{r['subscribers']}/{'max' if not r['target_rate'] else 'paced'} {r['ack_ms']['p50']:.2f}/{r['ack_ms']['p99']:.2f}"
        for r in phases if r["ack_ms"]))
    extra = [r for r in phases if r["subscribers"] and (r["ended_early"] or r["errors"] or r["duplicates"])]
    for r in extra:
        print(f"{r['subscribers']} subs {r['target_rate'] or 'max'}: ended early {r['ended_early']}, "
              f"duplicates {r['duplicates']}, errors {r['errors'][:3]}")
    m = mem
    steps = sorted({min(100, args.mem_subs), args.mem_subs})
    print(f"\nServer RSS, idle: 0 subscribers {m['rss_0_mib']:.1f} MiB; " + "; ".join(
        f"{n:,}: {m[f'rss_{n}_mib']:.1f} MiB ({1024 * (m[f'rss_{n}_mib'] - m['rss_0_mib']) / n:.1f} KiB each)"
        for n in steps) + f"; {args.mem_subs:,} idle keep-alive connections instead: "
          f"{m['conn_rss_0_mib']:.1f} -> {m['conn_rss_mib']:.1f} MiB "
          f"({1024 * (m['conn_rss_mib'] - m['conn_rss_0_mib']) / args.mem_subs:.1f} KiB each)")
    print(f"Server peak RSS over the phases: {max(r['server_peak_rss_mib'] for r in phases):,.0f} MiB; "
          f"client process peak RSS: {max((r.get('client_peak_rss_mib', 0) for r in phases), default=0):,.0f} MiB; "
          f"client processes per 1,000 subscribers: {-(-1000 // args.per_proc)}; "
          f"worst client event-loop lag p99 / max: "
          f"{max((r.get('client_lag_p99_ms', 0) for r in phases), default=0):.1f} / "
          f"{max((r.get('client_lag_max_ms', 0) for r in phases), default=0):.1f} ms; total {total:.0f} s")
    write_json(args.json, {"mode": mode, "query": query, "view": VIEW_SQL if args.view else None,
                           "phases": phases, "memory": mem, "duration": args.duration, "per_proc": args.per_proc})


if __name__ == "__main__":
    main()
