"""A `zeptodb serve` process for benchmarks: started on a free port, called over HTTP, measured.

Standard library only. The benchmarks that drive a server (agent_memory.py, cluster_ingest.py,
ingest_fairness.py, query_fairness.py, wal_ingest.py) share this one class instead of each
keeping its own.
"""
import http.client
import json
import signal
import socket
import subprocess
import sys
import threading


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


class Server:
    """`binary serve --data-dir data --http 127.0.0.1:0 [extra...]` (`--in-memory` when `data` is
    None), up once it says where it listens. `startup` keeps what it logged until then (what
    recovery replayed, how fast); the rest of its log is read and dropped, so a full pipe never
    blocks it."""

    def __init__(self, binary, data, *extra):
        store = ["--in-memory"] if data is None else ["--data-dir", data]
        self.proc = subprocess.Popen(
            [binary, "serve", *store, "--http", "127.0.0.1:0", "--access-log", "off", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addr = None
        self.startup = []
        for line in self.proc.stderr:
            self.startup.append(line)
            if "listening on http://" in line:
                self.addr = line.split("listening on http://")[1].split()[0]
                break
        if self.addr is None:
            sys.exit("the server did not start: " + "".join(self.startup[-5:]))
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        host, port = self.addr.rsplit(":", 1)
        self.host, self.port = host, int(port)

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

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
