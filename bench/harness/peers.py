#!/usr/bin/env python3
"""Time-series peer benchmark: DuckDB, Polars, chDB (embedded ClickHouse), pandas,
and ZeptoDB itself (engines "zeptodb" in-process and "zeptodb-http" via its server).

Every engine loads trades/quotes (see gen_data.py) into in-memory tables and
runs the same logical queries:

  Q1   range filter: sym='S042' AND ts > 15:00 (last hour of the session)
  Q2   avg(price), max(size), count(*) GROUP BY sym
  Q3a  1-minute OHLCV bars for one symbol (S042)
  Q3b  1-minute OHLCV bars for all symbols (GROUP BY sym, bucket)
  Q4   ASOF LEFT JOIN: each trade + latest quote of same sym with q.ts <= t.ts
  Q5   per-symbol EMA of price, alpha = 2/(100+1), y0 = x0 (kdb+ `ema`,
       pandas adjust=False), one output row per trade
  Q6   window join: per trade, avg(bid) of same-sym quotes with
       ts in [t.ts - 1s, t.ts + 1s]   (kdb+ wj1 semantics)
  Q7   VWAP: sum(price*size)/sum(size) GROUP BY sym
  X1   SELECT * FROM trades -> pandas DataFrame
  X2   SELECT * FROM trades -> Arrow table
  Q8a  ingest: append --ingest-rows trade rows in batches of 10,000
  Q8b  ingest: append 10,000 rows one row at a time

Engine "polars-by-sym" is Polars with its load followed by
`partition_by("sym")` (the frames per symbol kept beside the tables): the
same work as a load into ZeptoDB's symbol-partitioned tables, for a like-for-
like load time (`--engines polars,polars-by-sym,zeptodb --queries Q1`); its
Q8a likewise ends with the appended frame split by symbol. Its queries are
Polars' own, over the unpartitioned frames.

Timing: each query runs once as warm-up, then up to --iters times (fewer if a
query is slow, see --budget; a query whose warm-up alone took longer than the
budget is measured by that one cold run, marked "1 cold"); median and p99 of
time.perf_counter_ns are reported.  The timed region includes materialising the
result as the engine's natural Python object (DuckDB: pyarrow.Table, chDB: pandas.DataFrame via its
native DataFrame path, Polars: pl.DataFrame, pandas: pd.DataFrame).

Correctness: outside the timed region every result is converted to Arrow and
summarised as (row count, per-column sums); the parent compares engines and
reports mismatches.  Timestamps are summed as int64 epoch-ns (wrapping), NULLs
count as 0.

Each engine runs in its own child process, so peak RSS (ru_maxrss) is per
engine.  Example:

  python peers.py --rows 1000000 --iters 30 --json results_1m.json
  python peers.py --rows 10000000 --queries Q2,Q3a,Q3b,Q4 --iters 10
"""
import argparse
import gc
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = ["duckdb", "polars", "chdb", "pandas"]
QUERIES = ["Q1", "Q2", "Q3a", "Q3b", "Q4", "Q5", "Q6", "Q7", "X1", "X2", "X3",
           "Q8a", "Q8b"]

# X3: an ASOF join with a condition between the sides that is part of the match (DuckDB's
# semantics: the latest quote at least 5 cents under the trade). DuckDB plans it as a nested
# loop per symbol; Polars, chDB and pandas have no such join.
X3_SQL = """SELECT t.ts, t.sym, t.price, q.bid
            FROM trades t ASOF LEFT JOIN quotes q
              ON t.sym = q.sym AND t.ts >= q.ts AND t.price - q.bid > 0.05"""

SYM = "S042"
LAST_HOUR = "2024-01-02 15:00:00"          # session close 16:00 minus 1 hour
ALPHA = 2.0 / (100 + 1)
WINDOW_NS = 1_000_000_000                  # Q6 half-window: 1 second
INGEST_BATCH = 10_000
INGEST_SINGLE_ROWS = 10_000

TRADE_COLS = ["ts", "sym", "price", "size"]


def spill_dir():
    """Where DuckDB may spill: one directory per run in the system temp dir."""
    return tempfile.mkdtemp(prefix="zepto-bench-duckdb-")


