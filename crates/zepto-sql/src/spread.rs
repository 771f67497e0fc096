//! Statements that change a table a cluster spreads, run on a member node: they go through
//! the cluster's log ([`Cluster::publish`]), so every row reaches the node owning its
//! partition, and no row is stored where no query reads it.
//!
//! - `CREATE TABLE` is checked here (a bad definition, or a table that exists, is refused as
//!   anywhere), sent to every node through the log, then created here too, so this node
//!   plans queries over it at once whatever partitions it owns.
//! - `INSERT` and `COPY ... FROM` read their rows here, shaped and checked for the table;
//!   the rows go to the log keyed by their partition key, and the answer comes once the log
//!   holds them all. The owners store them as they consume them, as they do `/write`'s.
//! - Statements that change rows or a schema in place (UPDATE, DELETE, DROP TABLE, ALTER
//!   TABLE ADD COLUMN or DEDUP, CREATE TABLE AS, and CREATE, REFRESH or DROP MATERIALIZED
//!   VIEW, a view being a catalog object like a table) are refused: the log has no record
//!   for them yet. A table created with `DEDUP UPSERT KEYS` carries them in its CREATE TABLE to every
//!   node, so every owner deduplicates alike.
//!   `SET cluster_scope = local` runs any statement on this node alone, on its own copy.
//!
//! Indexes, TTLs and tiering are each node's own, over its own rows: they run here.

use crate::cluster::{ClusterRef, Publish};
use crate::error::{Result, SqlError};
use crate::interrupt::RunContext;
use crate::parser::ast::{CreateTable, Statement};
use zepto_storage::{Column, ColumnDef, Schema, Table, TableOptions};

/// The cluster to send `s` through: `Some` when the engine is a member of `cluster`, the
/// session does not ask for `cluster_scope = local`, and `s` changes the rows or the schema
/// of a table the cluster spreads.
pub(crate) fn through_log<'c>(
    cluster: Option<&'c ClusterRef>,
    run: &RunContext,
    s: &Statement,
) -> Option<&'c ClusterRef> {
    let cluster = cluster?;
    let changes = matches!(
        s,
        Statement::CreateTable(_)
            | Statement::CreateTableAs { .. }
            | Statement::Insert { .. }
            | Statement::CopyFrom { .. }
            | Statement::Delete { .. }
            | Statement::Update { .. }
            | Statement::DropTable { .. }
            | Statement::CreateMaterializedView { .. }
            | Statement::RefreshMaterializedView { .. }
            | Statement::DropMaterializedView { .. }
            | Statement::AlterAddColumn { .. }
            | Statement::AlterDedup { .. }
    );
    let (table, _) = s.target()?;
    (changes && !run.settings().cluster_local() && cluster.get().distributes(table)).then_some(cluster)
}

/// Why a statement cannot run on a cluster table.
pub(crate) fn refused(s: &Statement) -> SqlError {
    let (table, what) = match s {
        Statement::CreateTableAs { name, .. } => {
            (name.as_str(), "CREATE TABLE ... AS (create the table, then INSERT ... SELECT)")
        }
        Statement::Delete { table, .. } => (table.as_str(), "DELETE"),
        Statement::Update { table, .. } => (table.as_str(), "UPDATE"),
        Statement::DropTable { name, .. } => (name.as_str(), "DROP TABLE"),
        Statement::CreateMaterializedView { name, .. } => (name.as_str(), "CREATE MATERIALIZED VIEW"),
        Statement::RefreshMaterializedView { name, .. } => (name.as_str(), "REFRESH MATERIALIZED VIEW"),
        Statement::DropMaterializedView { name, .. } => (name.as_str(), "DROP MATERIALIZED VIEW"),
        Statement::AlterAddColumn { table, .. } => (table.as_str(), "ALTER TABLE ... ADD COLUMN"),
        Statement::AlterDedup { table, .. } => (table.as_str(), "ALTER TABLE ... DEDUP"),
        _ => ("", "this statement"),
    };
    SqlError::NotSupported(format!(
        "{what} on the cluster table '{table}': its rows are the cluster's log, which carries no such \
         change yet; SET cluster_scope = local runs it on this node's own copy only"
    ))
}

/// `ct` checked (a bad definition is refused) and sent to every node through `cluster`'s log
/// as `CREATE TABLE IF NOT EXISTS` with its resolved partition key and timestamp spelled out,
/// so every node makes the same table: the statement to run here too.
pub(crate) fn publish_create(cluster: &ClusterRef, ct: &CreateTable) -> Result<CreateTable> {
    let columns = ct.columns.iter().map(|(n, t)| ColumnDef { name: n.clone(), data_type: *t }).collect();
    let opts = TableOptions {
        partition_key: ct.partition_by.clone(),
        timestamp: ct.timestamp.clone(),
        dedup_keys: ct.dedup_keys.clone(),
        one_partition: false,
    };
    let table = Table::new(&ct.name, Schema { columns }, &opts)?;
    let name_of = |i: Option<usize>| i.and_then(|i| table.schema().columns.get(i)).map(|c| c.name.clone());
    let everywhere = CreateTable {
        if_not_exists: true,
        partition_by: name_of(table.key_col()),
        timestamp: name_of(table.ts_col()),
        ..ct.clone()
    };
    cluster.get().publish(Publish::CreateTable(&everywhere.to_string())).map_err(unavailable)?;
    Ok(everywhere)
}

/// Rows of `table` (shaped for it, the caller's rights checked) to `cluster`'s log, keyed
/// by partition key, once they pass the checks a local append makes. How many.
pub(crate) fn publish_rows(cluster: &ClusterRef, table: &Table, cols: &[Column]) -> Result<usize> {
    table.validate(cols)?;
    let keys = crate::plan::dist::routing_keys(table, cols);
    if keys.is_empty() {
        return Ok(0);
    }
    let names: Vec<String> = table.schema().columns.iter().map(|c| c.name.clone()).collect();
    let change = Publish::Rows { table: table.name(), names: &names, columns: cols, keys: &keys };
    cluster.get().publish(change).map_err(unavailable)?;
    Ok(keys.len())
}

fn unavailable(e: String) -> SqlError {
    SqlError::Unavailable(format!("the cluster's log did not take the change: {e}"))
}
