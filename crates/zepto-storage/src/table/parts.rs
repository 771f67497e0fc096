//! A table's partitions in slot order, and what a scan of every row reads of them: [`Run`]s.
//!
//! With 100k symbols a table has 100k partitions, and a scan that visits each (its length, where
//! its rows live) spends more time reaching them, a cache miss each, than reading their rows.
//! Small partitions live in packs (`pack.rs`), each a run of neighbouring slots whose rows lie
//! one after another in the pack's columns. The runs say, for the current version of the table,
//! which slots are a whole pack (read as the pack's columns, without visiting a partition) and
//! which must be read one partition at a time. They are found by one walk over the partitions
//! the first time a version is scanned, then kept until the partitions change: every change
//! goes through [`Parts::make_mut`], [`Parts::push`] or [`Parts::all_mut`], which drop them.

use super::Partition;
use crate::column::Column;
use std::ops::{Deref, Range};
use std::sync::{Arc, OnceLock};

/// The partitions, by slot, and their runs once found.
#[derive(Clone, Default)]
pub(super) struct Parts {
    v: Vec<Arc<Partition>>,
    runs: OnceLock<Arc<[Run]>>,
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.v.fmt(f)
    }
}

impl Deref for Parts {
    type Target = [Arc<Partition>];

    fn deref(&self) -> &[Arc<Partition>] {
        &self.v
    }
}

impl Parts {
    /// A new partition in the next slot.
    pub(super) fn push(&mut self, p: Arc<Partition>) {
        self.runs.take();
        self.v.push(p);
    }

    /// The partition in `slot`, to change (copied first while a reader holds it).
    pub(super) fn make_mut(&mut self, slot: usize) -> &mut Partition {
        self.runs.take();
        Arc::make_mut(&mut self.v[slot])
    }

    /// Every partition, to change.
    pub(super) fn all_mut(&mut self) -> &mut Vec<Arc<Partition>> {
        self.runs.take();
        &mut self.v
    }

    /// The runs of the current partitions (found on the first call after a change).
    pub(super) fn runs(&self) -> &[Run] {
        self.runs.get_or_init(|| find_runs(&self.v).into())
    }
}

/// Neighbouring slots that a scan of every row reads the same way.
#[derive(Debug, Clone)]
pub struct Run {
    slots: Range<usize>,
    pack: Option<Arc<[Arc<Column>]>>,
}

impl Run {
    /// The slots, in order.
    pub fn slots(&self) -> Range<usize> {
        self.slots.clone()
    }

    /// When the run is every partition of one pack: the pack's columns, which hold exactly the
    /// run's rows, slot after slot. `None` for partitions to read one by one (loose ones, or
    /// the rest of a pack that some rows have left).
    pub fn pack(&self) -> Option<&[Arc<Column>]> {
        self.pack.as_deref()
    }
}

/// One walk over the partitions: whole packs, and runs of the other slots between them.
pub(super) fn find_runs(parts: &[Arc<Partition>]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    let mut s = 0;
    while s < parts.len() {
        if let Some(end) = whole_pack_from(parts, s) {
            let pack = parts[s].packed.as_ref().map(|pk| pk.shared().clone());
            out.push(Run { slots: s..end, pack });
            s = end;
            continue;
        }
        match out.last_mut() {
            Some(r) if r.pack.is_none() => r.slots.end = s + 1,
            _ => out.push(Run { slots: s..s + 1, pack: None }),
        }
        s += 1;
    }
    debug_assert_eq!(out.iter().map(|r| r.slots.len()).sum::<usize>(), parts.len());
    out
}

/// When slot `s` holds the first partition of a pack and the next slots hold every other
/// partition of it, in the pack's order: the slot after its last.
fn whole_pack_from(parts: &[Arc<Partition>], s: usize) -> Option<usize> {
    let (cols, 0) = parts[s].pack()? else { return None };
    let rows = cols.first()?.len();
    let mut next = 0;
    let mut end = s;
    while let Some((c, start)) = parts.get(end).and_then(|p| p.pack()) {
        if !std::ptr::eq(c, cols) || start != next {
            break;
        }
        next += parts[end].len();
        end += 1;
    }
    (next == rows).then_some(end)
}
