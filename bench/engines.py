"""ZeptoDB and QuestDB as servers behind one interface, for the benchmarks that load the same
trades into both and query them alike (http_load.py, ingest_symbols.py, pg_wire.py, pg_copy.py,
questdb.py and, through it, views.py).

The interface: `name`, `port` (HTTP), `pid` (for RSS), `create()` the trades table, `count()`
its rows, the paths of ILP, CSV and a query on each server's HTTP door, `stop()`. ZeptoDB is a
`served.Server`; QuestDB is started and stopped here only, by bench/servers/questdb/questdb.sh
(its Maven Central jar; HTTP on 127.0.0.1:9000, PG wire 8812, ILP/TCP 9009). Standard library only.
"""
import json
import os
import subprocess
import urllib.parse
import urllib.request

from served import Server, post

HERE = os.path.dirname(os.path.abspath(__file__))
QUESTDB = os.path.join(HERE, "servers", "questdb", "questdb.sh")


class Zepto(Server):
    """`zeptodb serve --max-body-mb 1024` (`--in-memory` unless `data` is a directory)."""

    name = "zeptodb"

    def __init__(self, binary, threads=None, extra=(), data=None):
        extra = ["--max-body-mb", "1024", *extra] + (["--threads", str(threads)] if threads else [])
        super().__init__(binary, data, *extra)

    def sql(self, q):
        return post(self.port, "/", q.encode(), "text/plain")

    def create(self):
        self.sql("DROP TABLE IF EXISTS trades")
        self.sql("CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)")

    def count(self, table="trades"):
        return json.loads(self.sql(f"SELECT count(*) FROM {table}"))["data"][0][0]

    def ilp_path(self):
        return "/write?precision=ns"

    def csv_path(self):
        return "/write?table=trades&format=csv"

    def query_path(self, q):
        return "/?query=" + urllib.parse.quote(q)

    def stop(self, timeout=30):
        super().stop(timeout)


class QuestDB:
    """QuestDB 9 through bench/servers/questdb/questdb.sh: started here, stopped by `stop()`."""

    name = "questdb"

    def __init__(self):
        subprocess.run([QUESTDB, "start"], check=True, stdout=subprocess.DEVNULL)
        self.port = 9000
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "zepto-questdb", "questdb.pid")) as f:
            self.pid = int(f.read().strip())

    def sql(self, q):
        with urllib.request.urlopen(f"http://127.0.0.1:9000/exec?query={urllib.parse.quote(q)}") as r:
            return r.read()

    def create(self):
        self.sql("DROP TABLE IF EXISTS trades")
        self.sql("CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size LONG) "
                 "TIMESTAMP(ts) PARTITION BY DAY WAL")

    def count(self):
        return json.loads(self.sql("SELECT count() FROM trades"))["dataset"][0][0]

    def ilp_path(self):
        return "/write?precision=n"

    def csv_path(self):
        return None

    def query_path(self, q):
        return "/exec?query=" + urllib.parse.quote(q)

    def stop(self):
        subprocess.run([QUESTDB, "stop"], check=False, stdout=subprocess.DEVNULL)
