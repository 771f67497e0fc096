"""A `zeptodb serve` process for benchmarks: started on a free port, called over HTTP, measured.

Standard library only. The benchmarks that drive a server (agent_memory.py, cluster_ingest.py)
share this one class instead of each keeping its own.
"""
import http.client
import json
import signal
import socket
import subprocess
import sys


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
    """`binary serve --data-dir data --http 127.0.0.1:0 [extra...]`, up once it says where it listens."""

    def __init__(self, binary, data, *extra):
        self.proc = subprocess.Popen(
            [binary, "serve", "--data-dir", data, "--http", "127.0.0.1:0", "--access-log", "off", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addr = None
        for line in self.proc.stderr:
            if "listening on http://" in line:
                self.addr = line.split("listening on http://")[1].split()[0]
                break
        if self.addr is None:
            sys.exit("the server did not start")
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