# --------------------------------------------------------------------------
# DuckDB
# --------------------------------------------------------------------------
class DuckDBEngine:
    name = "duckdb"

    # Q5: DuckDB has no recursive/EMA window function.  Exact closed form:
    #   y_t = a*S_t + (1-a)^(t+1)*x_0,  S_t = sum_{i<=t} (1-a)^(t-i) x_i
    # S_t is computed with plain window sums.  To avoid overflow of
    # (1-a)^-i, rows are cut into blocks of K rows per symbol; terms older
    # than the previous block weigh < (1-a)^K ~ e^-40, below double epsilon.
    EMA_K = int(math.ceil(40.0 / -math.log(1.0 - ALPHA)))

    SQL = {
        "Q1": f"""SELECT * FROM trades
                  WHERE sym = '{SYM}' AND ts > TIMESTAMP '{LAST_HOUR}'""",
        "Q2": """SELECT sym, avg(price) AS avg_price, max(size) AS max_size,
                        count(*) AS n
                 FROM trades GROUP BY sym""",
        "Q3a": f"""SELECT time_bucket(INTERVAL 1 minute, ts) AS bucket,
                          arg_min(price, ts) AS open, max(price) AS high,
                          min(price) AS low, arg_max(price, ts) AS close,
                          sum(size) AS volume
                   FROM trades WHERE sym = '{SYM}' GROUP BY bucket""",
        "Q3b": """SELECT sym, time_bucket(INTERVAL 1 minute, ts) AS bucket,
                         arg_min(price, ts) AS open, max(price) AS high,
                         min(price) AS low, arg_max(price, ts) AS close,
                         sum(size) AS volume
                  FROM trades GROUP BY sym, bucket""",
        "Q4": """SELECT t.ts, t.sym, t.price, t.size, q.bid, q.ask
                 FROM trades t ASOF LEFT JOIN quotes q
                   ON t.sym = q.sym AND t.ts >= q.ts""",
        "Q5": f"""
            WITH r AS (
              SELECT ts, sym, price,
                     row_number() OVER w - 1 AS rn,
                     first_value(price) OVER w AS p0
              FROM trades WINDOW w AS (PARTITION BY sym ORDER BY ts)),
            b AS (
              SELECT *, rn // {EMA_K} AS blk, rn % {EMA_K} AS off,
                     price * pow({1 - ALPHA!r}, -(rn % {EMA_K})) AS v
              FROM r),
            c AS (
              SELECT *, sum(v) OVER (PARTITION BY sym, blk ORDER BY rn
                                     ROWS UNBOUNDED PRECEDING) AS cs
              FROM b),
            prev AS (SELECT sym, blk + 1 AS blk, sum(v) AS tot
                     FROM b GROUP BY sym, blk)
            SELECT c.ts, c.sym, c.price,
                   {ALPHA!r} * pow({1 - ALPHA!r}, c.off)
                     * (c.cs + pow({1 - ALPHA!r}, {EMA_K})
                               * coalesce(prev.tot, 0))
                   + pow({1 - ALPHA!r}, c.rn + 1) * c.p0 AS ema
            FROM c LEFT JOIN prev USING (sym, blk)""",
        # Q6: no native window join; prefix sums over quotes + two ASOF joins:
        #   avg = (cum(t+1s, inclusive) - cum(t-1s, exclusive)) / count diff
        "Q6": f"""
            WITH qc AS (
              SELECT sym, epoch_ns(ts) AS qts,
                     sum(bid) OVER w AS cum_bid, count(*) OVER w AS cum_n
              FROM quotes
              WINDOW w AS (PARTITION BY sym ORDER BY ts
                           ROWS UNBOUNDED PRECEDING)),
            t AS (SELECT ts, sym, price, epoch_ns(ts) AS tns FROM trades)
            SELECT t.ts, t.sym, t.price,
                   (hi.cum_bid - coalesce(lo.cum_bid, 0))
                     / nullif(hi.cum_n - coalesce(lo.cum_n, 0), 0) AS avg_bid
            FROM t
            ASOF LEFT JOIN qc hi
              ON t.sym = hi.sym AND t.tns + {WINDOW_NS} >= hi.qts
            ASOF LEFT JOIN qc lo
              ON t.sym = lo.sym AND t.tns - {WINDOW_NS} > lo.qts""",
        "Q7": """SELECT sym, sum(price * size) / sum(size) AS vwap
                 FROM trades GROUP BY sym""",
        "X2": "SELECT * FROM trades",
        "X3": X3_SQL,
    }

    def __init__(self):
        import duckdb
        self.duckdb = duckdb
        self.version = duckdb.__version__
        self.con = duckdb.connect()
        # Spill under the system temp dir, not `.tmp/` in the working directory: a peer killed
        # mid-query (out of memory at 100M rows) leaves its spill files behind.
        self.con.execute(f"SET temp_directory = '{spill_dir()}'")

    def threads(self):
        return int(self.con.sql("SELECT current_setting('threads')").fetchall()[0][0])

    def load(self, data_dir):
        for t in ("trades", "quotes"):
            self.con.execute(f"CREATE TABLE {t} AS SELECT * FROM "
                             f"read_parquet('{data_dir}/{t}.parquet')")

    def query(self, qid):
        if qid == "X1":
            return self.con.sql("SELECT * FROM trades").df()
        return self.con.sql(self.SQL[qid]).to_arrow_table()

    def to_arrow(self, res):
        return pa.Table.from_pandas(res) if not isinstance(res, pa.Table) else res

    # ingestion -------------------------------------------------------------
    def ingest_setup(self):
        self.con.execute("DROP TABLE IF EXISTS ingest")
        self.con.execute("CREATE TABLE ingest (ts TIMESTAMP_NS, sym VARCHAR, "
                         "price DOUBLE, size BIGINT)")

    def ingest_batches(self, batches):         # list of pyarrow Tables
        for b in batches:
            self.con.from_arrow(b).insert_into("ingest")

    def ingest_rows(self, rows):                # list of tuples
        # DuckDB binds Python datetimes at microsecond precision, so the
        # pd.Timestamp is bound as int64 ns and converted in SQL.
        sql = "INSERT INTO ingest VALUES (make_timestamp_ns(?), ?, ?, ?)"
        for ts, sym, price, size in rows:
            self.con.execute(sql, (ts.value, sym, price, size))

    def ingest_result(self):
        return self.con.sql("SELECT * FROM ingest").to_arrow_table()


