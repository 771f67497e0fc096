//! Small partitions packed into shared columns.
//!
//! With many symbols and few rows each (100k symbols over 1M rows: ten rows a symbol), a
//! partition's own columns are a dozen allocations for a few hundred bytes of values. The
//! table then holds 2-3x its raw bytes, and a scan reaches every partition's columns through
//! pointers of their own, a cache miss each. Packing copies the rows of every partition under
//! [`PACK_ROWS`] into shared columns, partition after partition in slot order, a pack for every
//! run of neighbouring small slots of up to [`PACK_TARGET_ROWS`] rows; a packed partition keeps
//! only where its rows start. Scans read neighbouring packed partitions as one range
//! ([`Partition::source`]), and a scan of every row reads a whole pack as its columns
//! ([`super::Run`]). A change to a packed partition first copies its rows back out
//! (`Partition::own_mut`), and its rows in the pack are dead until the next packing.
//!
//! When: after a bulk append (a batch of at least as many rows as the table has partitions),
//! once at least [`PACK_MIN_PARTS`] small partitions are loose and the rows appended since the
//! last packing are at least as many as the small rows before them, so each appended row pays
//! for at most two copies more. A table restored from a checkpoint is packed as it is built.
//! A stream of small batches over many symbols does not pack: each batch would unpack the
//! partitions it touches again (a copy each), which cost such a stream 1.4x its time per batch
//! when it did. Nor do the folds of such a stream's deferred rows (`defer.rs`), for the same
//! reason.

use super::{Partition, Table};
use crate::column::Column;
use std::ops::Range;
use std::sync::Arc;

/// Partitions with fewer rows than this are packed; larger ones keep columns of their own,
/// which scans share without copying.
pub const PACK_ROWS: usize = 1024;

/// Rows a pack gathers before the next one starts: a scan of every row reads a whole pack as
/// one batch, so a pack is about the size of such a batch (the doors send 64k rows a message),
/// and a table of many has enough of them to keep every core busy.
pub const PACK_TARGET_ROWS: usize = 64 * 1024;

/// Fewer small loose partitions than this are not worth a packing.
pub const PACK_MIN_PARTS: usize = 1024;

/// The smallest batch after which packing is considered; a look walks every partition, so
/// it comes only after a batch of at least as many rows as there are partitions.
const BULK_MIN_ROWS: usize = 1024;

/// Where a packed partition's rows are: its start in columns shared with other partitions.
#[derive(Clone)]
pub(super) struct Packed {
    /// Each column shared on its own too: a scan that reads every row of a pack hands its
    /// columns out as they are ([`super::Partition::pack`]).
    cols: Arc<[Arc<Column>]>,
    start: usize,
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows = self.cols.first().map_or(0, |c| c.len());
        write!(f, "Packed {{ start: {}, pack rows: {rows} }}", self.start)
    }
}

impl Packed {
    /// Column `c` of the pack and the partition's first row in it.
    pub(super) fn column(&self, c: usize) -> (&Column, usize) {
        (&self.cols[c], self.start)
    }

    /// The pack's columns and the partition's first row in them.
    pub(super) fn columns(&self) -> (&[Arc<Column>], usize) {
        (&self.cols, self.start)
    }

    /// The pack's columns, shared.
    pub(super) fn shared(&self) -> &Arc<[Arc<Column>]> {
        &self.cols
    }

    /// The partition's `rows` rows copied out, one column each.
    pub(super) fn unpack(&self, rows: usize) -> Vec<Arc<Column>> {
        self.cols.iter().map(|c| Arc::new(c.slice(self.start, rows))).collect()
    }
}

