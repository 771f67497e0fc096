//! Tables: a schema, a symbol dictionary and partitions.
//!
//! Rows are split by the partition key (by default the first `SYMBOL` column; NULL keys get a
//! partition of their own) and, when the table has a designated timestamp (by default the first
//! `TIMESTAMP` column), kept sorted by it inside every partition. Appends that arrive in time
//! order are plain vector pushes; out-of-order rows are merged in. The order is an invariant of
//! the type, not a flag: a [`Partition`]'s fields are private, its constructors sort or check
//! (`Table::from_parts` refuses a stored partition out of order), and only this module mutates
//! one, so readers binary-search every partition.

use crate::column::{Column, ColumnBuilder, ColumnData};
use crate::dict::Dict;
use crate::error::StorageError;
use crate::history::{HistFile, History};
use crate::index::IndexDef;

mod chunk_order;
mod dedup;
mod defer;
mod history_reader;
mod merge;
mod pack;
mod picked;
pub use pack::{PACK_ROWS, PACK_TARGET_ROWS};
use picked::{gather, Picked};
mod parts;
pub use parts::Run;
mod scatter;
mod shard;
mod split;
pub use split::{ColumnSplit, KeyGroups};
mod groups;
mod tails;
use crate::types::DataType;
pub use history_reader::HistoryReader;
pub use shard::Shard;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;
pub use tails::{TailMemo, TAIL_MEMO_MAX_BYTES, TAIL_MEMO_MAX_ROWS};

/// One column of a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    /// Column name as written in CREATE TABLE; unique in its table, ignoring ASCII case.
    pub name: String,
    /// The column's type (a storable one: never NULL or INTERVAL).
    pub data_type: DataType,
}

/// A table's columns, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// The columns; names unique ignoring ASCII case.
    pub columns: Vec<ColumnDef>,
}

/// The partition key a table over `columns` gets when none is chosen: its first SYMBOL
/// column. Whoever routes rows before the table exists (a cluster node producing to Kafka)
/// asks this, so that it agrees with [`Table::new`].
pub fn default_partition_key(columns: &[ColumnDef]) -> Option<usize> {
    columns.iter().position(|c| c.data_type == DataType::Symbol)
}

impl Schema {
    /// Position of the column `name` (ASCII case-insensitive), or `None`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// True when there are no columns (a table always has at least one).
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }
}

/// Layout choices of a table; `None` fields are derived from the schema by [`Table::new`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableOptions {
    /// The partition key column (a SYMBOL column); `None` picks the first SYMBOL column, or
    /// with `dedup_keys` the first SYMBOL column among them (none: one partition).
    pub partition_key: Option<String>,
    /// The designated timestamp column (a TIMESTAMP column); `None` picks the first TIMESTAMP
    /// column.
    pub timestamp: Option<String>,
    /// `DEDUP UPSERT KEYS`: the columns whose values identify a row (empty: no deduplication).
    /// See [`Table::set_dedup`].
    pub dedup_keys: Vec<String>,
    /// Every row in one partition, whatever the columns: for tables built whole and read once
    /// (a materialized view's rows at a read), where a partition per symbol would cost more to
    /// make than it saves a filter. `partition_key` must be `None`.
    pub one_partition: bool,
}

/// Rows of one partition key value, sorted by the designated timestamp (if any).
#[derive(Debug, Clone)]
pub struct Partition {
    /// A loose partition's own columns. Shared so scans hand whole columns to queries without
    /// copying; a writer appends in place past the rows a query still holding a column reads
    /// ([`column_mut`]), and copies a held column before any other change (`Arc::make_mut`).
    /// Equal lengths, rows in designated-timestamp order (NULLs first): every constructor makes
    /// it so, and only this module mutates them. Empty while the partition is packed.
    own: Vec<Arc<Column>>,
    /// A packed partition's rows: a range of columns it shares with other small partitions
    /// (`pack.rs`), in the same order. Whatever changes the partition unpacks it first
    /// ([`Partition::own_mut`]).
    packed: Option<pack::Packed>,
    /// Dictionary code of the key, `None` for the NULL-key or the single partition.
    key: Option<u32>,
    /// Identity of the row layout: row `i` of two partitions with the same lineage is the same
    /// row with the same values, as far as the shorter one reaches. Appending rows in time order
    /// at the end keeps it; anything that moves rows, removes rows or rewrites a vector value
    /// takes a new one ([`Partition::lineage`]).
    lineage: u64,
    /// Rows (every column's length), kept beside the columns: a scan over 100k small
    /// partitions asks each its length, and the columns are two pointers further away.
    /// Whatever changes the columns' length calls [`Partition::recount`].
    rows: usize,
}

/// Lineages handed out so far.
static NEXT_PARTITION_LINEAGE: AtomicU64 = AtomicU64::new(1);

fn new_lineage() -> u64 {
    NEXT_PARTITION_LINEAGE.fetch_add(1, AtomicOrdering::Relaxed)
}

impl Partition {
    /// A partition of `columns` (equal lengths) for key code `key`, put in time order on
    /// `ts_col` (NULLs first) unless it already is: one check when it is, one sort when not.
    pub fn in_time_order(columns: Vec<Arc<Column>>, key: Option<u32>, ts_col: Option<usize>) -> Partition {
        let mut p = Partition::checked(columns, key);
        if let Some(t) = ts_col {
            if !is_sorted_with_nulls_first(&p.own[t]) {
                sort_partition(&mut p, t, 0);
            }
        }
        p
    }

    /// A partition of `columns` the caller has put in time order on `ts_col` (checked in debug
    /// builds; [`Partition::in_time_order`] checks always).
    pub fn time_sorted(columns: Vec<Arc<Column>>, key: Option<u32>, ts_col: Option<usize>) -> Partition {
        let p = Partition::checked(columns, key);
        debug_assert!(ts_col.is_none_or(|t| is_sorted_with_nulls_first(&p.own[t])), "a partition out of time order");
        p
    }

    /// Columns of equal length (a broken partition would misplace rows in every scan).
    fn checked(columns: Vec<Arc<Column>>, key: Option<u32>) -> Partition {
        let n = columns.first().map_or(0, |c| c.len());
        assert!(columns.iter().all(|c| c.len() == n), "partition columns of unequal lengths");
        Partition::raw(columns, key)
    }

    /// A partition of `columns` as they are (equal lengths), with a new lineage.
    fn raw(columns: Vec<Arc<Column>>, key: Option<u32>) -> Partition {
        let rows = columns.first().map_or(0, |c| c.len());
        let mut p = Partition { own: columns, packed: None, key, lineage: new_lineage(), rows };
        p.share_own();
        p
    }

    /// Take the columns' length as the row count, after a change of it (of a loose partition).
    fn recount(&mut self) {
        debug_assert!(self.packed.is_none(), "a packed partition does not change");
        self.rows = self.own.first().map_or(0, |c| c.len());
        self.share_own();
    }

    /// Share the values of the columns no reader holds yet (a held one is shared already, by
    /// [`column_mut`]): a scan hands them to queries whole, and what a query learns of their
    /// blocks ([`crate::summary`]) is kept for the next one.
    fn share_own(&mut self) {
        self.own.iter_mut().filter_map(Arc::get_mut).for_each(|c| c.share());
    }

    /// The partition's own columns, to change: a packed partition first copies its rows out
    /// of the pack (same rows, same order: the lineage stays).
    fn own_mut(&mut self) -> &mut Vec<Arc<Column>> {
        if let Some(pk) = self.packed.take() {
            self.own = pk.unpack(self.rows);
        }
        &mut self.own
    }

    /// The layout identity: equal for two versions of a partition when one only appended rows
    /// in time order to the other, so a structure keyed by row position (a vector index) built
    /// on one version is valid for the other's first rows. Any other change (an out-of-order
    /// append that merges, a DELETE, dropping old rows, an UPDATE of a vector column) gives a
    /// new lineage; an UPDATE of other columns keeps it.
    pub fn lineage(&self) -> u64 {
        self.lineage
    }

