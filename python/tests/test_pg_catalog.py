"""The PostgreSQL catalogs and the SQL clients write against them, through the PostgreSQL door:
regular-expression matches and quantified comparisons (`= ANY (ARRAY[...])`, `> ALL (...)`)
checked against DuckDB on generated rows; `pg_catalog` joined the way drivers join it agreeing
with `information_schema`; object-id casts both ways; psycopg's type lookup and SQLAlchemy's
schema, table and view listings answered from the catalogs, not from canned text."""

import json
import random

import duckdb
import psycopg
import pytest
import sqlalchemy
from psycopg.types import TypeInfo

from conftest import API_KEY, pg_connect


@pytest.fixture(scope="module")
def words(pg_port):
    """400 generated rows (s, x): words of a small alphabet in mixed case, NULLs among both."""
    rnd = random.Random(3)
    rows = []
    for _ in range(400):
        s = None if rnd.random() < 0.05 else "".join(rnd.choice("aAbB.x_1") for _ in range(rnd.randrange(0, 7)))
        x = None if rnd.random() < 0.05 else rnd.randrange(-5, 6)
        rows.append((s, x))
    with pg_connect(pg_port) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE words (s VARCHAR, x INTEGER)")
        with cur.copy("COPY words FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE words (s VARCHAR, x INTEGER)")
    oracle.executemany("INSERT INTO words VALUES (?, ?)", rows)
    return oracle