# --------------------------------------------------------------------------
# chDB (embedded ClickHouse), Memory engine tables
# --------------------------------------------------------------------------
class ChDBEngine:
    name = "chdb"
    _b = 1.0 / -math.log(1.0 - ALPHA)       # decay unit: e^(-1/_b) = 1 - a

    SQL = {
        "Q1": f"""SELECT * FROM trades
                  WHERE sym = '{SYM}' AND ts > toDateTime64('{LAST_HOUR}', 9)""",
        "Q2": """SELECT sym, avg(price) AS avg_price, max(size) AS max_size,
                        count() AS n
                 FROM trades GROUP BY sym""",
        "Q3a": f"""SELECT toStartOfMinute(ts) AS bucket,
                          argMin(price, ts) AS open, max(price) AS high,
                          min(price) AS low, argMax(price, ts) AS close,
                          sum(size) AS volume
                   FROM trades WHERE sym = '{SYM}' GROUP BY bucket""",
        "Q3b": """SELECT sym, toStartOfMinute(ts) AS bucket,
                         argMin(price, ts) AS open, max(price) AS high,
                         min(price) AS low, argMax(price, ts) AS close,
                         sum(size) AS volume
                  FROM trades GROUP BY sym, bucket""",
        "Q4": """SELECT t.ts, t.sym, t.price, t.size, q.bid, q.ask
                 FROM trades AS t ASOF LEFT JOIN quotes AS q
                   ON t.sym = q.sym AND t.ts >= q.ts""",
        # Q5: exponentialTimeDecayedSum(b)(x, t) over a running frame gives
        #   S_t = sum_{i<=t} e^{-(t-i)/b} x_i = sum (1-a)^(t-i) x_i
        #   with t = row number; then y_t = a*S_t + (1-a)^(t+1)*x_0.
        "Q5": f"""
            SELECT ts, sym, price,
                   {ALPHA!r} * exponentialTimeDecayedSum({_b!r})(price, rn) OVER w
                   + pow({1 - ALPHA!r}, rn + 1) * first_value(price) OVER w AS ema
            FROM (SELECT ts, sym, price,
                         toFloat64(row_number() OVER (PARTITION BY sym
                                                      ORDER BY ts) - 1) AS rn
                  FROM trades)
            WINDOW w AS (PARTITION BY sym ORDER BY ts
                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)""",
        # Q6: prefix sums over quotes + two ASOF joins (no native window join)
        "Q6": f"""
            WITH qc AS (
              SELECT sym, ts AS qts,
                     sum(bid) OVER w AS cum_bid, count() OVER w AS cum_n
              FROM quotes
              WINDOW w AS (PARTITION BY sym ORDER BY ts
                           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
            SELECT t.ts AS ts, t.sym AS sym, t.price AS price,
                   (hi.cum_bid - lo.cum_bid)
                     / nullIf(hi.cum_n - lo.cum_n, 0) AS avg_bid
            FROM (SELECT ts, sym, price,
                         ts + toIntervalNanosecond({WINDOW_NS}) AS ts_hi,
                         ts - toIntervalNanosecond({WINDOW_NS}) AS ts_lo
                  FROM trades) AS t
            ASOF LEFT JOIN qc AS hi ON t.sym = hi.sym AND t.ts_hi >= hi.qts
            ASOF LEFT JOIN qc AS lo ON t.sym = lo.sym AND t.ts_lo > lo.qts""",
        "Q7": """SELECT sym, sum(price * size) / sum(size) AS vwap
                 FROM trades GROUP BY sym""",
        "X1": "SELECT * FROM trades",
    }

    def __init__(self):
        import chdb
        self.chdb = chdb
        self.version = f"{chdb.__version__} (ClickHouse {chdb.engine_version})"
        self.con = chdb.connect(":memory:")
        self.con.query("SET session_timezone = 'UTC'")

    def threads(self):
        return int(self.con.query("SELECT getSetting('max_threads')", "CSV")
                   .bytes().decode().strip().strip('"'))

    def load(self, data_dir):
        self.con.query("CREATE TABLE trades (ts DateTime64(9), sym String, "
                       "price Float64, size Int64) ENGINE = Memory")
        self.con.query("CREATE TABLE quotes (ts DateTime64(9), sym String, "
                       "bid Float64, ask Float64, bid_size Int64, "
                       "ask_size Int64) ENGINE = Memory")
        for t in ("trades", "quotes"):
            self.con.query(f"INSERT INTO {t} SELECT * FROM "
                           f"file('{data_dir}/{t}.parquet', Parquet)")

    def query(self, qid):
        if qid == "X2":
            return self.con.query("SELECT * FROM trades", "ArrowTable")
        return self.con.query(self.SQL[qid], "DataFrame")

    def to_arrow(self, res):
        return res if isinstance(res, pa.Table) else pa.Table.from_pandas(res)

    def ingest_setup(self):
        self.con.query("DROP TABLE IF EXISTS ingest")
        self.con.query("CREATE TABLE ingest (ts DateTime64(9), sym String, "
                       "price Float64, size Int64) ENGINE = Memory")

    def ingest_batches(self, batches):
        for b in batches:  # Python(b): chDB reads the local pyarrow Table
            self.con.query("INSERT INTO ingest SELECT * FROM Python(b)")

    def ingest_rows(self, rows):
        sql = ("INSERT INTO ingest VALUES ({ts:DateTime64(9)}, {sym:String}, "
               "{price:Float64}, {size:Int64})")
        for ts, sym, price, size in rows:
            self.con.query(sql, "CSV", params={"ts": ts, "sym": sym,
                                               "price": price, "size": size})

    def ingest_result(self):
        return self.con.query("SELECT * FROM ingest", "ArrowTable")


