#!/usr/bin/env python3
"""Materialized views: what keeping 1-minute bars costs ingest, and how long after a write's
acknowledgement the view shows it. ZeptoDB beside QuestDB, through the same door (ILP over HTTP,
POST /write), same data and client, one run.

  * Data: a trades stream of --rows rows (default 2,000,000; --quick 300,000), 100 symbols, one
    row per millisecond in time order with 1% of rows up to a minute late (the shape of
    zepto-bench's view_upkeep; a late row lands 1..997 us past a whole millisecond, so no two
    rows share a timestamp and first/last have one answer), as ILP lines
    `trades,sym=S12 price=1001.25,size=37i <ts ns>` in bodies of 10,000 lines over 2 keep-alive
    connections (bench/questdb.py's send_all). Generated before any clock starts.
  * Table, created before the load on both: ZeptoDB `CREATE TABLE trades (sym SYMBOL, price
    DOUBLE, size BIGINT, ts TIMESTAMP) TIMESTAMP(ts)` on a durable server (temporary
    --data-dir, --sync always: an fsync before each acknowledgement); QuestDB 9.3 (its Maven
    jar, bench/servers/questdb/questdb.sh, default settings as bench/questdb.py runs it, so
    cairo.commit.mode nosync: its acknowledgements outlive the process, not the machine) the
    same with `PARTITION BY DAY WAL`. Every run starts a fresh server (peak RSS is per run).
    QuestDB's JVM is first warmed up in each run: the first 300,000 rows are loaded with the
    bars view and dropped before the clock starts (without it its rate was a third of this).
  * Cases per engine: (a) no view; (b) one view, the bars
      SELECT sym, ts, first(price) AS open, max(price) AS high, min(price) AS low,
             last(price) AS close, sum(size) AS volume, count(*) AS n FROM trades SAMPLE BY 1m
    (QuestDB: `CREATE MATERIALIZED VIEW bars AS (...) PARTITION BY DAY`, refresh IMMEDIATE, its
    default: refreshed asynchronously after the table's commits are applied); (c) ZeptoDB only:
    10 views (the bars at 1s, 5s, 10s, 30s, 1m, 5m, 15m, 1h, a GROUP BY sym and a count per
    minute; QuestDB's views need a time bucket). Each case --repeat times (default 5), the
    cases alternating; reported: the best run's rows/s and the median, each run's lags, the
    highest peak RSS. QuestDB's rate moves by half between runs here: read its medians.
  * rows/s acked = rows / (first send .. last acknowledgement); rows/s complete = rows / (first
    send .. the table's count and the bars' sum(n) both show every row). After the last
    acknowledgement the script polls `count()` of the table and `SELECT sum(n) FROM bars` every
    5 ms (the first poll at once): the table lag and the view lag are the times until each first
    shows every row sent.
  * Steady state, --probe-runs more runs of (b) per engine (default 5, probes pooled): during the
    load, every 200 ms one marker row (symbol PROBE, size 2**k, the stream's current time) is
    POSTed on a third connection; a fourth polls `SELECT sum(volume) FROM bars WHERE sym =
    'PROBE'` at once after each acknowledgement and every 5 ms, and the sum's bits say which
    markers the view shows: ack-to-visible p50 / p99 / max. Runs of their own so that the
    probes' polls are not in (b)'s rows/s; their rows/s is printed too.
  * Peak RSS of the server: VmRSS sampled every 50 ms from before the load until caught up.
  * Other work on the machine: the CPU time of everything but the server and this script during
    each run (/proc/stat); a run where it passed 0.25 cores is flagged in the report.
  * Correctness at the end of every run with views: each view read (`SELECT * FROM v ORDER BY
    ...`) against its query run over the table (bench/questdb.py's canonical/diff: floats to
    1e-9 relative); QuestDB once its refresh caught up. A difference prints a WARNING line (the
    run goes on). ZeptoDB's bars are also compared with QuestDB's (same data: they must agree).

Usage: bench/views.py [--rows 2000000] [--quick] [--repeat 5] [--probe-runs 5] [--no-questdb]
                      [--bin target/release/zeptodb] [--json FILE]
"""
import argparse
import http.client
import os
import signal
import statistics
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from report import Columns, write_json  # noqa: E402
from served import log, post, rss_mib  # noqa: E402
from questdb import (HttpClient, QuestServer, RssSampler, ZeptoServer, answer, canonical, diff,  # noqa: E402
                     on_sigterm, pick_binary, send_all, send_http)

