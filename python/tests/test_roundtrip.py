"""Every column type, with NULLs and extremes, in through pandas, Polars and dicts of NumPy
arrays and out through to_pandas, to_polars and to_numpy; bad rows anywhere in an insert;
views shared between results and kept through concurrent writes, DELETEs and collections."""

import datetime as dt
import gc
import math
import threading
import time

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import zeptodb

I64 = (-(2**63), 2**63 - 1)
I32 = (-(2**31), 2**31 - 1)
DDL = (
    "CREATE TABLE every (ts TIMESTAMP, d DATE, i INTEGER, r REAL, s SYMBOL, v VARCHAR, "
    "b BOOLEAN, n BIGINT, x DOUBLE)"
)
# Rows as Python values: extremes, NULLs in every column, empty and non-ASCII strings, a
# sub-microsecond time, the earliest and latest DATE of a timestamp's range.
ROWS = [
    dict(ts=1, d=dt.date(1970, 1, 1), i=I32[0], r=1.5, s="sym", v="", b=True, n=I64[0], x=-math.inf),
    dict(
        ts=1_700_000_000_123_456_789, d=dt.date(2262, 4, 11), i=I32[1], r=-0.25, s="ü 漢", v="漢字 ok",
        b=False, n=I64[1], x=1e-300,
    ),
    dict(ts=None, d=None, i=None, r=None, s=None, v=None, b=None, n=None, x=None),
    dict(
        ts=-1, d=dt.date(1677, 9, 22), i=0, r=math.inf, s="", v="x" * 1000, b=True, n=0, x=1.7976931348623157e308,
    ),
]
COLS = list(ROWS[0])


def arrow_table() -> pa.Table:
    col = lambda k: [r[k] for r in ROWS]  # noqa: E731
    return pa.table(
        {
            "ts": pa.array(col("ts"), pa.timestamp("ns")),
            "d": pa.array(col("d"), pa.date32()),
            "i": pa.array(col("i"), pa.int32()),
            "r": pa.array(col("r"), pa.float32()),
            "s": pa.array(col("s")).dictionary_encode(),
            "v": pa.array(col("v"), pa.string()),
            "b": pa.array(col("b"), pa.bool_()),
            "n": pa.array(col("n"), pa.int64()),
            "x": pa.array(col("x"), pa.float64()),
        }
    )


def pandas_frame() -> pd.DataFrame:
    """What a pandas user holds: nullable extension dtypes, categoricals, NaT."""
    col = lambda k: [r[k] for r in ROWS]  # noqa: E731
    return pd.DataFrame(
        {
            "ts": pd.array([pd.NaT if v is None else pd.Timestamp(v) for v in col("ts")], dtype="datetime64[ns]"),
            "d": col("d"),  # datetime.date objects: pyarrow reads date32
            "i": pd.array(col("i"), dtype="Int32"),
            "r": pd.array(col("r"), dtype="Float32"),
            "s": pd.Categorical(col("s")),
            "v": pd.array(col("v"), dtype="string"),
            "b": pd.array(col("b"), dtype="boolean"),
            "n": pd.array(col("n"), dtype="Int64"),
            "x": pd.array(col("x"), dtype="Float64"),
        }
    )


def polars_frame() -> pl.DataFrame:
    col = lambda k: [r[k] for r in ROWS]  # noqa: E731
    return pl.DataFrame(
        {
            "ts": pl.Series(col("ts"), dtype=pl.Int64).cast(pl.Datetime("ns")),
            "d": pl.Series(col("d"), dtype=pl.Date),
            "i": pl.Series(col("i"), dtype=pl.Int32),
            "r": pl.Series(col("r"), dtype=pl.Float32),
            "s": pl.Series(col("s"), dtype=pl.Categorical),
            "v": pl.Series(col("v"), dtype=pl.String),
            "b": pl.Series(col("b"), dtype=pl.Boolean),
            "n": pl.Series(col("n"), dtype=pl.Int64),
            "x": pl.Series(col("x"), dtype=pl.Float64),
        }
    )


def numpy_dict() -> dict:
    """NumPy has no NULL but NaT and None in object arrays: the NULL row's numbers are
    left out (a column the data lacks is NULL) by inserting them separately."""
    col = lambda k: [r[k] for r in ROWS]  # noqa: E731
    return {
        "ts": np.array([np.datetime64("NaT") if v is None else np.datetime64(v, "ns") for v in col("ts")]),
        "d": np.array([np.datetime64("NaT") if v is None else np.datetime64(v, "D") for v in col("d")]),
        "s": np.array(col("s"), dtype=object),
        "v": np.array(col("v"), dtype=object),
    }