# --------------------------------------------------------------------------
# Polars (eager DataFrames in memory, lazy queries)
# --------------------------------------------------------------------------
class PolarsEngine:
    name = "polars"

    def __init__(self):
        import warnings
        import polars as pl
        self.pl = pl
        self.version = pl.__version__
        # join_asof cannot verify per-group sortedness; the data is ts-sorted
        warnings.filterwarnings("ignore", message="Sortedness of columns")

    def threads(self):
        return self.pl.thread_pool_size()

    def load(self, data_dir):
        self.trades = self.pl.read_parquet(f"{data_dir}/trades.parquet")
        self.quotes = self.pl.read_parquet(f"{data_dir}/quotes.parquet")

    def _bars(self, lf, by):
        pl = self.pl
        return (lf.group_by(by + [pl.col("ts").dt.truncate("1m").alias("bucket")])
                .agg(open=pl.col("price").first(), high=pl.col("price").max(),
                     low=pl.col("price").min(), close=pl.col("price").last(),
                     volume=pl.col("size").sum()))

    def query(self, qid):
        pl = self.pl
        t = self.trades.lazy()
        last_hour = pl.lit(LAST_HOUR).str.to_datetime(time_unit="ns")
        if qid == "Q1":
            q = t.filter((pl.col("sym") == SYM) & (pl.col("ts") > last_hour))
        elif qid == "Q2":
            q = t.group_by("sym").agg(avg_price=pl.col("price").mean(),
                                      max_size=pl.col("size").max(),
                                      n=pl.len())
        elif qid == "Q3a":   # rows stay in ts order inside each group
            q = self._bars(t.filter(pl.col("sym") == SYM), [])
        elif qid == "Q3b":
            q = self._bars(t, ["sym"])
        elif qid == "Q4":
            q = t.join_asof(self.quotes.lazy().select("ts", "sym", "bid", "ask"),
                            on="ts", by="sym", strategy="backward")
        elif qid == "Q5":
            q = t.select("ts", "sym", "price",
                         ema=pl.col("price").ewm_mean(alpha=ALPHA, adjust=False)
                         .over("sym"))
        elif qid == "Q6":   # prefix sums + two as-of joins
            w = pl.duration(nanoseconds=WINDOW_NS)
            qc = (self.quotes.lazy()
                  .select("sym", qts="ts",
                          cb=pl.col("bid").cum_sum().over("sym"),
                          cn=pl.int_range(1, pl.len() + 1).over("sym")))
            q = (t.select("ts", "sym", "price", hi_ts=pl.col("ts") + w,
                          lo_ts=pl.col("ts") - w)
                 .join_asof(qc.rename({"qts": "hts", "cb": "hb", "cn": "hn"}),
                            left_on="hi_ts", right_on="hts", by="sym",
                            strategy="backward")
                 .join_asof(qc.rename({"qts": "lts", "cb": "lb", "cn": "ln"}),
                            left_on="lo_ts", right_on="lts", by="sym",
                            strategy="backward", allow_exact_matches=False)
                 .select("ts", "sym", "price",
                         avg_bid=(pl.col("hb") - pl.col("lb").fill_null(0))
                         / (pl.col("hn") - pl.col("ln").fill_null(0))
                         .replace(0, None)))
        elif qid == "Q7":
            q = t.group_by("sym").agg(
                vwap=(pl.col("price") * pl.col("size")).sum() / pl.col("size").sum())
        elif qid == "X1":
            return self.trades.to_pandas()
        elif qid == "X2":
            return self.trades.to_arrow()
        else:
            # X3: Polars' join_asof takes no condition between the sides.
            raise NotImplementedError(f"{qid} has no Polars form")
        return q.collect()

    def to_arrow(self, res):
        if isinstance(res, pa.Table):
            return res
        if isinstance(res, self.pl.DataFrame):
            return res.to_arrow()
        return pa.Table.from_pandas(res)

    def ingest_setup(self):
        self.ingest = None

    def ingest_batches(self, batches):
        pl = self.pl
        df = pl.from_arrow(batches[0])
        for b in batches[1:]:
            df.vstack(pl.from_arrow(b), in_place=True)   # appends a chunk
        self.ingest = df.rechunk()

    def ingest_rows(self, rows):
        # Polars converts Python datetimes at microsecond precision, so the
        # pd.Timestamp is passed as int64 ns and cast once at the end.
        pl = self.pl
        schema = {"ts": pl.Int64, "sym": pl.String,
                  "price": pl.Float64, "size": pl.Int64}
        df = pl.DataFrame(schema=schema)
        for ts, sym, price, size in rows:
            df.vstack(pl.DataFrame([(ts.value, sym, price, size)],
                                   schema=schema, orient="row"), in_place=True)
        self.ingest = df.rechunk().with_columns(
            pl.col("ts").cast(pl.Datetime("ns")))

    def ingest_result(self):
        return self.ingest.to_arrow()