T0_NS = 1_704_186_000_000_000_000  # 2024-01-02T09:00:00Z, as zepto-bench view_upkeep
SYMBOLS = 100
BATCH = 10_000
CLIENTS = 2
POLL_S = 0.005
PROBE_EVERY_S = 0.2
PROBE_TIMEOUT_S = 30.0
BUSY_CORES = 0.25  # other processes' CPU during a run above this: the run is flagged
MAX_PROBES = 60  # sizes 2**0 .. 2**59: their sum fits a LONG
CATCH_UP_TIMEOUT_S = 600.0
WARM_UP_ROWS = 300_000

TABLE_SQL = {
    "zeptodb": "CREATE TABLE trades (sym SYMBOL, price DOUBLE, size BIGINT, ts TIMESTAMP) TIMESTAMP(ts)",
    "questdb": "CREATE TABLE trades (sym SYMBOL, price DOUBLE, size LONG, ts TIMESTAMP) TIMESTAMP(ts) "
               "PARTITION BY DAY WAL",
}
OHLC = ("first(price) AS open, max(price) AS high, min(price) AS low, last(price) AS close, "
        "sum(size) AS volume, {count} AS n")


def bars(bucket, count="count(*)"):
    return f"SELECT sym, ts, {OHLC.format(count=count)} FROM trades SAMPLE BY {bucket}"


def views_of(engine, n):
    """(name, query, ORDER BY of its read) of the first n views; bars (1m) first."""
    count = "count()" if engine == "questdb" else "count(*)"
    out = [("bars", bars("1m", count), "sym, ts")]
    out += [(f"bars_{b}", bars(b, count), "sym, ts") for b in ("1s", "5s", "10s", "30s", "5m", "15m", "1h")]
    out += [("per_sym", f"SELECT sym, {count} AS n, sum(size) AS volume, min(price) AS low, max(price) AS high "
                        "FROM trades GROUP BY sym", "sym"),
            ("count_1m", f"SELECT ts, {count} AS n FROM trades SAMPLE BY 1m", "ts")]
    return out[:n]


def create_view_sql(engine, name, query):
    if engine == "questdb":
        return f"CREATE MATERIALIZED VIEW {name} AS ({query}) PARTITION BY DAY"
    return f"CREATE MATERIALIZED VIEW {name} AS {query}"


# ---------------------------------------------------------------- data


def generate(rows, seed=55):
    """The stream as ILP bodies of BATCH lines (the shape of zepto-bench's view_upkeep, without ties)."""
    rng = np.random.default_rng(seed)
    sym = rng.integers(0, SYMBOLS, rows)
    step = rng.integers(-10, 11, rows)
    late = np.where(rng.integers(0, 100, rows) == 0, rng.integers(0, 60_000, rows), 0)
    size = rng.integers(1, 101, rows)
    # In time order a row per millisecond; a late row between two of them (1..997 us past a whole
    # millisecond), so that no two rows share a timestamp and first/last have one answer.
    i = np.arange(rows)
    ts = T0_NS + (i - late) * 1_000_000 + np.where(late > 0, (1 + i % 997) * 1_000, 0)
    # Each symbol's price is a random walk in cents from 1000.00, its own steps summed in order.
    order = np.argsort(sym, kind="stable")
    walk = np.cumsum(step[order])
    starts = np.searchsorted(sym[order], np.arange(SYMBOLS))
    walk -= np.repeat(np.concatenate(([0], walk[starts[1:] - 1])), np.diff(np.append(starts, rows)))
    cents = np.empty(rows, dtype=np.int64)
    cents[order] = np.maximum(100_000 + walk, 1)
    bodies = []
    for s in range(0, rows, BATCH):
        e = min(s + BATCH, rows)
        bodies.append("".join(f"trades,sym=S{k} price={c // 100}.{c % 100:02d},size={z}i {t}\n"
                              for k, c, z, t in zip(sym[s:e].tolist(), cents[s:e].tolist(), size[s:e].tolist(),
                                                    ts[s:e].tolist())).encode())
    return {"bodies": bodies, "rows": rows, "bytes": sum(map(len, bodies)), "late": int((late > 0).sum())}


