//! What the ingest doors learned about series: the text of a series as a client writes it (a
//! line protocol's measurement and tags, say `cpu,host=a,region=eu`) → its table and the
//! dictionary code of each tag value in that table's SYMBOL column.
//!
//! A wide-row load writes the same few thousand series in every batch. Each batch's first
//! line of a series had its tags read, each value looked up in the table's dictionary (a
//! shared lock and a string hash per tag), and only the batch's later lines of that series
//! were known by one hash of their text; at 4,000 series a 10k-line batch has 2.5 lines of
//! each, so most of the tag work was redone batch after batch. Kept here, across batches, a
//! known series costs one hash of its text and a push of its codes.
//!
//! Clients write their series in the same order round after round (every host of a fleet,
//! one after another, each interval), and the memo learns a batch's series table by table, in
//! the batch's order: so a door first compares a line's series with the text of the series
//! learned after the previous line's ([`Memo::find_after`]), read from one buffer in learning
//! order, where the hardware has fetched it already; only a line out of that order pays for
//! the hash and the lookup (the cache misses of an entry, its text and its codes among
//! thousands). A body that interleaves several measurements line by line misses the guess
//! at every change of table, and costs what it did before.
//!
//! An entry is only as good as the table it was learned on: each table's record keeps the
//! dictionary lineage and the columns the codes and slots refer to, and a door uses an entry
//! only when the table it finds now has the same lineage and still starts with those columns
//! (a table dropped and made again, or a column dropped, makes its entries stale; the next
//! batch that learns the table replaces them). The memo is bounded ([`MAX_BYTES`]): a batch
//! that would pass the bound starts it over (series that stopped arriving must not keep new
//! ones out for good).

use crate::table::ColumnDef;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard};

/// Most bytes the memo holds (series text, their codes and the map's own entries).
pub const MAX_BYTES: usize = 64 << 20;

/// Bytes counted per series beside its text and codes (the map's entry and the record).
const ENTRY_BYTES: usize = 64;

/// A table as its series were learned: its name (as written), its dictionary's lineage and
/// its columns then (the slots of the codes).
#[derive(Debug, Clone, PartialEq)]
pub struct MemoTable {
    /// The table's name as the learning batch wrote it.
    pub name: String,
    /// The lineage of its symbol dictionary ([`crate::Dict::lineage`]).
    pub lineage: u64,
    /// Its columns, in order: a series' codes go to slots among these.
    pub columns: Vec<ColumnDef>,
}

/// The memo of one catalog (see the module docs).
#[derive(Debug, Default)]
pub struct SeriesMemo {
    inner: RwLock<Memo>,
    /// Series a door learned while others were reading, for the next reader to add first
    /// (bounded by [`MAX_WAITING_BYTES`]), and whether there are any.
    waiting: Mutex<(Vec<Waiting>, usize)>,
    has_waiting: AtomicBool,
}

/// Most bytes of series waiting to be added (past that, they are learned by a later batch).
const MAX_WAITING_BYTES: usize = 8 << 20;

/// A series as a door hands it over: its text and its tags as (column slot, code).
type Series<'a> = (&'a [u8], &'a [(u32, u32)]);

/// Series of one table waiting to be added: text and codes.
type Waiting = (MemoTable, Vec<(Box<[u8]>, Vec<(u32, u32)>)>);

/// The memo's contents, read under [`SeriesMemo::read`].
#[derive(Debug, Default)]
pub struct Memo {
    tables: Vec<MemoTable>,
    /// Series text → index into `series`.
    index: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    /// Per series: its table (index into `tables`), its range of `codes` and of `texts`.
    series: Vec<(u32, Range<u32>, Range<u32>)>,
    /// Every series' tags: (column slot, code in the table's dictionary).
    codes: Vec<(u32, u32)>,
    /// Every series' text, in learning order (module docs).
    texts: Vec<u8>,
    bytes: usize,
}

impl Memo {
    /// The series of text `text`, if learned.
    pub fn find(&self, text: &[u8]) -> Option<u32> {
        self.index.get(text).copied()
    }

