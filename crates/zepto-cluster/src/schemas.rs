//! Tables that line protocol creates or widens where its rows are stored, told to every node.
//!
//! A line-protocol record creates its table (and adds columns for new fields) on the node
//! that owns its partition. Every other node plans queries over that table too (it asks the
//! owners for their rows), so it must know it: after applying line protocol, the consumer
//! compares the node's tables with what they were and publishes, as statement records on
//! every partition, `CREATE TABLE IF NOT EXISTS` for a new table and `ALTER TABLE ... ADD
//! COLUMN IF NOT EXISTS` for a new column. Both are idempotent, so several nodes telling the
//! same change, or a node meeting its own, change nothing more. Column order may differ
//! between nodes; queries name columns, so answers do not.

use std::collections::HashMap;
use zepto_sql::parser::ast::{quote_ident as quoted, CreateTable};
use zepto_sql::Engine;
use zepto_storage::Table;

/// The column count of every table the cluster spreads, as it was.
pub(crate) struct Shapes(HashMap<String, usize>);

/// The node's tables now.
pub(crate) fn shapes(engine: &Engine) -> Shapes {
    let catalog = engine.catalog();
    let mut out = HashMap::new();
    for name in catalog.table_names().into_iter().filter(|n| !crate::is_system(n)) {
        if let Ok(t) = catalog.snapshot(&name) {
            out.insert(name, t.schema().len());
        }
    }
    Shapes(out)
}

/// The statements that tell every node what changed since `before`.
pub(crate) fn changes(engine: &Engine, before: &Shapes) -> Vec<String> {
    let mut out = Vec::new();
    let catalog = engine.catalog();
    for name in catalog.table_names().into_iter().filter(|n| !crate::is_system(n)) {
        let Ok(t) = catalog.snapshot(&name) else { continue };
        match before.0.get(&name) {
            None => out.push(create(&t)),
            Some(&n) => out.extend(t.schema().columns.iter().skip(n).map(|c| {
                format!(
                    "ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}",
                    quoted(&name),
                    quoted(&c.name),
                    c.data_type.sql_name()
                )
            })),
        }
    }
    out
}

/// `CREATE TABLE IF NOT EXISTS` for `t` as it is, its key and timestamp spelled out.
pub(crate) fn create(t: &Table) -> String {
    let cols = &t.schema().columns;
    let name_of = |i: Option<usize>| i.and_then(|i| cols.get(i)).map(|c| c.name.clone());
    CreateTable {
        name: t.name().to_string(),
        if_not_exists: true,
        columns: cols.iter().map(|c| (c.name.clone(), c.data_type)).collect(),
        timestamp: name_of(t.ts_col()),
        partition_by: name_of(t.key_col()),
        dedup_keys: t.dedup_keys().iter().filter_map(|&i| name_of(Some(i))).collect(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_tables_and_columns_become_statements_that_recreate_them() {
        let e = Engine::new();
        e.execute("CREATE TABLE old (ts TIMESTAMP, v BIGINT)").expect("old");
        e.execute("CREATE TABLE zepto_kafka_offsets (ts TIMESTAMP, n BIGINT)").expect("system");
        let before = shapes(&e);
        e.execute("CREATE TABLE \"we\"\"ird\" (ts TIMESTAMP, sym SYMBOL, px DOUBLE)").expect("new");
        e.execute("ALTER TABLE old ADD COLUMN w DOUBLE").expect("widened");
        let stmts = changes(&e, &before);
        assert_eq!(stmts.len(), 2, "{stmts:?}");
        let other = Engine::new();
        other.execute("CREATE TABLE old (ts TIMESTAMP, v BIGINT)").expect("old");
        for s in stmts.iter().chain(stmts.iter()) {
            other.execute(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        for t in ["old", "we\"ird"] {
            let (a, b) = (e.catalog().snapshot(t).expect("a"), other.catalog().snapshot(t).expect("b"));
            assert_eq!(a.schema(), b.schema(), "{t}");
            assert_eq!((a.key_col(), a.ts_col()), (b.key_col(), b.ts_col()), "{t}");
        }
        assert!(changes(&e, &shapes(&e)).is_empty(), "nothing changed, nothing told");
    }
}
