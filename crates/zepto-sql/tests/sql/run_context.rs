//! The query's control reaches every stage through the context the engine is handed
//! (`Engine::*_in`), binding included: a cancelled query changes nothing, and a statement that
//! binds for long stops at its deadline while it is bound, not after.

use std::time::{Duration, Instant};
use zepto_sql::{Engine, QueryControl, RunContext, SqlError};

/// One statement that parses quickly and binds slowly: each IN item is coerced against the
/// 300-term left side.
fn slow_to_bind() -> zepto_sql::parser::ast::Query {
    let lhs = vec!["a"; 300].join(" + ");
    let list = (0..20_000).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let sql = format!("SELECT count(*) FROM t WHERE {lhs} IN ({list})");
    match zepto_sql::parser::parse_statement(&sql) {
        Ok(zepto_sql::parser::ast::Statement::Query(q)) => *q,
        other => panic!("a query: {other:?}"),
    }
}

#[test]
fn a_cancelled_query_runs_nothing() {
    let e = Engine::new();
    let ctl = QueryControl::new(None, None);
    ctl.cancel();
    let r = e.execute_in(&RunContext::new(Some(ctl)), "CREATE TABLE t (a BIGINT)");
    assert_eq!(r.err(), Some(SqlError::Cancelled));
    assert!(!e.catalog().exists("t"), "nothing applied");
    // Without a control (the plain API) the same statement runs.
    e.execute("CREATE TABLE t (a BIGINT)").expect("runs");
    e.execute_in(&RunContext::unlimited(), "INSERT INTO t VALUES (1)").expect("runs");
}

#[test]
fn binding_stops_at_the_deadline() {
    let e = Engine::new();
    e.execute("CREATE TABLE t (a BIGINT)").expect("t");
    let q = slow_to_bind();
    let t0 = Instant::now();
    e.prepare(&q).expect("binds without limits");
    let unlimited = t0.elapsed();
    let deadline = Duration::from_millis(20);
    assert!(unlimited > deadline * 5, "binding must take long enough to test: {unlimited:?}");
    let run = RunContext::new(Some(QueryControl::new(Some(deadline), None)));
    let t0 = Instant::now();
    let r = e.prepare_in(&run, &q);
    let took = t0.elapsed();
    eprintln!("binding took {unlimited:?} without limits, stopped after {took:?} under a {deadline:?} deadline");
    assert!(matches!(r, Err(SqlError::Timeout(_))), "binding stops at the deadline: {:?}", r.err());
    assert!(took < unlimited, "stopped while binding ({took:?}), not after ({unlimited:?})");
}
