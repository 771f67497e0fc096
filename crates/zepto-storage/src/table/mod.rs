//! Tables: a schema, a symbol dictionary and partitions.
//!
//! Rows are split by the partition key (by default the first `SYMBOL` column; NULL keys get a
//! partition of their own) and, when the table has a designated timestamp (by default the first
//! `TIMESTAMP` column), kept sorted by it inside every partition. Appends that arrive in time
//! order are plain vector pushes; out-of-order rows are merged in. The order is an invariant of
//! the type, not a flag: a [`Partition`]'s fields are private, its constructors sort or check
//! (`Table::from_parts` refuses a stored partition out of order), and only this module and its
//! submodules mutate one, so readers binary-search every partition. The table's columns and
//! layout choices are in `schema.rs`, a partition and its time order in `partition.rs`, a
//! table's appends in `ingest.rs` (the copying of a batch's rows onto partitions in
//! `append.rs`), deletes, updates, dedup keys, indexes and added columns in `edit.rs`.

use crate::column::{Column, ColumnData};
use crate::dict::Dict;
use crate::error::StorageError;
use crate::history::{HistFile, History};
use crate::index::IndexDef;

mod append;
mod chunk_order;
mod dedup;
mod defer;
mod edit;
mod history_reader;
mod ingest;
mod merge;
mod pack;
mod partition;
mod picked;
mod schema;
pub use pack::{PACK_ROWS, PACK_TARGET_ROWS};
mod parts;
pub use parts::Run;
mod scatter;
mod shard;
mod split;
pub use split::{ColumnSplit, KeyGroups};
mod groups;
mod tails;
use crate::types::DataType;
use append::*;
pub use history_reader::HistoryReader;
pub use partition::Partition;
use partition::{is_sorted_with_nulls_first, new_lineage};
pub use schema::{default_partition_key, ColumnDef, Schema, TableOptions};
pub use shard::Shard;
use std::sync::Arc;
pub use tails::{TailMemo, TAIL_MEMO_MAX_BYTES, TAIL_MEMO_MAX_ROWS};

/// A table's current state: schema, layout, symbol dictionary, in-memory partitions and history.
/// Readers share it as an `Arc<Table>` snapshot; changes go through the [`crate::Catalog`],
/// which logs them before they are applied.
#[derive(Debug, Clone)]
pub struct Table {
    /// Table name as written in CREATE TABLE; unique in the catalog ignoring ASCII case.
    name: String,
    /// The columns, in order (every partition holds one column per entry).
    schema: Schema,
    /// Index of the partition-key column (a SYMBOL column).
    key_col: Option<usize>,
    /// Index of the designated timestamp column.
    ts_col: Option<usize>,
    dict: Arc<Dict>,
    parts: parts::Parts,
    /// Dictionary code → index into `parts`.
    slot_of_code: Vec<u32>,
    null_slot: Option<usize>,
    /// [`split::Placement::by_slot`]'s scratch: [`split::NO_TARGET`] per partition slot
    /// between appends.
    target_of_slot: Vec<u32>,
    rows: usize,
    /// Older rows moved to Parquet files, and the retention setting.
    history: Arc<History>,
    /// Bumped by every change other than a plain append (delete, update, add column, tier,
    /// retain, an append that replaced rows under `DEDUP UPSERT KEYS`): tiering checks it did
    /// not move under it while its files were written.
    mutations: u64,
    /// Reads the history files (installed by the catalog on tables that have history).
    reader: Option<Arc<dyn HistoryReader>>,
    /// Secondary indexes (`CREATE INDEX`), each on a column of the schema.
    indexes: Vec<IndexDef>,
    /// `DEDUP UPSERT KEYS` as schema positions, ascending (empty: appends keep every row).
    /// Always holds the designated timestamp and the partition key when not empty.
    dedup: Vec<usize>,
    /// Rows appended since small partitions were last packed (`pack.rs`).
    since_pack: usize,
    /// Rows appended but not yet split among the partitions (`defer.rs`): none whenever
    /// anyone reads the partitions.
    deferred: defer::Deferred,
    /// The last answer to "the last row of every partition" (`tails.rs`), shared by versions.
    tails: tails::TailSlot,
}

