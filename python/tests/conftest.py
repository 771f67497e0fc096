"""What several test files share: a real `zeptodb serve` to test the remote mode against (built
by `cargo build -p zepto-cli`, which `make python-test` runs; ZEPTO_BIN overrides the binary)."""

import contextlib
import os
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The server's one API key (admin).
API_KEY = "test-key-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server():
    """The URL of a server in memory, started once for the session and stopped after it."""
    binary = os.environ.get("ZEPTO_BIN") or str(ROOT / "target" / "debug" / "zeptodb")
    if not os.path.exists(binary):
        pytest.fail(f"{binary} is missing: run `cargo build -p zepto-cli` (make test does)")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "serve", "--in-memory", "--http", f"127.0.0.1:{port}", "--api-key", API_KEY],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/ping", timeout=1)
            break
        except Exception:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("the server did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@contextlib.contextmanager
def served(*args):
    """`serve(*args)` on a free HTTP port: yields the port, and stops the server after."""
    port = free_port()
    proc = serve(*args, http=f"127.0.0.1:{port}")
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def serve(*args, http="127.0.0.1:0"):
    """A `zeptodb serve --in-memory --http HTTP --api-key API_KEY *args` process, once it
    listens (the caller terminates it)."""
    binary = os.environ.get("ZEPTO_BIN") or str(ROOT / "target" / "debug" / "zeptodb")
    proc = subprocess.Popen(
        [binary, "serve", "--in-memory", "--http", http, "--api-key", API_KEY, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        if "listening on" in line:
            # Keep reading what it logs, so a full pipe never blocks the server.
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc
    pytest.fail("the server did not start")


@pytest.fixture(scope="module")
def pg_port():
    """The PostgreSQL door's port of a server in memory, one per test module."""
    port = free_port()
    proc = serve("--pg", f"127.0.0.1:{port}")
    yield port
    proc.terminate()
    proc.wait(timeout=30)


def pg_connect(port, password=API_KEY, **kw):
    """A psycopg connection to the PostgreSQL door on `port`, in autocommit."""
    import psycopg

    return psycopg.connect(host="127.0.0.1", port=port, user="quant", password=password, dbname="zepto",
                           autocommit=True, **kw)


def queries_running(http_port, n):
    """Whether the server on `http_port` counts `n` statements running (`/metrics`)."""
    req = urllib.request.Request(f"http://127.0.0.1:{http_port}/metrics",
                                 headers={"Authorization": f"Bearer {API_KEY}"})
    return f"zepto_queries_running {n}" in urllib.request.urlopen(req, timeout=5).read().decode()


def wait_running(http_port, n, what):
    """Wait (at most 10 s, else fail with `what`) until `n` statements run."""
    deadline = time.monotonic() + 10
    while not queries_running(http_port, n):
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def admitted(attempt, busy, what):
    """`attempt()`'s answer once it is not refused as busy (`busy(answer or error)`), tried
    for at most 10 s: a cancelled statement leaves its query slot when it next looks at its
    cancellation, which may be after `zepto_queries_running` stopped counting it."""
    deadline = time.monotonic() + 10
    while True:
        try:
            answer = attempt()
        except Exception as e:  # noqa: BLE001 - re-raised unless it is the refusal
            if not busy(e):
                raise
        else:
            if not busy(answer):
                return answer
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def hold_slot(http_port, sql):
    """A connection whose slow statement `sql`, sent over HTTP, runs (and holds a query slot):
    closing the connection cancels it and frees the slot."""
    s = socket.create_connection(("127.0.0.1", http_port))
    s.sendall((f"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
               f"Content-Length: {len(sql)}\r\n\r\n{sql}").encode())
    wait_running(http_port, 1, "the slow query never started")
    return s
