//! Taking a partition over: when Kafka assigns a partition, a node whose tables are behind the
//! partition's newest manifest replaces its shard of every table with the manifest's (see the
//! module docs of `history`), then resumes the log right after the manifest's offset.

use super::manifest::{Manifest, TableEntry};
use super::{check_no_local_history, cluster_tables, partition_dir, shard_keys, SharedHistory};
use crate::offsets;
use crate::ClusterError;
use zepto_server::auth::Principal;
use zepto_server::ingest::{self, IngestFormat, WriteRequest};
use zepto_sql::parser::ast::quote_ident;
use zepto_sql::Engine;
use zepto_storage::history::SHARED;
use zepto_storage::{ColumnDef, HistFile, Shard, StorageError};

/// Where partition `p` (of `count`) of `topic` resumes on this node, whose tables hold it up
/// to `applied`: after the newest manifest, taken over first, when that is further; else
/// after `applied` (`None`: from the beginning).
pub(crate) fn take_over(
    engine: &Engine,
    sh: &SharedHistory,
    topic: &str,
    p: i32,
    count: i32,
    applied: Option<i64>,
    now_ns: i64,
) -> Result<Option<i64>, ClusterError> {
    let Some(m) = Manifest::latest(&sh.store, topic, p)? else { return Ok(applied) };
    if applied.is_some_and(|a| a >= m.offset) {
        return Ok(applied);
    }
    if m.partitions != count {
        return Err(ClusterError::Storage(format!(
            "shared history of partition {p} was sealed with {} partitions, the topic has {count}: its keys \
             belong elsewhere now",
            m.partitions
        )));
    }
    adopt(engine, sh, &m, count)?;
    let mark = offsets::mark(topic, p, m.offset, now_ns)?;
    let empty = WriteRequest {
        format: IngestFormat::Ilp,
        table: None,
        precision: zepto_server::ingest::ilp::Precision::NANOS,
        now_ns,
    };
    ingest::write_marked(engine, &Principal::anonymous_admin(), &empty, b"", &[mark])
        .map_err(|e| ClusterError::Storage(e.message))?;
    Ok(Some(m.offset))
}

/// Replace this node's shard of every table by `m`'s.
fn adopt(engine: &Engine, sh: &SharedHistory, m: &Manifest, count: i32) -> Result<(), ClusterError> {
    for t in &m.tables {
        define(engine, t)?;
    }
    let mut names = cluster_tables(engine);
    names.retain(|n| !m.tables.iter().any(|t| t.name.eq_ignore_ascii_case(n)));
    for t in &m.tables {
        adopt_table(engine, sh, m, count, &t.name, Some(t))?;
    }
    // Tables the manifest does not name (created since) hold none of its rows.
    for n in names {
        adopt_table(engine, sh, m, count, &n, None)?;
    }
    Ok(())
}

/// Create `t` if this node lacks it, and add the columns its copy lacks.
fn define(engine: &Engine, t: &TableEntry) -> Result<(), ClusterError> {
    let run = |sql: &str| engine.execute(sql).map(drop).map_err(|e| ClusterError::Storage(format!("{sql}: {e}")));
    run(&t.create)?;
    for (name, ty) in &t.columns {
        run(&format!("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {ty}", quote_ident(&t.name), quote_ident(name)))?;
    }
    Ok(())
}

/// One table's shard replaced: rows dropped, history files named, recent rows loaded.
fn adopt_table(
    engine: &Engine,
    sh: &SharedHistory,
    m: &Manifest,
    count: i32,
    name: &str,
    entry: Option<&TableEntry>,
) -> Result<(), ClusterError> {
    let storage = |e: StorageError| ClusterError::Storage(format!("table '{name}': {e}"));
    let catalog = engine.catalog();
    let snap = catalog.snapshot(name).map_err(storage)?;
    check_no_local_history(&snap)?;
    let (mut keys, mut null_key) = shard_keys(&snap, m.partition, count);
    if let Some(t) = entry {
        keys.extend(t.keys.iter().filter(|k| snap.dict().code(k).is_none()).cloned());
        null_key |= t.null_key;
    }
    let files: Vec<HistFile> = entry.map(|t| t.history.iter().map(|f| f.hist_file()).collect()).unwrap_or_default();
    let prefix = format!("{SHARED}{}/", partition_dir(&m.topic, m.partition));
    catalog.adopt_shard(name, Shard { keys: &keys, null_key }, &prefix, &files).map_err(storage)?;
    let defs: Vec<ColumnDef> = snap.schema().columns.clone();
    for f in entry.map(|t| t.recent.as_slice()).unwrap_or_default() {
        let bytes = sh
            .store
            .get(&f.path)
            .map_err(storage)?
            .ok_or_else(|| ClusterError::Storage(format!("shared history file {} is missing", f.path)))?;
        let cols = zepto_history::read_file(bytes, &defs, &f.path).map_err(storage)?;
        let rows = cols.first().map_or(0, zepto_storage::Column::len);
        if rows as u64 != f.rows {
            return Err(ClusterError::Storage(format!("{} holds {rows} rows, its manifest says {}", f.path, f.rows)));
        }
        if rows > 0 {
            catalog.append(name, cols).map_err(storage)?;
        }
    }
    Ok(())
}
