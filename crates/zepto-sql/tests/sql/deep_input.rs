//! Deep and large inputs never overflow a stack: every shape of deep expression, at the
//! default depth limit, runs (or is refused with LIMIT_EXCEEDED) on a thread with a small
//! stack, through parse, bind, optimize and execute. Before the limits and stack growth, about
//! 1,000 terms of `a = 1 AND a = 1 AND ...` killed the whole server.

use zepto_sql::{Engine, SqlError};

/// Run `f` on a thread with `kib` KiB of stack (a stack overflow aborts the test process).
fn on_small_stack<T: Send + 'static>(kib: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(kib << 10).spawn(f).expect("thread").join().expect("no panic")
}

fn engine() -> Engine {
    let e = Engine::new();
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, a BIGINT, x DOUBLE)").expect("create");
    e.execute(
        "INSERT INTO t VALUES ('2024-01-01 00:00:00', 'A', 1, 1.5), ('2024-01-01 00:00:01', 'B', 2, 2.5), \
         ('2024-01-01 00:00:02', 'A', 1, 3.5)",
    )
    .expect("insert");
    e
}

fn chain(first: &str, op: &str, term: &str, n: usize) -> String {
    let mut s = String::from(first);
    for _ in 1..n {
        s.push_str(op);
        s.push_str(term);
    }
    s
}

/// Queries whose expressions are `n` deep, in every shape the parser builds.
fn deep_queries(n: usize) -> Vec<String> {
    let nested =
        |open: &str, close: &str, inner: &str, k: usize| format!("{}{inner}{}", open.repeat(k), close.repeat(k));
    vec![
        format!("SELECT count(*) FROM t WHERE {}", chain("a = 1", " AND ", "a = 1", n / 2)),
        format!("SELECT count(*) FROM t WHERE {}", chain("a = 1", " OR ", "a = 2", n / 2)),
        format!("SELECT {} FROM t", chain("1", "+", "1", n)),
        format!("SELECT {} AS s FROM t", chain("a", " * ", "1", n)),
        format!("SELECT sum({}) FROM t GROUP BY sym", chain("x", " - ", "0.5", n)),
        format!("SELECT {} FROM t", chain("'s'", " || ", "'t'", n)),
        format!("SELECT a FROM t ORDER BY {}", chain("a", " + ", "a", n)),
        format!("SELECT sum(a) OVER (PARTITION BY sym ORDER BY ts) + {} FROM t", chain("0", "+", "0", n - 4)),
        nested("abs(", ")", "a", 150),
        nested("(", ")", "a + 1", 150),
        nested("CASE WHEN a > 0 THEN ", " ELSE 0 END", "a", 100),
        format!("SELECT {}a FROM t", "- ".repeat(150)),
        format!("SELECT count(*) FROM t WHERE {}a = 1", "NOT NOT ".repeat(70)),
        format!("SELECT {}a FROM t", "+ ".repeat(150)),
        format!("{}SELECT a FROM t{}", "SELECT a FROM (".repeat(60), ")".repeat(60)),
        format!("SELECT {}1{}", "(SELECT ".repeat(60), ")".repeat(60)),
        format!(
            "SELECT count(*) FROM t WHERE a IN ({}SELECT a FROM t{})",
            "SELECT a FROM t WHERE a IN (".repeat(40),
            ")".repeat(40)
        ),
        format!("SELECT a{} FROM t", "::BIGINT".repeat(n - 1)),
    ]
    .into_iter()
    .map(|q| if q.starts_with("SELECT") { q } else { format!("SELECT {q} FROM t") })
    .collect()
}

#[test]
fn deep_expressions_run_or_are_refused_cleanly() {
    on_small_stack(384, || {
        let e = engine();
        for q in deep_queries(1000) {
            match e.execute(&q) {
                Ok(_) => {}
                Err(SqlError::LimitExceeded(m)) => assert!(m.contains("max_expression_depth"), "{m}"),
                Err(other) => panic!("{}...: {other}", &q[..80.min(q.len())]),
            }
        }
    });
}

#[test]
fn chains_past_the_limit_are_refused_with_the_limit_named() {
    on_small_stack(384, || {
        let e = engine();
        let mut queries = deep_queries(100_000);
        queries.truncate(8);
        queries.push(format!("SELECT {}a FROM t", "+ ".repeat(100_000)));
        queries.push(format!("SELECT a{} FROM t", "::BIGINT".repeat(100_000)));
        for q in queries {
            let err = e.execute(&q).expect_err("over the depth limit");
            assert_eq!(err.code(), "LIMIT_EXCEEDED", "{err}");
            let m = err.to_string();
            assert!(m.contains("--max-expr-depth") || m.contains("fixed limit of the parser"), "{m}");
        }
        // Nothing was changed, and the engine still answers.
        let r = e.execute("SELECT count(*) FROM t").expect("count");
        assert_eq!(r.row_count(), 1);
    });
}

/// At the highest depth a setting may allow (`--max-expr-depth 2000`), the path a short
/// request takes on the server's async threads (2 MiB of stack: parse, clone, the visitor that
/// looks for subqueries, bind, run, drop) neither overflows nor aborts: every operation on a
/// tree is either iterative or grows its stack on demand.
#[test]
fn the_highest_allowed_depth_fits_an_async_thread() {
    use zepto_sql::parser::limits::HARD_MAX_DEPTH;
    use zepto_sql::parser::{parse_script, visit, ParseLimits};
    on_small_stack(2048, || {
        let e = engine();
        let limits = ParseLimits { max_depth: HARD_MAX_DEPTH, ..ParseLimits::default() };
        // Chains a few terms short of the limit, so that each runs rather than is refused.
        let n = HARD_MAX_DEPTH - 8;
        let mut queries = deep_queries(n);
        queries.truncate(8);
        queries.push(format!("SELECT a{} FROM t", "::BIGINT".repeat(n - 1)));
        queries.push(format!("SELECT count(*) FROM t WHERE {}", chain("a = 1", " AND ", "a = 1", n - 1)));
        let mut ran = 0;
        for q in queries {
            let stmts = match parse_script(&q, &[], &limits, &|| Ok(())) {
                Ok(s) => s,
                Err(err) => {
                    assert_eq!(err.code(), "LIMIT_EXCEEDED", "{err}");
                    continue;
                }
            };
            for s in stmts {
                if let zepto_sql::parser::ast::Statement::Query(query) = &s {
                    let mut copy = query.clone();
                    visit::rewrite_query(&mut copy, &mut |_| {});
                    drop(copy);
                }
                match e.execute_statement(&s) {
                    Ok(_) => ran += 1,
                    Err(err) => assert_eq!(err.code(), "LIMIT_EXCEEDED", "{err}"),
                }
            }
        }
        assert!(ran >= 8, "only {ran} of the deepest queries ran");
    });
}