    /// [`Memo::find`], trying first the series learned right after series `prev` (module
    /// docs).
    #[inline]
    pub fn find_after(&self, prev: Option<u32>, text: &[u8]) -> Option<u32> {
        let next = prev.map_or(0, |p| p.wrapping_add(1));
        let range = self.series.get(next as usize).map(|(_, _, r)| r.start as usize..r.end as usize);
        if range.and_then(|r| self.texts.get(r)) == Some(text) {
            return Some(next);
        }
        self.find(text)
    }

    /// The table of series `id`.
    pub fn table_of(&self, id: u32) -> Option<u32> {
        self.series.get(id as usize).map(|(t, _, _)| *t)
    }

    /// Series `id`'s tags: (column slot, dictionary code).
    pub fn codes(&self, id: u32) -> &[(u32, u32)] {
        let range = self.series.get(id as usize).map_or(0..0, |(_, r, _)| r.start as usize..r.end as usize);
        self.codes.get(range).unwrap_or_default()
    }

    /// Table `t`'s record.
    pub fn table(&self, t: u32) -> Option<&MemoTable> {
        self.tables.get(t as usize)
    }

    /// Series learned.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// True when nothing is learned.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Bytes held (see [`MAX_BYTES`]).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The index of `table`'s record: the same record, or a new one replacing any other
    /// record of that name (whose series go with it).
    fn table_index(&mut self, table: &MemoTable) -> u32 {
        let same = |t: &MemoTable| {
            t.lineage == table.lineage && t.columns == table.columns && t.name.eq_ignore_ascii_case(&table.name)
        };
        if let Some(i) = self.tables.iter().position(same) {
            return i as u32;
        }
        if let Some(stale) = self.tables.iter().position(|t| t.name.eq_ignore_ascii_case(&table.name)) {
            self.forget(stale as u32);
        }
        self.tables.push(table.clone());
        (self.tables.len() - 1) as u32
    }

    /// Drop table record `t` and its series, renumbering the rest.
    fn forget(&mut self, t: u32) {
        let old = std::mem::take(self);
        self.tables = old.tables.into_iter().enumerate().filter(|(i, _)| *i as u32 != t).map(|(_, x)| x).collect();
        let mut by_id: Vec<(&[u8], u32)> = old.index.iter().map(|(k, &id)| (&**k, id)).collect();
        by_id.sort_unstable_by_key(|&(_, id)| id);
        for (text, id) in by_id {
            let Some(&(table, ref r, _)) = old.series.get(id as usize) else { continue };
            if table == t {
                continue;
            }
            let table = if table > t { table - 1 } else { table };
            let codes = old.codes.get(r.start as usize..r.end as usize).unwrap_or_default();
            self.insert(table, text, codes);
        }
    }

    /// Start over when `need` more bytes of series ([`cost`]) would pass [`MAX_BYTES`]: series
    /// that stopped arriving (a fleet's retired hosts) must not keep new ones out for good.
    fn make_room(&mut self, need: usize) {
        if self.bytes + need > MAX_BYTES {
            *self = Memo::default();
        }
    }

    fn insert(&mut self, table: u32, text: &[u8], codes: &[(u32, u32)]) -> bool {
        let cost = cost(text, codes);
        let Ok(id) = u32::try_from(self.series.len()) else { return false };
        if self.bytes + cost > MAX_BYTES || self.index.contains_key(text) {
            return false;
        }
        let (from, at) = (self.codes.len() as u32, self.texts.len() as u32);
        self.codes.extend_from_slice(codes);
        self.texts.extend_from_slice(text);
        self.series.push((table, from..self.codes.len() as u32, at..self.texts.len() as u32));
        self.index.insert(text.into(), id);
        self.bytes += cost;
        true
    }
}

/// What a series takes in the memo, counted against [`MAX_BYTES`] and [`MAX_WAITING_BYTES`].
fn cost(text: &[u8], codes: &[(u32, u32)]) -> usize {
    // The text twice: the index's key and `texts`.
    2 * text.len() + codes.len() * 8 + ENTRY_BYTES
}

