"""COPY ... TO a Parquet file: the writer cuts the result's batches (one per partition) into
row groups and encodes them on every core. DuckDB reads the file back, and its rows equal
what DuckDB computes from the same data: many partitions, NULLs, a result larger than a row
group, and a union whose NULL column takes its type from the other branch."""

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import zeptodb

ROWS = 1_300_000


def data(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    syms = np.array([f"S{k:03d}" for k in range(300)])
    px = rng.normal(100, 20, ROWS)
    note = np.where(rng.random(ROWS) < 0.3, None, np.char.add("n", rng.integers(0, 1000, ROWS).astype(str)))
    return pa.table(
        {
            "ts": pa.array(np.sort(rng.integers(0, 10**15, ROWS)), pa.timestamp("ns")),
            "sym": pa.array(syms[rng.integers(0, len(syms), ROWS)]).dictionary_encode(),
            "px": pa.array(px, mask=rng.random(ROWS) < 0.05),
            "size": pa.array(rng.integers(1, 1000, ROWS), pa.int64()),
            "note": pa.array(note, pa.string()),
        }
    )


def differences(con: duckdb.DuckDBPyConnection, path: str, query: str) -> tuple[int, int, int]:
    """Rows of the file DuckDB's answer lacks, and the other way round; the file's rows."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW ours AS SELECT * FROM read_parquet('{path}')")
    con.execute(f"CREATE OR REPLACE TEMP VIEW ref AS {query}")
    extra = con.sql("SELECT count(*) FROM (SELECT * FROM ours EXCEPT ALL SELECT * FROM ref)").fetchone()[0]
    missing = con.sql("SELECT count(*) FROM (SELECT * FROM ref EXCEPT ALL SELECT * FROM ours)").fetchone()[0]
    return extra, missing, con.sql("SELECT count(*) FROM ours").fetchone()[0]


def test_copy_to_parquet_reads_back_as_duckdb_computes(tmp_path):
    t = data(11)
    db = zeptodb.connect()
    assert db.insert("t", t, create=True) == ROWS
    con = duckdb.connect()
    con.register("t", t)
    queries = [
        "SELECT * FROM t",
        "SELECT ts, sym, px, note FROM t WHERE px > 120 OR px IS NULL",
        "SELECT sym, size FROM t WHERE size < 5 UNION ALL SELECT NULL, 7",
        "SELECT sym, count(*) AS n, sum(size) AS v FROM t GROUP BY sym",
        "SELECT * FROM t WHERE size < 0",
    ]
    for i, q in enumerate(queries):
        path = str(tmp_path / f"out{i}.parquet")
        db.sql(f"COPY ({q}) TO '{path}'")
        want = con.sql(f"SELECT count(*) FROM ({q})").fetchone()[0]
        assert differences(con, path, q) == (0, 0, want), q
    # The whole table: more than one row group, each at most the writer's 1,048,576 rows.
    groups = pq.ParquetFile(str(tmp_path / "out0.parquet")).metadata
    sizes = [groups.row_group(k).num_rows for k in range(groups.num_row_groups)]
    assert sum(sizes) == ROWS and len(sizes) >= 2 and max(sizes) <= 1 << 20, sizes
