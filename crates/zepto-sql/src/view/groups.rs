//! A view's groups: their keys, an index from keys to group number, and every aggregate's
//! accumulator, folded batch by batch from partial states (the one accumulator of
//! [`crate::exec::accum`], driven through its `merge`).
//!
//! Group numbers are dense and never change; a batch's new groups are appended as a chunk of
//! key rows (chunks are joined at the next finish). A merge still costs a pass over the view's
//! groups in some accumulators (`first`/`last` and `min`/`max` find each group's pick in a
//! vector of all groups), so a batch's states wait in `pending` until they hold a quarter as
//! many rows as there are groups (or a read needs them), then merge at once (merging each batch
//! at once doubled the upkeep of 100k 1-second bars). A fold so costs the batch's groups,
//! amortized, whatever the view's size.
//!
//! A finish keeps each group's result row, and the groups folded since then are marked: the
//! next finish computes only theirs and the new groups' (from [`Accumulator::state_of`]) and
//! patches them into the rows kept, unless they are many.

use crate::error::{Result, SqlError};
use crate::eval::Batch;
use crate::exec::accum::{accumulator, Accumulator};
use crate::exec::hash::{hash_rows, rows_equal};
use crate::plan::AggCall;
use std::collections::HashMap;
use std::sync::Arc;
use zepto_storage::Column;

/// The groups and their aggregates' running states.
pub(crate) struct Groups {
    /// Key columns per chunk; chunk `c` holds groups `starts[c]..`.
    chunks: Vec<Vec<Arc<Column>>>,
    starts: Vec<u32>,
    /// Groups by the hash of their keys (several when hashes collide).
    index: HashMap<u64, Vec<u32>, BuildU64>,
    accs: Vec<Box<dyn Accumulator>>,
    aggs: Vec<AggCall>,
    nkeys: usize,
    groups: usize,
    /// States folded but not merged yet: their rows' groups, and per aggregate its state
    /// columns, batch by batch.
    pending: Vec<(Vec<u32>, Vec<Vec<Column>>)>,
    pending_rows: usize,
    /// Every aggregate's result per group at the last finish (groups `0..finished_groups`).
    finished: Vec<Arc<Column>>,
    finished_groups: usize,
    /// Groups below `finished_groups` folded since the last finish, each once (`marked`).
    touched: Vec<u32>,
    marked: Vec<bool>,
}

/// Which groups a finish computed again.
pub(crate) enum Changed {
    /// All of them.
    All,
    /// These (each once): groups folded since the finish before, then the new ones.
    Some(Vec<u32>),
}

/// A finish computes every group again when at least this share of them changed.
const FINISH_ALL_DIV: usize = 4;

/// Pending states merge once they hold this share of the groups (or this many batches).
const MERGE_EVERY_GROUPS_DIV: usize = 4;
const MERGE_EVERY_BATCHES: usize = 256;

/// The keys' hash is already mixed: the map uses it as it is.
#[derive(Default, Clone, Copy)]
pub(crate) struct BuildU64;

impl std::hash::BuildHasher for BuildU64 {
    type Hasher = U64Hasher;
    fn build_hasher(&self) -> U64Hasher {
        U64Hasher(0)
    }
}

pub(crate) struct U64Hasher(u64);

impl std::hash::Hasher for U64Hasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.0 = (self.0 << 8) ^ u64::from(b));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

impl Groups {
    /// No groups yet (without keys, the one group appears with the first rows).
    pub fn new(nkeys: usize, aggs: &[AggCall]) -> Groups {
        Groups {
            chunks: Vec::new(),
            starts: Vec::new(),
            index: HashMap::default(),
            accs: aggs.iter().map(|a| accumulator(a.func, a.ty)).collect(),
            aggs: aggs.to_vec(),
            nkeys,
            groups: 0,
            pending: Vec::new(),
            pending_rows: 0,
            finished: Vec::new(),
            finished_groups: 0,
            touched: Vec::new(),
            marked: Vec::new(),
        }
    }

    /// Whether it has no group yet.
    pub fn is_empty(&self) -> bool {
        self.groups == 0
    }

    /// Fold partial states: `b` holds the key columns, then every aggregate's state columns,
    /// one row per group of the batch they came from.
    pub fn fold(&mut self, b: Batch) -> Result<()> {
        let rows = b.rows;
        let mut cols = b.columns.into_iter();
        let keys: Vec<_> = cols.by_ref().take(self.nkeys).collect();
        let ids = self.ids(&keys.iter().map(|c| &**c).collect::<Vec<_>>(), rows);
        self.touch(&ids);
        let mut states = Vec::with_capacity(self.aggs.len());
        for a in &self.aggs {
            // The batch's own columns, moved unless another holder shares them.
            let state: Vec<Column> = cols.by_ref().take(a.func.state_width()).map(Arc::unwrap_or_clone).collect();
            if state.len() < a.func.state_width() {
                return Err(bad_width());
            }
            states.push(state);
        }
        self.pending_rows += rows;
        self.pending.push((ids, states));
        if self.pending_rows * MERGE_EVERY_GROUPS_DIV >= self.groups || self.pending.len() >= MERGE_EVERY_BATCHES {
            self.merge_pending()?;
        }
        Ok(())
    }

