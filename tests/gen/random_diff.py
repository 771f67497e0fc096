#!/usr/bin/env python3
"""Randomized differential test generator (DuckDB is the oracle).

    .venv/bin/python tests/gen/random_diff.py --seed 123 --count 200 --out /tmp/random_123.slt

Builds random tables (0..300 rows, NULL rates 0..1, INT/BIGINT/DOUBLE/VARCHAR/SYMBOL/TIMESTAMP/
BOOLEAN columns; a DOUBLE is NaN, +Infinity or -Infinity now and then), then K random queries from a small grammar (projections with arithmetic and
comparisons; WHERE with AND/OR/NOT/IS NULL/BETWEEN/IN/LIKE; GROUP BY with count/sum/min/max/avg/
arg_min/arg_max; HAVING; ORDER BY over every output column + LIMIT/OFFSET; INNER/LEFT joins on an
INT key; DISTINCT; UNION ALL).  Writes the same slt format as tests/slt/*.slt.

A candidate query is dropped and regenerated when
  * DuckDB rejects it,
  * its answer differs between the data loaded in original, reversed and shuffled row order
    (non-deterministic results),
  * it returns more than MAX_ROWS rows or a type outside the corpus contract,
  * its answer contains a negative zero (-0.0 == 0.0: which one survives a GROUP BY/DISTINCT is
    arbitrary, and they format differently).
Integer expressions carry a magnitude bound so nothing can overflow i32/i64 (also not in sum()),
and sum()/avg() only see floating expressions whose arithmetic is exact (values are multiples of
1/4), so summation order cannot matter.
"""
import argparse
import datetime as dt
import math
import os
import random
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ next to the sources
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
from common import TS  # noqa: E402

import duckdb  # noqa: E402

MAX_ROWS = 300
I32_LIMIT = 2**31 - 1
I64_LIMIT = 10**15          # keeps sum() over 300 rows far away from i64 overflow

INT_TYPES = {"INT": 100, "BIGINT": 10**6}  # type -> max |value|
CLASS_OF = {"INT": "int", "BIGINT": "int", "DOUBLE": "dbl", "VARCHAR": "str", "SYMBOL": "str",
            "TIMESTAMP": "ts", "BOOLEAN": "bool"}
STRINGS = ["", "a", "b", "ab", "abc", "B", "Abc", "hello", "Hello", "héllo", "x_y", "x%y", "東京", "zz",
           "a b", "it's", "ÉCOLE", "ω", "123", "-1"]
SYMBOLS = ["AAPL", "MSFT", "GOOG", "IBM", "X"]
LIKE_PATTERNS = ["a%", "%b", "%a%", "_", "__", "a_c", "%", "", "h%o", "%é%", "A%", "%l%", "_b%", "x_y", "%_%"]
TS_BASE = int((dt.datetime(2024, 1, 2) - common.EPOCH).total_seconds()) * 10**9
TS_SPAN = 3 * 86400 * 10**9


class Reject(Exception):
    pass


_DBL_LIT = re.compile("\u27e6([^\u27e7]*)\u27e7")


def render(sql, duck=False):
    """Floating literals are generated as \u27e6v\u27e7.  The slt text gets the plain literal
    (2.5, or (-2.5) when negative); DuckDB gets CAST(v AS DOUBLE), because DuckDB types a literal
    with a decimal point as DECIMAL, which changes result types (round(35.75) would be an
    integer-looking DECIMAL(4,0)) while ZeptoDB parses it as DOUBLE.

    arg_min/arg_max calls are generated as \u2983f\u2982x\u2982v\u2984: the slt text gets f(x, v);
    DuckDB gets f(x, {'a': v, 'b': x}) over the rows where neither is NULL, ZeptoDB's rule for
    ties in v (settled by x), where DuckDB's own keeps whichever tied row it meets first."""
    if duck:
        sql = _ARG_EXTREME.sub(lambda m: "%s(%s, {'a': %s, 'b': %s}) FILTER (WHERE (%s) IS NOT NULL AND (%s) IS NOT NULL)"
                               % (m.group(1), m.group(2), m.group(3), m.group(2), m.group(2), m.group(3)), sql)
        return common.to_duck(_DBL_LIT.sub(lambda m: "CAST(%s AS DOUBLE)" % m.group(1), sql))
    sql = _ARG_EXTREME.sub(lambda m: "%s(%s, %s)" % (m.group(1), m.group(2), m.group(3)), sql)
    return _DBL_LIT.sub(lambda m: m.group(1) if not m.group(1).startswith("-") else "(%s)" % m.group(1), sql)