# ---------------------------------------------------------------- engines


def start(engine, binary):
    if engine == "zeptodb":
        return ZeptoServer(binary, "always")
    eng = QuestServer()
    if eng.reused and (eng.exists("trades") or eng.exists("bars")):
        eng.stop()
        raise SystemExit("the QuestDB already running on :9000 has a table trades or bars that this run did not "
                         "create: stop it (bench/servers/questdb/questdb.sh stop) or drop them")
    return eng


def query(eng, sql, client=None):
    """(column names, rows) of a query, or raise with the server's answer."""
    st, body = (client or eng.client).get(eng.query_path(sql))
    try:
        return answer(st, body)
    except (RuntimeError, ValueError) as e:
        raise RuntimeError(f"{eng.name}: {sql[:160]}: {e}") from None


def scalar(eng, sql, client=None):
    rows = query(eng, sql, client)[1]
    v = rows[0][0] if rows else None
    return 0 if v is None else int(v)


def ddl(eng, sql):
    if eng.name == "zeptodb":
        post(eng.port, "/", sql.encode(), "text/plain")
        return
    st, body = eng.client.get(eng.query_path(sql))  # QuestDB answers DDL with {"ddl": "OK"}
    if st != 200 or b'"error"' in body:
        raise RuntimeError(f"questdb: {sql[:160]}: {st} {body[:300]!r}")


def clean_questdb(eng):
    for v, _, _ in views_of("questdb", 10):
        ddl(eng, f"DROP MATERIALIZED VIEW IF EXISTS {v}")
    ddl(eng, "DROP TABLE IF EXISTS trades")


def count_sql(eng):
    return "SELECT count() FROM trades" if eng.name == "questdb" else "SELECT count(*) FROM trades"


# ---------------------------------------------------------------- one run


class Tee(list):
    """send_all's progress list that also counts into another list (the prober reads it)."""

    def __init__(self, inner, also):
        super().__init__()
        self.inner, self.also = inner, also

    def append(self, x):
        self.inner.append(x)
        self.also.append(x)


class Prober:
    """During a load, every PROBE_EVERY_S (a fixed schedule) one PROBE row of size 2**k, POSTed on a
    connection of its own; a second thread polls the bars' PROBE volume at once after each
    acknowledgement and every POLL_S. The sum's bits say which probes the view shows (whatever
    the order they show in); a probe's lag runs from its acknowledgement to the first answer that
    shows it (0 when that answer came before the writer read the acknowledgement)."""

    def __init__(self, eng, acked):
        self.eng, self.acked = eng, acked
        self.done, self.kick, self.written = threading.Event(), threading.Event(), threading.Event()
        self.lock, self.acks, self.seen, self.errors = threading.Lock(), {}, {}, []
        self.threads = [threading.Thread(target=self.guard, args=(f,), daemon=True) for f in (self.write, self.poll)]

    def start(self):
        for t in self.threads:
            t.start()

    def guard(self, f):
        try:
            f()
        except Exception as e:  # noqa: BLE001 - raised by stop()
            self.errors.append(e)
            self.written.set()

    def write(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.eng.port, timeout=60)
        t0 = time.perf_counter()
        for k in range(MAX_PROBES):
            if self.done.wait(max(0.0, t0 + (k + 1) * PROBE_EVERY_S - time.perf_counter())):
                break
            ts = T0_NS + len(self.acked) * BATCH * 1_000_000  # the stream's current time
            post(self.eng.port, self.eng.ilp_path(), f"trades,sym=PROBE price=1.0,size={1 << k}i {ts}\n".encode(),
                 "text/plain", conn)
            with self.lock:
                self.acks[k] = time.perf_counter()
            self.kick.set()
        conn.close()

    def poll(self):
        reader, deadline = HttpClient(self.eng.port), None
        sql = "SELECT sum(volume) FROM bars WHERE sym = 'PROBE'"
        while True:
            self.kick.wait(POLL_S)
            self.kick.clear()
            shown = scalar(self.eng, sql, reader)
            now = time.perf_counter()
            with self.lock:
                for k in range(shown.bit_length()):
                    if shown >> k & 1 and k not in self.seen:
                        self.seen[k] = 1000 * max(0.0, now - self.acks.get(k, now))
                caught_up = len(self.seen) == len(self.acks)
            if self.written.is_set():
                deadline = deadline or now + PROBE_TIMEOUT_S
                if caught_up or now > deadline:
                    return

    def stop(self):
        """Stop probing, wait until the view shows every probe (or PROBE_TIMEOUT_S): probes sent."""
        self.done.set()
        self.threads[0].join()
        self.written.set()
        self.kick.set()
        self.threads[1].join()
        if self.errors:
            raise self.errors[0]
        self.lags, self.sent = list(self.seen.values()), len(self.acks)
        self.timeouts = self.sent - len(self.lags)
        return self.sent