# --------------------------------------------------------------------------
# pandas (single-threaded reference)
# --------------------------------------------------------------------------
class PandasEngine:
    name = "pandas"

    def __init__(self):
        import pandas as pd
        self.pd = pd
        self.version = pd.__version__

    def threads(self):
        return 1

    def load(self, data_dir):
        self.trades = self.pd.read_parquet(f"{data_dir}/trades.parquet")
        self.quotes = self.pd.read_parquet(f"{data_dir}/quotes.parquet")

    @staticmethod
    def _bars(g):
        return g["price"].agg(["first", "max", "min", "last"]).set_axis(
            ["open", "high", "low", "close"], axis=1).assign(
            volume=g["size"].sum())

    def query(self, qid):
        pd, t = self.pd, self.trades
        if qid == "Q1":
            return t[(t["sym"] == SYM) & (t["ts"] > pd.Timestamp(LAST_HOUR))]
        if qid == "Q2":
            return t.groupby("sym").agg(avg_price=("price", "mean"),
                                        max_size=("size", "max"),
                                        n=("price", "size")).reset_index()
        if qid in ("Q3a", "Q3b"):
            src = t[t["sym"] == SYM] if qid == "Q3a" else t
            keys = [] if qid == "Q3a" else [src["sym"]]
            g = src.groupby(keys + [src["ts"].dt.floor("1min").rename("bucket")],
                            sort=False)
            return self._bars(g).reset_index()
        if qid == "Q4":
            return pd.merge_asof(t, self.quotes[["ts", "sym", "bid", "ask"]],
                                 on="ts", by="sym", direction="backward")
        if qid == "Q5":
            ema = (t.groupby("sym", sort=False)["price"]
                   .ewm(alpha=ALPHA, adjust=False).mean()
                   .reset_index(level=0, drop=True))
            return t[["ts", "sym", "price"]].assign(ema=ema)
        if qid == "Q6":   # prefix sums + two merge_asof
            q = self.quotes
            g = q.groupby("sym", sort=False)
            qc = pd.DataFrame({"qts": q["ts"], "sym": q["sym"],
                               "cb": g["bid"].cumsum(),
                               "cn": g.cumcount() + 1})
            w = pd.Timedelta(WINDOW_NS, "ns")
            x = t[["ts", "sym", "price"]].assign(hi_ts=t["ts"] + w,
                                                 lo_ts=t["ts"] - w)
            x = pd.merge_asof(x, qc, left_on="hi_ts", right_on="qts", by="sym")
            x = pd.merge_asof(x, qc, left_on="lo_ts", right_on="qts", by="sym",
                              allow_exact_matches=False, suffixes=("", "_lo"))
            n = (x["cn"] - x["cn_lo"].fillna(0)).where(lambda s: s > 0)
            return x[["ts", "sym", "price"]].assign(
                avg_bid=(x["cb"] - x["cb_lo"].fillna(0)) / n)
        if qid == "Q7":
            pv = (t["price"] * t["size"]).groupby(t["sym"]).sum()
            return (pv / t.groupby("sym")["size"].sum()).rename("vwap").reset_index()
        if qid == "X1":
            return t          # already a DataFrame (reported as ~0)
        if qid == "X2":
            return pa.Table.from_pandas(t, preserve_index=False)
        raise KeyError(qid)

    def to_arrow(self, res):
        if isinstance(res, pa.Table):
            return res
        return pa.Table.from_pandas(res, preserve_index=False)

    def ingest_setup(self):
        self.ingest = self.pd.DataFrame({
            "ts": self.pd.Series(dtype="datetime64[ns]"),
            "sym": self.pd.Series(dtype="str"),
            "price": self.pd.Series(dtype="float64"),
            "size": self.pd.Series(dtype="int64")})

    def ingest_batches(self, batches):   # each append materialises the table
        df = self.ingest
        for b in batches:
            df = self.pd.concat([df, b.to_pandas()], ignore_index=True)
        self.ingest = df

    def ingest_rows(self, rows):
        df = self.ingest
        for r in rows:
            df.loc[len(df)] = r
        self.ingest = df

    def ingest_result(self):
        return self.to_arrow(self.ingest)


class PolarsBySymEngine(PolarsEngine):
    """Polars, each table also split by symbol as it loads (module docs)."""
    name = "polars-by-sym"

    def load(self, data_dir):
        super().load(data_dir)
        self.by_sym = {t: getattr(self, t).partition_by("sym", as_dict=True)
                       for t in ("trades", "quotes")}

    def ingest_batches(self, batches):
        super().ingest_batches(batches)
        self.ingest_by_sym = self.ingest.partition_by("sym", as_dict=True)


ENGINE_CLASSES = {c.name: c for c in
                  (DuckDBEngine, PolarsEngine, PolarsBySymEngine, ChDBEngine,
                   PandasEngine)}