# ======================================================================================
# tables
# ======================================================================================
_ARG_EXTREME = re.compile("\u2983(arg_min|arg_max)\u2982(.*?)\u2982(.*?)\u2984")


def rand_ts(rng):
    v = TS_BASE + rng.randrange(TS_SPAN)
    r = rng.random()
    if r < 0.3:
        v -= v % 10**9          # whole seconds
    elif r < 0.5:
        v -= v % 1000           # whole microseconds
    return TS(v)


def rand_value(rng, typ):
    if typ in INT_TYPES:
        lim = INT_TYPES[typ]
        return rng.randint(-lim, lim) if rng.random() < 0.7 else rng.randint(-10, 10)
    if typ == "DOUBLE":
        r = rng.random()
        if r < 0.04:  # NaN and the infinities, which SQL orders (NaN above +Infinity, equal to NaN)
            return [math.nan, math.nan, math.inf, -math.inf][int(r * 100)]
        return rng.randint(-4000, 4000) / 4.0 if r < 0.8 else rng.randint(-40, 40) / 4.0
    if typ == "VARCHAR":
        return rng.choice(STRINGS)
    if typ == "SYMBOL":
        return rng.choice(SYMBOLS)
    if typ == "TIMESTAMP":
        return rand_ts(rng)
    if typ == "BOOLEAN":
        return rng.random() < 0.5
    raise ValueError(typ)


def make_tables(rng):
    tables = []
    for ti in range(3):
        cols = [("id", "INT")]
        extra = ["INT", "DOUBLE", "VARCHAR"] + [rng.choice(list(CLASS_OF)) for _ in range(rng.randint(1, 5))]
        rng.shuffle(extra)
        counts = {}
        for typ in extra:
            prefix = {"INT": "i", "BIGINT": "b", "DOUBLE": "d", "VARCHAR": "s", "SYMBOL": "y",
                      "TIMESTAMP": "t", "BOOLEAN": "f"}[typ]
            counts[prefix] = counts.get(prefix, 0) + 1
            cols.append(("%s%d" % (prefix, counts[prefix]), typ))
        r = rng.random()
        n = 0 if r < 0.06 else 1 if r < 0.12 else rng.randint(2, 20) if r < 0.4 else rng.randint(20, 300)
        key_range = rng.choice([3, 10, 30, max(n, 1)])
        null_rates = {c: rng.choice([0.0, 0.0, 0.05, 0.2, 0.5, 1.0]) for c, _ in cols}
        rows = []
        for _ in range(n):
            row = []
            for c, typ in cols:
                if rng.random() < null_rates[c]:
                    row.append(None)
                elif c == "id":
                    row.append(rng.randint(0, key_range))
                else:
                    row.append(rand_value(rng, typ))
            rows.append(tuple(row))
        tables.append(("r%d" % ti, cols, rows))
    return tables


# ======================================================================================
# expression grammar
# ======================================================================================
class E:
    """A generated expression: sql text, class, and for ints a bound / i64 flag, for doubles
    whether its arithmetic is exact."""

    def __init__(self, sql, cls, bound=0, i64=False, exact=True):
        self.sql, self.cls, self.bound, self.i64, self.exact = sql, cls, bound, i64, exact


def lit_str(s):
    return "'" + s.replace("'", "''") + "'"