def catch_up(eng, rows, with_view, t_ack):
    """Poll the table's count (and the bars' sum(n)) every POLL_S until they show `rows`."""
    t_table = t_view = None
    last_log, polls = time.perf_counter(), 0
    while t_table is None or (with_view and t_view is None):
        now, polls = time.perf_counter(), polls + 1
        if t_table is None and scalar(eng, count_sql(eng)) >= rows:
            t_table = time.perf_counter()
        if with_view and t_view is None:
            n = scalar(eng, "SELECT sum(n) FROM bars")
            if n >= rows:
                t_view = time.perf_counter()
                if n != rows:
                    log(f"  WARNING {eng.name}: bars count {n:,} rows, {rows:,} were sent")
        if now - t_ack > CATCH_UP_TIMEOUT_S:
            raise RuntimeError(f"{eng.name}: not caught up {CATCH_UP_TIMEOUT_S:.0f} s after the last acknowledgement")
        if now - last_log > 2:
            last_log = now
            log(f"    {eng.name}: catching up ({now - t_ack:.1f} s after the last acknowledgement)")
        time.sleep(POLL_S)
    return t_table, t_view, polls


def verify(eng, views, label):
    """Each view's rows against its query's over the table: a list of warnings, and the bars' answer."""
    warnings, bars_answer = [], None
    for name, q, order in views:
        try:
            got = canonical(*query(eng, f"SELECT * FROM {name} ORDER BY {order}"))
            want = canonical(*query(eng, q))
        except RuntimeError as e:
            warnings.append(f"{eng.name} {label} {name}: {e}")
            continue
        if d := diff(got, want):
            warnings.append(f"{eng.name} {label} view {name} differs from its query: {d}")
        if name == "bars":
            bars_answer = got
    for w in warnings:
        log(f"  WARNING {w}")
    if not warnings:
        log(f"  {eng.name} {label}: {len(views)} view(s) equal their queries over the table")
    return warnings, bars_answer


def setup(eng, views):
    if eng.name == "questdb":
        clean_questdb(eng)
    ddl(eng, TABLE_SQL[eng.name])
    for name, q, _ in views:
        ddl(eng, create_view_sql(eng.name, name, q))
    eng.loaded = True


