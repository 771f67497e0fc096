"""COPY over the PostgreSQL door with psycopg 3's `cursor.copy()`: a million generated rows in
(CSV written in blocks) and out again, checked against DuckDB loading the same text; rows
adapted by `write_row` (PostgreSQL's text format, with every character it escapes) and read
back typed; a bad line, or a client that gives up, stores nothing."""

import datetime as dt
import random

import duckdb
import psycopg
import pytest

from conftest import pg_connect

T0 = dt.datetime(2024, 1, 2, 9, 30)


def million_csv(n):
    """`n` rows of (ts, sym, px, qty) as CSV text: symbols with commas and quotes, NULL prices."""
    rnd = random.Random(5)
    syms = ["AAPL", "BRK,B", 'Q"X', "MSFT", "ZZ Z"]
    quoted = {s: ('"' + s.replace('"', '""') + '"' if ("," in s or '"' in s) else s) for s in syms}
    lines = []
    for i in range(n):
        ts = T0 + dt.timedelta(microseconds=i * 997)
        px = "" if rnd.random() < 0.03 else f"{rnd.uniform(1, 900):.4f}"
        lines.append(f"{ts.isoformat(' ')},{quoted[rnd.choice(syms)]},{px},{rnd.randrange(1, 5000)}\n")
    return "".join(lines)


SUMMARY = ("SELECT sym, count(*), count(px), sum(qty), round(sum(px), 4), min(ts), max(ts) "
           "FROM {t} GROUP BY sym ORDER BY sym")


def test_a_million_rows_in_and_out_match_duckdb(pg_port, tmp_path):
    text = million_csv(1_000_000)
    with pg_connect(pg_port) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE big (ts TIMESTAMP, sym SYMBOL, px DOUBLE, qty BIGINT)")
        with cur.copy("COPY big FROM STDIN (FORMAT csv)") as cp:
            data = text.encode()
            for i in range(0, len(data), 1 << 20):
                cp.write(data[i:i + (1 << 20)])
        assert cur.rowcount == 1_000_000
        ours = cur.execute(SUMMARY.format(t="big")).fetchall()
        out = bytearray()
        with cur.copy("COPY (SELECT ts, sym, px, qty FROM big) TO STDOUT WITH (FORMAT csv, HEADER)") as cp:
            for block in cp:
                out += block
        assert cur.rowcount == 1_000_000
    src, back = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(text)
    back.write_bytes(bytes(out))
    con = duckdb.connect()
    types = {"ts": "TIMESTAMP", "sym": "VARCHAR", "px": "DOUBLE", "qty": "BIGINT"}
    quoting = "quote='\"', escape='\"'"
    con.execute(f"CREATE TABLE big AS SELECT * FROM read_csv('{src}', header=false, {quoting}, columns={types})")
    con.execute(f"CREATE TABLE back AS SELECT * FROM read_csv('{back}', header=true, {quoting}, columns={types})")
    assert [tuple(r) for r in ours] == con.execute(SUMMARY.format(t="big")).fetchall()
    # Every row came back out exactly (as a multiset), NULLs and quoted symbols included.
    diff = con.execute("SELECT count(*) FROM ((SELECT * FROM big EXCEPT ALL SELECT * FROM back) "
                       "UNION ALL (SELECT * FROM back EXCEPT ALL SELECT * FROM big))").fetchone()[0]
    assert diff == 0


def test_write_row_escapes_every_special_character(pg_port):
    rnd = random.Random(9)
    alphabet = ["a", "\t", "\n", "\r", "\\", "\\N", ",", '"', "é", " ", "|"]
    rows = []
    for i in range(3000):
        s = None if i % 11 == 0 else "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 6)))
        rows.append((T0 + dt.timedelta(milliseconds=i), s, None if i % 7 == 0 else rnd.uniform(-1e6, 1e6), i))
    with pg_connect(pg_port) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE esc (ts TIMESTAMP, s VARCHAR, x DOUBLE, n BIGINT)")
        with cur.copy("COPY esc (ts, s, x, n) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
        assert cur.rowcount == len(rows)
        assert cur.execute("SELECT ts, s, x, n FROM esc ORDER BY n").fetchall() == rows
        with cur.copy("COPY (SELECT ts, s, x, n FROM esc ORDER BY n) TO STDOUT") as cp:
            cp.set_types(["timestamp", "text", "float8", "int8"])
            assert list(cp.rows()) == rows


def test_a_bad_line_or_a_copy_given_up_stores_nothing(pg_port):
    with pg_connect(pg_port) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE safe (ts TIMESTAMP, n BIGINT)")
        lines = [f"2024-01-02 09:30:00,{i}\n" for i in range(10_000)]
        lines[6_789] = "2024-01-02 09:30:00,six\n"
        with pytest.raises(psycopg.Error) as bad:
            with cur.copy("COPY safe FROM STDIN (FORMAT csv)") as cp:
                cp.write("".join(lines))
        assert bad.value.sqlstate == "22P04"
        assert "line 6790, column n" in str(bad.value)
        with pytest.raises(ZeroDivisionError):
            with cur.copy("COPY safe FROM STDIN (FORMAT csv)") as cp:
                cp.write("".join(lines[:100]))
                1 / 0
        with pytest.raises(psycopg.Error) as last:
            cur.execute("COPY safe FROM STDIN; SELECT 1")
        assert last.value.sqlstate == "0A000"
        assert cur.execute("SELECT count(*) FROM safe").fetchone()[0] == 0
        # The connection is as good as new.
        with cur.copy("COPY safe FROM STDIN (FORMAT csv)") as cp:
            cp.write("".join(lines[:100]))
        assert cur.execute("SELECT count(*), sum(n) FROM safe").fetchone() == (100, sum(range(100)))
