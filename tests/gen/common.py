"""Shared helpers for the ZeptoDB sqllogictest corpus generators.

Our dialect -> DuckDB translation, DuckDB result formatting into the slt cell format,
and writing of slt records.  Used by gen_slt.py and random_diff.py.
"""
import datetime as _dt
import decimal
import math
import re

import duckdb
import pyarrow as pa

EPOCH = _dt.datetime(1970, 1, 1)

# --------------------------------------------------------------------------------------
# dialect translation
# --------------------------------------------------------------------------------------
_TRANSLATIONS = [
    (re.compile(r"\bTIMESTAMP\b"), "TIMESTAMP_NS"),   # column types, CAST(.. AS TIMESTAMP), TIMESTAMP '..'
    (re.compile(r"\bSYMBOL\b"), "VARCHAR"),
    (re.compile(r"\bquantile\s*\(", re.I), "quantile_disc("),  # SPEC: quantile is discrete
]


def to_duck(sql):
    """Translate a statement in the ZeptoDB dialect to DuckDB SQL.

    Keywords that get translated must be written in UPPER case in the corpus (TIMESTAMP,
    SYMBOL); data never contains those words."""
    for rx, rep in _TRANSLATIONS:
        sql = rx.sub(rep, sql)
    return sql


def duck_asof_outer(kind, sel, left, right, on, tail=""):
    """DuckDB SQL for `SELECT sel FROM left t ASOF {kind} JOIN right q ON on tail` with kind
    RIGHT or FULL, without DuckDB's RIGHT and FULL ASOF joins (1.5.6 hangs on keyed ones):
    the pairs of an inner (RIGHT) or LEFT (FULL) ASOF join of numbered rows, then every right
    row no left row matched, each pair joined back to its rows under the aliases t and q.
    `sel` may use t.*, q.* or *; `on` and `tail` (WHERE, GROUP BY, ...) use t. and q."""
    assert kind in ("RIGHT", "FULL"), kind
    sel = sel.replace("t.*", "t.* EXCLUDE (_lr)").replace("q.*", "q.* EXCLUDE (_rr)")
    sel = re.sub(r"^SELECT \*", "SELECT t.* EXCLUDE (_lr), q.* EXCLUDE (_rr)", sel)
    inner = "LEFT " if kind == "FULL" else ""
    return (f"WITH l AS MATERIALIZED (SELECT row_number() OVER () AS _lr, * FROM {left}), "
            f"r AS MATERIALIZED (SELECT row_number() OVER () AS _rr, * FROM {right}), "
            f"m AS MATERIALIZED (SELECT t._lr, q._rr FROM l t ASOF {inner}JOIN r q ON {on}), "
            f"p AS (SELECT _lr, _rr FROM m UNION ALL SELECT NULL, _rr FROM r "
            f"WHERE _rr NOT IN (SELECT _rr FROM m WHERE _rr IS NOT NULL)) "
            f"{sel} FROM p LEFT JOIN l t ON t._lr = p._lr LEFT JOIN r q ON q._rr = p._rr {tail}").rstrip()


