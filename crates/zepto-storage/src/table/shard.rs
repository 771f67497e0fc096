//! A table's share of one Kafka partition (a *shard*: the rows of some partition keys), and
//! the two changes shared history makes to it:
//!
//! * [`Table::tier_shard`] — the owner of a partition moved the shard's rows before a cut to
//!   history files in shared storage: they leave memory and the files join the history.
//! * [`Table::adopt_shard`] — a node took a partition over from shared storage: the shard's
//!   rows it held (stale) leave memory, its history files of the partition are replaced by the
//!   snapshot's, and the shard's keys are known (the snapshot's recent rows then arrive as an
//!   ordinary append).
//!
//! Which keys make a shard is the cluster's business (Kafka's partitioner); storage only sees
//! the key strings, so both changes replay exactly from the log.

use super::{Table, NO_SLOT};
use crate::error::StorageError;
use crate::history::HistFile;
use std::sync::Arc;

/// The partition keys of one shard: key strings, and whether the NULL-key partition (all rows
/// of a table without a partition key) belongs to it.
#[derive(Debug, Clone, Copy)]
pub struct Shard<'a> {
    /// Partition-key values (strings; those the table does not know hold no rows).
    pub keys: &'a [String],
    /// Whether rows with a NULL key (or of a table without a key) are the shard's.
    pub null_key: bool,
}

impl Table {
    /// The partition slots holding the shard's rows (keys the table does not know have none).
    pub fn shard_slots(&self, shard: Shard<'_>) -> Vec<usize> {
        let mut slots: Vec<usize> = match self.key_col {
            Some(_) => shard
                .keys
                .iter()
                .filter_map(|k| self.dict.code(k))
                .filter_map(|c| self.slot_of_code.get(c as usize).copied())
                .filter(|&s| s != NO_SLOT)
                .map(|s| s as usize)
                .collect(),
            None => Vec::new(),
        };
        if shard.null_key {
            slots.extend(self.null_slot);
        }
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// Rows of the shard with a timestamp before `before` (what [`Table::tier_shard`] moves).
    pub fn shard_count_before(&self, shard: Shard<'_>, before: i64) -> usize {
        let Some(t) = self.ts_col else { return 0 };
        let hi = before.saturating_sub(1);
        self.shard_slots(shard).iter().map(|&s| self.parts[s].ts_range(t, i64::MIN, hi).len()).sum()
    }

    /// `files` hold exactly the shard's rows before `before`, the condition of
    /// [`Table::tier_shard`] (checked before the change is logged, and again when it applies).
    pub fn check_tier_shard(&self, shard: Shard<'_>, before: i64, files: &[HistFile]) -> Result<(), StorageError> {
        let want: u64 = files.iter().map(|f| f.rows).sum();
        let have = self.shard_count_before(shard, before);
        if want != have as u64 {
            return Err(StorageError::Invalid(format!(
                "table '{}': shard history files hold {want} rows but {have} of its rows are before the cut",
                self.name
            )));
        }
        Ok(())
    }

    /// The shard's rows before `before` leave memory; `files` (holding exactly those rows)
    /// join the history. Checked before anything changes.
    pub fn tier_shard(&mut self, shard: Shard<'_>, before: i64, files: &[HistFile]) -> Result<usize, StorageError> {
        self.check_tier_shard(shard, before, files)?;
        let had_pack = self.has_pack();
        let removed = match self.ts_col {
            Some(t) => {
                let hi = before.saturating_sub(1);
                let mut n = 0;
                for s in self.shard_slots(shard) {
                    let r = self.parts[s].ts_range(t, i64::MIN, hi);
                    n += self.cut_rows(s, r.start as u32..r.end as u32);
                }
                n
            }
            None => 0,
        };
        Arc::make_mut(&mut self.history).files.extend_from_slice(files);
        self.mutations += 1;
        self.repack_after_removal(had_pack, removed);
        Ok(removed)
    }

    /// Take a shard over from a snapshot: its rows leave memory, history files whose path
    /// starts with `prefix` (the shard's files of an earlier snapshot) are forgotten, `files`
    /// join the history, and every key of the shard gets a (possibly empty) partition, so
    /// scans and checkpoints know keys whose rows live only in history. Returns the rows
    /// removed from memory.
    pub fn adopt_shard(&mut self, shard: Shard<'_>, prefix: &str, files: &[HistFile]) -> usize {
        let (had_pack, mut removed) = (self.has_pack(), 0);
        for s in self.shard_slots(shard) {
            let n = self.parts[s].len() as u32;
            removed += self.cut_rows(s, 0..n);
        }
        self.repack_after_removal(had_pack, removed);
        if self.key_col.is_some() {
            for k in shard.keys {
                let code = Arc::make_mut(&mut self.dict).intern(k);
                let c = code as usize;
                if c >= self.slot_of_code.len() {
                    self.slot_of_code.resize(c + 1, NO_SLOT);
                }
                if self.slot_of_code[c] == NO_SLOT {
                    self.slot_of_code[c] = self.new_partition(Some(code)) as u32;
                }
            }
        }
        let h = Arc::make_mut(&mut self.history);
        h.files.retain(|f| !f.path.starts_with(prefix));
        h.files.extend_from_slice(files);
        self.mutations += 1;
        removed
    }

    /// Remove rows `range` of partition slot `s` (the partition stays, so slots keep their
    /// meaning). Returns the rows removed.
    fn cut_rows(&mut self, s: usize, range: std::ops::Range<u32>) -> usize {
        if range.is_empty() {
            return 0;
        }
        let p = self.parts.make_mut(s);
        let keep: Vec<u32> = (0..range.start).chain(range.end..p.len() as u32).collect();
        for c in p.own_mut() {
            *c = Arc::new(c.take(&keep));
        }
        p.recount();
        p.lineage = super::new_lineage();
        self.rows -= range.len();
        range.len()
    }
}
