"""Servers for benchmarks: a `zeptodb serve` process started on a free port, called over HTTP,
measured; a Kafka broker for the cluster benchmarks; and the small helpers every server-driving
script wants (free ports, RSS from /proc, one POST, percentiles, progress on stderr).

Why one module: each benchmark used to start and measure its servers its own way, so a fix to
one (a full pipe, a wrong RSS field) missed the others. This is the only place that starts a
ZeptoDB server or a Kafka broker; `engines.py` puts ZeptoDB (this `Server`) and QuestDB (the
only place that starts it) behind one interface for the scripts that load both alike.
Standard library only; Linux (/proc).
"""
import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KAFKA = os.path.join(ROOT, "tests", "kafka", "broker.sh")


def log(msg):
    """Progress on stderr (stdout is the report)."""
    print(msg, file=sys.stderr, flush=True)


def free_port():
    """A free loopback port (for a door that has to be named before the server starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair():
    """A free loopback port whose next one is free too (a Kafka broker takes both)."""
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        try:
            t = socket.socket()
            t.bind(("127.0.0.1", p + 1))
            t.close()
            return p
        except OSError:
            continue


def rss_mib(pid, field="VmRSS"):
    """Field `field` of /proc/<pid>/status in MiB: VmRSS (now) or VmHWM (peak); NaN if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def pct(xs, p):
    """The p-th percentile (0..100) of xs, nearest rank below: sorted(xs)[int(p / 100 * n)]."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def post(port, path, body, ctype, conn=None):
    """POST `body` to 127.0.0.1:port (on `conn` if given, kept open); the answer's body, or
    RuntimeError on a status of 300 or more."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", path, body=body, headers={"Content-Type": ctype})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        raise RuntimeError(f"POST {path}: {r.status} {data[:300]!r}")
    return data


class Server:
    """`binary serve --data-dir data --http 127.0.0.1:0 --access-log off [extra...]` (`--in-memory`
    when `data` is None), up once it says where it listens. `startup` keeps what it logged until
    then (what recovery replayed, how fast); the rest of its log is read and dropped, so a full
    pipe never blocks it, or appended to the file `log` (with its stdout) when given.
    `access_log` is the flag's value (`-`: the server's default, to that same log)."""

    def __init__(self, binary, data, *extra, access_log="off", log=None):
        store = ["--in-memory"] if data is None else ["--data-dir", data]
        self.log = open(log, "a") if log else None
        self.proc = subprocess.Popen(
            [binary, "serve", *store, "--http", "127.0.0.1:0", "--access-log", access_log, *extra],
            stdout=self.log or subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.addr = None
        self.startup = []
        for line in self.proc.stderr:
            self.startup.append(line)
            self._keep(line)
            if "listening on http://" in line:
                self.addr = line.split("listening on http://")[1].split()[0]
                break
        if self.addr is None:
            sys.exit("the server did not start: " + "".join(self.startup[-5:]))
        self._drain = threading.Thread(target=self._rest, daemon=True)
        self._drain.start()
        host, port = self.addr.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.url = f"http://{self.addr}"

    def _keep(self, line):
        if self.log:
            self.log.write(line)
            self.log.flush()

    def _rest(self):
        for line in self.proc.stderr:
            self._keep(line)

    def request(self, method, path, body=None, headers=None):
        """One request on a fresh connection: (status, body bytes)."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=600)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        out = r.read()
        c.close()
        return r.status, out

    def count(self, table):
        """`count(*)` of `table`, 0 while it does not exist."""
        st, out = self.request("POST", "/", f"SELECT count(*) FROM {table}")
        return json.loads(out)["data"][0][0] if st == 200 else 0

    def rss_mib(self, field="VmRSS"):
        return rss_mib(self.pid, field)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._closed()

    def stop(self, timeout=None):
        """SIGTERM and wait for the exit (SIGKILL after `timeout` seconds, if given)."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._closed()

    def _closed(self):
        """After the exit: the rest of its log read (into `log`, if any)."""
        self._drain.join(timeout=5)
        if self.log:
            self.log.close()


@contextlib.contextmanager
def kafka(tmp, partitions):
    """A Kafka broker (tests/kafka/broker.sh) with its storage in tmp/kafka, topics of
    `partitions` partitions; yields its port (the controller takes the next one); stopped after."""
    port, kdir = free_port_pair(), os.path.join(tmp, "kafka")
    env = dict(os.environ, KAFKA_PARTITIONS=str(partitions))
    subprocess.run([KAFKA, "start", kdir, str(port)], check=True, env=env, stdout=subprocess.DEVNULL)
    try:
        yield port
    finally:
        subprocess.run([KAFKA, "stop", kdir], check=False)