PATTERNS = ["^a", "b$", "a.b", "^[ab]+$", r"\.", "x_?1", "A", "(ab|ba)", "^$", "1{2,}"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regular_expression_matches_agree_with_duckdb(pg_port, words, pattern):
    ours_sql = ("SELECT sum(CASE WHEN s ~ %(p)s THEN 1 ELSE 0 END), sum(CASE WHEN s ~* %(p)s THEN 1 ELSE 0 END), "
                "sum(CASE WHEN s !~ %(p)s THEN 1 ELSE 0 END), sum(CASE WHEN s OPERATOR(pg_catalog.~) %(p)s "
                "COLLATE pg_catalog.default THEN 1 ELSE 0 END) FROM words")
    want_sql = ("SELECT sum(CASE WHEN regexp_matches(s, $p) THEN 1 ELSE 0 END), "
                "sum(CASE WHEN regexp_matches(s, $p, 'i') THEN 1 ELSE 0 END), "
                "sum(CASE WHEN NOT regexp_matches(s, $p) THEN 1 ELSE 0 END), "
                "sum(CASE WHEN regexp_matches(s, $p) THEN 1 ELSE 0 END) FROM words")
    with pg_connect(pg_port) as conn:
        got = conn.execute(ours_sql, {"p": pattern}).fetchone()
    assert got == words.execute(want_sql, {"p": pattern}).fetchone()


def test_quantified_comparisons_agree_with_duckdb(pg_port, words):
    rnd = random.Random(11)
    with pg_connect(pg_port) as conn:
        for _ in range(40):
            items = [rnd.choice(["NULL", str(rnd.randrange(-5, 6))]) for _ in range(rnd.randrange(1, 5))]
            op = rnd.choice(["=", "<>", "<", ">=", ">"])
            quant = rnd.choice(["ANY", "ALL"])
            ours = (f"SELECT sum(CASE WHEN x {op} {quant} (ARRAY[{', '.join(items)}]) THEN 1 ELSE 0 END), "
                    f"sum(CASE WHEN (x {op} {quant} (ARRAY[{', '.join(items)}])) IS NULL THEN 1 ELSE 0 END) FROM words")
            values = " UNION ALL ".join(f"SELECT {i}::INTEGER AS v" for i in items)
            want = (f"SELECT sum(CASE WHEN x {op} {quant} (SELECT v FROM ({values})) THEN 1 ELSE 0 END), "
                    f"sum(CASE WHEN (x {op} {quant} (SELECT v FROM ({values}))) IS NULL THEN 1 ELSE 0 END) FROM words")
            assert conn.execute(ours).fetchone() == words.execute(want).fetchone(), ours
        got = conn.execute("SELECT count(*) FROM words WHERE x = ANY (SELECT x FROM words WHERE x > 3)").fetchone()
    assert got == words.execute("SELECT count(*) FROM words WHERE x IN (SELECT x FROM words WHERE x > 3)").fetchone()


def test_pg_catalog_agrees_with_information_schema(pg_port, words):
    with pg_connect(pg_port) as conn:
        conn.execute("CREATE TABLE kinds (ts TIMESTAMP, d DATE, b BOOLEAN, i INTEGER, r REAL, v FLOAT[3], "
                     "sym SYMBOL)")
        via_ids = conn.execute(
            "SELECT c.relname, a.attname, a.attnum, pg_catalog.format_type(a.atttypid, a.atttypmod), t.typname "
            "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
            "WHERE n.nspname = 'public' AND c.relkind = ANY (ARRAY['r', 'p']) AND a.attnum > 0 "
            "AND NOT a.attisdropped AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1, 3").fetchall()
        via_names = conn.execute(
            "SELECT table_name, column_name, ordinal_position, udt_name FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY 1, 3").fetchall()
        assert [(r[0], r[1], r[2], r[4]) for r in via_ids] == via_names
        kinds = {r[1]: r[3] for r in via_ids if r[0] == "kinds"}
        assert kinds == {"ts": "timestamp without time zone", "d": "date", "b": "boolean", "i": "integer",
                         "r": "real", "v": "real[]", "sym": "text"}
        # Object-id casts both ways, the to_reg* forms, and what is not on the search path.
        oid = conn.execute("SELECT 'public.kinds'::regclass").fetchone()[0]
        assert conn.execute("SELECT %s::regclass::text", (oid,)).fetchone()[0] == "kinds"
        assert conn.execute("SELECT oid FROM pg_class WHERE relname = 'kinds'").fetchone()[0] == oid
        assert conn.execute("SELECT to_regclass('nope'), 'int8'::regtype, 1114::regtype::text").fetchone() == (
            None, 20, "timestamp")
        hidden = conn.execute("SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                              "ON n.oid = c.relnamespace WHERE n.nspname = 'information_schema' "
                              "AND pg_catalog.pg_table_is_visible(c.oid)").fetchone()[0]
        assert hidden == 0
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT 'nope'::regclass")
        assert conn.execute("SELECT current_schema(), current_database(), pg_catalog.pg_get_userbyid(10)").fetchone() \
            == ("public", "zeptodb", "zeptodb")
        # psycopg's own type lookup (it asks pg_type by name), as it does for any type it adapts.
        info = TypeInfo.fetch(conn, "timestamp")
        assert (info.oid, info.array_oid) == (1114, 1115)
        assert TypeInfo.fetch(conn, "hstore") is None


def test_sqlalchemy_lists_schemas_tables_and_views_from_the_catalogs(pg_port, words):
    engine = sqlalchemy.create_engine(f"postgresql+psycopg://quant:{API_KEY}@127.0.0.1:{pg_port}/zepto")
    inspector = sqlalchemy.inspect(engine)
    assert inspector.get_schema_names() == ["information_schema", "public"]
    assert "words" in inspector.get_table_names()
    assert inspector.has_table("words") and not inspector.has_table("nope")
    assert inspector.get_view_names() == []
    assert inspector.get_table_names(schema="information_schema") == []
    assert set(inspector.get_view_names(schema="information_schema")) >= {"tables", "columns", "schemata"}
    engine.dispose()


@pytest.mark.parametrize("pattern", ["a!_%", "%!_", "%!!%", "!%%", "_!__", "%x!_1%", "%\\%"])
def test_like_with_an_escape_character_agrees_with_duckdb(pg_port, words, pattern):
    ours_sql = "SELECT count(*) FROM words WHERE s LIKE %(p)s ESCAPE '!'"
    want_sql = "SELECT count(*) FROM words WHERE s LIKE $p ESCAPE '!'"
    with pg_connect(pg_port) as conn:
        got = conn.execute(ours_sql, {"p": pattern}).fetchone()
    assert got == words.execute(want_sql, {"p": pattern}).fetchone()


def pg_array_text(items):
    """A list as PostgreSQL writes an array in text: NULL bare, an element quoted when empty,
    `null` in any case, or holding a brace, comma, quote, backslash or white space."""
    def one(x):
        if x is None:
            return "NULL"
        s = str(x)
        if s == "" or s.lower() == "null" or any(c in s for c in '{},"\\') or any(c.isspace() for c in s):
            return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return s
    return None if items is None else "{" + ",".join(one(x) for x in items) + "}"


def test_listing_and_boolean_aggregates_agree_with_duckdb(pg_port, words):
    """string_agg, array_agg (with ORDER BY in the call, both directions) and bool_and/bool_or
    per group, over generated rows with NULLs, against DuckDB: the arrays arrive as lists, as
    `text[]` and `int4[]` columns (psycopg decodes them), equal to DuckDB's."""
    rnd = random.Random(5)
    rows = [(rnd.randrange(0, 12), None if rnd.random() < 0.1 else rnd.choice(["a", "b c", "", "NULL", 'q"', "x,y"]),
             k, None if rnd.random() < 0.1 else rnd.random() < 0.7) for k in rnd.sample(range(100_000), 2_000)]
    with pg_connect(pg_port) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE lists (g INTEGER, s VARCHAR, k INTEGER, b BOOLEAN)")
        with cur.copy("COPY lists FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
        sql = ("SELECT g, string_agg(s, '|' ORDER BY k), string_agg(s, ', ' ORDER BY k DESC), "
               "array_agg(s ORDER BY k), array_agg(k ORDER BY k DESC), bool_and(b), bool_or(b), "
               "string_agg(DISTINCT s, ',' ORDER BY s) FROM lists GROUP BY g ORDER BY g")
        got = cur.execute(sql).fetchall()
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE lists (g INTEGER, s VARCHAR, k INTEGER, b BOOLEAN)")
    oracle.executemany("INSERT INTO lists VALUES (?, ?, ?, ?)", rows)
    want = oracle.execute(sql).fetchall()
    assert got == want
    assert len(got) == 12


def test_json_build_object_agrees_with_duckdb(pg_port, words):
    with pg_connect(pg_port) as conn:
        got = conn.execute("SELECT json_build_object('s', s, 'x', x, 'half', x / 2.0, 'neg', x < 0) "
                           "FROM words ORDER BY s, x").fetchall()
    want = words.execute("SELECT json_object('s', s, 'x', x, 'half', x / 2.0, 'neg', x < 0)::VARCHAR "
                         "FROM words ORDER BY s, x").fetchall()
    assert [json.loads(g[0]) for g in got] == [json.loads(w[0]) for w in want]


def test_sqlalchemy_reflects_columns_and_pandas_reads_them(pg_port, words):
    """SQLAlchemy's column reflection (its pg_attribute query with format_type, correlated
    defaults, identity options through json_build_object, collations) answered by the
    catalogs, for every column type."""
    with pg_connect(pg_port) as conn:
        conn.execute("CREATE TABLE reflected (ts TIMESTAMP, d DATE, b BOOLEAN, i INTEGER, n BIGINT, r REAL, "
                     "f DOUBLE, s VARCHAR, sym SYMBOL)")
    engine = sqlalchemy.create_engine(f"postgresql+psycopg://quant:{API_KEY}@127.0.0.1:{pg_port}/zepto")
    cols = sqlalchemy.inspect(engine).get_columns("reflected")
    engine.dispose()
    assert [(c["name"], type(c["type"]).__name__, c["nullable"], c["default"]) for c in cols] == [
        ("ts", "TIMESTAMP", True, None), ("d", "DATE", True, None), ("b", "BOOLEAN", True, None),
        ("i", "INTEGER", True, None), ("n", "BIGINT", True, None), ("r", "REAL", True, None),
        ("f", "DOUBLE_PRECISION", True, None), ("s", "TEXT", True, None), ("sym", "TEXT", True, None)]


@pytest.fixture(scope="module")
def arrays(pg_port):
    """300 generated rows (id, a, b): two arrays of 0-5 words (some NULL items, some NULL
    arrays), held by ZeptoDB as PostgreSQL's array text (written two ways) and by DuckDB as
    lists."""
    rnd = random.Random(5)

    def array():
        if rnd.random() < 0.08:
            return None
        return [None if rnd.random() < 0.1 else rnd.choice(["a", "b c", "d,e", 'q"x', "NULL", ""])
                for _ in range(rnd.randrange(0, 6))]

    def text(items):
        if items is None:
            return None
        quote = lambda i: "NULL" if i is None else '"' + i.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return "{" + ",".join(quote(i) for i in items) + "}"

    rows = [(k, array(), array()) for k in range(300)]
    with pg_connect(pg_port) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE arrays (id INTEGER, a VARCHAR, b VARCHAR)")
        with cur.copy("COPY arrays FROM STDIN") as cp:
            for k, a, b in rows:
                cp.write_row((k, text(a), pg_array_text(b)))  # every item quoted; quoted only when needed
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE arrays (id INTEGER, a VARCHAR[], b VARCHAR[])")
    oracle.executemany("INSERT INTO arrays VALUES (?, ?, ?)", rows)
    return oracle


def sorted_rows(rows):
    return sorted(rows, key=lambda r: tuple((v is None, v) for v in r))


def test_set_returning_functions_agree_with_duckdb(pg_port, arrays):
    """unnest and generate_subscripts in the select list, as PostgreSQL 10+ and DuckDB run
    them: in lockstep, the shorter padded with NULL, a NULL or empty array giving no row."""
    pairs = [
        ("SELECT id, unnest(a) FROM arrays", None),
        ("SELECT id, unnest(a), unnest(b), generate_subscripts(a, 1) FROM arrays", None),
        ("SELECT id, unnest(b) AS x, id * 2 FROM arrays WHERE id % 3 = 0", None),
        ("SELECT id, generate_subscripts(b, 1, true) FROM arrays",
         "SELECT id, unnest(range(len(b), 0, -1)) FROM arrays"),
        ("SELECT DISTINCT unnest(a) FROM arrays", None),
        ("SELECT x, count(*) FROM (SELECT unnest(a) AS x FROM arrays) t GROUP BY x", None),
    ]
    with pg_connect(pg_port) as conn:
        for ours, want in pairs:
            got = conn.execute(ours).fetchall()
            assert len(got) > 5, ours
            assert sorted_rows(got) == sorted_rows(arrays.execute(want or ours).fetchall()), ours


def test_array_functions_agree_with_duckdb(pg_port, arrays):
    """array_to_string (NULL items skipped or replaced) and subscripts, row by row; bad array
    text is an error naming it."""
    ours = "SELECT id, array_to_string(a, '|'), array_to_string(b, '/', '*'), a[1], b[2], a[0] FROM arrays"
    def joined(x, items, sep):
        return f"CASE WHEN {x} IS NULL THEN NULL ELSE coalesce(array_to_string({items}, '{sep}'), '') END"

    star = "list_transform(b, x -> coalesce(x, '*'))"
    want = f"SELECT id, {joined('a', 'a', '|')}, {joined('b', star, '/')}, a[1], b[2], NULL FROM arrays"
    with pg_connect(pg_port) as conn:
        got = conn.execute(ours).fetchall()
        with pytest.raises(psycopg.Error, match="malformed array literal"):
            conn.execute("SELECT unnest('{a,b') FROM arrays")
    assert sorted_rows(got) == sorted_rows(arrays.execute(want).fetchall())


def test_sqlalchemy_reflects_keys_and_indexes_and_pandas_reads_a_table(pg_port, words):
    """SQLAlchemy's primary-key, unique and index reflection (unnest and generate_subscripts
    over pg_index's arrays) and pandas' read_sql_table, which reflects the whole table."""
    import pandas

    with pg_connect(pg_port) as conn:
        conn.execute("CREATE TABLE embedded (id BIGINT, emb FLOAT[4])")
        conn.execute("CREATE INDEX embedded_emb ON embedded USING hnsw (emb) WITH (metric = 'cosine')")
    engine = sqlalchemy.create_engine(f"postgresql+psycopg://quant:{API_KEY}@127.0.0.1:{pg_port}/zepto")
    inspector = sqlalchemy.inspect(engine)
    assert inspector.get_pk_constraint("words") == {"name": None, "constrained_columns": []}
    assert inspector.get_indexes("words") == []
    assert inspector.get_unique_constraints("words") == []
    [index] = inspector.get_indexes("embedded")
    assert (index["name"], index["column_names"], index["unique"]) == ("embedded_emb", ["emb"], False)
    assert index["dialect_options"]["postgresql_using"] == "hnsw"
    with pg_connect(pg_port) as conn:
        assert conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'embedded'").fetchall() == [
            ("CREATE INDEX embedded_emb ON public.embedded USING hnsw (emb) WITH (metric='cosine')",)]
    frame = pandas.read_sql_table("words", engine)
    engine.dispose()
    want = words.execute("SELECT s, x FROM words").df()
    assert sorted_rows(frame.astype(object).where(frame.notna(), None).itertuples(index=False)) == \
        sorted_rows(want.astype(object).where(want.notna(), None).itertuples(index=False))


# Grafana's PostgreSQL data source (its postgresMetaQuery.ts): the search-path constraint it
# puts in its table and column lists.
GRAFANA_SEARCH_PATH = """
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )"""


def grafana_columns(table):
    part = "'" + table.replace("'", "''") + "'"
    return f"""SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident({part}),1) = 2
        THEN quote_ident(table_schema) = (parse_ident({part}))[1]
          AND quote_ident(table_name) = (parse_ident({part}))[2]
        ELSE quote_ident(table_name) = {part}
          AND {GRAFANA_SEARCH_PATH}
      END"""


def test_grafana_lists_schemas_tables_and_columns(pg_port, words):
    """The metadata queries Grafana's PostgreSQL data source sends, as it writes them: the
    version, TimescaleDB's presence, the schemas, the tables (by schema and on the search path)
    and a table's columns by plain and qualified name."""
    with pg_connect(pg_port) as conn:
        conn.execute('CREATE TABLE "Mixed Case" (ts TIMESTAMP, v DOUBLE)')
        q = lambda sql: conn.execute(sql).fetchall()
        assert q("SELECT current_setting('server_version_num')::int/100 as version") == [(1600,)]
        assert q("SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'") == []
        assert q("""SELECT schema_name AS "name" FROM information_schema.schemata
            WHERE schema_name NOT IN ('information_schema', 'pg_catalog', 'pg_toast') ORDER BY schema_name""") == [("public",)]
        by_schema = q("""SELECT quote_ident(table_name) AS "table" FROM information_schema.tables
            WHERE quote_ident(table_schema) = 'public' ORDER BY 1""")
        on_path = q(f"""SELECT CASE WHEN {GRAFANA_SEARCH_PATH} THEN quote_ident(table_name)
              ELSE quote_ident(table_schema) || '.' || quote_ident(table_name) END AS "table"
            FROM information_schema.tables
            WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog')
            ORDER BY CASE WHEN {GRAFANA_SEARCH_PATH} THEN 0 ELSE 1 END, 1""")
        assert ('"Mixed Case"',) in by_schema and ("words",) in by_schema
        assert on_path == by_schema
        want = [("s", "text"), ("x", "integer")]
        assert q(grafana_columns("words")) == want
        assert q(grafana_columns("public.words")) == want
        assert q(grafana_columns('"Mixed Case"')) == [("ts", "timestamp without time zone"), ("v", "double precision")]
        assert q(grafana_columns("nope")) == []
        assert q("SELECT quote_ident('user'), quote_ident('a\"b'), parse_ident('public.\"My T\"'), "
                 "string_to_array('a,,b', ','), string_to_array('x-NA', '-', 'NA')") == [
            ('"user"', '"a""b"', ["public", "My T"], ["a", "", "b"], ["x", None])]
        with pytest.raises(psycopg.Error, match="not a valid identifier"):
            q("SELECT parse_ident('a..b')")