def warm_up(eng, data):
    """QuestDB only: load the first WARM_UP_ROWS rows with the bars view and drop them, so that its
    JIT has compiled the ILP, WAL apply and refresh paths before the clock starts (every run starts
    a fresh JVM). ZeptoDB is compiled ahead of time: its runs start cold."""
    bodies = data["bodies"][:WARM_UP_ROWS // BATCH]
    rows = sum(b.count(b"\n") for b in bodies)
    setup(eng, views_of(eng.name, 1))
    send_all(eng, send_http, bodies, CLIENTS)
    catch_up(eng, rows, True, time.perf_counter())
    clean_questdb(eng)


def cpu_seconds(pid):
    """(CPU seconds of the whole machine, of the server, of this script), to tell whether anything
    else ran beside a measurement (a 2-core machine shared with builds)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    me = os.times()
    return ((user + nice + system + irq + softirq + steal) / tick, (int(fields[11]) + int(fields[12])) / tick,
            me.user + me.system)


def others_cores(before, after, secs):
    """Cores that processes other than the server and this script kept busy (kernel work included)."""
    machine, server, me = (b - a for a, b in zip(before, after))
    return max(0.0, machine - server - me) / secs


def run(engine, binary, data, nviews, probes, label):
    eng = start(engine, binary)
    try:
        if engine == "questdb":
            t = time.perf_counter()
            warm_up(eng, data)
            log(f"  questdb warmed up ({time.perf_counter() - t:.1f} s)")
        views = views_of(engine, nviews)
        setup(eng, views)
        rows = data["rows"]
        sampler, acked = RssSampler(eng.pid), []
        sampler.start()
        prober = Prober(eng, acked) if probes else None
        cpu0 = cpu_seconds(eng.pid)
        t0 = time.perf_counter()
        if prober:
            prober.start()
        send_all(eng, lambda e, b, progress: send_http(e, b, Tee(progress, acked)), data["bodies"], CLIENTS)
        t_ack = time.perf_counter()
        if prober:
            rows += prober.stop()
        t_table, t_view, polls = catch_up(eng, rows, bool(views), t_ack)
        peak = sampler.stop()
        done = max(t_table, t_view or 0)
        others = others_cores(cpu0, cpu_seconds(eng.pid), done - t0)
        r = {"case": label, "engine": engine, "views": nviews, "rows": rows,
             "acked_rows_per_s": data["rows"] / (t_ack - t0), "complete_rows_per_s": data["rows"] / (done - t0),
             "seconds": done - t0, "table_lag_ms": 1000 * (t_table - t_ack), "catch_up_polls": polls,
             "view_lag_ms": 1000 * (t_view - t_ack) if t_view else None, "peak_rss_mib": peak,
             "vm_hwm_mib": rss_mib(eng.pid, "VmHWM"), "questdb_reused": bool(getattr(eng, "reused", False)),
             "others_cores": others}
        if prober:
            r["probe_lags"], r["probe_timeouts"] = prober.lags, prober.timeouts
            r["probes"] = probe_stats([r])
            # the probes' polls ran beside the load: lag after the ack is measured in the plain runs
            r["table_lag_ms"] = r["view_lag_ms"] = None
        log(f"  {engine} {label}: acked {r['acked_rows_per_s']:,.0f} rows/s, complete {r['complete_rows_per_s']:,.0f} "
            f"rows/s ({r['seconds']:.2f} s); table lag {fmt_ms(r['table_lag_ms'])}, view lag "
            f"{fmt_ms(r['view_lag_ms'])} ms ({polls} polls); peak RSS {peak:,.0f} MiB"
            + (f"; probes {fmt_probes(r['probes'])}" if prober else "")
            + (f"; WARNING: other processes used {others:.2f} cores meanwhile" if others > BUSY_CORES else ""))
        r["warnings"], r["bars_answer"] = verify(eng, views, label) if views else ([], None)
        return r
    finally:
        try:
            if engine == "questdb" and getattr(eng, "loaded", False):
                clean_questdb(eng)
        except Exception as e:  # noqa: BLE001 - keep stopping
            log(f"  cleaning questdb: {e}")
        eng.stop()


# ---------------------------------------------------------------- report


def fmt_ms(v):
    return "-" if v is None else f"{v:.1f}"


def probe_stats(runs):
    """p50 / p99 / max of the probes of these runs, pooled."""
    lags = sorted(x for r in runs for x in r["probe_lags"])
    timeouts = sum(r["probe_timeouts"] for r in runs)
    out = {"sent": len(lags) + timeouts, "timeouts": timeouts}
    if lags:
        out |= {"p50_ms": statistics.median(lags), "p99_ms": lags[min(len(lags) - 1, round(0.99 * (len(lags) - 1)))],
                "max_ms": lags[-1]}
    return out


def fmt_probes(p):
    if not p["sent"]:
        return f"none sent (the loads took less than {PROBE_EVERY_S * 1000:.0f} ms)"
    if "p50_ms" not in p:
        return f"none visible ({p['sent']} sent, {p['timeouts']} timed out)"
    return (f"{p['sent']} probes, p50 {p['p50_ms']:.2f} ms, p99 {p['p99_ms']:.2f} ms, max {p['max_ms']:.2f} ms"
            + (f", {p['timeouts']} not visible within {PROBE_TIMEOUT_S:.0f} s" if p["timeouts"] else ""))


def median_rate(runs, engine, case):
    rates = [r["complete_rows_per_s"] for r in runs if r["engine"] == engine and r["case"] == case]
    return statistics.median(rates) if rates else float("nan")


def best(runs, engine, case):
    rs = [r for r in runs if r["engine"] == engine and r["case"] == case]
    return max(rs, key=lambda r: r["complete_rows_per_s"]) if rs else None


def report(res):
    runs = res["runs"]
    print(f"\nMaterialized views over ILP/HTTP: {res['rows']:,} trades ({SYMBOLS} symbols, {res['late']:,} rows up to "
          f"60 s late), {res['bytes'] / 1e6:,.1f} MB in {BATCH:,}-line bodies from {CLIENTS} clients; "
          f"ZeptoDB {res['binary']} --sync always; QuestDB 9.3.4 WAL; {res['repeat']} runs per case "
          f"({res['probe_runs']} with probes)")
    print(f"load average (1/5/15 min) at the start {'/'.join(f'{x:.2f}' for x in res['loadavg_start'])}, at the end "
          f"{'/'.join(f'{x:.2f}' for x in res['loadavg_end'])} on {os.cpu_count()} cores")
    cols = Columns([8, 13, 12, 16, 10, 6, 6, 17, 17, 12], "<<>>>>>>>>")
    print(cols.line(["engine", "case", "acked rows/s", "complete rows/s", "median", "vs (a)", "median", "table lag ms",
                     "view lag ms", "peak RSS MiB"]))
    for engine in ("zeptodb", "questdb"):
        base, base_med = best(runs, engine, "(a) no view"), median_rate(runs, engine, "(a) no view")
        for case in ("(a) no view", "(b) 1 view", "(c) 10 views", "(b) + probes"):
            r = best(runs, engine, case)
            if not r:
                continue
            mine = [x for x in runs if x["engine"] == engine and x["case"] == case]
            med = median_rate(runs, engine, case)
            vs = r["complete_rows_per_s"] / base["complete_rows_per_s"] if base else float("nan")
            vs_med = med / base_med if base else float("nan")
            tl = "/".join(fmt_ms(x["table_lag_ms"]) for x in mine if x["table_lag_ms"] is not None) or "-"
            vl = "/".join(fmt_ms(x["view_lag_ms"]) for x in mine if x["view_lag_ms"] is not None) or "-"
            print(cols.line([engine, case, f"{r['acked_rows_per_s']:,.0f}", f"{r['complete_rows_per_s']:,.0f}", f"{med:,.0f}",
                             f"{vs:.2f}", f"{vs_med:.2f}", tl, vl, f"{max(x['peak_rss_mib'] for x in mine):,.0f}"]))
    print("(rows/s: the best run's, and the median of the case's runs; vs (a): complete rows/s over the same engine's "
          "(a), best and median; lags: each run's, after the last acknowledgement, polled every 5 ms; peak RSS: the "
          "highest of the case's runs)")
    for engine in ("zeptodb", "questdb"):
        pr = [r for r in runs if r["engine"] == engine and r["case"] == "(b) + probes"]
        if pr:
            print(f"steady state, {engine}: a marker row visible in bars after its ack ({len(pr)} runs pooled): "
                  f"{fmt_probes(probe_stats(pr))}")
    z, q = best(runs, "zeptodb", "(b) 1 view"), best(runs, "questdb", "(b) 1 view")
    za, qa = best(runs, "zeptodb", "(a) no view"), best(runs, "questdb", "(a) no view")
    if z and q and za and qa:
        med = {c: median_rate(runs, "zeptodb", c) / median_rate(runs, "questdb", c)
               for c in ("(a) no view", "(b) 1 view")}
        print(f"ZeptoDB / QuestDB complete rows/s, best (median): (a) "
              f"{za['complete_rows_per_s'] / qa['complete_rows_per_s']:.2f} ({med['(a) no view']:.2f}), (b) "
              f"{z['complete_rows_per_s'] / q['complete_rows_per_s']:.2f} ({med['(b) 1 view']:.2f}); peak RSS (b) "
              f"{z['peak_rss_mib'] / q['peak_rss_mib']:.2f}")
    if res.get("cross"):
        print(f"bars, ZeptoDB against QuestDB: {res['cross']}")
    busy = [r for r in runs if r.get("others_cores", 0) > BUSY_CORES]
    if busy:
        print(f"WARNING: other processes kept more than {BUSY_CORES} cores busy during {len(busy)} of {len(runs)} runs "
              f"(" + ", ".join(f"{r['engine']} {r['case']} {r['others_cores']:.2f}" for r in busy) + ")")
    else:
        print(f"Nothing else ran: other processes used at most "
              f"{max(r.get('others_cores', 0) for r in runs):.2f} cores during any run.")
    warnings = [w for r in runs for w in r["warnings"]]
    if warnings:
        print("WARNING: views differ from their queries:\n  " + "\n  ".join(warnings))
    else:
        print(f"Correctness: every view equalled its query over the table at the end of every run with views "
              f"({sum(1 for r in runs if r['views'])} runs).")


def cross_check(runs):
    """ZeptoDB's bars against QuestDB's: the same data without ties, so they must agree."""
    z = next((r["bars_answer"] for r in runs if r["engine"] == "zeptodb" and r["case"] == "(b) 1 view"
              and r["bars_answer"]), None)
    q = next((r["bars_answer"] for r in runs if r["engine"] == "questdb" and r["case"] == "(b) 1 view"
              and r["bars_answer"]), None)
    if not (z and q):
        return None
    (zc, zr), (qc, qr) = z, q
    if zc != qc:
        return f"columns differ: {zc} vs {qc}"
    if len(zr) != len(qr):
        return f"{len(zr):,} bars vs {len(qr):,}"
    bad = [i for i, (a, b) in enumerate(zip(zr, qr)) if diff((zc, [a]), (qc, [b]))]
    if not bad:
        return f"all {len(zr):,} bars equal"
    return f"WARNING: {len(zr):,} bars, {len(bad):,} differ (e.g. {zr[bad[0]]} vs {qr[bad[0]]})"


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--quick", action="store_true", help="300,000 rows")
    ap.add_argument("--repeat", type=int, default=5, help="runs per case")
    ap.add_argument("--probe-runs", type=int, default=5, help="runs of (b) with probes per engine (probes pooled)")
    ap.add_argument("--no-questdb", action="store_true", help="ZeptoDB only")
    ap.add_argument("--bin", help="zeptodb binary (default target/release/zeptodb, else target/debug)")
    ap.add_argument("--json", help="write the numbers here")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    rows = 300_000 if a.quick else a.rows
    binary = pick_binary(a.bin)
    log(f"generating {rows:,} trades ...")
    data = generate(rows)
    log(f"  {len(data['bodies']):,} bodies, {data['bytes'] / 1e6:,.1f} MB, {data['late']:,} late rows")
    res = {"binary": os.path.relpath(binary, ROOT) if binary.startswith(ROOT) else binary, "rows": rows,
           "bytes": data["bytes"], "late": data["late"], "repeat": a.repeat, "probe_runs": a.probe_runs,
           "loadavg_start": os.getloadavg(), "runs": []}
    engines = ["zeptodb"] + ([] if a.no_questdb else ["questdb"])
    plan = []
    for engine in engines:
        cases = [("(a) no view", 0), ("(b) 1 view", 1)] + ([("(c) 10 views", 10)] if engine == "zeptodb" else [])
        plan += [(engine, label, n, False) for _ in range(a.repeat) for label, n in cases]
        plan += [(engine, "(b) + probes", 1, True)] * a.probe_runs
    for k, (engine, label, nviews, probes) in enumerate(plan):
        log(f"== [{k + 1}/{len(plan)}] {engine} {label}: {rows:,} rows")
        try:
            res["runs"].append(run(engine, binary, data, nviews, probes, label))
        except RuntimeError as e:
            log(f"  FAILED: {e}")
            res.setdefault("failures", []).append(f"{engine} {label}: {e}")
    res["loadavg_end"] = os.getloadavg()
    res["cross"] = cross_check(res["runs"])
    report(res)
    for f in res.get("failures", []):
        print(f"FAILED: {f}")
    if a.json:
        for r in res["runs"]:
            r.pop("bars_answer", None)
        write_json(a.json, res)
    return 1 if res.get("failures") else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted: the servers are stopped")
        sys.exit(130)
