//! The tenant scope (`TableAccess::with_tenant`, see `zepto_sql::access`) over a table split
//! between memory and the Parquet history: aggregates merged from history partials, history
//! scans read into memory, LATEST ON and index-free TopN all see only the tenant's rows, with
//! `tenant_id` the partition key or an ordinary column. Tenant `b`'s bodies are not numbers, so
//! a query that casts `body` fails if it ever evaluates one of them.

use zepto_slt::{result_lines, tiering_engine};
use zepto_sql::{Engine, TableAccess};

const DAY: i64 = zepto_storage::time::NS_PER_DAY;
const T0: i64 = 1_704_153_600_000_000_000; // 2024-01-02

fn run(e: &Engine, sql: &str) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let mut lines = result_lines(&r);
    lines.sort();
    lines
}

/// `mem` over six days, 40 rows a day per tenant, the first three days tiered to Parquet.
fn tiered(cols: &str, tenant_first: bool) -> Engine {
    let e = tiering_engine().expect("tiering engine").with_parallel_min_rows(0);
    e.execute(&format!("CREATE TABLE mem ({cols}, id BIGINT, score DOUBLE, body VARCHAR)")).expect("create");
    let mut rows = Vec::new();
    for i in 0..480i64 {
        let (tenant, body) = if i % 2 == 0 { ("a", i.to_string()) } else { ("b", format!("secret-{i}")) };
        let kind = format!("k{}", i % 3);
        let (x, y) = if tenant_first { (tenant, kind.as_str()) } else { (kind.as_str(), tenant) };
        let ts = T0 + (i / 80) * DAY + (i % 80) * 1_000_000_000;
        rows.push(format!("(CAST({ts} AS TIMESTAMP), '{x}', '{y}', {i}, {i}.0, '{body}')"));
    }
    e.execute(&format!("INSERT INTO mem VALUES {}", rows.join(", "))).expect("insert");
    e.execute("ALTER TABLE mem CONVERT PARTITION TO PARQUET WHERE ts < '2024-01-05'").expect("tier");
    let snap = e.catalog().snapshot("mem").expect("mem");
    assert!(!snap.history().files.is_empty() && snap.row_count() > 0, "rows in both tiers");
    e
}

#[test]
fn history_rows_of_other_tenants_stay_out_of_sight() {
    let layouts =
        [("ts TIMESTAMP, tenant_id SYMBOL, kind SYMBOL", true), ("ts TIMESTAMP, kind SYMBOL, tenant_id SYMBOL", false)];
    for (cols, tenant_first) in layouts {
        let all = tiered(cols, tenant_first);
        let scoped = all.with_access(TableAccess::all().with_tenant("a"));
        let plan = run(&scoped, "EXPLAIN SELECT kind, count(*), sum(score) FROM mem GROUP BY kind").join("\n");
        assert!(plan.contains("HistoryAggregate"), "{cols}: {plan}");
        // No totals of the history (files and row groups hold other tenants' rows too).
        assert!(plan.contains("+ history parquet") && !plan.contains("files="), "{cols}: {plan}");
        let whole = run(&all, "EXPLAIN SELECT kind, count(*) FROM mem GROUP BY kind").join("\n");
        assert!(whole.contains("files=") && whole.contains("row_groups="), "{cols}: {whole}");
        let own = "(SELECT * FROM mem WHERE tenant_id = 'a')";
        let queries = [
            "SELECT count(*), sum(score), min(ts), max(ts) FROM {m} x",
            "SELECT kind, count(*), sum(score), min(id), max(id) FROM {m} x GROUP BY kind",
            "SELECT kind, count(*) FROM {m} x WHERE ts >= '2024-01-03' GROUP BY kind",
            "SELECT * FROM {m} x WHERE ts < '2024-01-04'",
            "SELECT * FROM {m} x LATEST ON ts PARTITION BY kind",
            "SELECT id FROM {m} x ORDER BY score LIMIT 5",
        ];
        for q in queries {
            let (got, want) = (run(&scoped, &q.replace("{m}", "mem")), run(&all, &q.replace("{m}", own)));
            assert_eq!(got, want, "{cols}: {q}");
        }
        assert_eq!(run(&scoped, "SELECT count(*) FROM mem"), ["240"], "{cols}");
        assert_eq!(run(&all, "SELECT count(*) FROM mem"), ["480"], "{cols}");
        // Every history path evaluates a user's expression over the tenant's rows only.
        for q in [
            "SELECT kind, sum(CAST(body AS BIGINT)) FROM mem GROUP BY kind",
            "SELECT count(*) FROM mem WHERE CAST(body AS BIGINT) >= 0",
            "SELECT id FROM mem WHERE CAST(body AS BIGINT) % 3 = 0 ORDER BY ts LIMIT 3",
        ] {
            assert!(all.execute(q).is_err(), "{cols}: {q} fails over tenant b's bodies");
            run(&scoped, q);
        }
    }
}