class Gen:
    def __init__(self, rng, tables):
        self.rng = rng
        self.tables = {name: (cols, rows) for name, cols, rows in tables}

    # ---------------------------------------------------------------- helpers
    def cols_of(self, scope, cls):
        out = []
        for alias, tname in scope:
            for c, typ in self.tables[tname][0]:
                if CLASS_OF[typ] == cls:
                    out.append((alias, c, typ))
        return out

    def column(self, scope, cls):
        cands = self.cols_of(scope, cls)
        if not cands:
            return None
        alias, c, typ = self.rng.choice(cands)
        sql = "%s.%s" % (alias, c)
        if cls == "int":
            return E(sql, "int", INT_TYPES[typ] if c != "id" else 1000, typ == "BIGINT")
        return E(sql, cls)

    def literal(self, cls):
        rng = self.rng
        if cls == "int":
            v = rng.randint(-20, 20)
            return E(str(v) if v >= 0 else "(%d)" % v, "int", abs(v), False)
        if cls == "dbl":
            # marked so that DuckDB gets a DOUBLE (it would type 2.5 as DECIMAL); see render()
            return E("\u27e6%r\u27e7" % (rng.randint(-400, 400) / 4.0), "dbl")
        if cls == "str":
            return E(lit_str(rng.choice(STRINGS + SYMBOLS)), "str")
        if cls == "ts":
            return E("'%s'" % common.fmt_ts_ns(rand_ts(rng)), "ts")
        if cls == "bool":
            return E(rng.choice(["true", "false"]), "bool")
        raise ValueError(cls)

    @staticmethod
    def check_int(e):
        lim = I64_LIMIT if e.i64 else I32_LIMIT
        if e.bound > lim:
            raise Reject("int bound")
        return e

    # ---------------------------------------------------------------- typed expressions
    def expr(self, scope, cls, depth=0):
        for _ in range(20):
            try:
                return getattr(self, "expr_" + cls)(scope, depth)
            except Reject:
                continue
        return self.column(scope, cls) or self.literal(cls)

    def leaf(self, scope, cls):
        if self.rng.random() < 0.75:
            c = self.column(scope, cls)
            if c is not None:
                return c
        return self.literal(cls)

    def expr_int(self, scope, depth):
        rng = self.rng
        if depth >= 2 or rng.random() < 0.4:
            return self.leaf(scope, "int")
        k = rng.random()
        a = self.expr(scope, "int", depth + 1)
        if k < 0.35:
            b = self.expr(scope, "int", depth + 1)
            op = rng.choice(["+", "-", "*"])
            bound = a.bound * b.bound if op == "*" else a.bound + b.bound
            return self.check_int(E("(%s %s %s)" % (a.sql, op, b.sql), "int", bound, a.i64 or b.i64))
        if k < 0.5:
            b = self.expr(scope, "int", depth + 1)
            op = rng.choice(["//", "%"])
            return self.check_int(E("(%s %s %s)" % (a.sql, op, b.sql), "int", a.bound, a.i64 or b.i64))
        if k < 0.6:
            return E("(- %s)" % a.sql, "int", a.bound, a.i64)
        if k < 0.7:
            return E("abs(%s)" % a.sql, "int", a.bound, a.i64)
        if k < 0.8:
            b = self.expr(scope, "int", depth + 1)
            p = self.pred(scope, depth + 1)
            return E("CASE WHEN %s THEN %s ELSE %s END" % (p, a.sql, b.sql), "int",
                     max(a.bound, b.bound), a.i64 or b.i64)
        if k < 0.9:
            b = self.literal("int")
            return E("COALESCE(%s, %s)" % (a.sql, b.sql), "int", max(a.bound, b.bound), a.i64)
        s = self.expr(scope, "str", depth + 1)
        return E("length(%s)" % s.sql, "int", 64, True)

    def expr_dbl(self, scope, depth):
        rng = self.rng
        if depth >= 2 or rng.random() < 0.35:
            return self.leaf(scope, "dbl")
        k = rng.random()
        if k < 0.35:
            a = self.expr(scope, "dbl", depth + 1)
            b = self.expr(scope, rng.choice(["dbl", "int"]), depth + 1)
            op = rng.choice(["+", "-", "*"])
            if op == "*" and b.cls == "int" and b.bound > 10**6:
                raise Reject("dbl bound")
            exact = a.exact and b.exact and not (op == "*" and (a.sql.count("*") + b.sql.count("*")) > 1)
            return E("(%s %s %s)" % (a.sql, op, b.sql), "dbl", exact=exact)
        if k < 0.5:
            a = self.expr(scope, rng.choice(["dbl", "int"]), depth + 1)
            b = self.expr(scope, rng.choice(["dbl", "int"]), depth + 1)
            return E("(%s / %s)" % (a.sql, b.sql), "dbl", exact=False)
        a = self.expr(scope, "dbl", depth + 1)
        if k < 0.6:
            return E("(- %s)" % a.sql, "dbl", exact=a.exact)
        if k < 0.7:
            return E("%s(%s)" % (rng.choice(["abs", "floor", "ceil", "round"]), a.sql), "dbl", exact=a.exact)
        if k < 0.75:
            return E("round(%s, %d)" % (a.sql, rng.randint(0, 2)), "dbl", exact=False)
        if k < 0.85:
            b = self.expr(scope, "dbl", depth + 1)
            p = self.pred(scope, depth + 1)
            return E("CASE WHEN %s THEN %s ELSE %s END" % (p, a.sql, b.sql), "dbl", exact=a.exact and b.exact)
        return E("COALESCE(%s, %s)" % (a.sql, self.literal("dbl").sql), "dbl", exact=a.exact)

    def expr_str(self, scope, depth):
        rng = self.rng
        if depth >= 2 or rng.random() < 0.45:
            return self.leaf(scope, "str")
        k = rng.random()
        a = self.expr(scope, "str", depth + 1)
        if k < 0.3:
            return E("%s(%s)" % (rng.choice(["lower", "upper"]), a.sql), "str")
        if k < 0.5:
            if rng.random() < 0.5:
                return E("substr(%s, %d)" % (a.sql, rng.randint(1, 4)), "str")
            return E("substr(%s, %d, %d)" % (a.sql, rng.randint(1, 4), rng.randint(0, 4)), "str")
        if k < 0.65:
            b = self.expr(scope, "str", depth + 1)
            return E("concat(%s, %s)" % (a.sql, b.sql), "str")
        if k < 0.8:
            b = self.expr(scope, "str", depth + 1)
            return E("(%s || %s)" % (a.sql, b.sql), "str")
        if k < 0.9:
            return E("COALESCE(%s, %s)" % (a.sql, self.literal("str").sql), "str")
        b = self.expr(scope, "str", depth + 1)
        return E("CASE WHEN %s THEN %s ELSE %s END" % (self.pred(scope, depth + 1), a.sql, b.sql), "str")

    def expr_ts(self, scope, depth):
        c = self.column(scope, "ts")
        if c is None:
            raise Reject("no ts column")
        return c

    def expr_bool(self, scope, depth):
        return E(self.pred(scope, depth), "bool")

    # ---------------------------------------------------------------- predicates
    def pred(self, scope, depth=0):
        rng = self.rng
        k = rng.random()
        if depth < 2 and k < 0.25:
            op = rng.choice(["AND", "OR"])
            return "(%s %s %s)" % (self.pred(scope, depth + 1), op, self.pred(scope, depth + 1))
        if depth < 2 and k < 0.32:
            return "(NOT %s)" % self.pred(scope, depth + 1)
        cls = rng.choice(["int", "int", "dbl", "dbl", "str", "str", "ts", "bool"])
        if not self.cols_of(scope, cls):
            cls = rng.choice(["int", "dbl", "str"])
        k = rng.random()
        a = self.expr(scope, cls, depth + 1) if cls != "ts" else self.column(scope, "ts")
        if cls == "bool":
            c = self.column(scope, "bool")
            if c is None:
                return self.pred(scope, depth + 1) if depth < 3 else "true"
            return rng.choice([c.sql, "(NOT %s)" % c.sql, "(%s = %s)" % (c.sql, rng.choice(["true", "false"])),
                               "(%s IS NULL)" % c.sql, "(%s IS NOT NULL)" % c.sql])
        if k < 0.12:
            return "(%s IS %sNULL)" % (a.sql, rng.choice(["", "NOT "]))
        if k < 0.25:
            lo, hi = self.literal_like(cls, scope), self.literal_like(cls, scope)
            return "(%s %sBETWEEN %s AND %s)" % (a.sql, rng.choice(["", "NOT "]), lo.sql, hi.sql)
        if k < 0.38 and cls in ("int", "str", "dbl"):
            # Short lists are compared item by item, from 8 items on they are hashed.
            items = [self.literal(cls).sql for _ in range(rng.randint(1, 4) if rng.random() < 0.6 else rng.randint(8, 30))]
            if rng.random() < 0.25:
                items.insert(rng.randrange(len(items) + 1), "NULL")
            return "(%s %sIN (%s))" % (a.sql, rng.choice(["", "NOT "]), ", ".join(items))
        if k < 0.52 and cls == "str":
            op = rng.choice(["LIKE", "ILIKE", "NOT LIKE", "NOT ILIKE"])
            return "(%s %s %s)" % (a.sql, op, lit_str(rng.choice(LIKE_PATTERNS)))
        b = self.literal_like(cls, scope) if rng.random() < 0.6 else (
            self.expr(scope, rng.choice(["int", "dbl"]) if cls in ("int", "dbl") else cls, depth + 1)
            if cls != "ts" else self.column(scope, "ts"))
        op = rng.choice(["=", "<>", "<", "<=", ">", ">="])
        return "(%s %s %s)" % (a.sql, op, b.sql)

    def literal_like(self, cls, scope):
        if cls == "ts" and self.rng.random() < 0.3:
            return E("TIMESTAMP '%s'" % common.fmt_ts_ns(rand_ts(self.rng)), "ts")
        return self.literal(cls)

    # ---------------------------------------------------------------- select-list pieces
    def any_expr(self, scope):
        cls = self.rng.choice(["int", "int", "dbl", "dbl", "str", "str", "ts", "bool"])
        if cls == "ts" and not self.cols_of(scope, "ts"):
            cls = "int"
        return self.expr(scope, cls)

    def agg(self, scope):
        rng = self.rng
        k = rng.random()
        if k < 0.2:
            return "count(*)"
        if k < 0.35:
            return "count(%s)" % self.any_expr(scope).sql
        if k < 0.65:
            cls = rng.choice(["int", "dbl"])
            for _ in range(10):
                e = self.expr(scope, cls)
                if (cls == "int") or e.exact:
                    return "%s(%s)" % (rng.choice(["sum", "avg"]), e.sql)
            return "count(*)"
        e = self.any_expr(scope)
        if k >= 0.9:
            # Rendered for DuckDB with ZeptoDB's rule for ties spelled out (`render`).
            by = self.any_expr(scope)
            return "\u2983%s\u2982%s\u2982%s\u2984" % (rng.choice(["arg_min", "arg_max"]), e.sql, by.sql)
        return "%s(%s)" % (rng.choice(["min", "max"]), e.sql)

    def group_key(self, scope):
        rng = self.rng
        cls = rng.choice(["int", "str", "bool", "dbl", "ts"])
        c = self.column(scope, cls)
        if c is None:
            c = self.column(scope, "int")
        if cls == "int" and rng.random() < 0.4:
            return "(%s %% %d)" % (c.sql, rng.randint(2, 5))
        if cls == "str" and rng.random() < 0.3:
            return "lower(%s)" % c.sql
        return c.sql

    # ---------------------------------------------------------------- queries
    def order_limit(self, ncols):
        """ORDER BY every output column (total up to identical rows) + LIMIT/OFFSET."""
        rng = self.rng
        keys = list(range(1, ncols + 1))
        rng.shuffle(keys)
        parts = []
        for kk in keys:
            p = str(kk)
            if rng.random() < 0.4:
                p += " DESC"
            if rng.random() < 0.3:
                p += rng.choice([" NULLS FIRST", " NULLS LAST"])
            parts.append(p)
        s = " ORDER BY " + ", ".join(parts)
        if rng.random() < 0.8:
            s += " LIMIT %d" % rng.randint(0, 40)
            if rng.random() < 0.3:
                s += " OFFSET %d" % rng.randint(0, 20)
        return s

    def q_projection(self):
        rng = self.rng
        t = rng.choice(list(self.tables))
        scope = [("a", t)]
        exprs = [self.any_expr(scope).sql for _ in range(rng.randint(1, 4))]
        distinct = rng.random() < 0.15
        sql = "SELECT %s%s FROM %s a" % ("DISTINCT " if distinct else "", ", ".join(exprs), t)
        if rng.random() < 0.7:
            sql += " WHERE " + self.pred(scope)
        if rng.random() < 0.4:
            return sql + self.order_limit(len(exprs)), "nosort"
        return sql, "rowsort"

    def q_aggregate(self):
        rng = self.rng
        t = rng.choice(list(self.tables))
        scope = [("a", t)]
        keys = [self.group_key(scope) for _ in range(rng.choice([0, 1, 1, 2]))]
        aggs = [self.agg(scope) for _ in range(rng.randint(1, 4))]
        sql = "SELECT %s FROM %s a" % (", ".join(keys + aggs), t)
        if rng.random() < 0.5:
            sql += " WHERE " + self.pred(scope)
        if keys:
            if rng.random() < 0.5:
                sql += " GROUP BY " + ", ".join(str(i + 1) for i in range(len(keys)))
            else:
                sql += " GROUP BY " + ", ".join(keys)
            if rng.random() < 0.3:
                sql += " HAVING %s > %d" % (rng.choice(["count(*)", "count(a.id)"]), rng.randint(0, 5))
            if rng.random() < 0.3:
                return sql + self.order_limit(len(keys) + len(aggs)), "nosort"
        return sql, "rowsort"

    def q_join(self):
        rng = self.rng
        t1, t2 = rng.choice(list(self.tables)), rng.choice(list(self.tables))
        scope = [("a", t1), ("b", t2)]
        kind = rng.choice(["JOIN", "INNER JOIN", "LEFT JOIN", "LEFT OUTER JOIN"])
        on = "a.id = b.id"
        if rng.random() < 0.3:
            on += " AND " + self.pred(scope, 1)
        src = "%s a %s %s b ON %s" % (t1, kind, t2, on)
        where = (" WHERE " + self.pred(scope)) if rng.random() < 0.5 else ""
        if rng.random() < 0.45:
            key = rng.choice(["a.id", "b.id", self.group_key([("a", t1)]), self.group_key([("b", t2)])])
            aggs = [self.agg(scope) for _ in range(rng.randint(1, 3))]
            return "SELECT %s, %s FROM %s%s GROUP BY 1" % (key, ", ".join(aggs), src, where), "rowsort"
        exprs = [self.any_expr(scope).sql for _ in range(rng.randint(1, 4))]
        sql = "SELECT %s FROM %s%s" % (", ".join(exprs), src, where)
        if rng.random() < 0.5:
            return sql + self.order_limit(len(exprs)), "nosort"
        return sql, "rowsort"

    def q_union(self):
        rng = self.rng
        t1, t2 = rng.choice(list(self.tables)), rng.choice(list(self.tables))
        s1, s2 = [("a", t1)], [("a", t2)]
        n = rng.randint(1, 2)
        classes = [rng.choice(["int", "dbl", "str", "bool"]) for _ in range(n)]
        e1 = [self.expr(s1, c).sql for c in classes]
        e2 = [self.expr(s2, c).sql for c in classes]
        names = ["c%d" % i for i in range(n)]
        b1 = "SELECT %s FROM %s a" % (", ".join("%s AS %s" % (e, nm) for e, nm in zip(e1, names)), t1)
        b2 = "SELECT %s FROM %s a" % (", ".join(e2), t2)
        if rng.random() < 0.6:
            b1 += " WHERE " + self.pred(s1)
        if rng.random() < 0.6:
            b2 += " WHERE " + self.pred(s2)
        u = "%s UNION ALL %s" % (b1, b2)
        k = rng.random()
        if k < 0.3:
            return "SELECT c0, count(*) FROM (%s) u GROUP BY c0" % u, "rowsort"
        if k < 0.6:
            return u + self.order_limit(n), "nosort"
        return u, "rowsort"

    def query(self):
        k = self.rng.random()
        if k < 0.35:
            return self.q_projection()
        if k < 0.6:
            return self.q_aggregate()
        if k < 0.85:
            return self.q_join()
        return self.q_union()


