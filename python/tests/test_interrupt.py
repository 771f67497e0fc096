"""Ctrl-C (SIGINT) cancels a statement running on the main thread: KeyboardInterrupt at once,
not when the statement would have ended, and the database answers afterwards."""

import signal
import subprocess
import sys
import textwrap
import time

SCRIPT = textwrap.dedent(
    """
    import time
    import numpy as np
    import zeptodb
    d = zeptodb.connect(query_timeout=120)
    d.execute("CREATE TABLE t (x DOUBLE)")
    d.insert("t", {"x": np.arange(200_000, dtype="float64")})
    print("ready", flush=True)
    t0 = time.monotonic()
    try:
        d.sql("SELECT count(*) FROM t a WHERE a.x > (SELECT avg(b.x) FROM t b WHERE b.x < a.x)")
        print("finished", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted {time.monotonic() - t0:.3f}", flush=True)
    print(d.sql("SELECT count(*) FROM t").fetchone()[0], flush=True)
    """
)


def test_ctrl_c_cancels_a_main_thread_statement():
    p = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    waited = time.monotonic() - sent
    lines = out.split()
    assert lines[0] == "interrupted", (out, err)
    assert lines[-1] == "200000", (out, err)
    # The 200,000 correlated subqueries would take minutes; the interrupt ends them at once.
    assert waited < 10, waited