const NO_SLOT: u32 = u32::MAX;

impl Table {
    /// Table name as written in CREATE TABLE; unique in the catalog ignoring ASCII case.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The columns, in order (every partition holds one column per entry). Changed only
    /// through the table's own operations (ADD COLUMN), which keep partitions in step.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Index of the partition-key column (a SYMBOL column), if the table is partitioned.
    pub fn key_col(&self) -> Option<usize> {
        self.key_col
    }

    /// Index of the designated timestamp column (partitions are sorted by it), if any.
    pub fn ts_col(&self) -> Option<usize> {
        self.ts_col
    }

    /// An empty table. Fails if the schema is empty or repeats a name, a column has a type tables
    /// cannot store, or a chosen partition key (timestamp) is missing or not SYMBOL (TIMESTAMP).
    pub fn new(name: &str, schema: Schema, opts: &TableOptions) -> Result<Table, StorageError> {
        if schema.is_empty() {
            return Err(StorageError::Invalid(format!("table '{name}' needs at least one column")));
        }
        for (i, c) in schema.columns.iter().enumerate() {
            if !c.data_type.is_storable() {
                return Err(StorageError::Invalid(format!("column '{}' cannot have type {}", c.name, c.data_type)));
            }
            if schema.columns[..i].iter().any(|d| d.name.eq_ignore_ascii_case(&c.name)) {
                return Err(StorageError::ColumnExists(c.name.clone()));
            }
        }
        let pick = |want: &Option<String>, dt: DataType, what: &str| -> Result<Option<usize>, StorageError> {
            match want {
                Some(n) => {
                    let i = schema
                        .index_of(n)
                        .ok_or_else(|| StorageError::ColumnNotFound { table: name.to_string(), column: n.clone() })?;
                    if schema.columns[i].data_type != dt {
                        return Err(StorageError::Invalid(format!("{what} column '{n}' must be {dt}")));
                    }
                    Ok(Some(i))
                }
                None => Ok(schema.columns.iter().position(|c| c.data_type == dt)),
            }
        };
        if opts.one_partition && opts.partition_key.is_some() {
            return Err(StorageError::Invalid("a table of one partition has no partition key".into()));
        }
        let key_col = match (&opts.partition_key, opts.dedup_keys.is_empty()) {
            _ if opts.one_partition => None,
            (Some(_), _) => pick(&opts.partition_key, DataType::Symbol, "partition key")?,
            (None, true) => default_partition_key(&schema.columns),
            // Deduplicated tables partition by their first SYMBOL key, else not at all, so
            // that QuestDB's DEDUP UPSERT KEYS(ts) holds on a table with a SYMBOL column.
            (None, false) => opts
                .dedup_keys
                .iter()
                .find_map(|k| schema.index_of(k).filter(|&i| schema.columns[i].data_type == DataType::Symbol)),
        };
        let ts_col = pick(&opts.timestamp, DataType::Timestamp, "designated timestamp")?;
        Ok(Table {
            name: name.to_string(),
            schema,
            key_col,
            ts_col,
            dict: Arc::new(Dict::default()),
            parts: parts::Parts::default(),
            slot_of_code: Vec::new(),
            null_slot: None,
            target_of_slot: Vec::new(),
            rows: 0,
            history: Arc::default(),
            mutations: 0,
            reader: None,
            indexes: Vec::new(),
            dedup: Vec::new(),
            since_pack: 0,
            deferred: Default::default(),
            tails: Default::default(),
        })
        .and_then(|mut t| {
            t.set_dedup(&opts.dedup_keys)?;
            Ok(t)
        })
    }