def duck_asof_nearest(kind, sel, left, right, on, backward, tail=""):
    """DuckDB SQL for `SELECT sel FROM left t ASOF {kind} JOIN right q ON on tail` written
    without DuckDB's ASOF join, whose 1.5.6 fails to bind some conditions between the sides:
    of every pair of numbered rows `on` (inequality included) holds for, each left row keeps
    the one with the latest right time (`backward`) or the earliest; then the rows the join
    kind keeps (INNER: the pairs; LEFT: every left row; SEMI/ANTI: left rows with / without a
    pair; RIGHT/FULL: and the right rows no pair holds), joined back under the aliases t, q."""
    pick = "arg_max" if backward else "arg_min"
    if kind in ("SEMI", "ANTI"):
        sel = re.sub(r"^SELECT \*", "SELECT t.*", sel)
    sel = sel.replace("t.*", "t.* EXCLUDE (_lr)").replace("q.*", "q.* EXCLUDE (_rr)")
    sel = re.sub(r"^SELECT \*", "SELECT t.* EXCLUDE (_lr), q.* EXCLUDE (_rr)", sel)
    unmatched = "SELECT NULL, _rr FROM r WHERE _rr NOT IN (SELECT _rr FROM m)"
    every_left = "SELECT l._lr, m._rr FROM l LEFT JOIN m ON l._lr = m._lr"
    pairs = {
        "JOIN": "SELECT _lr, _rr FROM m",
        "LEFT": every_left,
        "SEMI": "SELECT _lr, NULL AS _rr FROM m",
        "ANTI": "SELECT _lr, NULL AS _rr FROM l WHERE _lr NOT IN (SELECT _lr FROM m)",
        "RIGHT": f"SELECT _lr, _rr FROM m UNION ALL {unmatched}",
        "FULL": f"{every_left} UNION ALL {unmatched}",
    }[kind]
    return (f"WITH l AS MATERIALIZED (SELECT row_number() OVER () AS _lr, * FROM {left}), "
            f"r AS MATERIALIZED (SELECT row_number() OVER () AS _rr, * FROM {right}), "
            f"m AS MATERIALIZED (SELECT t._lr, {pick}(q._rr, q.ts) AS _rr FROM l t JOIN r q ON {on} GROUP BY t._lr), "
            f"p AS ({pairs}) "
            f"{sel} FROM p LEFT JOIN l t ON t._lr = p._lr LEFT JOIN r q ON q._rr = p._rr {tail}").rstrip()


def connect():
    con = duckdb.connect(":memory:")
    # SPEC §3: division (and modulo) by zero gives NULL.  DuckDB >= 1.1 defaults to IEEE
    # semantics for floating point division (1.0/0 -> inf); this switches to NULL for all
    # division/modulo by zero, integer and floating alike.
    con.execute("SET ieee_floating_point_ops = false")
    con.execute("SET threads = 1")  # bit-reproducible float aggregates
    con.execute("SET default_null_order = 'NULLS_LAST'")  # already the default; pinned
    return con


def run_arrow(con, sql):
    res = con.execute(sql)
    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        f = getattr(res, name, None)
        if f is not None:
            t = f()
            if hasattr(t, "read_all"):
                t = t.read_all()
            return t
    raise RuntimeError("no arrow fetch method on duckdb result")


# --------------------------------------------------------------------------------------
# value formatting
# --------------------------------------------------------------------------------------
def fmt_ts_ns(ns):
    secs, frac = divmod(ns, 1_000_000_000)
    d = EPOCH + _dt.timedelta(seconds=secs)
    return d.strftime("%Y-%m-%d %H:%M:%S") + ".%09d" % frac


def fmt_float(f):
    if f is None:
        return "NULL"
    f = float(f)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return repr(f)


def fmt_str(s):
    if s == "":
        return "(empty)"
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


class UnsupportedResult(Exception):
    pass


_TS_MULT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def type_letter(t):
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return "I"
    if pa.types.is_decimal(t):
        return "I" if t.scale == 0 else "R"
    if pa.types.is_floating(t):
        return "R"
    if pa.types.is_null(t):
        raise UnsupportedResult("untyped NULL column")
    if pa.types.is_fixed_size_list(t) and pa.types.is_floating(t.value_type):
        return "T"  # a FLOAT[n] vector, printed as a Python list
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_timestamp(t)
            or pa.types.is_date(t) or getattr(pa.types, "is_string_view", lambda _: False)(t)):
        return "T"
    raise UnsupportedResult("unsupported result type %s" % t)