def canon(v):
    """One Python form per value, whichever library it comes from: timestamps as integer ns
    (Polars' datetimes hold microseconds), dates as ``datetime.date``, NULL, NaN and NaT as
    None."""
    if v is None or v is pd.NaT or v is pd.NA:
        return None
    if isinstance(v, np.datetime64):
        if np.isnat(v):
            return None
        return int(v.astype("int64")) if np.datetime_data(v.dtype)[0] == "ns" else v.astype(object)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, pd.Timestamp):
        return v.value
    if isinstance(v, dt.datetime):
        delta = v - dt.datetime(1970, 1, 1)
        return ((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds) * 1000
    return v


def assert_rows(where, got: dict):
    """``got``: column → list of values in ROWS order."""
    for k in COLS:
        want = [canon(r[k]) for r in ROWS]
        g = [canon(v) for v in got[k]]
        if k == "ts" and where.endswith("polars"):
            assert g == [None if w is None else w // 1000 * 1000 for w in want], (where, k, g)  # µs
        else:
            assert g == want, (where, k, g, want)


def read_back(db, table):
    """The table through to_pandas, to_polars and to_numpy, in ROWS order (by the row's key in
    `i`, NULLs last)."""
    r = db.sql(f"SELECT {', '.join(COLS)} FROM {table} ORDER BY i NULLS LAST")
    order = sorted(range(len(ROWS)), key=lambda k: (ROWS[k]["i"] is None, ROWS[k]["i"] or 0))
    unsort = [order.index(k) for k in range(len(ROWS))]

    def rows_of(columns):
        return {k: [columns[k][j] for j in unsort] for k in columns}

    out = {}
    # pandas: the default mapping (SYMBOL categorical, timestamps datetime64[ns], integers with
    # NULLs as float64) and Arrow-backed columns (exact).
    df = r.to_pandas()
    assert isinstance(df["s"].dtype, pd.CategoricalDtype) and df["ts"].dtype == "datetime64[ns]"
    out["pandas"] = rows_of({k: list(df[k].astype(object)) for k in COLS})
    exact = r.to_pandas(types_mapper=pd.ArrowDtype)
    out["pandas arrow"] = rows_of({k: exact[k].tolist() for k in COLS})
    p = r.to_polars()
    assert p.schema["ts"] == pl.Datetime("ns") and p.schema["s"] == pl.Categorical
    out["polars"] = rows_of({k: p.get_column(k).to_list() for k in COLS})
    # Nanoseconds through Polars, exactly.
    out["polars ns"] = {**out["polars"], "ts": rows_of({"ts": p.get_column("ts").cast(pl.Int64).to_list()})["ts"]}
    arrays = r.to_numpy()
    assert arrays["ts"].dtype == np.dtype("datetime64[ns]") and arrays["n"].dtype == np.float64  # NULL → NaN
    out["numpy"] = rows_of({k: list(arrays[k]) for k in COLS})
    return out


def check_all(db, table):
    for where, got in read_back(db, table).items():
        if where == "pandas" or where == "numpy":
            # Integers with a NULL become float64 (NaN): the extremes are then as exact as a
            # double is.
            for k in ("i", "n"):
                want = [None if r[k] is None else float(r[k]) for r in ROWS]
                assert [canon(v) for v in got[k]] == want, (where, k)
            got = {**got, "i": [r["i"] for r in ROWS], "n": [r["n"] for r in ROWS]}
        assert_rows(f"{table} {where}", got)


@pytest.fixture
def db():
    d = zeptodb.connect()
    yield d
    d.close()


def test_every_type_in_through_pandas_and_out_everywhere(db):
    db.execute(DDL.replace("every", "pd_in"))
    assert db.insert("pd_in", pandas_frame()) == len(ROWS)
    check_all(db, "pd_in")
    # create=True from pandas makes the same types.
    assert db.insert("pd_made", pandas_frame(), create=True) == len(ROWS)
    assert db.sql("SELECT * FROM pd_made").to_arrow().schema == db.sql("SELECT * FROM pd_in").to_arrow().schema
    check_all(db, "pd_made")


def test_every_type_in_through_polars_and_out_everywhere(db):
    db.execute(DDL.replace("every", "pl_in"))
    assert db.insert("pl_in", polars_frame()) == len(ROWS)
    check_all(db, "pl_in")
    assert db.insert("pl_made", polars_frame(), create=True) == len(ROWS)
    check_all(db, "pl_made")


def test_every_type_in_through_a_dict_of_numpy_arrays(db):
    db.execute(DDL.replace("every", "np_in"))
    nulls = [k for k, r in enumerate(ROWS) if r["i"] is None]
    full = [k for k in range(len(ROWS)) if k not in nulls]
    d = numpy_dict()
    # Numbers have no NULL in NumPy: the rows with them go in one insert; the NULL row is the
    # other, without those columns (a table column the data lacks is NULL).
    numbers = {
        "i": np.array([ROWS[k]["i"] for k in full], np.int32),
        "r": np.array([ROWS[k]["r"] for k in full], np.float32),
        "b": np.array([ROWS[k]["b"] for k in full], np.bool_),
        "n": np.array([ROWS[k]["n"] for k in full], np.int64),
        "x": np.array([ROWS[k]["x"] for k in full], np.float64),
    }
    assert db.insert("np_in", {**{k: v[full] for k, v in d.items()}, **numbers}) == len(full)
    assert db.insert("np_in", {k: v[nulls] for k, v in d.items()}) == len(nulls)
    check_all(db, "np_in")
    # NaT is NULL; NaN is a value (NumPy cannot say NULL for a float).
    db.execute("CREATE TABLE nan (x DOUBLE, ts TIMESTAMP)")
    db.insert("nan", {"x": np.array([np.nan, 1.0]), "ts": np.array(["NaT", "2024-01-01"], "datetime64[ns]")})
    assert db.sql("SELECT count(x), count(ts) FROM nan").fetchone() == (2, 1)
    assert np.isnan(db.sql("SELECT x FROM nan").to_numpy()["x"]).sum() == 1


def batches_with_a_bad_row(n_batches=3, rows=100, bad_at=(2, 37)):
    """A stream of `n_batches` batches of `rows`, whose batch `bad_at[0]` has a BIGINT out of
    range at row `bad_at[1]` (0-based)."""
    out = []
    for k in range(n_batches):
        n = np.arange(k * rows, (k + 1) * rows, dtype=np.uint64)
        if k == bad_at[0]:
            n[bad_at[1]] = 2**63 + 7
        out.append(
            pa.record_batch(
                {
                    "ts": pa.array(np.arange(k * rows, (k + 1) * rows).astype("datetime64[ns]")),
                    "s": pa.array([f"new{k}"] * rows),
                    "n": pa.array(n, pa.uint64()),
                }
            )
        )
    return pa.Table.from_batches(out)


def test_a_bad_value_in_a_later_batch_changes_nothing_and_names_its_row(db):
    db.execute("CREATE TABLE t (ts TIMESTAMP, s SYMBOL, n BIGINT) TIMESTAMP(ts)")
    db.insert("t", {"ts": np.array([5], "datetime64[ns]"), "s": np.array(["old"], object), "n": np.array([1])})
    before = db.sql("SELECT count(*), sum(n), count(DISTINCT s) FROM t").fetchone()
    symbols = db.sql("SELECT s FROM t").to_arrow().column("s").chunk(0).dictionary.to_pylist()
    bad = batches_with_a_bad_row()
    assert bad.column("n").num_chunks == 3
    for data in (bad, pl.from_arrow(bad, rechunk=False), bad.to_pandas()):
        with pytest.raises(zeptodb.IngestError) as e:
            db.insert("t", data)
        # 1-based, counted over the whole stream: batch 3, row 38.
        assert e.value.row == 2 * 100 + 38, (type(data), e.value.row, str(e.value))
        assert e.value.code == "INGEST"
        assert db.sql("SELECT count(*), sum(n), count(DISTINCT s) FROM t").fetchone() == before
        # No symbol of the failed rows was added to the table's dictionary either.
        assert db.sql("SELECT s FROM t").to_arrow().column("s").chunk(0).dictionary.to_pylist() == symbols
    # A dict of NumPy arrays with the bad value in its last row.
    n = np.arange(50, dtype=np.uint64)
    n[-1] = 2**64 - 1
    with pytest.raises(zeptodb.IngestError) as e:
        db.insert("t", {"ts": np.arange(50).astype("datetime64[ns]"), "n": n})
    assert e.value.row == 50
    assert db.sql("SELECT count(*), sum(n), count(DISTINCT s) FROM t").fetchone() == before


def test_two_results_of_one_batch_share_numpy_memory(db):
    db.execute("CREATE TABLE one (ts TIMESTAMP, x DOUBLE, n BIGINT) TIMESTAMP(ts)")
    n = 10_000
    x = np.random.default_rng(1).normal(size=n)
    db.insert("one", {"ts": np.arange(n).astype("datetime64[ns]"), "x": x, "n": np.arange(n)})
    a, b = db.sql("SELECT ts, x, n FROM one"), db.sql("SELECT ts, x, n FROM one")
    assert a._src.num_batches == b._src.num_batches == 1
    na, nb = a.to_numpy(), b.to_numpy()
    for k in ("ts", "x", "n"):
        assert np.shares_memory(na[k], nb[k]), k
        assert np.shares_memory(na[k], a.to_numpy()[k]), k  # and two calls on one result
        assert na[k].ctypes.data == a._src.buffer_address(0, ["ts", "x", "n"].index(k))


def test_symbol_codes_are_the_tables_own_buffer_in_every_result(db):
    db.execute("CREATE TABLE syms (ts TIMESTAMP, s SYMBOL, x DOUBLE) TIMESTAMP(ts)")
    rng = np.random.default_rng(2)
    db.insert(
        "syms",
        {
            "ts": np.arange(5000).astype("datetime64[ns]"),
            "s": rng.choice(["AAPL", "MSFT", "ÉTÉ", ""], 5000).astype(object),
            "x": rng.normal(size=5000),
        },
    )
    r1, r2 = db.sql("SELECT s, x FROM syms"), db.sql("SELECT x, s FROM syms")
    c1, c2 = r1.to_arrow().column("s"), r2.to_arrow().column("s")
    assert c1.num_chunks == c2.num_chunks == r1._src.num_batches  # a partition per symbol
    for k in range(c1.num_chunks):
        k1, k2 = c1.chunk(k).indices, c2.chunk(k).indices
        assert k1.type == pa.int32()
        assert k1.buffers()[1].address == k2.buffers()[1].address
        assert k1.buffers()[1].address == r1._src.buffer_address(k, 0) == r2._src.buffer_address(k, 1)
    # Through pandas the categorical's codes are the same values (pandas keeps its own copy).
    codes = r1.to_pandas()["s"].cat.codes.to_numpy()
    tensors = [np.from_dlpack(r2.tensor("s", k)) for k in range(c2.num_chunks)]
    assert np.array_equal(codes, np.concatenate(tensors))


def test_views_keep_their_values_under_writes_deletes_and_collections():
    d = zeptodb.connect()
    d.execute("CREATE TABLE live (ts TIMESTAMP, s SYMBOL, x DOUBLE, n BIGINT) TIMESTAMP(ts) PARTITION BY s")
    rng = np.random.default_rng(3)

    def chunk(n, base):
        return {
            "ts": (base + np.arange(n)).astype("datetime64[ns]"),
            "s": np.array(["A"] * n, object),
            "x": rng.normal(size=n),
            "n": base + np.arange(n),
        }

    d.insert("live", chunk(20_000, 0))
    stop, errors = threading.Event(), []

    def writer():
        base = 1_000_000
        try:
            while not stop.is_set():
                d.insert("live", chunk(2000, base))
                base += 2000
                d.execute("DELETE FROM live WHERE x > 1.5")
                d.execute("UPDATE live SET x = x + 1 WHERE n % 7 = 0")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def collector():
        while not stop.is_set():
            gc.collect()
            junk = [np.ones(50_000) for _ in range(20)]  # reuse whatever memory was freed
            del junk

    threads = [threading.Thread(target=writer), threading.Thread(target=collector)]
    for t in threads:
        t.start()
    kept = []
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline or len(kept) < 10:
            r = d.sql("SELECT x, n FROM live")
            views = {
                "numpy": r.to_numpy()["x"],
                "chunks": r.column_chunks("n"),
                "dlpack": np.from_dlpack(r.tensor("x")),
                "arrow": r.to_arrow().column("n"),
            }
            copies = {
                "numpy": views["numpy"].copy(),
                "chunks": [c.copy() for c in views["chunks"]],
                "dlpack": views["dlpack"].copy(),
                "arrow": views["arrow"].to_pylist(),
            }
            del r
            kept.append((views, copies))
            for v, c in kept[-20:]:
                assert np.array_equal(v["numpy"], c["numpy"])
                assert np.array_equal(v["dlpack"], c["dlpack"])
            time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    d.execute("DROP TABLE live")
    d.close()
    del d
    gc.collect()
    for views, copies in kept:
        assert np.array_equal(views["numpy"], copies["numpy"])
        assert np.array_equal(views["dlpack"], copies["dlpack"])
        assert all(np.array_equal(a, b) for a, b in zip(views["chunks"], copies["chunks"]))
        assert views["arrow"].to_pylist() == copies["arrow"]