    /// A table as a checkpoint stored it: layout, dictionary and partitions as (key code,
    /// columns) (every SYMBOL column coded against `dict`). Everything the append path
    /// guarantees is checked here, so damaged or mismatched input is an error, not a table that
    /// breaks queries later.
    pub fn from_parts(
        name: &str,
        schema: Schema,
        key_col: Option<usize>,
        ts_col: Option<usize>,
        dict: Arc<Dict>,
        parts: Vec<(Option<u32>, Vec<Arc<Column>>)>,
    ) -> Result<Table, StorageError> {
        // Unchecked until build_from_parts checks them (the constructors would panic).
        let parts = parts.into_iter().map(|(key, columns)| Partition::raw(columns, key)).collect();
        let mut t = Self::build_from_parts(name, schema, key_col, ts_col, dict, parts, true)?;
        t.pack_if_many_small();
        Ok(t)
    }

    /// [`Table::from_parts`] for partitions the engine assembled itself (a query's view of
    /// memory and history): the per-row checks (codes inside the dictionary, one key per
    /// partition, time order) run in debug builds only; the per-partition ones always.
    pub fn assembled(
        name: &str,
        schema: Schema,
        key_col: Option<usize>,
        ts_col: Option<usize>,
        dict: Arc<Dict>,
        parts: Vec<Partition>,
    ) -> Result<Table, StorageError> {
        Self::build_from_parts(name, schema, key_col, ts_col, dict, parts, cfg!(debug_assertions))
    }

    fn build_from_parts(
        name: &str,
        schema: Schema,
        key_col: Option<usize>,
        ts_col: Option<usize>,
        dict: Arc<Dict>,
        parts: Vec<Partition>,
        per_row: bool,
    ) -> Result<Table, StorageError> {
        let bad = |m: String| StorageError::Invalid(format!("table '{name}': {m}"));
        let mut t = Table::new(name, schema, &TableOptions::default())?;
        for (i, want) in [(key_col, DataType::Symbol), (ts_col, DataType::Timestamp)] {
            if let Some(i) = i {
                if t.schema.columns.get(i).map(|c| c.data_type) != Some(want) {
                    return Err(bad(format!("column {i} cannot be the {want} layout column")));
                }
            }
        }
        (t.key_col, t.ts_col, t.dict) = (key_col, ts_col, dict);
        for mut p in parts {
            let n = p.len();
            let cols = p.own_mut();
            if cols.len() != t.schema.len() {
                return Err(bad(format!("a partition has {} columns, the schema {}", cols.len(), t.schema.len())));
            }
            for (c, def) in cols.iter_mut().zip(&t.schema.columns) {
                if c.len() != n || c.data_type() != def.data_type {
                    return Err(bad(format!("column '{}' of a partition has the wrong type or length", def.name)));
                }
                if c.validity().is_some_and(|v| v.len() != n) {
                    return Err(bad(format!("column '{}' has a validity bitmap of the wrong length", def.name)));
                }
                if let ColumnData::Symbol { codes, .. } = &c.data() {
                    // Valid rows code into the dictionary; NULL rows hold 0 (the zero value).
                    let ok = !per_row
                        || codes.iter().enumerate().all(|(i, &k)| {
                            if c.is_valid(i) {
                                (k as usize) < t.dict.len()
                            } else {
                                k == 0
                            }
                        });
                    if !ok {
                        return Err(bad(format!("column '{}' has codes outside the dictionary", def.name)));
                    }
                    // Coded against the table's own dictionary (copied only if it is not).
                    if !matches!(&c.data(), ColumnData::Symbol { dict, .. } if Arc::ptr_eq(dict, &t.dict)) {
                        if let ColumnData::Symbol { dict, .. } = Arc::make_mut(c).data_mut() {
                            *dict = t.dict.clone();
                        }
                    }
                }
            }
            let slot = t.parts.len();
            match (t.key_col, p.key) {
                (Some(k), Some(code)) => {
                    let c = code as usize;
                    if c >= t.dict.len() || t.slot_of_code.get(c).is_some_and(|&s| s != NO_SLOT) {
                        return Err(bad(format!("partition key code {code} is unknown or repeated")));
                    }
                    let col = &p.own[k];
                    let ok = !per_row
                        || (col.null_count() == 0
                            && matches!(&col.data(), ColumnData::Symbol { codes, .. } if codes.iter().all(|&x| x == code)));
                    if !ok {
                        return Err(bad(format!("a row of partition '{}' has another key", t.dict.get(code))));
                    }
                    if c >= t.slot_of_code.len() {
                        t.slot_of_code.resize(c + 1, NO_SLOT);
                    }
                    t.slot_of_code[c] = slot as u32;
                }
                (_, None) => {
                    if t.null_slot.is_some() {
                        return Err(bad("two partitions without a key".into()));
                    }
                    if let Some(k) = t.key_col {
                        if p.own[k].null_count() != n {
                            return Err(bad("the NULL-key partition has keyed rows".into()));
                        }
                    }
                    t.null_slot = Some(slot);
                }
                (None, Some(_)) => return Err(bad("a keyed partition in a table without a partition key".into())),
            }
            if per_row && t.ts_col.is_some_and(|c| !is_sorted_with_nulls_first(&p.own[c])) {
                return Err(bad("a partition is not in timestamp order".into()));
            }
            t.rows += n;
            t.parts.push(Arc::new(p));
        }
        Ok(t)
    }