    /// The partition's columns, in schema order: shared when it is loose, copied out of the
    /// pack when it is packed (a small partition, see `pack.rs`). Scans over many partitions
    /// read [`Partition::source`] instead.
    pub fn columns(&self) -> Cow<'_, [Arc<Column>]> {
        match &self.packed {
            None => Cow::Borrowed(&self.own),
            Some(pk) => Cow::Owned(pk.unpack(self.rows)),
        }
    }

    /// Where column `c`'s rows live: a column and the position of the partition's first row in
    /// it (0 for a loose partition; packed partitions share their columns). The rows are
    /// `at..at + len()`.
    pub fn source(&self, c: usize) -> (&Column, usize) {
        match &self.packed {
            None => (&self.own[c], 0),
            Some(pk) => pk.column(c),
        }
    }

    /// The values of INTEGER-64 column `c` (a timestamp, say) in the partition's rows, in place.
    pub fn i64_values(&self, c: usize) -> Option<&[i64]> {
        let (col, at) = self.source(c);
        col.as_i64_slice().map(|v| &v[at..at + self.rows])
    }

    /// Whether row `i` of column `c` holds a value.
    pub fn is_valid(&self, c: usize, i: usize) -> bool {
        let (col, at) = self.source(c);
        col.is_valid(at + i)
    }

    /// Whether the partition's rows live in a pack shared with other small partitions.
    pub fn is_packed(&self) -> bool {
        self.packed.is_some()
    }

    /// A packed partition's pack: the columns it shares with other small partitions (whole,
    /// every partition of the pack and rows no partition holds any longer) and where its own
    /// rows start in them; `None` for a loose partition. Pack columns are never changed, so a
    /// scan that covers every row of a pack may hand them out as they are.
    pub fn pack(&self) -> Option<(&[Arc<Column>], usize)> {
        self.packed.as_ref().map(pack::Packed::columns)
    }

    /// Dictionary code of the key, `None` for the NULL-key or the single partition.
    pub fn key(&self) -> Option<u32> {
        self.key
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        debug_assert!(
            self.packed.is_some() || self.rows == self.own.first().map_or(0, |c| c.len()),
            "a partition's row count is stale"
        );
        self.rows
    }

    /// True when the partition holds no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Remove rows `rows` (ascending positions inside the partition); a new lineage.
    fn remove_rows(&mut self, rows: &[u32]) {
        let mut keep = Vec::with_capacity(self.len() - rows.len());
        let mut it = rows.iter().peekable();
        for i in 0..self.len() as u32 {
            if it.peek() == Some(&&i) {
                it.next();
            } else {
                keep.push(i);
            }
        }
        for c in self.own_mut() {
            *c = Arc::new(c.take(&keep));
        }
        self.recount();
        self.lineage = new_lineage();
    }

    /// How many rows lead with a NULL in `ts_col` (the designated timestamp: NULLs sort first),
    /// by binary search.
    pub fn null_prefix(&self, ts_col: usize) -> usize {
        let (col, at) = self.source(ts_col);
        let Some(v) = col.validity() else { return 0 };
        let (mut l, mut r) = (0usize, self.len());
        while l < r {
            let m = (l + r) / 2;
            if v.get(at + m) {
                r = m;
            } else {
                l = m + 1;
            }
        }
        l
    }

    /// Rows whose timestamp column `ts_col` lies in `[lo, hi]` (inclusive), by binary search.
    /// `ts_col` must be the designated timestamp (the order every partition keeps).
    pub fn ts_range(&self, ts_col: usize, lo: i64, hi: i64) -> Range<usize> {
        let Some(ts) = self.i64_values(ts_col) else {
            return 0..self.len();
        };
        // A range past the partition's last time (a query for the newest rows over thousands
        // of partitions) is told by one read, not two searches. NULL slots read 0 but sort
        // first, so the last value is a time unless every row is NULL (then nothing is kept
        // either way).
        if ts.last().is_none_or(|&t| t < lo) {
            return self.len()..self.len();
        }
        // NULL timestamps sort first and never satisfy a range: skip them.
        let nulls = self.null_prefix(ts_col);
        let ts = &ts[nulls..];
        let a = ts.partition_point(|&t| t < lo);
        let b = ts.partition_point(|&t| t <= hi);
        nulls + a..nulls + b.max(a)
    }
}

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

    /// Check that `batch` fits the schema (count, length, types; strings may feed SYMBOL and
    /// VARCHAR columns). Nothing is changed.
    pub fn validate(&self, batch: &[Column]) -> Result<usize, StorageError> {
        if batch.len() != self.schema.len() {
            return Err(StorageError::Invalid(format!(
                "table '{}' has {} columns but {} were supplied",
                self.name,
                self.schema.len(),
                batch.len()
            )));
        }
        let n = batch.first().map_or(0, Column::len);
        for (c, def) in batch.iter().zip(&self.schema.columns) {
            if c.len() != n {
                return Err(StorageError::Invalid("columns of a batch differ in length".into()));
            }
            let dt = c.data_type();
            let ok = dt == def.data_type || dt == DataType::Null || (def.data_type.is_string() && dt.is_string());
            if !ok {
                return Err(StorageError::Invalid(format!(
                    "column '{}' is {} but a {} value was supplied",
                    def.name, def.data_type, dt
                )));
            }
            check_vector_elements(&def.name, c)?;
        }
        Ok(n)
    }

    /// Append a batch (checked whole by [`Table::validate`] first: nothing changes when it is
    /// refused), after any rows deferred before it (`defer.rs`).
    pub fn append(&mut self, batch: Vec<Column>) -> Result<usize, StorageError> {
        let n = self.validate(&batch)?;
        self.fold();
        Ok(self.append_checked(batch, n))
    }

    /// Append batch of `n` rows that [`Table::validate`] accepted: this step cannot fail.
    fn append_checked(&mut self, batch: Vec<Column>, n: usize) -> usize {
        self.split_in(batch, n);
        self.after_append(n);
        n
    }

    /// [`Table::append_checked`] without the packing that may follow it (`pack.rs`).
    fn split_in(&mut self, batch: Vec<Column>, n: usize) {
        if n == 0 {
            return;
        }
        let batch = self.normalize(batch);
        let place = self.place(&batch, n);
        // A buffer per partition costs more than the rows it gathers when they are few, and
        // is a copy more than a spread when the partitions hold rows already (only an empty
        // partition takes its buffer as it is).
        let thin = n < place.targets().len() * THIN_SPLIT_ROWS;
        if (n < PARALLEL_APPEND_ROWS || thin || self.mostly_filled(place.targets()))
            && self.dedup.is_empty()
            && place.targets().len() > 1
        {
            self.append_spread(&batch, &place);
            return;
        }
        let by_target = place.split_batch(batch, n >= PARALLEL_APPEND_ROWS);
        self.fill_targets(place.targets(), by_target, n >= PARALLEL_APPEND_ROWS);
    }

    /// Whether most of partition slots `targets` hold rows already.
    fn mostly_filled(&self, targets: &[usize]) -> bool {
        2 * targets.iter().filter(|&&s| self.parts.get(s).is_some_and(|p| !p.is_empty())).count() > targets.len()
    }

    /// Append `by_target[i]` (rows of one key each) to partition slot `targets[i]` (each slot
    /// once), on every core when `parallel`, deduplicating as the table's keys say.
    fn fill_targets(&mut self, targets: &[usize], by_target: Vec<Vec<Column>>, parallel: bool) {
        // Partitions take their rows independently: a bulk load fills them on every core.
        let (ts_col, dict, dedup) = (self.ts_col, self.dict.clone(), &self.dedup);
        let work = targets_mut(self.parts.all_mut(), targets, by_target);
        // Rows added and rows replaced, summed over partitions.
        let (added, replaced) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let fill = |(mut cols, p): (Vec<Column>, &mut Arc<Partition>)| {
            if let (Some(t), false) = (ts_col, dedup.is_empty()) {
                let up = dedup::plan(p, &cols, dedup, t);
                if let Some(keep) = &up.keep {
                    cols = cols.iter().map(|c| c.take(keep)).collect();
                }
                if !up.replaced.is_empty() {
                    Arc::make_mut(p).remove_rows(&up.replaced);
                    replaced.fetch_add(up.replaced.len(), AtomicOrdering::Relaxed);
                }
            }
            added.fetch_add(cols.first().map_or(0, Column::len), AtomicOrdering::Relaxed);
            append_rows(Arc::make_mut(p), cols, ts_col, &dict);
        };
        if parallel {
            crate::par::for_each(work, fill);
        } else {
            work.into_iter().for_each(fill);
        }
        let (added, replaced) = (added.into_inner(), replaced.into_inner());
        self.rows = self.rows + added - replaced;
        if replaced > 0 {
            // Rows moved: a tiering step that read the table before must not commit.
            self.mutations += 1;
        }
    }

    /// A batch over several partitions (an ingest batch over many symbols, or a large one into
    /// partitions that hold rows already): each partition's rows copied from the batch straight
    /// onto its columns, with no buffer per partition made first, a chunk of rows at a time
    /// when the partitions are few (`split::SPREAD_CHUNK_ROWS`).
    fn append_spread(&mut self, batch: &[Column], place: &split::Placement) {
        // A batch in time order (an ingest batch usually is) has every span in order: one pass
        // over its times in place of a pass over each span's rows scattered through them.
        let unordered = self.ts_col.filter(|&t| !in_time_order(&batch[t]));
        let chunks: Vec<(Vec<u32>, Vec<Range<usize>>)> = place
            .spread_chunks()
            .into_iter()
            .map(|range| {
                let (mut rows, spans) = place.grouped_rows_in(range);
                if let Some(t) = unordered {
                    order_spans_by_time(&mut rows, &spans, &batch[t]);
                }
                (rows, spans)
            })
            .collect();
        let n: usize = chunks.iter().map(|(rows, _)| rows.len()).sum();
        let (ts_col, dict) = (self.ts_col, self.dict.clone());
        let mut work = targets_mut(self.parts.all_mut(), place.targets(), (0..place.targets().len()).collect());
        // Each partition takes its rows chunk by chunk, so in batch order.
        let run = |mut run: Vec<(usize, &mut Arc<Partition>)>| {
            for (rows, spans) in &chunks {
                let picked = run.iter_mut().map(|(t, p)| (spans[*t].clone(), &mut **p)).filter(|(s, _)| !s.is_empty());
                append_picked_run(picked.collect(), batch, rows, ts_col, &dict);
            }
        };
        // A batch spread in chunks stays on the caller's thread: its partitions are few and
        // take many rows each, and in runs on two cores it took 16.8 ms a million rows in
        // 100k-row appends against 11.9 on one (in process).
        if n < PARALLEL_SPREAD_ROWS || chunks.len() > 1 {
            run(work);
        } else {
            // A fold of deferred rows (`defer.rs`): partitions in runs, on every core, while
            // the other writers wait for the table.
            let per = work.len().div_ceil(SPREAD_RUNS).max(1);
            let mut runs = Vec::with_capacity(SPREAD_RUNS);
            while !work.is_empty() {
                let rest = work.split_off(per.min(work.len()));
                runs.push(std::mem::replace(&mut work, rest));
            }
            crate::par::for_each(runs, run);
        }
        self.rows += n;
    }

    /// Symbol columns re-encoded against the table dictionary; untyped NULL columns typed.
    fn normalize(&mut self, batch: Vec<Column>) -> Vec<Column> {
        let defs = self.schema.columns.clone();
        batch.into_iter().zip(&defs).map(|(c, def)| self.normalize_column(c, def.data_type)).collect()
    }

    /// One column of a batch as [`Table::normalize`] leaves it, for a column of type `dt`.
    fn normalize_column(&mut self, c: Column, dt: DataType) -> Column {
        match (dt, c.data_type()) {
            (_, DataType::Null) => Column::nulls(dt, c.len()),
            (DataType::Symbol, _) => self.encode_symbols(c),
            (DataType::Varchar, DataType::Symbol) => {
                let mut b = ColumnBuilder::new(DataType::Varchar, c.len());
                b.extend_from(&c);
                b.finish()
            }
            _ => {
                let mut c = c;
                c.zero_nulls();
                c
            }
        }
    }

    fn encode_symbols(&mut self, mut c: Column) -> Column {
        if let ColumnData::Symbol { dict, .. } = c.data_mut() {
            if dict.lineage() == self.dict.lineage() {
                // Coded against a version of this table's dictionary (an ingest door's builder,
                // `ColumnBuilder::symbols_in`): the longer of the two versions holds every code.
                if dict.len() > self.dict.len() {
                    self.dict = Arc::new((**dict).clone());
                }
                *dict = self.dict.clone();
                return c;
            }
        }
        // A new version only when a string is new: every partition's SYMBOL columns point at
        // the table's dictionary, and a new one is swapped into each that a batch touches.
        let mut grown = (*self.dict).clone();
        if let Some(src) = c.symbol_dict().cloned() {
            groups::recode(&mut c, &src, &mut vec![u32::MAX; src.len()], &mut grown);
        } else {
            let codes = match c.data() {
                ColumnData::Varchar(s) => grown.intern_many((0..s.len()).map(|i| c.is_valid(i).then(|| s.get(i)))),
                _ => vec![0; c.len()],
            };
            c = Column::new(ColumnData::Symbol { codes: codes.into(), dict: self.dict.clone() }, c.validity().cloned());
        }
        if grown.len() != self.dict.len() {
            self.dict = Arc::new(grown);
        }
        if let ColumnData::Symbol { dict, .. } = c.data_mut() {
            *dict = self.dict.clone();
        }
        c
    }

    /// Where each row of `batch` goes: its key's partition (made for a key new to the table),
    /// numbered among the partitions the batch touches. One pass over the key's codes after
    /// the new keys', none over the table's partitions.
    fn place(&mut self, batch: &[Column], n: usize) -> split::Placement {
        let Some(k) = self.key_col else {
            if self.parts.is_empty() {
                self.new_partition(None);
                self.null_slot = Some(0);
            }
            return split::Placement::one(0, n);
        };
        let key = &batch[k];
        let ColumnData::Symbol { codes, .. } = &key.data() else {
            unreachable!("normalize() encodes the key column as SYMBOL");
        };
        // The partitions of keys new to the table first, so that the pass below only reads;
        // made in row order, the NULL key's too: the log names partitions by slot (a DELETE's
        // rows), and replaying deferred batches one by one must number them as their fold did.
        let valid = |i: usize| key.is_valid(i);
        // Usually every key has its partition by now: one pass that only reads, no loop that
        // may add partitions (and so reads the table's map anew for each row).
        let all_have_slots = key.validity().is_none() && all_known(&self.slot_of_code, codes);
        if !all_have_slots {
            for (i, &code) in codes.iter().enumerate() {
                let has_slot = self.slot_of_code.get(code as usize).is_some_and(|&s| s != NO_SLOT);
                if !has_slot && valid(i) {
                    self.slot_of_key(Some(code));
                } else if self.null_slot.is_none() && !valid(i) {
                    self.slot_of_key(None);
                }
            }
        }
        let null = self.null_slot.map_or(NO_SLOT, |s| s as u32);
        let mut scratch = std::mem::take(&mut self.target_of_slot);
        scratch.resize(self.parts.len(), split::NO_TARGET);
        let slots = &self.slot_of_code;
        let place = match key.validity() {
            None => split::Placement::by_slot(codes.iter().map(|&c| slots[c as usize]), &mut scratch),
            Some(_) => split::Placement::by_slot(
                codes.iter().enumerate().map(|(i, &c)| if valid(i) { slots[c as usize] } else { null }),
                &mut scratch,
            ),
        };
        self.target_of_slot = scratch;
        place
    }

    /// The partition slot of key `code` (`None`: the NULL key), made if there is none yet.
    fn slot_of_key(&mut self, code: Option<u32>) -> usize {
        match code {
            Some(code) => {
                let c = code as usize;
                if c >= self.slot_of_code.len() {
                    self.slot_of_code.resize(c + 1, NO_SLOT);
                }
                if self.slot_of_code[c] == NO_SLOT {
                    self.slot_of_code[c] = self.new_partition(Some(code)) as u32;
                }
                self.slot_of_code[c] as usize
            }
            None => match self.null_slot {
                Some(s) => s,
                None => {
                    let s = self.new_partition(None);
                    self.null_slot = Some(s);
                    s
                }
            },
        }
    }

    fn new_partition(&mut self, key: Option<u32>) -> usize {
        let columns = self.schema.columns.iter().map(|c| Arc::new(self.empty_column(c.data_type))).collect();
        self.parts.push(Arc::new(Partition::raw(columns, key)));
        self.parts.len() - 1
    }

    fn empty_column(&self, dt: DataType) -> Column {
        match dt {
            DataType::Symbol => {
                Column::from_data(ColumnData::Symbol { codes: Vec::new().into(), dict: self.dict.clone() })
            }
            _ => Column::from_data(ColumnData::empty(dt)),
        }
    }

    /// Check a row selection: known partition slots, each listed once, positions ascending and
    /// inside the partition. Returns the number of rows selected.
    pub fn check_selection(&self, sel: &[(u32, Vec<u32>)]) -> Result<usize, StorageError> {
        let mut seen = vec![false; self.parts.len()];
        let mut n = 0;
        for (slot, rows) in sel {
            let p = self
                .parts
                .get(*slot as usize)
                .ok_or_else(|| StorageError::Invalid(format!("table '{}' has no partition slot {slot}", self.name)))?;
            if std::mem::replace(&mut seen[*slot as usize], true) {
                return Err(StorageError::Invalid(format!("partition slot {slot} is selected twice")));
            }
            let ascending = rows.windows(2).all(|w| w[0] < w[1]);
            if !ascending || rows.last().is_some_and(|&r| r as usize >= p.len()) {
                return Err(StorageError::Invalid(format!("bad row positions for partition slot {slot}")));
            }
            n += rows.len();
        }
        Ok(n)
    }

    /// Remove the selected rows (see [`Table::check_selection`]). Partitions left empty stay,
    /// so slots keep their meaning. Returns the rows removed.
    pub fn delete_rows(&mut self, sel: &[(u32, Vec<u32>)]) -> Result<usize, StorageError> {
        let n = self.check_selection(sel)?;
        let had_pack = self.has_pack();
        for (slot, rows) in sel {
            if rows.is_empty() {
                continue;
            }
            self.parts.make_mut(*slot as usize).remove_rows(rows);
        }
        self.rows -= n;
        self.mutations += 1;
        self.repack_after_removal(had_pack, n);
        Ok(n)
    }

    /// Replace values in place: `values[k]` holds the new values of column `columns[k]` for the
    /// selected rows, in selection order. The partition key and the designated timestamp
    /// cannot be set this way (their changes move rows). Checked whole before anything changes.
    pub fn update_rows(
        &mut self,
        sel: &[(u32, Vec<u32>)],
        columns: &[usize],
        values: Vec<Column>,
    ) -> Result<usize, StorageError> {
        let n = self.check_selection(sel)?;
        if columns.len() != values.len() {
            return Err(StorageError::Invalid("UPDATE: one value column per column set".into()));
        }
        for (k, (&c, v)) in columns.iter().zip(&values).enumerate() {
            let def = self
                .schema
                .columns
                .get(c)
                .ok_or_else(|| StorageError::Invalid(format!("table '{}' has no column {c}", self.name)))?;
            if columns[..k].contains(&c) || Some(c) == self.key_col || Some(c) == self.ts_col {
                return Err(StorageError::Invalid(format!("column '{}' cannot be updated in place", def.name)));
            }
            let dt = v.data_type();
            let ok = dt == def.data_type || dt == DataType::Null || (def.data_type.is_string() && dt.is_string());
            if v.len() != n || !ok {
                return Err(StorageError::Invalid(format!("new values for column '{}' do not fit it", def.name)));
            }
        }
        // The values as the table stores them (symbols in the table dictionary).
        let mut full: Vec<Column> = self.schema.columns.iter().map(|d| Column::nulls(d.data_type, 0)).collect();
        for (&c, v) in columns.iter().zip(values) {
            full[c] = v;
        }
        let full = self.normalize(full);
        let rewrites_vectors = columns.iter().any(|&c| matches!(self.schema.columns[c].data_type, DataType::Vector(_)));
        let mut offset = 0usize;
        for (slot, rows) in sel {
            if rows.is_empty() {
                continue;
            }
            let p = self.parts.make_mut(*slot as usize);
            let len = p.len();
            let cols = p.own_mut();
            // Old rows keep their index; row rows[j] takes value len + j of the concatenation.
            let mut perm: Vec<u32> = (0..len as u32).collect();
            for (j, &r) in rows.iter().enumerate() {
                perm[r as usize] = (len + j) as u32;
            }
            for &c in columns {
                let new = full[c].slice(offset, rows.len());
                let merged = Column::concat(&[&cols[c], &new]).take(&perm);
                cols[c] = Arc::new(merged);
            }
            // Rows stay in place: only an index over a rewritten vector column no longer
            // matches it (an UPDATE of other columns, such as an access count, keeps graphs).
            if rewrites_vectors {
                p.lineage = new_lineage();
            }
            offset += rows.len();
        }
        self.mutations += 1;
        Ok(n)
    }

    /// `DEDUP UPSERT KEYS` as schema positions, ascending; empty when appends keep every row.
    pub fn dedup_keys(&self) -> &[usize] {
        &self.dedup
    }

    /// The schema positions of dedup key columns `keys` (empty: none), checked: known
    /// columns, each once, of comparable types, holding the designated timestamp and the
    /// partition key (a row then collides only inside its own partition and timestamp).
    pub fn check_dedup(&self, keys: &[String]) -> Result<Vec<usize>, StorageError> {
        let bad = |m: String| StorageError::Invalid(format!("DEDUP UPSERT KEYS on table '{}': {m}", self.name));
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            let i = self
                .schema
                .index_of(k)
                .ok_or_else(|| StorageError::ColumnNotFound { table: self.name.clone(), column: k.clone() })?;
            if out.contains(&i) {
                return Err(bad(format!("column '{k}' is named twice")));
            }
            if matches!(self.schema.columns[i].data_type, DataType::Vector(_)) {
                return Err(bad(format!("column '{k}' is a vector, which cannot be a key")));
            }
            out.push(i);
        }
        if out.is_empty() {
            return Ok(out);
        }
        let name = |i: usize| self.schema.columns[i].name.clone();
        match self.ts_col {
            None => return Err(bad("the table has no designated timestamp (name one with TIMESTAMP(col))".into())),
            Some(t) if !out.contains(&t) => {
                return Err(bad(format!("the keys must include the designated timestamp '{}'", name(t))))
            }
            Some(_) => {}
        }
        if let Some(k) = self.key_col.filter(|k| !out.contains(k)) {
            return Err(bad(format!(
                "the keys must include the partition key '{}' (rows are deduplicated within their partition)",
                name(k)
            )));
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Set (with `[]` clear) the dedup keys, checked as [`Table::check_dedup`]. Rows already
    /// stored stay as they are; later appends replace rows with equal keys.
    pub fn set_dedup(&mut self, keys: &[String]) -> Result<(), StorageError> {
        self.dedup = self.check_dedup(keys)?;
        Ok(())
    }

    /// Whether [`Table::add_column`] would accept `def`.
    pub fn check_new_column(&self, def: &ColumnDef) -> Result<(), StorageError> {
        if self.schema.index_of(&def.name).is_some() {
            return Err(StorageError::ColumnExists(def.name.clone()));
        }
        if !def.data_type.is_storable() {
            return Err(StorageError::Invalid(format!("column '{}' cannot have type {}", def.name, def.data_type)));
        }
        Ok(())
    }

    /// The table's secondary indexes.
    pub fn indexes(&self) -> &[IndexDef] {
        &self.indexes
    }

    /// Whether [`Table::add_index`] would accept `def`: its column exists and no index of this
    /// table has its name (the catalog checks the other tables).
    pub fn check_new_index(&self, def: &IndexDef) -> Result<(), StorageError> {
        if self.schema.index_of(def.column()).is_none() {
            return Err(StorageError::ColumnNotFound { table: self.name.clone(), column: def.column().to_string() });
        }
        if self.indexes.iter().any(|i| i.name().eq_ignore_ascii_case(def.name())) {
            return Err(StorageError::Invalid(format!("index '{}' already exists", def.name())));
        }
        Ok(())
    }

    /// Record an index (checked as [`Table::check_new_index`]). Rows are untouched: the index's
    /// structure is built by the engine from them.
    pub fn add_index(&mut self, def: IndexDef) -> Result<(), StorageError> {
        self.check_new_index(&def)?;
        self.indexes.push(def);
        Ok(())
    }

    /// Forget index `name`; false if the table has none of that name.
    pub fn drop_index(&mut self, name: &str) -> bool {
        let before = self.indexes.len();
        self.indexes.retain(|i| !i.name().eq_ignore_ascii_case(name));
        self.indexes.len() != before
    }

    /// Add a column at the end of the schema; existing rows read NULL. May make it the partition
    /// key or designated timestamp of a table that has none yet.
    pub fn add_column(&mut self, def: ColumnDef) -> Result<(), StorageError> {
        self.check_new_column(&def)?;
        self.fold();
        let dt = def.data_type;
        let dict = self.dict.clone();
        for p in self.parts.all_mut() {
            let p = Arc::make_mut(p);
            let mut c = Column::nulls(dt, p.len());
            if let ColumnData::Symbol { dict: d, .. } = c.data_mut() {
                *d = dict.clone();
            }
            p.own_mut().push(Arc::new(c));
        }
        self.schema.columns.push(def);
        self.mutations += 1;
        if self.key_col.is_none() && dt == DataType::Symbol && self.rows == 0 {
            self.key_col = Some(self.schema.len() - 1);
        }
        if self.ts_col.is_none() && dt == DataType::Timestamp {
            // Old rows hold NULL timestamps: order by it is trivially kept (all equal so far).
            self.ts_col = Some(self.schema.len() - 1);
        }
        Ok(())
    }
}

