//! `string_agg` and `array_agg` with an `ORDER BY` in the call (direction and NULL placement),
//! through GROUP BY on a time-partitioned table and over a whole table; what an ORDER BY in a
//! call may not do (several keys, a window call, an order-sensitive aggregate without a
//! listing) is refused by name. The values themselves are checked against DuckDB in
//! python/tests/test_pg_catalog.py.

use crate::common;

use common::{lines, refused};
use zepto_sql::Engine;

#[test]
fn listings_follow_the_order_in_the_call() {
    let e = Engine::new();
    lines(&e, "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, k INTEGER, s VARCHAR)");
    lines(
        &e,
        "INSERT INTO t VALUES (1, 'A', 3, 'c'), (2, 'A', NULL, 'n'), (3, 'A', 1, 'a'), (4, 'B', 2, 'x y'), \
         (5, 'B', 1, NULL), (6, 'A', 2, 'b')",
    );
    let sql = "SELECT sym, string_agg(s, '' ORDER BY k), string_agg(s, '' ORDER BY k NULLS FIRST), \
               string_agg(s, '' ORDER BY k DESC), string_agg(s, '' ORDER BY k DESC NULLS FIRST), \
               array_agg(s ORDER BY k), string_agg(s, '/') FROM t GROUP BY sym ORDER BY sym";
    assert_eq!(
        lines(&e, sql),
        ["A\tabcn\tnabc\tcban\tncba\t{a,b,c,n}\tc/n/a/b", "B\tx y\tx y\tx y\tx y\t{NULL,\"x y\"}\tx y"]
    );
    assert_eq!(
        lines(&e, "SELECT array_agg(k ORDER BY ts DESC), bool_and(k > 0), bool_or(k > 2) FROM t"),
        ["{2,1,2,1,NULL,3}\ttrue\ttrue"]
    );
    assert_eq!(lines(&e, "SELECT string_agg(s, ',' ORDER BY k), array_agg(s) FROM t WHERE k > 10"), ["NULL\tNULL"]);
    assert_eq!(lines(&e, "SELECT sum(k ORDER BY ts), count(* ) FROM t"), ["9\t6"]);
    assert!(refused(&e, "SELECT string_agg(s, ',' ORDER BY k, ts) FROM t").contains("more than one key"));
    assert!(refused(&e, "SELECT string_agg(s, ',' ORDER BY k) OVER () FROM t").contains("window"));
    assert!(refused(&e, "SELECT first(s ORDER BY k) FROM t").contains("ORDER BY inside first()"));
    assert!(refused(&e, "SELECT lower(s ORDER BY k) FROM t").contains("not an aggregate"));
    assert!(refused(&e, "SELECT bool_and(k) FROM t").contains("BOOLEAN"));
}