    /// Rows in memory (history rows not included).
    pub fn row_count(&self) -> usize {
        self.rows + self.deferred.rows()
    }

    /// The table's symbol dictionary: every SYMBOL column codes against it, including the partition
    /// key.
    pub fn dict(&self) -> &Arc<Dict> {
        &self.dict
    }

    /// The table's partitions, the table consumed: for a holder of the only copy of a snapshot
    /// (a checkpoint) that writes them one at a time and lets each go once written, so that a
    /// writer appending to it afterwards need not copy its columns.
    pub fn into_partitions(mut self) -> Vec<Arc<Partition>> {
        std::mem::take(self.parts.all_mut())
    }

    /// The in-memory partitions, one per key value seen (plus one for NULL keys); indexes are the
    /// stable slots used by [`Change::Delete`](crate::Change::Delete) and friends.
    pub fn partitions(&self) -> &[Arc<Partition>] {
        debug_assert!(!self.has_deferred(), "partitions read with rows deferred (defer.rs)");
        &self.parts
    }

    /// The partitions' slots in runs that a scan of every row reads alike: whole packs, read as
    /// their columns without visiting a partition, and the slots between them, read partition
    /// by partition. Found by one walk the first time a version of the table asks.
    pub fn runs(&self) -> &[Run] {
        debug_assert!(!self.has_deferred(), "partitions read with rows deferred (defer.rs)");
        self.parts.runs()
    }

    /// The partition holding key `code`, if any rows have it.
    pub fn partition_for_code(&self, code: u32) -> Option<&Arc<Partition>> {
        debug_assert!(!self.has_deferred(), "partitions read with rows deferred (defer.rs)");
        let slot = *self.slot_of_code.get(code as usize)?;
        (slot != NO_SLOT).then(|| &self.parts[slot as usize])
    }

    /// The partition of rows with a NULL key (or of every row of an unkeyed table), if any.
    pub fn null_key_partition(&self) -> Option<&Arc<Partition>> {
        self.null_slot.map(|s| &self.parts[s])
    }

    /// The memo of the last rows of its partitions a query kept (see [`TailMemo`]).
    pub fn tail_memo(&self) -> Option<Arc<TailMemo>> {
        self.tails.get()
    }

    /// Keep `memo` for the next query of the partitions' last rows, in place of the last.
    pub fn keep_tail_memo(&self, memo: TailMemo) {
        self.tails.put(memo);
    }

    /// The history: Parquet files of older rows, and the retention setting.
    pub fn history(&self) -> &Arc<History> {
        &self.history
    }

    /// Install the history as a checkpoint stored it.
    pub fn set_history(&mut self, h: History) {
        self.history = Arc::new(h);
    }

    /// The reader of history files, if the catalog installed one.
    pub fn history_reader(&self) -> Option<&Arc<dyn HistoryReader>> {
        self.reader.as_ref()
    }

    /// Install (or with `None` remove) the reader of history files.
    pub fn set_history_reader(&mut self, r: Option<Arc<dyn HistoryReader>>) {
        self.reader = r;
    }