/// Bytes of column data the partitions hold: each pack counted once, dead rows included.
pub(super) fn data_bytes(parts: &[Arc<Partition>]) -> usize {
    let mut packs: Vec<&Arc<[Arc<Column>]>> = Vec::new();
    let mut bytes = 0;
    for p in parts {
        match &p.packed {
            None => bytes += p.own.iter().map(|c| c.data_bytes()).sum::<usize>(),
            // Newest pack first: neighbours usually share it.
            Some(pk) if !packs.iter().rev().any(|l| Arc::ptr_eq(l, &pk.cols)) => packs.push(&pk.cols),
            Some(_) => {}
        }
    }
    bytes + packs.iter().flat_map(|pk| pk.iter()).map(|c| c.data_bytes()).sum::<usize>()
}

impl Table {
    /// After an append of `rows` rows: if it was a bulk append, pack the small partitions when
    /// enough of them are loose and enough rows came since the last packing to pay for it
    /// (module docs).
    pub(super) fn after_append(&mut self, rows: usize) {
        self.since_pack += rows;
        if rows < self.parts.len().max(BULK_MIN_ROWS) {
            return;
        }
        let (loose, copy) = self.small_partitions();
        // The copy includes the rows appended since: they pay for it when they are at least
        // as many as the rows before them, at most two copies each.
        if loose >= PACK_MIN_PARTS && 2 * self.since_pack >= copy {
            self.pack_small();
        }
    }

    /// Whether any partition is packed.
    pub(super) fn has_pack(&self) -> bool {
        self.parts.iter().any(|p| p.is_packed())
    }

    /// After rows left memory (tiering, retention, DELETE, a shard handed over): the
    /// partitions they left were copied out of the pack, which still holds their old rows and
    /// counts them in [`Table::data_bytes`]. With a pack before (`had_pack`), repack at once,
    /// so that memory drops as rows go: the memory budget tiers day after day until
    /// `data_bytes` does, and would otherwise tier far more than it needs.
    pub(super) fn repack_after_removal(&mut self, had_pack: bool, removed: usize) {
        if had_pack && removed > 0 {
            self.pack_small();
        }
    }

    /// How many small partitions are loose, and the rows a packing would copy.
    fn small_partitions(&self) -> (usize, usize) {
        let small = self.parts.iter().filter(|p| p.len() < PACK_ROWS);
        small.fold((0, 0), |(loose, rows), p| (loose + usize::from(!p.is_packed()), rows + p.len()))
    }

    /// Pack the small partitions if at least [`PACK_MIN_PARTS`] of them are loose (a table
    /// just restored).
    pub(super) fn pack_if_many_small(&mut self) {
        if self.small_partitions().0 >= PACK_MIN_PARTS {
            self.pack_small();
        }
    }

    /// Copy the partitions under `PACK_ROWS` (1,024) rows into new packs, in slot order;
    /// returns how many were packed. A pack takes neighbouring small partitions until it holds
    /// [`PACK_TARGET_ROWS`] rows, and a large partition between two small ones ends it, so that
    /// a pack's rows are those of a run of slots ([`super::Run`]). A small partition alone
    /// between large ones stays (or becomes) loose. Rows, their order and lineages stay.
    pub fn pack_small(&mut self) -> usize {
        self.since_pack = 0;
        let mut packed = 0;
        for slots in self.pack_groups() {
            if slots.len() < 2 {
                // Let go of its old pack, if any: it would keep every row of that pack alive.
                for s in slots {
                    if self.parts[s].is_packed() {
                        self.parts.make_mut(s).own_mut();
                    }
                }
                continue;
            }
            if !self.pack_slots(&slots) {
                break;
            }
            packed += slots.len();
        }
        packed
    }