/// A `FLOAT[n]` column's elements are all finite (every door checks this; the table re-checks
/// so that no path can store a NaN the distance functions would then spread).
fn check_vector_elements(name: &str, c: &Column) -> Result<(), StorageError> {
    if let ColumnData::Vector { dim, values } = c.data() {
        if let Err(crate::vector::VectorError::NotFinite(i)) = crate::vector::check_finite(values) {
            let row = i / (*dim).max(1) as usize;
            return Err(StorageError::Invalid(format!(
                "column '{name}' row {}: a FLOAT[{dim}] element is NaN or infinite",
                row + 1
            )));
        }
    }
    Ok(())
}

fn append_column(dst: &mut Column, src: &Column) {
    let had_nulls = dst.validity().is_some() || src.validity().is_some();
    let old_len = dst.len();
    match (dst.data_mut(), src.data()) {
        (ColumnData::Bool(a), ColumnData::Bool(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Int32(a), ColumnData::Int32(b)) | (ColumnData::Date(a), ColumnData::Date(b)) => {
            a.extend_shared_from_slice(b)
        }
        (ColumnData::Int64(a), ColumnData::Int64(b))
        | (ColumnData::Timestamp(a), ColumnData::Timestamp(b))
        | (ColumnData::Interval(a), ColumnData::Interval(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Int128(a), ColumnData::Int128(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Float32(a), ColumnData::Float32(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Float64(a), ColumnData::Float64(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Varchar(a), ColumnData::Varchar(b)) => a.append_all(b),
        (ColumnData::Symbol { codes: a, .. }, ColumnData::Symbol { codes: b, .. }) => a.extend_shared_from_slice(b),
        (ColumnData::Vector { dim: da, values: a }, ColumnData::Vector { dim: db, values: b }) if da == db => {
            a.extend_shared_from_slice(b)
        }
        (a, b) => panic!("append_column: {:?} into {:?} (validate() must reject this)", b.data_type(), a.data_type()),
    }
    if had_nulls {
        append_validity(dst, old_len, src, None);
    }
}

/// The validity tail of [`append_column`] / [`append_column_rows`]: `dst`'s bitmap (all set
/// for its first `old_len` rows if it had none) extended by `src`'s rows `rows` (all of them
/// when `None`).
fn append_validity(dst: &mut Column, old_len: usize, src: &Column, rows: Option<&[u32]>) {
    let mut v = dst.validity_mut().take().unwrap_or_else(|| crate::Bitmap::new_set(old_len));
    match (src.validity(), rows) {
        (Some(s), None) => s.iter().for_each(|b| v.push(b)),
        (Some(s), Some(rows)) => rows.iter().for_each(|&i| v.push(s.get(i as usize))),
        (None, None) => v.extend_set(src.len()),
        (None, Some(rows)) => v.extend_set(rows.len()),
    }
    *dst = Column::new(std::mem::replace(dst.data_mut(), ColumnData::Null(0)), Some(v));
}

/// Each target's rows beside a mutable borrow of its partition (`targets` distinct slots of
/// `parts`), in slot order.
fn targets_mut<'a, T>(
    parts: &'a mut [Arc<Partition>],
    targets: &[usize],
    rows: Vec<T>,
) -> Vec<(T, &'a mut Arc<Partition>)> {
    let mut by_slot: Vec<(usize, T)> = targets.iter().copied().zip(rows).collect();
    by_slot.sort_unstable_by_key(|(slot, _)| *slot);
    let mut rest = parts.iter_mut();
    let mut next = 0;
    by_slot
        .into_iter()
        .map(|(slot, cols)| {
            let p = rest.nth(slot - next).expect("a target is a slot of the table, each once");
            next = slot + 1;
            (cols, p)
        })
        .collect()
}

/// Each partition's span of `rows` (in time order: [`order_spans_by_time`]) appended to it:
/// copied straight onto its columns when the rows follow its last (the usual case), else
/// taken first and merged in. The columns of every partition the rows follow are all taken to
/// write (`column_mut`) before any row is copied: taking one is an atomic compare-exchange
/// (`Arc::get_mut`), which waits for every store before it to drain, and taken between
/// partitions' copies each waited for the copies before it (the copies of a 10k-row append
/// over 100 symbols took 5.2 ms a million rows, 4.9 taken first).
fn append_picked_run(
    run: Vec<(Range<usize>, &mut Arc<Partition>)>,
    batch: &[Column],
    rows: &[u32],
    ts_col: Option<usize>,
    dict: &Arc<Dict>,
) {
    let (follow, rest): (Vec<_>, Vec<_>) =
        run.into_iter().partition(|(span, p)| follows(p, batch, &rows[span.clone()], ts_col));
    // Only a table with a designated timestamp has rows that do not follow.
    if let Some(t) = ts_col {
        for (span, p) in rest {
            merge_picked_rows(Arc::make_mut(p), batch, &rows[span], t, dict);
        }
    }
    let (spans, mut parts): (Vec<Range<usize>>, Vec<&mut Partition>) =
        follow.into_iter().map(|(span, p)| (span, Arc::make_mut(p))).unzip();
    let mut cols: Vec<&mut Column> = parts
        .iter_mut()
        .zip(&spans)
        .flat_map(|(p, span)| p.own_mut().iter_mut().map(|c| column_mut(c, span.len())))
        .collect();
    // Every partition has the table's columns, as the batch does (never none).
    let width = batch.len();
    assert!(width > 0 && cols.len() == spans.len() * width, "a partition's columns are the batch's");
    for (k, span) in spans.iter().enumerate() {
        // The next partition's columns are written next: their lines are asked for while
        // this one's rows are copied (each partition's end is a cold line of its own).
        if let (Some(next), Some(n)) = (cols.get(width * (k + 1)..width * (k + 2)), spans.get(k + 1)) {
            next.iter().for_each(|c| c.prefetch_room(n.len()));
        }
        append_columns_rows(&mut cols[width * k..width * (k + 1)], batch, &rows[span.clone()], dict);
    }
    drop(cols);
    parts.iter_mut().for_each(|p| p.recount());
}

/// Whether rows `rows` of `batch` (in time order, NULLs first) follow `p`'s last row in
/// time: appended as they are, they keep the partition in order.
fn follows(p: &Partition, batch: &[Column], rows: &[u32], ts_col: Option<usize>) -> bool {
    let Some(t) = ts_col else { return true };
    let ts = &batch[t];
    let new_ts = ts.as_i64_slice().unwrap_or(&[]);
    let key = |i: u32| time_key(ts, new_ts, i as usize);
    debug_assert!(rows.windows(2).all(|w| key(w[0]) <= key(w[1])), "rows in time order");
    let last = p.i64_values(t).and_then(|v| v.last().copied()).unwrap_or(i64::MIN);
    // In time order with NULLs first: when the first row has a time, every row has one.
    rows.first().is_none_or(|&i| ts.is_valid(i as usize) && last <= new_ts[i as usize])
}

/// Rows `rows` of `batch` (in time order on column `t`) that do not follow `p`'s last row,
/// merged into its rows.
fn merge_picked_rows(p: &mut Partition, batch: &[Column], rows: &[u32], t: usize, dict: &Arc<Dict>) {
    if !merge::merge_picked(p, batch, rows, t, dict) {
        append_rows(p, batch.iter().map(|c| c.take(rows)).collect(), Some(t), dict);
    }
}

/// Rows `rows` of each column of `batch` appended to the partition column beside it in `dst`,
/// SYMBOL columns then coding against `dict`.
fn append_columns_rows(dst: &mut [&mut Column], batch: &[Column], rows: &[u32], dict: &Arc<Dict>) {
    // Checked once for every column: a batch's columns are all of its length.
    let rows = Picked::new(rows, batch.first().map_or(0, Column::len));
    for (dst, src) in dst.iter_mut().zip(batch) {
        append_column_rows(dst, src, rows);
        if let ColumnData::Symbol { dict: d, .. } = dst.data_mut() {
            // Only when the dictionary changed: the swap is two atomic operations on a count
            // every partition shares, per partition and symbol column of every batch.
            if !Arc::ptr_eq(d, dict) {
                *d = dict.clone();
            }
        }
    }
}

/// Whether every one of `codes` has a partition slot in `slots`, a chunk of rows at a time
/// without a branch per row.
fn all_known(slots: &[u32], codes: &[u32]) -> bool {
    let known = |c: u32| slots.get(c as usize).is_some_and(|&s| s != NO_SLOT);
    codes.chunks(256).all(|ch| ch.iter().fold(true, |ok, &c| ok & known(c)))
}

/// Whether `v` never steps back, a chunk of rows at a time without a branch per row.
fn never_steps_back(v: &[i64]) -> bool {
    // Chunk k of `v` beside chunk k of `v[1..]`: every row beside the next.
    let Some(next) = v.get(1..) else { return true };
    v.chunks(256).zip(next.chunks(256)).all(|(a, b)| a.iter().zip(b).fold(true, |ok, (x, y)| ok & (x <= y)))
}

/// Whether the times `ts` have no NULL and never step back.
fn in_time_order(ts: &Column) -> bool {
    ts.validity().is_none() && never_steps_back(ts.as_i64_slice().unwrap_or(&[]))
}

/// Each partition's span of `rows` in time order (NULLs first, ties in batch order), as the
/// partition will hold them: rows of two clients' batches that arrived out of turn (the later
/// batch first) are then appended as they are, not copied out and sorted into each
/// partition's tail.
fn order_spans_by_time(rows: &mut [u32], spans: &[std::ops::Range<usize>], ts: &Column) {
    let v = ts.as_i64_slice().unwrap_or(&[]);
    let key = |i: u32| time_key(ts, v, i as usize);
    for span in spans {
        if let Some(r) = rows.get_mut(span.clone()) {
            if !r.windows(2).all(|w| key(w[0]) <= key(w[1])) {
                r.sort_by_key(|&i| key(i));
            }
        }
    }
}

/// [`append_column`] of rows `picked` of `src`, in that order.
fn append_column_rows(dst: &mut Column, src: &Column, picked: Picked<'_>) {
    let rows = picked.rows();
    let had_nulls = dst.validity().is_some() || src.validity().is_some();
    let old_len = dst.len();
    match (dst.data_mut(), src.data()) {
        (ColumnData::Bool(a), ColumnData::Bool(b)) => gather(a, b, picked),
        (ColumnData::Int32(a), ColumnData::Int32(b)) | (ColumnData::Date(a), ColumnData::Date(b)) => {
            gather(a, b, picked)
        }
        (ColumnData::Int64(a), ColumnData::Int64(b))
        | (ColumnData::Timestamp(a), ColumnData::Timestamp(b))
        | (ColumnData::Interval(a), ColumnData::Interval(b)) => gather(a, b, picked),
        (ColumnData::Int128(a), ColumnData::Int128(b)) => gather(a, b, picked),
        (ColumnData::Float32(a), ColumnData::Float32(b)) => gather(a, b, picked),
        (ColumnData::Float64(a), ColumnData::Float64(b)) => gather(a, b, picked),
        (ColumnData::Varchar(a), ColumnData::Varchar(b)) => a.append_picked(b, rows),
        (ColumnData::Symbol { codes: a, .. }, ColumnData::Symbol { codes: b, .. }) => gather(a, b, picked),
        (ColumnData::Vector { dim: da, values: a }, ColumnData::Vector { dim: db, values: b }) if da == db => {
            let d = *da as usize;
            rows.iter().for_each(|&i| a.extend_from_slice(&b[i as usize * d..(i as usize + 1) * d]));
        }
        (a, b) => {
            panic!("append_column_rows: {:?} into {:?} (validate() must reject this)", b.data_type(), a.data_type())
        }
    }
    if had_nulls {
        append_validity(dst, old_len, src, Some(rows));
    }
}

/// Below this many rows an append stays on the caller's thread (ingest batches are small and
/// latency-bound; starting helpers costs tens of microseconds).
const PARALLEL_APPEND_ROWS: usize = 100_000;

/// From this many rows, a batch spread thin over many partitions fills them on every core...
/// (Helper threads cost a few hundred microseconds a call here: from 16Ki rows, 16-64Ki-row
/// inserts over 100 symbols ran at 14-22M rows/s against 34-37M on the caller alone. Batches
/// of 100k rows and more take `split_batch`'s path instead, unless they are thinner than
/// [`THIN_SPLIT_ROWS`].)
const PARALLEL_SPREAD_ROWS: usize = 64 * 1024;

/// ...taking the partitions in about this many runs.
const SPREAD_RUNS: usize = 64;

/// A batch with fewer rows than this a partition it touches, however many rows, is spread
/// ([`Table::append_spread`]) rather than split into a buffer per partition: folds of 256Ki
/// deferred rows over 100k partitions spent a third of their time allocating those buffers.
const THIN_SPLIT_ROWS: usize = 16;

/// Column `dst` to append `extra` rows to. One a reader still holds (a query, or a checkpoint
/// writing its snapshot: during a bulk load, every partition's columns) is copied with room
/// to grow: twice its rows, as a growing vector would have, so the copy is the only one (an
/// exact copy is copied again by the append right after, and page-faulted twice). The copy
/// shares its values (`buf.rs`): while readers hold it later, the appends go in place past the
/// rows they read, not into another copy.
pub(super) fn column_mut(dst: &mut Arc<Column>, extra: usize) -> &mut Column {
    if Arc::get_mut(dst).is_none() {
        let c = if dst.is_shared() {
            (**dst).clone()
        } else {
            let mut c = dst.copy_with_room(extra.max(dst.len()));
            c.share();
            c
        };
        *dst = Arc::new(c);
    }
    Arc::make_mut(dst)
}

/// Append `cols` (rows of `p`'s key) to partition `p`, keeping time order on `ts_col`: in-order
/// rows are pushed, others sorted and merged in.
fn append_rows(p: &mut Partition, cols: Vec<Column>, ts_col: Option<usize>, dict: &Arc<Dict>) {
    let old_len = p.len();
    let in_order = match ts_col {
        None => true,
        Some(t) => {
            let new_ts = cols[t].as_i64_slice().unwrap_or(&[]);
            let old_ts = p.i64_values(t).unwrap_or(&[]);
            let nulls = cols[t].null_count() > 0;
            !nulls
                && new_ts.windows(2).all(|w| w[0] <= w[1])
                && old_ts.last().is_none_or(|&l| new_ts.first().is_none_or(|&f| l <= f))
        }
    };
    for (dst, src) in p.own_mut().iter_mut().zip(cols) {
        // An empty partition (a bulk load's first batch) takes the new rows as they are: no
        // second copy. Readers holding the old column keep it.
        let dst = if old_len == 0 && dst.data_type() == src.data_type() {
            *dst = Arc::new(src);
            Arc::make_mut(dst)
        } else {
            let dst = column_mut(dst, src.len());
            append_column(dst, &src);
            dst
        };
        if let ColumnData::Symbol { dict: d, .. } = dst.data_mut() {
            if !Arc::ptr_eq(d, dict) {
                *d = dict.clone();
            }
        }
    }
    p.recount();
    if !in_order {
        if let Some(t) = ts_col {
            sort_partition(p, t, old_len);
        }
    }
    debug_assert!(ts_col.is_none_or(|t| is_sorted_with_nulls_first(&p.own[t])));
}

/// Timestamp order as the append path keeps it: NULLs first, then non-decreasing values.
fn is_sorted_with_nulls_first(c: &Column) -> bool {
    let Some(v) = c.as_i64_slice() else { return true };
    let nulls = (0..v.len()).take_while(|&i| !c.is_valid(i)).count();
    (nulls..v.len()).all(|i| c.is_valid(i)) && v[nulls..].windows(2).all(|w| w[0] <= w[1])
}

/// Row `i`'s place in time order on timestamp column `col` (its values `v`): NULLs first.
fn time_key(col: &Column, v: &[i64], i: usize) -> (u8, i64) {
    match (col.is_valid(i), v.get(i)) {
        (true, Some(&t)) => (1, t),
        _ => (0, 0),
    }
}

/// Restore time order after appending rows `old_len..` that broke it: sort the new rows
/// (stable) and merge them with the sorted prefix. NULL timestamps sort first.
fn sort_partition(p: &mut Partition, ts_col: usize, old_len: usize) {
    p.lineage = new_lineage();
    let col = &p.own_mut()[ts_col];
    let ts = col.as_i64_slice().unwrap_or(&[]);
    let key = |i: usize| time_key(col, ts, i);
    let mut new_rows: Vec<u32> = (old_len as u32..ts.len() as u32).collect();
    new_rows.sort_by_key(|&i| key(i as usize));
    // Old rows up to the first that sorts after the earliest new row stay where they are: late
    // rows (a batch that lost a race with the next one) rewrite only the partition's tail.
    let first = new_rows.first().map_or((2, 0), |&i| key(i as usize));
    let (mut lo, mut hi) = (0, old_len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if key(mid) <= first {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let cut = lo;
    let mut order = Vec::with_capacity(ts.len() - cut);
    let (mut i, mut j) = (cut, 0usize);
    while i < old_len || j < new_rows.len() {
        let take_old = j >= new_rows.len() || (i < old_len && key(i) <= key(new_rows[j] as usize));
        if take_old {
            order.push(i as u32);
            i += 1;
        } else {
            order.push(new_rows[j]);
            j += 1;
        }
    }
    for c in p.own_mut() {
        Arc::make_mut(c).reorder_tail(cut, &order);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    /// The chunked checks against the row-by-row ones: every length around the chunk, a
    /// single step back (or unknown code) at every position near the chunks' edges.
    #[test]
    fn chunked_checks_match_row_by_row() {
        for n in [0, 1, 2, 255, 256, 257, 511, 512, 513, 1000] {
            let sorted: Vec<i64> = (0..n as i64).map(|i| i / 3).collect();
            assert!(never_steps_back(&sorted), "{n} rows");
            let slots: Vec<u32> = (0..8).map(|c| if c == 5 { NO_SLOT } else { c }).collect();
            let codes: Vec<u32> = (0..n as u32).map(|i| i % 5).collect();
            assert!(all_known(&slots, &codes), "{n} codes");
            for at in [1, 2, 254, 255, 256, 257, 258, 511, 512, 513].into_iter().filter(|&at| at < n) {
                let mut v = sorted.clone();
                v[at] = v[at - 1] - 1;
                assert_eq!(never_steps_back(&v), v.windows(2).all(|w| w[0] <= w[1]), "{n} rows, back at {at}");
                assert!(!never_steps_back(&v), "{n} rows, back at {at}");
                let mut c = codes.clone();
                c[at] = if at % 2 == 0 { 5 } else { 9 };
                assert!(!all_known(&slots, &c), "{n} codes, unknown at {at}");
            }
        }
    }

    fn schema() -> Schema {
        Schema {
            columns: vec![
                ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
                ColumnDef { name: "sym".into(), data_type: DataType::Symbol },
                ColumnDef { name: "px".into(), data_type: DataType::Float64 },
            ],
        }
    }

    fn batch(rows: &[(i64, Option<&str>, f64)]) -> Vec<Column> {
        let mut b: Vec<ColumnBuilder> = [DataType::Timestamp, DataType::Varchar, DataType::Float64]
            .iter()
            .map(|&t| ColumnBuilder::new(t, rows.len()))
            .collect();
        for (t, s, p) in rows {
            b[0].push_value(&Value::Timestamp(*t)).expect("push");
            match s {
                Some(s) => b[1].push_str(s).expect("push"),
                None => b[1].push_null(),
            }
            b[2].push_value(&Value::Float64(*p)).expect("push");
        }
        b.into_iter().map(ColumnBuilder::finish).collect()
    }

    /// Appends to partitions a reader still holds (a snapshot taken after every batch): the
    /// first copies a column with room and shares it, later ones write in place past the
    /// reader's rows until the room runs out (then a copy with twice the room). Every snapshot
    /// keeps the rows it had, and the table ends as appends without readers leave it.
    #[test]
    fn appends_under_readers_write_in_place_past_their_rows() {
        use super::defer::tests::contents;
        let new = || Table::new("t", schema(), &TableOptions::default()).expect("a table");
        let (mut t, mut plain) = (new(), new());
        let keys = ["a", "b", "c"];
        let mut snaps = Vec::new();
        let (mut in_place, mut copied) = (0, 0);
        let mut before: Vec<*const i64> = Vec::new();
        for k in 0..20i64 {
            let rows: Vec<(i64, Option<&str>, f64)> =
                (0..30).map(|i| (k * 100 + i, Some(keys[i as usize % 3]), (k * 100 + i) as f64 / 4.0)).collect();
            t.append(batch(&rows)).expect("append");
            plain.append(batch(&rows)).expect("append");
            let now: Vec<*const i64> =
                t.partitions().iter().map(|p| p.i64_values(0).expect("times").as_ptr()).collect();
            if k >= 2 {
                let same = now.iter().zip(&before).filter(|(a, b)| a == b).count();
                in_place += same;
                copied += now.len() - same;
            }
            before = now;
            snaps.push((t.clone(), contents(&t)));
        }
        for (k, (snap, had)) in snaps.iter().enumerate() {
            assert_eq!(&contents(snap), had, "snapshot {k}");
        }
        assert_eq!(contents(&t), contents(&plain));
        assert!(in_place >= 3 * 12 && copied <= 3 * 6, "{in_place} appends in place, {copied} copied");
    }

    /// A table of one partition keeps every symbol's rows together, sorted by time; it takes
    /// no partition key.
    #[test]
    fn one_partition_holds_every_symbol_in_time_order() {
        let opts = TableOptions { one_partition: true, ..TableOptions::default() };
        let mut t = Table::new("v", schema(), &opts).expect("a table");
        assert_eq!(t.key_col(), None);
        t.append(batch(&[(3, Some("A"), 1.0), (1, Some("B"), 2.0), (2, None, 3.0)])).expect("append");
        assert_eq!(t.partitions().len(), 1);
        assert_eq!(t.row_count(), 3);
        let keyed = TableOptions { partition_key: Some("sym".into()), ..opts };
        assert!(Table::new("v", schema(), &keyed).is_err(), "one partition and a key are refused together");
    }

    /// A bulk append (partitions filled on helper threads) leaves the same table as the same
    /// rows appended in small batches on the caller's thread: partitions, row order (time,
    /// ties in arrival order), NULL keys; twice, so the second bulk merges out-of-order rows
    /// into existing partitions.
    #[test]
    fn a_stored_partition_out_of_time_order_or_ragged_is_refused() {
        let ts = |v: &[i64]| Arc::new(Column::from_data(ColumnData::Timestamp(v.to_vec().into())));
        let f = |v: &[f64]| Arc::new(Column::from_data(ColumnData::Float64(v.to_vec().into())));
        let sym = |n: usize| Arc::new(Column::nulls(DataType::Symbol, n));
        let build = |cols: Vec<Arc<Column>>| {
            Table::from_parts("t", schema(), Some(1), Some(0), Arc::new(Dict::default()), vec![(None, cols)])
        };
        assert!(build(vec![ts(&[1, 2, 3]), sym(3), f(&[1.0, 2.0, 3.0])]).is_ok());
        let e = build(vec![ts(&[1, 3, 2]), sym(3), f(&[1.0, 2.0, 3.0])]).expect_err("out of order");
        assert!(e.to_string().contains("timestamp order"), "{e}");
        assert!(build(vec![ts(&[1, 2, 3]), sym(3), f(&[1.0])]).is_err(), "ragged columns");
    }

    #[test]
    fn bulk_append_matches_small_appends() {
        let mut rng = crate::rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut rnd = move |n: u64| rng.below(n);
        let syms: Vec<String> = (0..37).map(|i| format!("s{i}")).collect();
        let mut rows: Vec<(i64, Option<&str>, f64)> = Vec::new();
        for i in 0..2 * PARALLEL_APPEND_ROWS {
            let k = rnd(40) as usize;
            // Mostly rising times with jitter and duplicates, so some partitions need a merge.
            let ts = (i as i64 / 3) + rnd(50) as i64;
            rows.push((ts, syms.get(k).map(String::as_str), i as f64));
        }
        let (first, second) = rows.split_at(PARALLEL_APPEND_ROWS + 7);
        let mut bulk = Table::new("t", schema(), &TableOptions::default()).expect("table");
        bulk.append(batch(first)).expect("bulk");
        bulk.append(batch(second)).expect("bulk");
        let mut small = Table::new("t", schema(), &TableOptions::default()).expect("table");
        for part in rows.chunks(997) {
            small.append(batch(part)).expect("small");
        }
        assert_eq!(bulk.row_count(), small.row_count());
        let dump = |t: &Table| {
            let mut parts: Vec<Vec<String>> = t
                .partitions()
                .iter()
                .map(|p| {
                    (0..p.len())
                        .map(|i| {
                            format!(
                                "{:?} {:?} {:?}",
                                p.columns()[0].get(i),
                                p.columns()[1].get(i),
                                p.columns()[2].get(i)
                            )
                        })
                        .collect()
                })
                .collect();
            parts.sort();
            parts
        };
        assert_eq!(dump(&bulk), dump(&small));
        assert!(bulk.partitions().iter().all(|p| is_sorted_with_nulls_first(&p.columns()[0])));
    }

    /// A partition's lineage survives appends in time order (row i stays row i, so an index
    /// keyed by position stays valid) and changes with anything that moves, removes or
    /// rewrites rows.
    #[test]
    fn a_partition_keeps_its_lineage_only_while_rows_keep_their_positions() {
        let mut t = Table::new("t", schema(), &TableOptions::default()).expect("table");
        t.append(batch(&[(10, Some("a"), 1.0), (20, Some("a"), 2.0)])).expect("append");
        let code = t.dict().code("a").expect("a interned");
        let lineage = |t: &Table| t.partition_for_code(code).expect("partition a").lineage();
        let first = lineage(&t);
        let snapshot = t.clone();
        t.append(batch(&[(20, Some("a"), 3.0), (30, Some("a"), 4.0)])).expect("in order");
        assert_eq!(lineage(&t), first, "appended at the end in time order");
        assert_eq!(lineage(&snapshot), first, "the reader's older version shares it");
        t.append(batch(&[(15, Some("a"), 5.0)])).expect("out of order");
        let merged = lineage(&t);
        assert_ne!(merged, first, "a merge moved rows");
        let slot = t.partitions().iter().position(|p| p.key() == Some(code)).expect("slot") as u32;
        t.delete_rows(&[(slot, vec![0])]).expect("delete");
        let deleted = lineage(&t);
        assert_ne!(deleted, merged, "a delete moved rows");
        t.update_rows(&[(slot, vec![1])], &[2], vec![Column::from_data(ColumnData::Float64(vec![9.0].into()))])
            .expect("update");
        assert_eq!(lineage(&t), deleted, "an update of a scalar column moves nothing");
        t.add_column(ColumnDef { name: "v".into(), data_type: DataType::Vector(2) }).expect("a vector column");
        let v = Column::from_data(ColumnData::Vector { dim: 2, values: vec![1.0, 2.0].into() });
        t.update_rows(&[(slot, vec![1])], &[3], vec![v]).expect("update a vector");
        let updated = lineage(&t);
        assert_ne!(updated, deleted, "an update rewrote a vector");
        assert_eq!(t.remove_before(16), 1);
        assert_ne!(lineage(&t), updated, "dropping old rows moved the rest");
    }

    #[test]
    fn partitions_by_symbol_and_keeps_time_order() {
        let mut t = Table::new("t", schema(), &TableOptions::default()).expect("table");
        assert_eq!((t.key_col, t.ts_col), (Some(1), Some(0)));
        t.append(batch(&[(10, Some("a"), 1.0), (5, Some("b"), 2.0), (20, Some("a"), 3.0), (1, None, 0.5)]))
            .expect("append");
        t.append(batch(&[(15, Some("a"), 4.0), (2, Some("a"), 5.0)])).expect("append");
        assert_eq!(t.row_count(), 6);
        let code = t.dict().code("a").expect("a interned");
        let p = t.partition_for_code(code).expect("partition a");
        assert_eq!(p.columns()[0].as_i64_slice(), Some(&[2, 10, 15, 20][..]));
        assert_eq!(p.columns()[2].get(0), Value::Float64(5.0));
        assert_eq!(p.ts_range(0, 10, 15), 1..3);
        assert_eq!(t.null_key_partition().map(|p| p.len()), Some(1));
    }

    /// A batch whose symbols the table already holds keeps the table's dictionary version, so
    /// the partitions' SYMBOL columns keep pointing at it (a new version is swapped into every
    /// column a batch touches: with 4,000 series, 40k reference counts per batch); a new
    /// symbol makes a new version that covers it.
    #[test]
    fn known_symbols_keep_the_dictionary_version() {
        let mut t = Table::new("t", schema(), &TableOptions::default()).expect("table");
        t.append(batch(&[(1, Some("a"), 1.0), (2, Some("b"), 2.0)])).expect("append");
        let before = t.dict().clone();
        t.append(batch(&[(3, Some("b"), 3.0), (4, Some("a"), 4.0), (5, None, 5.0)])).expect("append");
        assert!(Arc::ptr_eq(&before, t.dict()), "known symbols made a new dictionary version");
        t.append(batch(&[(6, Some("c"), 6.0)])).expect("append");
        assert!(!Arc::ptr_eq(&before, t.dict()));
        let code = t.dict().code("c").expect("c interned");
        let p = t.partition_for_code(code).expect("partition c");
        assert_eq!(p.columns()[1].get(0), Value::Str("c".into()));
        assert_eq!(t.row_count(), 6);
    }

    /// Late rows (behind a partition's last timestamp, NULL timestamps among them) are sorted
    /// in: every partition holds its rows as a stable sort of their arrival by (NULL first,
    /// time), with their other columns (NULLs, text) moved with them.
    #[test]
    fn late_rows_land_as_a_stable_sort_of_their_arrival() {
        let schema = Schema {
            columns: vec![
                ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
                ColumnDef { name: "sym".into(), data_type: DataType::Symbol },
                ColumnDef { name: "seq".into(), data_type: DataType::Int64 },
                ColumnDef { name: "note".into(), data_type: DataType::Varchar },
            ],
        };
        let mut t = Table::new("t", schema, &TableOptions::default()).expect("table");
        let mut r = crate::rng::XorShift::new(0x2545_f491_4f6c_dd1d);
        let syms = ["a", "b", "c"];
        let mut arrived: Vec<(Option<i64>, &str, i64, Option<String>)> = Vec::new();
        for round in 0..60i64 {
            let n = 1 + r.below(30) as usize;
            let mut b: Vec<ColumnBuilder> =
                [DataType::Timestamp, DataType::Varchar, DataType::Int64, DataType::Varchar]
                    .iter()
                    .map(|&dt| ColumnBuilder::new(dt, n))
                    .collect();
            for _ in 0..n {
                let ts = (r.below(20) != 0).then(|| round * 10 - r.below(40) as i64);
                let (sym, seq) = (syms[r.below(3) as usize], arrived.len() as i64);
                let note = (r.below(4) != 0).then(|| format!("n{seq}"));
                match ts {
                    Some(v) => b[0].push_value(&Value::Timestamp(v)).expect("ts"),
                    None => b[0].push_null(),
                }
                b[1].push_str(sym).expect("sym");
                b[2].push_value(&Value::Int64(seq)).expect("seq");
                match &note {
                    Some(s) => b[3].push_str(s).expect("note"),
                    None => b[3].push_null(),
                }
                arrived.push((ts, sym, seq, note));
            }
            t.append(b.into_iter().map(ColumnBuilder::finish).collect()).expect("append");
        }
        for sym in syms {
            let mut want: Vec<_> = arrived.iter().filter(|row| row.1 == sym).collect();
            want.sort_by_key(|row| (row.0.is_some(), row.0.unwrap_or(0)));
            let p = t.partition_for_code(t.dict().code(sym).expect("interned")).expect("partition");
            let c = p.columns();
            assert_eq!(p.len(), want.len(), "{sym}");
            for (i, (ts, _, seq, note)) in want.into_iter().enumerate() {
                let got_ts = c[0].is_valid(i).then(|| c[0].as_i64_slice().expect("ts")[i]);
                assert_eq!((got_ts, c[2].get(i)), (*ts, Value::Int64(*seq)), "{sym} row {i}");
                let want_note = note.as_ref().map_or(Value::Null, |s| Value::Str(s.clone()));
                assert_eq!(c[3].get(i), want_note, "{sym} row {i}");
            }
        }
    }

    #[test]
    fn rejects_bad_batch_without_change() {
        let mut t = Table::new("t", schema(), &TableOptions::default()).expect("table");
        let mut bad = batch(&[(1, Some("a"), 1.0)]);
        bad.pop();
        assert!(t.append(bad).is_err());
        assert_eq!(t.row_count(), 0);
        assert!(t.partitions().is_empty());
    }

    /// Large batches into partitions that hold rows (spread a chunk at a time, on the
    /// caller's thread), in time order or with late rows, land as the same rows appended in
    /// small batches do.
    #[test]
    fn large_batches_into_filled_partitions_land_as_small_batches_do() {
        let mut r = crate::rng::XorShift::new(0x2545_f491_4f6c_dd1du64);
        let syms = [Some("a"), Some("b"), Some("c"), Some("d"), None];
        let (mut large, mut small) = (
            Table::new("t", schema(), &TableOptions::default()).expect("table"),
            Table::new("t", schema(), &TableOptions::default()).expect("table"),
        );
        let mut ts = 0i64;
        for (round, n) in [10, 40_000, 70_000, 16_385, 100_000].into_iter().enumerate() {
            let rows: Vec<(i64, Option<&str>, f64)> = (0..n)
                .map(|_| {
                    ts += 1;
                    // Every other round has late rows: merged in, chunk by chunk.
                    let late = round % 2 == 0 && r.below(50) == 0;
                    (
                        ts - if late { 30_000 } else { 0 },
                        syms[r.below(syms.len() as u64) as usize],
                        r.below(1000) as f64,
                    )
                })
                .collect();
            large.append(batch(&rows)).expect("append");
            rows.chunks(700).for_each(|c| {
                small.append(batch(c)).expect("append");
            });
        }
        assert_same_partitions(&large, &small);
    }

    #[test]
    fn a_batch_spread_over_partitions_lands_as_row_by_row_appends_do() {
        let mut r = crate::rng::XorShift::new(0x5851_f42d_4c95_7f2du64);
        let syms = [Some("a"), Some("b"), Some("c"), Some("d"), None];
        let (mut spread, mut single) = (
            Table::new("t", schema(), &TableOptions::default()).expect("table"),
            Table::new("t", schema(), &TableOptions::default()).expect("table"),
        );
        for round in 0..30 {
            let n = 1 + r.below(40) as usize;
            // Mostly rising timestamps, some late ones: both the in-order copy and the merge.
            let rows: Vec<(i64, Option<&str>, f64)> = (0..n)
                .map(|i| {
                    let late = r.below(6) == 0;
                    let ts = (round * 100 + i) as i64 - if late { 150 } else { 0 };
                    (ts, syms[r.below(syms.len() as u64) as usize], r.below(1000) as f64)
                })
                .collect();
            spread.append(batch(&rows)).expect("append");
            for row in &rows {
                single.append(batch(std::slice::from_ref(row))).expect("append");
            }
        }
        assert_same_partitions(&spread, &single);
    }

    /// `got` and `want` hold the same rows (times and prices) in each key's partition, in the
    /// same order.
    fn assert_same_partitions(got: &Table, want: &Table) {
        assert_eq!(got.row_count(), want.row_count());
        let by_key = |t: &Table| {
            let mut parts: Vec<_> =
                t.partitions().iter().map(|p| (p.key.map(|k| t.dict().get(k).to_string()), p.clone())).collect();
            parts.sort_by(|a, b| a.0.cmp(&b.0));
            parts
        };
        let (got, want) = (by_key(got), by_key(want));
        assert_eq!(got.len(), want.len());
        for ((gk, g), (wk, w)) in got.iter().zip(&want) {
            assert_eq!(gk, wk);
            assert_eq!(g.len(), w.len(), "partition {gk:?}");
            for c in [0, 2] {
                let same = (0..g.len()).all(|i| g.columns()[c].get(i) == w.columns()[c].get(i));
                assert!(same, "partition {gk:?}, column {c}");
            }
        }
    }
}