    /// Bytes of column data held in memory.
    pub fn data_bytes(&self) -> usize {
        pack::data_bytes(&self.parts) + self.deferred.data_bytes()
    }

    /// The smallest non-NULL designated timestamp in memory.
    pub fn min_ts(&self) -> Option<i64> {
        let t = self.ts_col?;
        self.parts
            .iter()
            .filter_map(|p| {
                let first = (0..p.len()).find(|&i| p.is_valid(t, i))?;
                p.i64_values(t).map(|v| v[first])
            })
            .min()
    }

    /// See the `mutations` field.
    pub fn mutations(&self) -> u64 {
        self.mutations
    }

    /// Per partition slot, how many rows have a (non-NULL) timestamp before `before`: the rows
    /// [`Table::remove_before`] would remove. Empty for a table without a designated timestamp.
    pub fn count_before(&self, before: i64) -> Vec<usize> {
        let Some(t) = self.ts_col else { return Vec::new() };
        self.parts.iter().map(|p| p.ts_range(t, i64::MIN, before.saturating_sub(1)).len()).collect()
    }

    /// Remove the rows whose timestamp is before `before` (NULL timestamps stay). Partitions
    /// left empty stay, so slots keep their meaning. Returns the rows removed.
    pub fn remove_before(&mut self, before: i64) -> usize {
        let Some(t) = self.ts_col else { return 0 };
        let had_pack = self.has_pack();
        let mut removed = 0;
        for p in self.parts.all_mut() {
            let r = p.ts_range(t, i64::MIN, before.saturating_sub(1));
            if r.is_empty() {
                continue;
            }
            let p = Arc::make_mut(p);
            let n = p.len();
            let keep: Vec<u32> = (0..r.start as u32).chain(r.end as u32..n as u32).collect();
            for c in p.own_mut() {
                // A fresh allocation, so the memory of the removed rows is returned.
                *c = Arc::new(c.take(&keep));
            }
            p.recount();
            p.lineage = new_lineage();
            removed += r.len();
        }
        self.rows -= removed;
        if removed > 0 {
            self.mutations += 1;
        }
        self.repack_after_removal(had_pack, removed);
        removed
    }

    /// The tiering step: rows before `before` leave memory and `files` (holding exactly those
    /// rows) join the history.
    pub fn tier(&mut self, before: i64, files: &[HistFile]) -> Result<usize, StorageError> {
        if self.ts_col.is_none() {
            return Err(StorageError::Invalid(format!("table '{}' has no designated timestamp to tier by", self.name)));
        }
        let want: u64 = files.iter().map(|f| f.rows).sum();
        let have: usize = self.count_before(before).iter().sum();
        if want != have as u64 {
            return Err(StorageError::Invalid(format!(
                "table '{}': history files hold {want} rows but {have} rows are before the cut",
                self.name
            )));
        }
        let n = self.remove_before(before);
        let h = Arc::make_mut(&mut self.history);
        h.files.extend_from_slice(files);
        h.next_seq += files.len() as u64;
        self.mutations += 1;
        Ok(n)
    }

    /// Retention: drop rows before `before` from memory and the history files wholly before
    /// it. Returns the rows removed from memory and the files dropped (to delete from disk).
    pub fn retain(&mut self, before: i64) -> (usize, Vec<HistFile>) {
        let n = self.remove_before(before);
        let h = Arc::make_mut(&mut self.history);
        let (gone, kept): (Vec<HistFile>, Vec<HistFile>) = h.files.drain(..).partition(|f| f.max_ts < before);
        h.files = kept;
        self.mutations += 1;
        (n, gone)
    }

    /// Set (or with `None` clear) the retention, in nanoseconds (no checks:
    /// [`crate::Catalog::set_ttl`] checks).
    pub fn set_ttl(&mut self, ttl_ns: Option<i64>) {
        Arc::make_mut(&mut self.history).ttl_ns = ttl_ns;
    }
}

#[cfg(test)]
mod tests;