    /// The slots of the small partitions in runs of neighbours of about [`PACK_TARGET_ROWS`]
    /// rows at most, a large partition ending a run.
    fn pack_groups(&self) -> Vec<Vec<usize>> {
        let (mut out, mut cur, mut rows) = (Vec::new(), Vec::new(), 0);
        for (s, p) in self.parts.iter().enumerate() {
            if p.len() < PACK_ROWS {
                cur.push(s);
                rows += p.len();
            }
            if (p.len() >= PACK_ROWS || rows >= PACK_TARGET_ROWS) && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
                rows = 0;
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    /// Copy the partitions in `slots` (ascending) into one new pack; `false` (nothing changed)
    /// if their columns do not fit together, which construction rules out.
    fn pack_slots(&mut self, slots: &[usize]) -> bool {
        let mut cols = Vec::with_capacity(self.schema.len());
        for c in 0..self.schema.len() {
            let spans: Vec<(&Column, Range<usize>)> = slots
                .iter()
                .map(|&s| {
                    let (col, at) = self.parts[s].source(c);
                    (col, at..at + self.parts[s].len())
                })
                .collect();
            match Column::concat_ranges(&spans) {
                Ok(col) => cols.push(Arc::new(col)),
                // Partitions are consistent by construction; should one not be, it stays loose.
                Err(e) => {
                    debug_assert!(false, "packing table '{}': {e}", self.name);
                    return false;
                }
            }
        }
        let cols: Arc<[Arc<Column>]> = cols.into();
        let mut start = 0;
        for &s in slots {
            let p = self.parts.make_mut(s);
            let rows = p.len();
            p.own = Vec::new();
            p.packed = Some(Packed { cols: cols.clone(), start });
            start += rows;
        }
        debug_assert_eq!(start, cols.first().map_or(0, |c| c.len()));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ColumnDef, Schema, TableOptions};
    use super::*;
    use crate::column::ColumnBuilder;
    use crate::rng::XorShift;
    use crate::types::DataType;
    use crate::value::Value;

    fn table() -> Table {
        let def = |name: &str, data_type| ColumnDef { name: name.into(), data_type };
        let schema = Schema {
            columns: vec![
                def("ts", DataType::Timestamp),
                def("sym", DataType::Symbol),
                def("px", DataType::Float64),
                def("note", DataType::Varchar),
            ],
        };
        Table::new("t", schema, &TableOptions::default()).expect("table")
    }

    /// Rows of `syms` symbols (some NULL), times rising from `t0` with some NULL, prices and
    /// notes with NULLs.
    fn rows(rng: &mut XorShift, n: usize, syms: u64, t0: i64) -> Vec<Column> {
        let types = [DataType::Timestamp, DataType::Symbol, DataType::Float64, DataType::Varchar];
        let mut b: Vec<ColumnBuilder> = types.iter().map(|&t| ColumnBuilder::new(t, n)).collect();
        for i in 0..n {
            let null = rng.below(23) == 0;
            let ts = if null { Value::Null } else { Value::Timestamp(t0 + i as i64 / 3 + rng.below(5) as i64) };
            b[0].push_value(&ts).expect("ts");
            match rng.below(syms + 1) {
                k if k == syms => b[1].push_null(),
                k => b[1].push_str(&format!("s{k}")).expect("sym"),
            }
            b[2].push_value(&if null { Value::Null } else { Value::Float64(i as f64) }).expect("px");
            b[3].push_value(&if i % 5 == 0 { Value::Null } else { Value::Str(format!("n{i}")) }).expect("note");
        }
        b.into_iter().map(ColumnBuilder::finish).collect()
    }

    /// Every partition's key and rows, slot by slot.
    fn dump(t: &Table) -> Vec<(Option<u32>, Vec<Vec<Value>>)> {
        let part = |p: &Arc<Partition>| {
            let cols = p.columns();
            let rows = (0..p.len()).map(|i| cols.iter().map(|c| c.get(i)).collect()).collect();
            (p.key(), rows)
        };
        t.partitions().iter().map(part).collect()
    }

    fn same(loose: &Table, packed: &Table, step: &str) {
        assert_eq!(dump(loose), dump(packed), "after {step}");
        assert_eq!(loose.row_count(), packed.row_count(), "after {step}");
    }

    /// A packed table reads as the same table loose, and stays so through every change: appends
    /// in and out of time order, deletes, updates, dropping old rows, a new column, repacking.
    #[test]
    fn a_packed_table_reads_and_changes_as_the_loose_one() {
        let mut rng = XorShift::new(0x5eed);
        let mut loose = table();
        loose.append(rows(&mut rng, 400, 60, 1_000)).expect("append");
        assert!(loose.partitions().iter().all(|p| !p.is_packed()), "60 partitions are too few to pack");
        let mut packed = loose.clone();
        let lineages = |t: &Table| t.partitions().iter().map(|p| p.lineage()).collect::<Vec<_>>();
        assert_eq!(packed.pack_small(), packed.partitions().len());
        assert!(packed.partitions().iter().all(|p| p.is_packed()));
        assert_eq!(lineages(&packed), lineages(&loose), "packing moves no row");
        same(&loose, &packed, "packing");
        let raw: usize =
            loose.partitions().iter().map(|p| p.columns().iter().map(|c| c.data_bytes()).sum::<usize>()).sum();
        // The same values once; bitmaps no longer round up, strings no longer end, per partition.
        let (bytes, slack) = (packed.data_bytes(), 16 * packed.partitions().len());
        assert!(bytes <= raw && bytes + slack >= raw, "{bytes} bytes packed, {raw} loose");

        let later = rows(&mut rng, 50, 8, 2_000);
        let earlier = rows(&mut rng, 50, 8, 1_010);
        for (t, step) in [(&mut loose, "appends"), (&mut packed, "appends")] {
            t.append(later.clone()).expect(step);
            t.append(earlier.clone()).expect(step);
        }
        same(&loose, &packed, "appends in and out of order");
        assert!(packed.partitions().iter().any(|p| p.is_packed()), "untouched partitions stay packed");

        let sel: Vec<(u32, Vec<u32>)> = (0..loose.partitions().len() as u32)
            .filter(|s| s % 3 == 0)
            .map(|s| (s, (0..loose.partitions()[s as usize].len() as u32).filter(|r| r % 2 == 1).collect()))
            .collect();
        let picked: usize = sel.iter().map(|(_, r)| r.len()).sum();
        let px = Column::from_data(crate::column::ColumnData::Float64((0..picked).map(|i| -(i as f64)).collect()));
        packed.pack_small();
        for t in [&mut loose, &mut packed] {
            t.update_rows(&sel, &[2], vec![px.clone()]).expect("update");
        }
        same(&loose, &packed, "an update");
        packed.pack_small();
        for t in [&mut loose, &mut packed] {
            t.delete_rows(&sel).expect("delete");
        }
        same(&loose, &packed, "a delete");
        // Rows gone from a pack leave it: no dead rows held or counted.
        assert!(packed.partitions().iter().all(|p| p.is_packed()), "repacked after the delete");
        assert!(packed.data_bytes() <= loose.data_bytes(), "{} > {}", packed.data_bytes(), loose.data_bytes());
        for t in [&mut loose, &mut packed] {
            t.remove_before(1_050);
        }
        same(&loose, &packed, "dropping old rows");
        assert!(packed.data_bytes() <= loose.data_bytes(), "{} > {}", packed.data_bytes(), loose.data_bytes());
        packed.pack_small();
        for t in [&mut loose, &mut packed] {
            t.add_column(ColumnDef { name: "extra".into(), data_type: DataType::Int64 }).expect("add column");
        }
        same(&loose, &packed, "a new column");
        packed.pack_small();
        same(&loose, &packed, "repacking");
        assert_eq!(packed.min_ts(), loose.min_ts());
    }

    /// The runs a table keeps, against runs found afresh: the same slots, the same packs.
    fn runs_fresh(t: &Table) -> Vec<(Range<usize>, Option<*const Column>)> {
        let key = |r: &super::super::Run| (r.slots(), r.pack().map(|c| Arc::as_ptr(&c[0])));
        let kept: Vec<_> = t.runs().iter().map(key).collect();
        assert_eq!(kept, super::super::parts::find_runs(t.partitions()).iter().map(key).collect::<Vec<_>>());
        kept
    }

    /// Packs are runs of neighbouring small slots of about `PACK_TARGET_ROWS` rows, a large
    /// partition between two small ones ending one; a scan's runs name each whole pack, and
    /// forget it once a partition leaves it. A snapshot taken before keeps its own runs.
    #[test]
    fn packs_are_runs_of_slots_and_runs_follow_changes() {
        let mut rng = XorShift::new(0x1234);
        let mut t = table();
        t.append(rows(&mut rng, 3 * PACK_ROWS, 2, 0)).expect("large partitions");
        let syms = 12 * PACK_MIN_PARTS as u64;
        t.append(rows(&mut rng, PACK_TARGET_ROWS + 20 * PACK_MIN_PARTS, syms, 10_000)).expect("bulk");
        let runs = runs_fresh(&t);
        let packs: Vec<&Range<usize>> = runs.iter().filter(|(_, p)| p.is_some()).map(|(s, _)| s).collect();
        assert!(packs.len() >= 2, "{} rows of small partitions make more than one pack", PACK_TARGET_ROWS);
        for r in t.runs() {
            let parts = &t.partitions()[r.slots()];
            let rows: usize = parts.iter().map(|p| p.len()).sum();
            match r.pack() {
                Some(cols) => {
                    assert_eq!(cols[0].len(), rows, "a whole pack holds its run's rows");
                    assert!(rows < PACK_TARGET_ROWS + PACK_ROWS);
                    assert!(parts.iter().all(|p| p.pack().is_some_and(|(c, _)| std::ptr::eq(c, cols))));
                }
                None => assert!(parts.iter().all(|p| p.len() >= PACK_ROWS || !p.is_packed())),
            }
        }
        // A row for one packed partition takes it out of its pack: that pack is no longer whole.
        let before = t.clone();
        let slot = packs[1].start + 3;
        let code = t.partitions()[slot].key().expect("keyed");
        let sym = t.dict().get(code).to_string();
        let mut one = rows(&mut rng, 1, 1, 50_000);
        let mut b = ColumnBuilder::new(DataType::Symbol, 1);
        b.push_str(&sym).expect("sym");
        one[1] = b.finish();
        t.append(one).expect("one row");
        let after = runs_fresh(&t);
        assert!(after.iter().all(|(s, p)| p.is_none() || !s.contains(&slot)), "the touched pack is not whole");
        assert_eq!(after.iter().filter(|(_, p)| p.is_some()).count(), packs.len() - 1);
        assert_eq!(runs_fresh(&before), runs, "the snapshot's runs stay");
        // Repacking makes it whole again.
        t.pack_small();
        assert_eq!(runs_fresh(&t).iter().filter(|(_, p)| p.is_some()).count(), packs.len());
    }

    /// Many small partitions pack by themselves after the append that made them.
    #[test]
    fn many_small_partitions_pack_after_an_append() {
        let mut rng = XorShift::new(77);
        let mut t = table();
        let batch = rows(&mut rng, 6 * PACK_MIN_PARTS, 2 * PACK_MIN_PARTS as u64, 0);
        t.append(batch.clone()).expect("append");
        assert!(t.partitions().len() > PACK_MIN_PARTS);
        assert!(t.partitions().iter().all(|p| p.is_packed()), "every partition is small");
        let got: usize = t.partitions().iter().map(|p| p.len()).sum();
        assert_eq!(got, 6 * PACK_MIN_PARTS);
        assert_eq!(t.row_count(), got);
        // A few rows more do not repack (too few appended to pay for it) but unpack their
        // partitions.
        t.append(rows(&mut rng, 10, 3, 50_000)).expect("append");
        let loose = t.partitions().iter().filter(|p| !p.is_packed()).count();
        assert!((1..=4).contains(&loose), "{loose} partitions unpacked");
    }
}
