//! A cheap upper bound on a plan's work, for doors that decide where to run it: the HTTP
//! server runs small plans inline on its async thread (saving two thread hand-offs, most of a
//! point query's latency), statements that read few rows in a lane of their own (so they
//! never queue behind heavy ones), and everything else on its query pool.

use super::{BExpr, Plan};

impl Plan {
    /// Rows the plan's scans read, when every node does work linear in its input (scans,
    /// filters, projections, aggregates, sorts, limits, DISTINCT, LATEST) and no expression
    /// holds a correlated subquery; `None` for anything whose cost the input size does not
    /// bound (joins, windows, fills, set operations).
    pub fn linear_scan_rows(&self) -> Option<usize> {
        match self {
            // History files cost IO and decoding: never a small plan.
            Plan::Scan { table, range, .. }
                if table.history().overlapping(range.ts_lo, range.ts_hi).next().is_some() =>
            {
                None
            }
            Plan::Scan { table, range, .. } => {
                let bounded = range.is_time_bounded();
                let part_rows = |p: &zepto_storage::Partition| match table.ts_col() {
                    Some(ts) if bounded => p.ts_range(ts, range.ts_lo, range.ts_hi).len(),
                    _ => p.len(),
                };
                Some(match &range.keys {
                    // Every row: the table's count, not a walk of (maybe 100k) partitions.
                    None if !bounded => table.row_count(),
                    None => table.partitions().iter().map(|p| part_rows(p)).sum(),
                    Some(keys) => keys
                        .iter()
                        .filter_map(|k| table.dict().code(k))
                        .filter_map(|c| table.partition_for_code(c))
                        .map(|p| part_rows(p))
                        .sum(),
                })
            }
            Plan::Values { rows, .. } => Some(rows.len()),
            Plan::Series { count, .. } => usize::try_from(*count).ok(),
            Plan::Filter { input, pred } => plain(pred).then(|| input.linear_scan_rows()).flatten(),
            Plan::Project { input, exprs } => exprs.iter().all(plain).then(|| input.linear_scan_rows()).flatten(),
            Plan::Aggregate { input, keys, .. } => keys.iter().all(plain).then(|| input.linear_scan_rows()).flatten(),
            Plan::Sort { input, .. } | Plan::Limit { input, .. } | Plan::Distinct { input } => input.linear_scan_rows(),
            Plan::Latest { input, .. } => input.linear_scan_rows(),
            _ => None,
        }
    }
}

impl Plan {
    /// Rows the plan's scans read, summed over every scan (both sides of a join), a join
    /// without equality keys counting the product of its inputs' rows: what the server tells
    /// a small statement from a heavy one by. `None` when nothing bounds it by the rows in
    /// memory (a history scan, a correlated subquery).
    pub fn scan_rows(&self) -> Option<usize> {
        match self {
            Plan::Scan { .. } | Plan::Values { .. } | Plan::Series { .. } => self.linear_scan_rows(),
            // Other nodes' shares are not counted here, and the statement waits on them: never
            // small, however few rows this node's share holds.
            Plan::Exchange { remotes, .. } if !remotes.is_empty() => None,
            Plan::Filter { pred, .. } if !plain(pred) => None,
            Plan::Project { exprs, .. } if !exprs.iter().all(plain) => None,
            Plan::Join { left, right, left_keys, .. } if left_keys.is_empty() => {
                Some(left.scan_rows()?.saturating_mul(right.scan_rows()?.max(1)))
            }
            _ => self.inputs().iter().try_fold(0usize, |n, i| Some(n.saturating_add(i.scan_rows()?))),
        }
    }
}

/// No correlated subquery anywhere in `e`.
fn plain(e: &BExpr) -> bool {
    match e {
        BExpr::Col(..) | BExpr::Lit(..) => true,
        BExpr::Neg(e) | BExpr::Not(e) => plain(e),
        BExpr::Binary { left, right, .. } => plain(left) && plain(right),
        BExpr::Cast { expr, .. } | BExpr::IsNull { expr, .. } | BExpr::InSet { expr, .. } => plain(expr),
        BExpr::Func { args, .. } => args.iter().all(plain),
        BExpr::Case { whens, else_, .. } => {
            whens.iter().all(|(w, t)| plain(w) && plain(t)) && else_.as_deref().is_none_or(plain)
        }
        BExpr::InList { expr, list, .. } => plain(expr) && list.iter().all(plain),
        BExpr::Like { expr, pattern, .. } => plain(expr) && plain(pattern),
        BExpr::Correlated { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::{Engine, Prepared};

    /// `t(ts, sym, x)`: rows 1-6 over symbols A (2 rows), B (3) and C (1).
    fn engine() -> Engine {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, x DOUBLE)").expect("ddl");
        e.execute("INSERT INTO t VALUES (1, 'A', 1), (2, 'A', 2), (3, 'B', 3), (4, 'B', 4), (5, 'B', 5), (6, 'C', 6)")
            .expect("dml");
        e
    }

    fn prepared(e: &Engine, sql: &str) -> Prepared {
        let stmts = crate::parser::parse_statements(sql).expect("parses");
        let crate::parser::ast::Statement::Query(q) = &stmts[0] else { panic!("not a query") };
        e.prepare(q).expect("plans")
    }

    #[test]
    fn bounds_linear_plans_only() {
        let e = engine();
        let rows = |sql: &str| prepared(&e, sql).linear_scan_rows();
        assert_eq!(rows("SELECT * FROM t"), Some(6));
        assert_eq!(rows("SELECT * FROM t WHERE sym = 'B'"), Some(3));
        assert_eq!(rows("SELECT * FROM t WHERE sym = 'B' AND ts >= '1970-01-01 00:00:00.000000004'"), Some(2));
        assert_eq!(rows("SELECT sym, max(x) FROM t WHERE sym IN ('A', 'C') GROUP BY sym ORDER BY 2 LIMIT 1"), Some(3));
        assert_eq!(rows("SELECT 1"), Some(1));
        assert_eq!(rows("SELECT * FROM t a JOIN t b ON a.sym = b.sym"), None);
        assert_eq!(rows("SELECT * FROM t WHERE x > (SELECT avg(x) FROM t u WHERE u.sym = t.sym)"), None);
    }

    #[test]
    fn scan_rows_count_both_sides_of_a_join() {
        let e = engine();
        let rows = |sql: &str| prepared(&e, sql).scan_rows();
        assert_eq!(rows("SELECT * FROM t WHERE sym = 'B'"), Some(3));
        assert_eq!(rows("SELECT * FROM t a JOIN t b ON a.sym = b.sym"), Some(12));
        assert_eq!(rows("SELECT * FROM (SELECT * FROM t WHERE sym = 'A') a JOIN t b ON a.x < b.x"), Some(12));
        let asof = "SELECT * FROM (SELECT * FROM t WHERE sym = 'C') a ASOF JOIN t b ON a.sym = b.sym AND a.ts >= b.ts";
        assert_eq!(rows(asof), Some(7));
        assert_eq!(rows("SELECT * FROM t WHERE x > (SELECT avg(x) FROM t u WHERE u.sym = t.sym)"), None);
    }
}