# ======================================================================================
def load(con, tables, order):
    for name, cols, rows in tables:
        create = "CREATE TABLE %s (%s)" % (name, ", ".join("%s %s" % c for c in cols))
        con.execute(common.to_duck(create))
        rs = list(rows)
        if order == "reversed":
            rs.reverse()
        elif isinstance(order, random.Random):
            order.shuffle(rs)
        for s in common.insert_sql(name, rs):
            con.execute(common.to_duck(s))


def answer(con, sql):
    tbl = common.run_arrow(con, render(sql, duck=True))
    for f in tbl.schema:
        if str(f.type).startswith("timestamp[") and f.type.unit != "ns":
            raise common.UnsupportedResult("microsecond timestamp")
    return common.format_table(tbl)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    tables = make_tables(rng)
    cons = [common.connect() for _ in range(3)]
    load(cons[0], tables, "original")
    load(cons[1], tables, "reversed")
    load(cons[2], tables, random.Random(args.seed + 1))

    out = ["# Random differential tests, seed %d, DuckDB %s\n"
           "# Generated by tests/gen/random_diff.py --seed %d --count %d\n"
           % (args.seed, duckdb.__version__, args.seed, args.count)]
    for name, cols, rows in tables:
        out.append(common.slt_statement("CREATE TABLE %s (%s)" % (name, ", ".join("%s %s" % c for c in cols))))
        for s in common.insert_sql(name, rows):
            out.append(common.slt_statement(s))

    gen = Gen(rng, tables)
    skipped = {"rejected": 0, "nondeterministic": 0, "too_many_rows": 0, "unsupported": 0, "negative_zero": 0,
               "empty_resampled": 0}
    written, attempts, seen = 0, 0, set()
    while written < args.count:
        attempts += 1
        if attempts > args.count * 50:
            raise SystemExit("could not generate enough queries (%s)" % skipped)
        sql, sort = gen.query()
        if sql in seen:
            continue
        try:
            letters, rows = answer(cons[0], sql)
            others = [answer(c, sql)[1] for c in cons[1:]]
        except duckdb.Error:
            skipped["rejected"] += 1
            continue
        except common.UnsupportedResult:
            skipped["unsupported"] += 1
            continue
        if len(rows) > MAX_ROWS:
            skipped["too_many_rows"] += 1
            continue
        if not all(common.rows_equal(rows, o, sort) for o in others):
            skipped["nondeterministic"] += 1
            continue
        if any(c == "-0.0" for rs in [rows] + others for r in rs for c in r):
            # -0.0 == 0.0, so which one a group/DISTINCT keeps is arbitrary, and the two
            # format differently (which moves the row under rowsort): keep them out.
            skipped["negative_zero"] += 1
            continue
        if not rows and rng.random() < 0.6:
            skipped["empty_resampled"] += 1  # keep some empty answers, but not a third of them
            continue
        seen.add(sql)
        out.append(common.slt_query(render(sql), letters, sort, common.result_lines(rows, sort)))
        written += 1
    with open(args.out, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("\n".join(out))
    print("wrote %d queries to %s (skipped: %s)" % (written, args.out, ", ".join(
        "%s %d" % kv for kv in skipped.items())))


if __name__ == "__main__":
    main()