    /// Merge the pending states into the accumulators, in the order they were folded.
    fn merge_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        let ids: Vec<u32> = pending.iter().flat_map(|(ids, _)| ids.iter().copied()).collect();
        for (k, acc) in self.accs.iter_mut().enumerate() {
            let width = pending[0].1[k].len();
            let state: Vec<Column> = (0..width)
                .map(|j| Column::concat(&pending.iter().map(|(_, s)| &s[k][j]).collect::<Vec<_>>()))
                .collect();
            acc.merge(&state.iter().collect::<Vec<_>>(), &ids, self.groups)?;
        }
        Ok(())
    }

    /// Mark the groups of `ids` that the last finish computed.
    fn touch(&mut self, ids: &[u32]) {
        for &g in ids {
            if let Some(m) = self.marked.get_mut(g as usize) {
                if !*m {
                    *m = true;
                    self.touched.push(g);
                }
            }
        }
    }

    /// The group of each row of `keys`, new groups added.
    fn ids(&mut self, keys: &[&Column], n: usize) -> Vec<u32> {
        if self.nkeys == 0 {
            self.groups = 1;
            return vec![0; n];
        }
        let hashes = hash_rows(keys, n);
        let mut ids = Vec::with_capacity(n);
        let mut fresh: Vec<u32> = Vec::new();
        for (i, &h) in hashes.iter().enumerate() {
            let known = self.index.get(&h).and_then(|gs| {
                gs.iter().copied().find(|&g| match self.locate(g) {
                    Some((c, r)) => rows_equal(&self.chunks_refs(c), r, keys, i),
                    // A group of this batch: its keys are row `fresh[g - groups]`.
                    None => rows_equal(keys, fresh[g as usize - self.groups] as usize, keys, i),
                })
            });
            let g = known.unwrap_or_else(|| {
                let g = (self.groups + fresh.len()) as u32;
                fresh.push(i as u32);
                self.index.entry(h).or_default().push(g);
                g
            });
            ids.push(g);
        }
        if !fresh.is_empty() {
            self.starts.push(self.groups as u32);
            self.chunks.push(keys.iter().map(|c| Arc::new(c.take(&fresh))).collect());
            self.groups += fresh.len();
        }
        ids
    }

    fn chunks_refs(&self, c: usize) -> Vec<&Column> {
        self.chunks[c].iter().map(|k| &**k).collect()
    }

    /// The chunk and row of group `g`, if it is in a chunk already.
    fn locate(&self, g: u32) -> Option<(usize, usize)> {
        if g as usize >= self.groups {
            return None;
        }
        let c = self.starts.partition_point(|&s| s <= g) - 1;
        Some((c, (g - self.starts[c]) as usize))
    }

    /// Every group's keys, then every aggregate's state columns (what [`Groups::fold`] takes):
    /// for a checkpoint.
    pub fn states(&mut self) -> Result<Batch> {
        self.merge_pending()?;
        self.join_keys();
        let mut out: Vec<Arc<Column>> = self.chunks.first().cloned().unwrap_or_default();
        if self.groups > 0 {
            let ids: Vec<u32> = (0..self.groups as u32).collect();
            for acc in &self.accs {
                out.extend(acc.state_of(&ids)?.into_iter().map(Arc::new));
            }
        }
        Ok(Batch::shared(out, self.groups))
    }

    /// Every group's keys, then every aggregate's result: the aggregate's output, and which
    /// groups were computed again since the finish before (the others are as it left them);
    /// `None` before any group (the caller aggregates no rows, which has a row without keys).
    pub fn finish(&mut self) -> Result<Option<(Batch, Changed)>> {
        if self.groups == 0 {
            return Ok(None);
        }
        self.merge_pending()?;
        self.join_keys();
        let (n, before) = (self.groups, self.finished_groups);
        let changed = self.touched.len() + (n - before);
        for &g in &self.touched {
            if let Some(m) = self.marked.get_mut(g as usize) {
                *m = false;
            }
        }
        let (results, what) = if before == 0 || changed * FINISH_ALL_DIV >= n {
            (self.results(&(0..n as u32).collect::<Vec<_>>())?, Changed::All)
        } else {
            let mut ids = std::mem::take(&mut self.touched);
            let kept = ids.len();
            ids.extend(before as u32..n as u32);
            let part = self.results(&ids)?;
            let mut results = std::mem::take(&mut self.finished);
            for (old, new) in results.iter_mut().zip(&part) {
                Arc::make_mut(old).patch(&ids[..kept], new);
            }
            (results, Changed::Some(ids))
        };
        self.finished = results;
        self.finished_groups = n;
        self.touched.clear();
        self.marked.resize(n, false);
        let mut out: Vec<Arc<Column>> = self.chunks.first().cloned().unwrap_or_default();
        out.extend(self.finished.iter().cloned());
        Ok(Some((Batch::shared(out, n), what)))
    }

    /// Every aggregate's result for groups `ids`, from their states.
    fn results(&self, ids: &[u32]) -> Result<Vec<Arc<Column>>> {
        let local: Vec<u32> = (0..ids.len() as u32).collect();
        self.aggs
            .iter()
            .zip(&self.accs)
            .map(|(a, acc)| {
                let state = acc.state_of(ids)?;
                let mut done = accumulator(a.func, a.ty);
                done.merge(&state.iter().collect::<Vec<_>>(), &local, ids.len())?;
                Ok(Arc::new(done.finish()?))
            })
            .collect()
    }

    /// The keys in one chunk.
    fn join_keys(&mut self) {
        if self.chunks.len() > 1 {
            let joined: Vec<Arc<Column>> = (0..self.nkeys)
                .map(|k| Arc::new(Column::concat(&self.chunks.iter().map(|c| &*c[k]).collect::<Vec<_>>())))
                .collect();
            self.chunks = vec![joined];
            self.starts = vec![0];
        }
    }
}

fn bad_width() -> SqlError {
    SqlError::Internal("a partial state batch narrower than its aggregates".into())
}