impl SeriesMemo {
    /// The memo to read (a door holds this while it decodes a batch). Series learned while
    /// other doors were reading are added first.
    pub fn read(&self) -> RwLockReadGuard<'_, Memo> {
        if self.has_waiting.load(Ordering::Acquire) {
            self.settle();
        }
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Learn `series` (text, tags as (column slot, code)) of `table`, as long as the memo has
    /// room; a record of the same name (in any case) but another lineage or columns is
    /// replaced, its series forgotten. Returns how many were added now.
    ///
    /// A door reads the memo for a whole batch, and a learner waiting for the lock would hold
    /// every other door's next batch behind the slowest decode. So while any door reads, the
    /// series wait instead, and the next door to start a batch adds them.
    pub fn learn<'a>(&self, table: &MemoTable, series: impl Iterator<Item = (&'a [u8], &'a [(u32, u32)])>) -> usize {
        let mut memo = match self.inner.try_write() {
            Ok(m) => m,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                self.wait(table, series);
                return 0;
            }
        };
        let series: Vec<Series<'a>> = series.collect();
        memo.make_room(series.iter().map(|(text, codes)| cost(text, codes)).sum());
        let t = memo.table_index(table);
        series.into_iter().filter(|(text, codes)| memo.insert(t, text, codes)).count()
    }

    /// Keep `series` for the next reader to add, within [`MAX_WAITING_BYTES`].
    fn wait<'a>(&self, table: &MemoTable, series: impl Iterator<Item = (&'a [u8], &'a [(u32, u32)])>) {
        let mut w = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let mut kept = Vec::new();
        for (text, codes) in series {
            let cost = cost(text, codes);
            if w.1 + cost > MAX_WAITING_BYTES {
                break;
            }
            w.1 += cost;
            kept.push((Box::from(text), codes.to_vec()));
        }
        if !kept.is_empty() {
            w.0.push((table.clone(), kept));
            self.has_waiting.store(true, Ordering::Release);
        }
    }

    /// Add the waiting series (waiting for the readers of the moment).
    fn settle(&self) {
        let waiting = {
            let mut w = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            self.has_waiting.store(false, Ordering::Release);
            std::mem::take(&mut *w).0
        };
        if waiting.is_empty() {
            return;
        }
        let mut memo = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        for (table, series) in waiting {
            memo.make_room(series.iter().map(|(text, codes)| cost(text, codes)).sum());
            let t = memo.table_index(&table);
            for (text, codes) in series {
                memo.insert(t, &text, &codes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;

    fn table(name: &str, lineage: u64) -> MemoTable {
        let columns = vec![ColumnDef { name: "host".into(), data_type: DataType::Symbol }];
        MemoTable { name: name.into(), lineage, columns }
    }

    #[test]
    fn learns_finds_and_replaces_a_stale_table() {
        let memo = SeriesMemo::default();
        let a: &[(u32, u32)] = &[(0, 7)];
        let b: &[(u32, u32)] = &[(0, 9)];
        assert_eq!(memo.learn(&table("cpu", 1), [(&b"cpu,host=a"[..], a)].into_iter()), 1);
        assert_eq!(memo.learn(&table("mem", 5), [(&b"mem,host=a"[..], b)].into_iter()), 1);
        assert_eq!(memo.learn(&table("cpu", 1), [(&b"cpu,host=a"[..], b)].into_iter()), 0, "known already");
        {
            let m = memo.read();
            let id = m.find(b"cpu,host=a").expect("learned");
            assert_eq!((m.codes(id), m.table(m.table_of(id).expect("t")).map(|t| t.lineage)), (a, Some(1)));
            assert_eq!(m.find(b"cpu,host=b"), None);
        }
        // The table made again (a new dictionary lineage): its old series go, others stay.
        assert_eq!(memo.learn(&table("CPU", 2), [(&b"cpu,host=b"[..], b)].into_iter()), 1);
        let m = memo.read();
        assert_eq!(m.find(b"cpu,host=a"), None, "stale series forgotten");
        let id = m.find(b"mem,host=a").expect("another table's series stay");
        assert_eq!((m.codes(id), m.table(m.table_of(id).expect("t")).map(|t| t.name.as_str())), (b, Some("mem")));
        let id = m.find(b"cpu,host=b").expect("new");
        assert_eq!(m.table(m.table_of(id).expect("t")).map(|t| t.lineage), Some(2));
        assert_eq!(m.len(), 2);
    }

    /// The guess of the next series answers as the lookup does, whatever the guess: right,
    /// wrong, past the end, or after a table was forgotten (the series renumbered).
    #[test]
    fn the_next_series_guess_answers_as_the_lookup() {
        let memo = SeriesMemo::default();
        let texts: Vec<Vec<u8>> = (0..50).map(|h| format!("cpu,host=h{h}").into_bytes()).collect();
        let codes: Vec<[(u32, u32); 1]> = (0..50).map(|h| [(0, h)]).collect();
        let series = |r: std::ops::Range<usize>| r.map(|h| (&texts[h][..], &codes[h][..])).collect::<Vec<_>>();
        assert_eq!(memo.learn(&table("mem", 1), series(40..50).into_iter()), 10);
        assert_eq!(memo.learn(&table("cpu", 1), series(0..40).into_iter()), 40);
        let check = |m: &Memo| {
            let mut rng = crate::rng::XorShift::new(5);
            for _ in 0..2000 {
                let prev = [None, Some(rng.below(60) as u32), Some(u32::MAX)][rng.index(3)];
                let text = format!("cpu,host=h{}", rng.below(60));
                assert_eq!(m.find_after(prev, text.as_bytes()), m.find(text.as_bytes()), "{prev:?} {text}");
            }
            // In learning order every guess is right.
            let first = m.find(&texts[0]).expect("learned");
            assert_eq!((1..40).try_fold(first, |p, h| m.find_after(Some(p), &texts[h])), Some(first + 39));
        };
        check(&memo.read());
        // The table learned first made again: its series go, the rest move down.
        assert_eq!(memo.learn(&table("mem", 2), series(0..0).into_iter()), 0);
        let m = memo.read();
        assert_eq!((m.len(), m.find(&texts[45])), (40, None));
        check(&m);
    }

    #[test]
    fn learning_while_a_door_reads_waits_for_the_next_reader() {
        let memo = SeriesMemo::default();
        let codes: &[(u32, u32)] = &[(0, 1)];
        let reading = memo.read();
        assert_eq!(memo.learn(&table("cpu", 1), [(&b"cpu,host=a"[..], codes)].into_iter()), 0, "waits");
        assert_eq!(reading.len(), 0);
        drop(reading);
        let next = memo.read();
        assert_eq!(next.find(b"cpu,host=a").map(|id| next.codes(id)), Some(codes), "the next reader adds it");
        drop(next);
        assert_eq!(memo.learn(&table("cpu", 1), [(&b"cpu,host=a"[..], codes)].into_iter()), 0, "known already");
        // Another spelling of the same table keeps its record and series.
        assert_eq!(memo.learn(&table("CPU", 1), [(&b"CPU,host=a"[..], codes)].into_iter()), 1);
        assert_eq!(memo.read().len(), 2);
    }

    #[test]
    fn starts_over_when_full() {
        let memo = SeriesMemo::default();
        let text = vec![b'x'; 1 << 20];
        let codes: &[(u32, u32)] = &[];
        let series = |i: u8| {
            let mut t = text.clone();
            t[0] = i;
            t
        };
        let mut most = 0;
        for i in 0..100u8 {
            assert_eq!(memo.learn(&table("t", 1), [(&series(i)[..], codes)].into_iter()), 1, "series {i}");
            let m = memo.read();
            assert!(m.bytes() <= MAX_BYTES);
            most = most.max(m.len());
        }
        // Each text is kept twice (the index's key, the texts in order).
        assert!((30..32).contains(&most), "{most} series of 1 MiB at most");
        let m = memo.read();
        assert!(m.find(&series(99)).is_some(), "the newest is known");
        assert!(m.find(&series(0)).is_none(), "the oldest went when it filled");
    }
}
