"""Bulk loads into a table partitioned by symbol read the key column first and split every
other column among the partitions as it is converted (`grouped.rs`): COPY ... FROM a Parquet
file and `db.insert` of an Arrow table of 64Ki rows or more (smaller inserts are converted
whole, and must hold the same rows). The table then holds exactly the input's rows, as
DuckDB reads them: many row groups and batches, NULL keys, NULLs in every other column,
dictionary and plain strings, a column the input lacks, a second load whose rows land behind
the first's (late rows merged in), a deduplicating table, a durable database replayed from
its log, and a refused insert that changes nothing."""

import os
import subprocess
import sys

import duckdb
import pytest
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import zeptodb

ROWS = 70_000
# An insert of at least 64Ki rows is grouped as it is converted (`GROUPED_MIN_ROWS` in
# python/src/database.rs); a smaller one is converted whole and split by the table. Into a
# table that holds rows, from 192Ki rows (`GROUPED_MIN_ROWS_FILLED`): a smaller one is spread
# onto the partitions a chunk at a time.
GROUPED_INSERT = 100_000
GROUPED_INTO_FILLED = 250_000
COLUMNS = "ts, sym, px, size, note, venue, missing"
DDL = (
    "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, size BIGINT, note VARCHAR, "
    "venue SYMBOL, missing INTEGER)"
)