def format_column(col):
    """col: pyarrow ChunkedArray -> list of cell strings."""
    t = col.type
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            raise UnsupportedResult("timestamp with tz")
        mult = _TS_MULT[t.unit]
        return ["NULL" if v is None else fmt_ts_ns(v * mult)
                for v in col.cast(pa.int64()).to_pylist()]
    if pa.types.is_date(t):
        return ["NULL" if v is None else v.isoformat() for v in col.to_pylist()]
    vals = col.to_pylist()
    if pa.types.is_boolean(t):
        return ["NULL" if v is None else ("true" if v else "false") for v in vals]
    if pa.types.is_integer(t):
        return ["NULL" if v is None else str(v) for v in vals]
    if pa.types.is_decimal(t):
        if t.scale == 0:
            return ["NULL" if v is None else str(int(v)) for v in vals]
        return ["NULL" if v is None else fmt_float(v) for v in vals]
    if pa.types.is_floating(t):
        return [fmt_float(v) for v in vals]
    if pa.types.is_null(t):
        return ["NULL" for _ in vals]
    if pa.types.is_fixed_size_list(t) and pa.types.is_floating(t.value_type):
        return ["NULL" if v is None else "[" + ", ".join(fmt_float(x) for x in v) + "]" for v in vals]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or \
            getattr(pa.types, "is_string_view", lambda _: False)(t):
        return ["NULL" if v is None else fmt_str(v) for v in vals]
    raise UnsupportedResult("unsupported result type %s" % t)


def format_table(tbl):
    """-> (type letters, list of rows (each a list of cells))"""
    letters = "".join(type_letter(f.type) for f in tbl.schema)
    cols = [format_column(tbl.column(i)) for i in range(tbl.num_columns)]
    rows = [list(r) for r in zip(*cols)] if cols else []
    return letters, rows


def result_lines(rows, sort):
    lines = ["\t".join(r) for r in rows]
    if sort == "rowsort":
        lines = sorted(lines)
    return lines


def _cell_eq(a, b):
    if a == b:
        return True
    try:
        fa, fb = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(fa) and math.isnan(fb):
        return True
    return abs(fa - fb) <= 1e-9 * max(abs(fa), abs(fb))


def rows_equal(r1, r2, sort):
    """Compare two formatted results with float tolerance."""
    if len(r1) != len(r2):
        return False
    l1, l2 = result_lines(r1, sort), result_lines(r2, sort)
    for a, b in zip(l1, l2):
        ca, cb = a.split("\t"), b.split("\t")
        if len(ca) != len(cb) or not all(_cell_eq(x, y) for x, y in zip(ca, cb)):
            return False
    return True


# --------------------------------------------------------------------------------------
# literals for INSERT statements
# --------------------------------------------------------------------------------------
class TS(int):
    """A timestamp as integer nanoseconds since the epoch (UTC)."""


def sql_literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, TS):
        return "'%s'" % fmt_ts_ns(int(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return "CAST('%sInfinity' AS DOUBLE)" % ("" if v > 0 else "-")
        return repr(v)
    if isinstance(v, _dt.date):
        return "'%s'" % v.isoformat()
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    raise TypeError(type(v))


def insert_sql(table, rows, columns=None, chunk=200):
    out = []
    cols = "" if columns is None else " (" + ", ".join(columns) + ")"
    for i in range(0, len(rows), chunk):
        part = rows[i:i + chunk]
        vals = ", ".join("(" + ", ".join(sql_literal(v) for v in r) + ")" for r in part)
        out.append("INSERT INTO %s%s VALUES %s" % (table, cols, vals))
    return out


# --------------------------------------------------------------------------------------
# slt writing
# --------------------------------------------------------------------------------------
def slt_statement(sql, ok=True):
    assert "\n" not in sql
    return "statement %s\n%s\n" % ("ok" if ok else "error", sql)


def slt_query(sql, letters, sort, lines):
    assert "\n" not in sql
    body = "".join(l + "\n" for l in lines)
    return "query %s %s\n%s\n----\n%s" % (letters, sort, sql, body)