# --------------------------------------------------------------------------
# measurement helpers
# --------------------------------------------------------------------------
def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def checksum(table):
    """(rows, {column: sum}) with NULL -> 0; timestamps as wrapping int64 ns."""
    sums = {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        typ = col.type
        if pa.types.is_timestamp(typ):
            col = col.cast(pa.timestamp("ns", typ.tz)).cast(pa.int64())
        elif pa.types.is_date(typ):
            continue
        elif not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
            continue
        arr = col.fill_null(0).to_numpy(zero_copy_only=False)
        if arr.dtype.kind == "f":
            sums[name] = float(np.nansum(arr))
        else:
            sums[name] = int(arr.astype(np.int64).sum(dtype=np.int64))
    return {"rows": table.num_rows, "sums": sums}


def timed(fn, iters, budget_s):
    """Warm-up once, then run up to `iters` times within ~budget_s seconds. A query whose
    warm-up alone took longer than the budget (DuckDB's X3 at 1M rows: a nested loop per
    symbol) is not run again: that one cold run is its measurement and its result the one
    verified, so a slow peer bounds the run instead of taking five times its slowest query."""
    t0 = time.perf_counter_ns()
    res = fn()
    first = time.perf_counter_ns() - t0
    if first > budget_s * 1e9:
        ms = first / 1e6
        return res, {"iters": 1, "median_ms": ms, "p99_ms": ms, "min_ms": ms, "warmup_ms": ms, "cold": True}
    n = max(3, min(iters, int(budget_s * 1e9 / max(first, 1))))
    samples = []
    gc.collect()
    for _ in range(n):
        t0 = time.perf_counter_ns()
        res = fn()
        samples.append(time.perf_counter_ns() - t0)
        del res
    res = fn()   # keep one result for verification (not timed)
    ms = np.array(samples) / 1e6
    return res, {"iters": n, "median_ms": float(np.median(ms)),
                 "p99_ms": float(np.percentile(ms, 99)),
                 "min_ms": float(ms.min()), "warmup_ms": first / 1e6}


# --------------------------------------------------------------------------
# child: run one engine
# --------------------------------------------------------------------------
def run_engine(name, args):
    import pyarrow.parquet as pq
    base_rss = rss_mib()
    eng = ENGINE_CLASSES[name]()
    out = {"engine": name, "version": eng.version, "threads": eng.threads(),
           "queries": {}, "checks": {}, "errors": {}}
    t0 = time.perf_counter()
    eng.load(args.data)
    out["load_s"] = time.perf_counter() - t0
    gc.collect()
    out["rss_after_load_mib"] = rss_mib()
    out["rss_before_engine_mib"] = base_rss

    for qid in [q for q in args.queries if not q.startswith("Q8")]:
        try:
            res, stats = timed(lambda: eng.query(qid), args.iters, args.budget)
            out["queries"][qid] = stats
            out["checks"][qid] = checksum(eng.to_arrow(res))
            del res
        except Exception as e:  # report and continue
            out["errors"][qid] = f"{type(e).__name__}: {e}"[:500]
        gc.collect()
        log(f"  {name:7s} {qid:4s} " + (
            f"median {out['queries'][qid]['median_ms']:10.2f} ms"
            if qid in out["queries"] else "ERROR " + out["errors"][qid][:200]))

    if any(q.startswith("Q8") for q in args.queries):
        src = pq.read_table(f"{args.data}/trades.parquet",
                            columns=TRADE_COLS)
        n_batch = min(args.ingest_rows, src.num_rows)
        batches = [src.slice(i, min(INGEST_BATCH, n_batch - i))
                   for i in range(0, n_batch, INGEST_BATCH)]
        rows = [tuple(r.values()) for r in
                src.slice(0, INGEST_SINGLE_ROWS).to_pylist()]
        jobs = {"Q8a": (eng.ingest_batches, batches, n_batch),
                "Q8b": (eng.ingest_rows, rows, len(rows))}
        for qid in [q for q in args.queries if q.startswith("Q8")]:
            fn, data, n = jobs[qid]
            try:
                secs = []
                reps = args.ingest_reps if qid == "Q8a" else 1
                for _ in range(reps):
                    eng.ingest_setup()
                    gc.collect()
                    t0 = time.perf_counter_ns()
                    fn(data)
                    secs.append((time.perf_counter_ns() - t0) / 1e9)
                s = float(np.median(secs))
                out["queries"][qid] = {"iters": reps, "median_ms": s * 1e3,
                                       "p99_ms": max(secs) * 1e3,
                                       "rows": n, "rows_per_s": n / s}
                out["checks"][qid] = checksum(eng.ingest_result())
                log(f"  {name:7s} {qid:4s} {n / s:14,.0f} rows/s")
            except Exception as e:
                out["errors"][qid] = f"{type(e).__name__}: {e}"[:500]
                log(f"  {name:7s} {qid:4s} ERROR {out['errors'][qid][:200]}")
    out["peak_rss_mib"] = peak_rss_mib()
    if hasattr(eng, "server_peak_rss_mib"):
        out["server_peak_rss_mib"] = eng.server_peak_rss_mib()
    if hasattr(eng, "close"):
        eng.close()
    return out


# --------------------------------------------------------------------------
# ZeptoDB: the same queries in its SQL dialect (the product spec, §3), through the
# HTTP door (engine "zeptodb-http", results as Arrow IPC) or the in-process
# Python package (engine "zeptodb", SPEC §4).  The HTTP engine talks to
# $ZEPTO_URL, or starts `zeptodb serve` itself from $ZEPTO_BIN (default
# target/release/zeptodb under the current directory) on a free loopback port;
# the server's peak RSS is then reported as server_peak_rss_mib.
# --------------------------------------------------------------------------
ZEPTO_SQL = {
    "Q1": f"""SELECT * FROM trades
              WHERE sym = '{SYM}' AND ts > TIMESTAMP '{LAST_HOUR}'""",
    "Q2": """SELECT sym, avg(price) AS avg_price, max(size) AS max_size,
                    count(*) AS n
             FROM trades GROUP BY sym""",
    "Q3a": f"""SELECT xbar(INTERVAL '1 minute', ts) AS bucket,
                      first(price) AS open, max(price) AS high,
                      min(price) AS low, last(price) AS close,
                      sum(size) AS volume
               FROM trades WHERE sym = '{SYM}' GROUP BY bucket""",
    "Q3b": """SELECT sym, xbar(INTERVAL '1 minute', ts) AS bucket,
                     first(price) AS open, max(price) AS high,
                     min(price) AS low, last(price) AS close,
                     sum(size) AS volume
              FROM trades GROUP BY sym, bucket""",
    "Q4": """SELECT t.ts, t.sym, t.price, t.size, q.bid, q.ask
             FROM trades t ASOF LEFT JOIN quotes q
               ON t.sym = q.sym AND t.ts >= q.ts""",
    "Q5": """SELECT ts, sym, price,
                    ema(price, 100) OVER (PARTITION BY sym ORDER BY ts) AS ema
             FROM trades""",
    "Q6": """SELECT t.ts, t.sym, t.price, avg(q.bid) AS avg_bid
             FROM trades t WINDOW JOIN quotes q
               ON t.sym = q.sym
              AND q.ts BETWEEN t.ts - INTERVAL '1 second'
                           AND t.ts + INTERVAL '1 second'""",
    "Q7": """SELECT sym, vwap(price, size) AS vwap FROM trades GROUP BY sym""",
    "X1": "SELECT * FROM trades",
    "X2": "SELECT * FROM trades",
    "X3": X3_SQL,
}
ZEPTO_DDL = {
    "trades": "CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)",
    "quotes": "CREATE TABLE quotes (ts TIMESTAMP, sym SYMBOL, bid DOUBLE, ask DOUBLE, "
              "bid_size BIGINT, ask_size BIGINT)",
    "ingest": "CREATE TABLE ingest (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)",
}


def _plain_strings(table):
    """Dictionary/large string columns as plain utf8, for a simple ingest body."""
    cols = []
    for c in table.columns:
        if pa.types.is_dictionary(c.type) or pa.types.is_large_string(c.type):
            c = c.cast(pa.string())
        cols.append(c)
    return pa.table(cols, names=table.column_names)


class ZeptoHttpEngine:
    name = "zeptodb-http"

    def __init__(self):
        import shutil
        import urllib.request
        self._req = urllib.request
        self.server = None
        self.key = os.environ.get("ZEPTO_API_KEY")
        self.url = os.environ.get("ZEPTO_URL")
        if not self.url:
            binary = os.environ.get("ZEPTO_BIN") or os.path.abspath("target/release/zeptodb")
            if not os.path.exists(binary):
                binary = shutil.which("zeptodb") or binary
            self.tmp = tempfile.mkdtemp(prefix="zepto-bench-")
            # bench/served.py starts it, the access log on as `serve` has it by default.
            sys.path.insert(0, os.path.dirname(HERE))
            from served import Server
            self.server = Server(binary, self.tmp, access_log="-")
            self.url = self.server.url
        self.version = self._get("/ping").decode().strip() or "?"

    def _call(self, path, body, ctype):
        req = self._req.Request(self.url + path, data=body, method="POST",
                                headers={"Content-Type": ctype})
        if self.key:
            req.add_header("Authorization", f"Bearer {self.key}")
        with self._req.urlopen(req, timeout=600) as r:
            return r.read()

    def _get(self, path):
        with self._req.urlopen(self.url + path, timeout=30) as r:
            return r.read()

    def sql(self, text, arrow=False):
        out = self._call("/?format=arrow" if arrow else "/", text.encode(), "text/plain")
        return pa.ipc.open_stream(out).read_all() if arrow else out

    def _write(self, table_name, table):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        self._call(f"/write?table={table_name}&format=arrow", sink.getvalue().to_pybytes(),
                   "application/vnd.apache.arrow.stream")

    def threads(self):
        return "server"

    def load(self, data_dir):
        import pyarrow.parquet as pq
        for t in ("trades", "quotes"):
            self.sql(f"DROP TABLE IF EXISTS {t}")
            self.sql(ZEPTO_DDL[t])
            self._write(t, _plain_strings(pq.read_table(f"{data_dir}/{t}.parquet")))

    def query(self, qid):
        res = self.sql(ZEPTO_SQL[qid], arrow=True)
        return res.to_pandas() if qid == "X1" else res

    def to_arrow(self, res):
        return res if isinstance(res, pa.Table) else pa.Table.from_pandas(res)

    def ingest_setup(self):
        self.sql("DROP TABLE IF EXISTS ingest")
        self.sql(ZEPTO_DDL["ingest"])

    def ingest_batches(self, batches):
        for b in batches:
            self._write("ingest", _plain_strings(b))

    def ingest_rows(self, rows):
        for ts, sym, price, size in rows:
            self.sql(f"INSERT INTO ingest VALUES ({ts.value}, '{sym}', {price!r}, {size})")

    def ingest_result(self):
        return self.sql("SELECT * FROM ingest", arrow=True)

    def server_peak_rss_mib(self):
        if not self.server:
            return None
        try:
            return self.server.rss_mib("VmHWM")
        except OSError:
            return None

    def close(self):
        if self.server:
            self.server.stop(timeout=10)


class ZeptoPyEngine:
    """The in-process package: zeptodb.connect() (SPEC §4)."""
    name = "zeptodb"

    def __init__(self):
        import zeptodb
        self.db = zeptodb.connect()
        self.version = getattr(zeptodb, "__version__", "?")

    def threads(self):
        return os.cpu_count()

    def load(self, data_dir):
        import pyarrow.parquet as pq
        for t in ("trades", "quotes"):
            self.db.execute(ZEPTO_DDL[t])
            # The engine's own Parquet reader, as DuckDB and Polars use theirs.
            self.db.execute(f"COPY {t} FROM '{os.path.abspath(data_dir)}/{t}.parquet'")

    def query(self, qid):
        r = self.db.sql(ZEPTO_SQL[qid])
        return r.to_pandas() if qid == "X1" else r.to_arrow()

    def to_arrow(self, res):
        return res if isinstance(res, pa.Table) else pa.Table.from_pandas(res)

    def ingest_setup(self):
        self.db.execute("DROP TABLE IF EXISTS ingest")
        self.db.execute(ZEPTO_DDL["ingest"])

    def ingest_batches(self, batches):
        for b in batches:
            self.db.insert("ingest", b)  # the batch as it is, as DuckDB gets it

    def ingest_rows(self, rows):
        for ts, sym, price, size in rows:
            self.db.execute(f"INSERT INTO ingest VALUES ({ts.value}, '{sym}', {price!r}, {size})")

    def ingest_result(self):
        return self.db.sql("SELECT * FROM ingest").to_arrow()


ENGINE_CLASSES.update({c.name: c for c in (ZeptoHttpEngine, ZeptoPyEngine)})


# --------------------------------------------------------------------------
# parent: orchestrate, verify, report
# --------------------------------------------------------------------------
def log(msg):
    print(msg, file=sys.stderr, flush=True)


def compare(results, rtol):
    """List of mismatch strings; the first engine with a result is reference."""
    problems = []
    qids = sorted({q for r in results for q in r["checks"]},
                  key=lambda q: QUERIES.index(q))
    for qid in qids:
        have = [(r["engine"], r["checks"][qid]) for r in results
                if qid in r["checks"]]
        ref_name, ref = have[0]
        for name, chk in have[1:]:
            if chk["rows"] != ref["rows"]:
                problems.append(f"{qid}: rows {name}={chk['rows']} "
                                f"vs {ref_name}={ref['rows']}")
            for col, v in chk["sums"].items():
                if col not in ref["sums"]:
                    continue
                r = ref["sums"][col]
                if isinstance(v, float) or isinstance(r, float):
                    ok = math.isclose(v, r, rel_tol=rtol, abs_tol=1e-6)
                else:
                    ok = v == r
                if not ok:
                    problems.append(f"{qid}.{col}: {name}={v!r} "
                                    f"vs {ref_name}={r!r}")
    return problems


def report(results, problems):
    engines = [r["engine"] for r in results]
    qids = [q for q in QUERIES if any(q in r["queries"] for r in results)]
    lines = ["", "engine         version                         threads  load_s  "
             "rss_load_MiB  peak_rss_MiB"]
    for r in results:
        lines.append(f"{r['engine']:14s} {str(r['version'])[:28]:28s} {str(r['threads']):>7s} "
                     f"{r['load_s']:7.2f} {r['rss_after_load_mib']:13.0f} "
                     f"{r['peak_rss_mib']:13.0f}")
    lines += ["", "median / p99 ms (Q8: rows/s)",
              "query  " + "".join(f"{e:>22s}" for e in engines)]
    for q in qids:
        cells = []
        for r in results:
            s = r["queries"].get(q)
            if s is None:
                cells.append("ERROR" if q in r["errors"] else "-")
            elif q.startswith("Q8"):
                cells.append(f"{s['rows_per_s']:,.0f}/s")
            else:
                cold = " (1 cold)" if s.get("cold") else ""
                cells.append(f"{s['median_ms']:.2f} / {s['p99_ms']:.2f}{cold}")
        lines.append(f"{q:6s} " + "".join(f"{c:>22s}" for c in cells))
    ours = [r for r in results if r["engine"].startswith("zeptodb")]
    peers = [r for r in results if not r["engine"].startswith("zeptodb")]
    if ours and peers:
        lines += ["", "ZeptoDB vs best peer (time ratio; < 1 is faster; Q8: rows/s ratio, > 1 is faster)"]
        for r in ours:
            if r.get("server_peak_rss_mib"):
                lines.append(f"  {r['engine']} server peak RSS {r['server_peak_rss_mib']:.0f} MiB")
            for q in qids:
                mine = r["queries"].get(q)
                theirs = [(p["queries"][q], p["engine"]) for p in peers if q in p["queries"]]
                if not mine or not theirs:
                    continue
                if q.startswith("Q8"):
                    best, who = max(theirs, key=lambda t: t[0]["rows_per_s"])
                    ratio = mine["rows_per_s"] / best["rows_per_s"]
                else:
                    best, who = min(theirs, key=lambda t: t[0]["median_ms"])
                    ratio = mine["median_ms"] / best["median_ms"] if best["median_ms"] else float("inf")
                cold = ", one cold run" if mine.get("cold") or best.get("cold") else ""
                lines.append(f"  {r['engine']:12s} {q:4s} {ratio:8.3f}  (best peer: {who}{cold})")
    lines.append("")
    for r in results:
        for q, e in r["errors"].items():
            lines.append(f"ERROR {r['engine']} {q}: {e}")
    lines.append("verification: " + ("all engines agree" if not problems else
                                     f"{len(problems)} mismatch(es)"))
    lines += [f"  MISMATCH {p}" for p in problems]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--symbols", type=int, default=100)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--data", help="data dir (default $TMPDIR/zepto-bench-data/<rows>;"
                    " generated if missing)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--budget", type=float, default=20.0,
                    help="max seconds of timed runs per query (reduces iters; a warm-up longer than "
                         "this is the query's only, cold, run)")
    ap.add_argument("--ingest-rows", type=int, default=1_000_000)
    ap.add_argument("--ingest-reps", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--json", help="write all results to this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.engines = [e for e in args.engines.split(",") if e]
    args.queries = [q for q in args.queries.split(",") if q]
    for e in args.engines:
        if e not in ENGINE_CLASSES:
            ap.error(f"unknown engine {e}")
    for q in args.queries:
        if q not in QUERIES:
            ap.error(f"unknown query {q}")
    args.data = args.data or os.path.join(tempfile.gettempdir(), "zepto-bench-data", str(args.rows))

    if args.child:   # internal: one engine, JSON to the given file
        res = run_engine(args.child, args)
        with open(args.json, "w") as f:
            json.dump(res, f)
        return

    if not all(os.path.exists(f"{args.data}/{t}.parquet")
               for t in ("trades", "quotes")):
        sys.path.insert(0, HERE)
        import gen_data
        log(f"generating {args.rows:,} rows into {args.data}")
        gen_data.write(args.data, *gen_data.generate(args.rows, args.symbols,
                                                     args.seed))

    results = []
    for e in args.engines:
        log(f"== {e}")
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", e,
                   "--json", tmp.name, "--data", args.data,
                   "--queries", ",".join(args.queries),
                   "--iters", str(args.iters), "--budget", str(args.budget),
                   "--ingest-rows", str(args.ingest_rows),
                   "--ingest-reps", str(args.ingest_reps)]
            rc = subprocess.run(cmd).returncode
            if rc != 0:
                log(f"!! {e} child exited with {rc}")
                continue
            with open(tmp.name) as f:
                results.append(json.load(f))

    problems = compare(results, args.rtol)
    print(report(results, problems))
    if args.json:
        meta = {"rows": args.rows, "data": args.data, "iters": args.iters,
                "budget_s": args.budget, "python": platform.python_version(),
                "machine": {"cpus": os.cpu_count(),
                            "mem_gib": round(os.sysconf("SC_PAGE_SIZE")
                                             * os.sysconf("SC_PHYS_PAGES")
                                             / 2**30, 1),
                            "platform": platform.platform()},
                "pyarrow": pa.__version__, "numpy": np.__version__}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results,
                       "mismatches": problems}, f, indent=1)


if __name__ == "__main__":
    main()