def data(seed: int, rows: int, t0: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    syms = np.array([f"S{k:03d}" for k in range(150)])
    sym = syms[rng.integers(0, len(syms), rows)].astype(object)
    sym[rng.random(rows) < 0.02] = None
    note = np.where(rng.random(rows) < 0.3, None, np.char.add("n", rng.integers(0, 500, rows).astype(str)))
    venue = np.array(["X", "Y", "Z", None], dtype=object)[rng.integers(0, 4, rows)]
    return pa.table(
        {
            # Not sorted: partitions sort what arrives out of time order.
            "ts": pa.array(t0 + rng.integers(0, 10**12, rows), pa.timestamp("ns")),
            "sym": pa.array(sym, pa.string()).dictionary_encode() if seed % 2 else pa.array(sym, pa.string()),
            "px": pa.array(rng.normal(100, 20, rows), mask=rng.random(rows) < 0.05),
            "size": pa.array(rng.integers(1, 1000, rows), pa.int64(), mask=rng.random(rows) < 0.01),
            "note": pa.array(note, pa.string()),
            "venue": pa.array(venue, pa.string()),
        }
    )


def write(path, table: pa.Table) -> str:
    pq.write_table(table, str(path), row_group_size=9_000)
    return str(path)


def differences(db, files: list[str], tables: tuple = ()) -> tuple[int, int, int]:
    """Rows of the table DuckDB's read of the files (and Arrow tables) lacks, and the other way
    round; rows."""
    ours = db.sql(f"SELECT {COLUMNS} FROM t").to_arrow()
    con = duckdb.connect()
    con.register("ours", ours)
    parts = [f"SELECT ts, sym, px, size, note, venue, NULL::INTEGER AS missing FROM read_parquet('{f}')" for f in files]
    for i, tab in enumerate(tables):
        con.register(f"input{i}", tab)
        parts.append(f"SELECT ts, sym, px, size, note, venue, NULL::INTEGER AS missing FROM input{i}")
    con.execute(f"CREATE TEMP VIEW ref AS {' UNION ALL '.join(parts)}")
    extra = con.sql("SELECT count(*) FROM (SELECT * FROM ours EXCEPT ALL SELECT * FROM ref)").fetchone()[0]
    missing = con.sql("SELECT count(*) FROM (SELECT * FROM ref EXCEPT ALL SELECT * FROM ours)").fetchone()[0]
    return extra, missing, ours.num_rows


def load_and_die(d, files: list[str], load: str) -> None:
    """A process that makes table `t` in the durable database `d`, runs `load` (Python, `f`
    a file's path) for each file and dies with no checkpoint: the log alone holds the rows."""
    script = (
        "import os, sys, pyarrow.parquet as pq, zeptodb\n"
        f"db = zeptodb.connect({str(d)!r})\n"
        f"db.execute({DDL!r})\n"
        f"for f in {files!r}:\n"
        f"    {load}\n"
        "sys.stdout.flush()\n"
        "os._exit(0)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=300)


def test_copy_from_parquet_holds_the_files_rows(tmp_path):
    files = [write(tmp_path / "a.parquet", data(1, ROWS, 10**12)), write(tmp_path / "b.parquet", data(2, ROWS, 0))]
    db = zeptodb.connect()
    db.execute(DDL)
    for f in files:
        db.execute(f"COPY t FROM '{f}'")
    assert differences(db, files) == (0, 0, 2 * ROWS)
    # Per symbol (a partition each), as many rows as the files have.
    per_sym = db.sql("SELECT sym, count(*) AS n FROM t GROUP BY sym ORDER BY sym").fetchall()
    con = duckdb.connect()
    union = " UNION ALL ".join(f"SELECT * FROM read_parquet('{f}')" for f in files)
    want = con.sql(f"SELECT sym, count(*) AS n FROM ({union}) GROUP BY sym ORDER BY sym").fetchall()
    assert [tuple(r) for r in per_sym] == want
    assert len(want) == 151, "every symbol and the NULL key"


def test_copy_from_parquet_is_replayed_from_the_log(tmp_path):
    """A process that loads and dies without a checkpoint: the log alone holds the rows."""
    files = [write(tmp_path / "a.parquet", data(3, ROWS, 0)), write(tmp_path / "b.parquet", data(4, ROWS, 5 * 10**11))]
    d = tmp_path / "db"
    load_and_die(d, files, "db.execute(f\"COPY t FROM '{f}'\")")
    assert not list((d / "checkpoint").glob("*.manifest")), "no checkpoint was written: the log is replayed"
    db = zeptodb.connect(d)
    assert differences(db, files) == (0, 0, 2 * ROWS)
    db.close()


def test_copy_from_parquet_into_a_deduplicating_table(tmp_path):
    f = write(tmp_path / "a.parquet", data(5, ROWS, 0))
    db = zeptodb.connect()
    db.execute(DDL)
    db.execute("ALTER TABLE t DEDUP ENABLE UPSERT KEYS(ts, sym)")
    db.execute(f"COPY t FROM '{f}'")
    db.execute(f"COPY t FROM '{f}'")
    con = duckdb.connect()
    want = con.sql(f"SELECT count(*) FROM (SELECT DISTINCT ts, sym FROM read_parquet('{f}'))").fetchone()[0]
    assert db.sql("SELECT count(*) AS n FROM t").fetchall()[0][0] == want


@pytest.mark.parametrize("sizes", [(GROUPED_INSERT, ROWS), (ROWS, GROUPED_INSERT), (ROWS, GROUPED_INTO_FILLED)])
def test_insert_of_arrow_tables_holds_their_rows(sizes):
    # The first insert grouped (into an empty table), the second converted whole (70k or 100k
    # rows into a table holding rows) or grouped (250k), its rows earlier in time than the
    # first's (merged in); the key dictionary-encoded in the first and plain in the second, so
    # each path sees both.
    first, second = data(7, sizes[0], 10**12), data(8, sizes[1], 0)
    db = zeptodb.connect()
    db.execute(DDL)
    # Many batches in the first.
    assert db.insert("t", pa.Table.from_batches(first.to_batches(max_chunksize=7_000))) == sizes[0]
    assert db.insert("t", second) == sizes[1]
    assert differences(db, [], (first, second)) == (0, 0, sum(sizes))


@pytest.mark.parametrize("good_rows", [10_000, GROUPED_INSERT])
def test_a_refused_insert_changes_nothing(good_rows):
    db = zeptodb.connect()
    db.execute(DDL)
    db.insert("t", data(9, 5_000, 0))
    before = db.sql(f"SELECT {COLUMNS} FROM t ORDER BY ALL").to_arrow()
    good = data(10, good_rows + 10_000, 0)
    # A later batch whose size does not fit BIGINT: the whole insert is refused.
    bad = good.slice(good_rows).set_column(3, "size", pa.array([2**63 + 5] * 10_000, pa.uint64()))
    with pytest.raises(zeptodb.Error):
        db.insert("t", pa.concat_tables([good.slice(0, good_rows).cast(bad.schema), bad]))
    assert db.sql(f"SELECT {COLUMNS} FROM t ORDER BY ALL").to_arrow().equals(before)


def wide(seed: int, rows: int, t0: int) -> pa.Table:
    """`data`'s rows over 3,000 symbols (a NULL key now and then)."""
    rng = np.random.default_rng(seed)
    sym = np.array([f"W{k:04d}" for k in range(3000)], dtype=object)[rng.integers(0, 3000, rows)]
    sym[rng.random(rows) < 0.01] = None
    return data(seed, rows, t0).set_column(1, "sym", pa.array(sym, pa.string()))


def test_thin_inserts_into_a_wide_table_hold_their_rows(tmp_path):
    """Inserts of a few rows a symbol into a table of thousands are deferred and split among
    the partitions later, many at once (`table/defer.rs`): every read sees all of them, and so
    does a process that replays the log they were written to and never split them."""
    files = [write(tmp_path / "w0.parquet", wide(20, 6_000, 0))]
    files += [write(tmp_path / f"w{i}.parquet", wide(21 + i, 2_000, i * 10**11)) for i in range(1, 13)]
    batches = [pq.read_table(f) for f in files]
    db = zeptodb.connect()
    db.execute(DDL)
    for i, b in enumerate(batches):
        assert db.insert("t", b) == b.num_rows
        if i % 5 == 4:
            assert differences(db, files[: i + 1]) == (0, 0, sum(x.num_rows for x in batches[: i + 1]))
    assert differences(db, files) == (0, 0, sum(x.num_rows for x in batches))

    d = tmp_path / "db"
    load_and_die(d, files, "db.insert('t', pq.read_table(f))")
    db = zeptodb.connect(d)
    assert differences(db, files) == (0, 0, sum(x.num_rows for x in batches))
    db.close()
