//! Rows moved out of memory: tiering a table's older rows to Parquet history (whole, or one
//! shard at a time on a cluster node), shards adopted from shared history, and retention
//! (`TTL`) dropping rows and files past their age.

use super::{folded, retention_before, Catalog, Change};
use crate::error::StorageError;
use crate::history::HistFile;
use crate::table::{Shard, Table};

impl Catalog {
    /// Move `name`'s rows before `before` to Parquet history (through the change log, which
    /// owns the files; see [`Catalog::commit_tier`]).
    pub fn tier(&self, name: &str, before: i64) -> Result<String, StorageError> {
        match self.changes.get() {
            Some(l) => l.tier(self, name, before),
            None => Err(StorageError::Durability(
                "this database is in memory only: it has no disk to move history to".into(),
            )),
        }
    }

    /// The commit of a tiering: `snap` is the snapshot the files were written from, holding
    /// `counts` (from [`Table::count_before`]) rows before `before`. Fails without change if
    /// the table moved under the writer in a way that makes the files wrong (rows before the
    /// cut added, deleted or updated; a column added): the caller deletes its files and retries.
    pub fn commit_tier(
        &self,
        snap: &Table,
        before: i64,
        counts: &[usize],
        files: &[HistFile],
    ) -> Result<usize, StorageError> {
        self.write(snap.name(), |t| {
            if t.mutations() != snap.mutations()
                || t.history().next_seq != snap.history().next_seq
                || t.schema().len() != snap.schema().len()
                || t.count_before(before) != counts
            {
                return Err(StorageError::Conflict(format!(
                    "table '{}' changed while its history was written",
                    t.name()
                )));
            }
            self.log(&[Change::Tier { table: t.name(), before, files }])?.apply(|| {
                t.set_history_reader(self.history.get().cloned());
                t.tier(before, files)
            })
        })
    }

    /// Move the rows of `shard` in `snap` before `before` to the history `files` (written from
    /// `snap`, holding `rows` rows), unless the table changed meanwhile (a conflict error).
    pub fn commit_tier_shard(
        &self,
        snap: &Table,
        shard: Shard<'_>,
        before: i64,
        files: &[HistFile],
    ) -> Result<usize, StorageError> {
        self.write(snap.name(), |t| {
            if t.mutations() != snap.mutations()
                || t.schema().len() != snap.schema().len()
                || t.shard_count_before(shard, before) != snap.shard_count_before(shard, before)
            {
                return Err(StorageError::Conflict(format!(
                    "table '{}' changed while its shard's history was written",
                    t.name()
                )));
            }
            self.tier_shard_in(t, shard, before, files)
        })
    }

    /// Apply a logged shard tiering (recovery).
    pub fn tier_shard_logged(
        &self,
        name: &str,
        shard: Shard<'_>,
        before: i64,
        files: &[HistFile],
    ) -> Result<usize, StorageError> {
        self.write(name, |t| self.tier_shard_in(t, shard, before, files))
    }

    fn tier_shard_in(
        &self,
        t: &mut Table,
        shard: Shard<'_>,
        before: i64,
        files: &[HistFile],
    ) -> Result<usize, StorageError> {
        t.check_tier_shard(shard, before, files)?;
        self.log(&[Change::TierShard { table: t.name(), shard, before, files }])?.apply(|| {
            t.set_history_reader(self.history.get().cloned());
            t.tier_shard(shard, before, files)
        })
    }

    /// Take `shard` of table `name` over from a snapshot (see [`Table::adopt_shard`]). Returns
    /// the rows removed from memory.
    pub fn adopt_shard(
        &self,
        name: &str,
        shard: Shard<'_>,
        prefix: &str,
        files: &[HistFile],
    ) -> Result<usize, StorageError> {
        self.write(name, |t| {
            self.log(&[Change::AdoptShard { table: t.name(), shard, prefix, files }])?.apply(|| {
                t.set_history_reader(self.history.get().cloned());
                Ok(t.adopt_shard(shard, prefix, files))
            })
        })
    }

    /// Retention of `name` as of `now`: without a TTL nothing happens. With one, rows before the
    /// UTC day that holds `now - ttl` are dropped, in memory and history. Returns the rows
    /// dropped from memory and the history files dropped (for the caller to delete).
    pub fn retain(&self, name: &str, now: i64) -> Result<(usize, Vec<HistFile>), StorageError> {
        // Decided on a snapshot first: the maintenance thread asks every few seconds, and the
        // write lock moves the table's stamp (a checkpoint would then write it again).
        if retention_before(&folded(&*self.slot(name)?), now).is_none() {
            return Ok((0, Vec::new()));
        }
        self.write(name, |t| {
            let Some(before) = retention_before(t, now) else { return Ok((0, Vec::new())) };
            self.log(&[Change::Retain { table: t.name(), before }])?.apply(|| Ok(t.retain(before)))
        })
    }

    /// Apply `name`'s retention now: through the change log (which deletes dropped history
    /// files) when there is one, directly for an in-memory database. A summary line.
    pub fn enforce_ttl(&self, name: &str, now: i64) -> Result<String, StorageError> {
        match self.changes.get() {
            Some(l) => l.retain(self, name, now),
            None => {
                let (rows, _) = self.retain(name, now)?;
                Ok(format!("retention of '{name}': {rows} rows dropped"))
            }
        }
    }

    /// Apply a logged retention (recovery).
    pub fn retain_before(&self, name: &str, before: i64) -> Result<(usize, Vec<HistFile>), StorageError> {
        self.write(name, |t| self.log(&[Change::Retain { table: t.name(), before }])?.apply(|| Ok(t.retain(before))))
    }

    /// Apply a logged tiering (recovery).
    pub fn tier_logged(&self, name: &str, before: i64, files: &[HistFile]) -> Result<usize, StorageError> {
        self.write(name, |t| {
            self.log(&[Change::Tier { table: t.name(), before, files }])?.apply(|| {
                t.set_history_reader(self.history.get().cloned());
                t.tier(before, files)
            })
        })
    }
}
