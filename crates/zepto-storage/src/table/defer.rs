//! Ingest batches spread thin over many partitions, gathered before they are split.
//!
//! A line-protocol batch of 10k rows over 4,000 series holds 2.5 rows of each: appending it
//! touches every partition's columns (a cache and TLB miss each, behind an atomic check) for
//! a few values apiece, and with wide rows that costs more than reading the text. Such a batch
//! is instead appended whole to the table's deferred rows ([`Deferred`], one set of columns in
//! arrival order: a copy at memory speed), and the deferred rows are split among the
//! partitions in one go once they are enough to give each partition several rows
//! ([`Table::fold`]). Measured in process (`ilp_ingest 4000 2`): 10k-row appends 5.7 s,
//! 40k-row 3.4 s, 80k-row 2.7 s for the same 2.88M lines.
//!
//! **Nobody reads deferred rows.** They are folded in before anything looks at the
//! partitions: a snapshot (`Catalog::snapshot`), a consistent cut (checkpoints, backups),
//! every change other than a deferring append (`Catalog::modify`, `Catalog::write_many`,
//! index changes) and any append that does not defer ([`Table::append`]), so rows keep their
//! arrival order. Only `Catalog::write_many_deferred`'s closure (the ingest doors'
//! appends) sees a table with deferred rows, and it only reads the schema. The partition
//! readers assert it in debug builds. Deferred rows are logged like any other (the write-ahead
//! log has them before they are acknowledged), so a crash loses none of them.

use super::Table;
use crate::column::Column;
use crate::error::StorageError;

/// Below this many partitions a batch is not deferred: it gives each enough rows.
const MIN_PARTITIONS: usize = 1024;

/// A batch with fewer rows than this per partition of the table, on average, is deferred
/// (as many as a fold gives each partition: a batch thinner than a fold is cheaper split as
/// part of one; at 4, ILP/TCP's 8 MiB commits of 4,000 series, about 6 rows per partition,
/// were split on their own, 0.88x the rate with 16, durable, in A/B runs)...
const THIN_ROWS_PER_PARTITION: usize = 16;

/// ...unless it is this small: a few lines cost little to split, and deferred, the reader
/// that comes next would pay for the fold after the acknowledgement (a write's visibility).
const MIN_ROWS: usize = 1024;

/// Deferred rows are folded in once they give each partition this many rows on average...
const FOLD_ROWS_PER_PARTITION: usize = 16;

/// ...within these bounds: enough rows to pay for the split, few enough that the reader who
/// folds them waits milliseconds, not more.
const FOLD_MIN_ROWS: usize = 32 * 1024;
const FOLD_MAX_ROWS: usize = 256 * 1024;

/// Rows appended but not yet split among the partitions: the table's columns, in arrival
/// order, typed and encoded as the partitions hold them.
#[derive(Debug, Clone, Default)]
pub(super) struct Deferred {
    cols: Vec<Column>,
    rows: usize,
}

impl Deferred {
    /// Rows waiting.
    pub(super) fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes of column data waiting.
    pub(super) fn data_bytes(&self) -> usize {
        self.cols.iter().map(Column::data_bytes).sum()
    }
}

impl Table {
    /// Append a batch as [`Table::append`] does, or defer it (module docs) when it is spread
    /// thin over a table of many partitions; deferred rows are folded in once there are
    /// enough of them. Returns the rows appended.
    pub fn append_deferred(&mut self, batch: Vec<Column>) -> Result<usize, StorageError> {
        let n = self.validate(&batch)?;
        if n == 0 {
            return Ok(0);
        }
        let parts = self.parts.len();
        let thin = parts >= MIN_PARTITIONS && (MIN_ROWS..parts * THIN_ROWS_PER_PARTITION).contains(&n);
        if !thin || !self.dedup.is_empty() || self.key_col.is_none() {
            return self.append(batch);
        }
        let batch = self.normalize(batch);
        let d = &mut self.deferred;
        if d.cols.is_empty() {
            d.cols = batch;
        } else {
            d.cols.iter_mut().zip(&batch).for_each(|(dst, src)| super::append_column(dst, src));
        }
        d.rows += n;
        if d.rows >= (parts * FOLD_ROWS_PER_PARTITION).clamp(FOLD_MIN_ROWS, FOLD_MAX_ROWS) {
            self.fold();
        }
        Ok(n)
    }

    /// Whether rows are deferred (module docs): a reader must have them folded in first.
    pub fn has_deferred(&self) -> bool {
        self.deferred.rows > 0
    }

    /// Split the deferred rows among the partitions, as one append of them.
    ///
    /// A fold does not pack the small partitions (`pack.rs`), as a stream's small batches do
    /// not: the next fold touches nearly every partition again and would copy it back out of
    /// the pack. 10k-row Python inserts spent 30% of their time packing at 10k symbols, and
    /// took 1.4-1.6x as long at 100k symbols when folds packed.
    pub fn fold(&mut self) {
        let d = std::mem::take(&mut self.deferred);
        if d.rows > 0 {
            debug_assert!(self.validate(&d.cols).is_ok_and(|n| n == d.rows), "deferred rows no longer fit the table");
            self.split_in(d.cols, d.rows);
            self.since_pack += d.rows;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::column::ColumnBuilder;
    use crate::table::{ColumnDef, Schema, TableOptions};
    use crate::types::DataType;
    use crate::value::Value;

    fn table() -> Table {
        let columns =
            [("ts", DataType::Timestamp), ("k", DataType::Symbol), ("v", DataType::Int64), ("s", DataType::Varchar)]
                .iter()
                .map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t })
                .collect();
        Table::new("t", Schema { columns }, &TableOptions::default()).expect("table")
    }

    /// `n` rows over `keys` keys, times around `t0` (some late, some NULL values).
    fn batch(next: &mut impl FnMut(u64) -> u64, n: usize, keys: u64, t0: i64) -> Vec<Column> {
        let types = [DataType::Timestamp, DataType::Varchar, DataType::Int64, DataType::Varchar];
        let mut b: Vec<ColumnBuilder> = types.iter().map(|&t| ColumnBuilder::new(t, n)).collect();
        for _ in 0..n {
            let push = |b: &mut ColumnBuilder, v: Value| b.push_value(&v).expect("push");
            push(&mut b[0], Value::Timestamp(t0 + next(1000) as i64 - 100));
            push(&mut b[1], Value::Str(format!("k{}", next(keys))));
            push(&mut b[2], if next(10) == 0 { Value::Null } else { Value::Int64(next(1 << 20) as i64) });
            push(&mut b[3], Value::Str(["a", "", "c d"][next(3) as usize].into()));
        }
        b.into_iter().map(ColumnBuilder::finish).collect()
    }

    /// Every partition's rows, by key, as text.
    pub(in crate::table) fn contents(t: &Table) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = t
            .partitions()
            .iter()
            .map(|p| {
                let cols = p.columns();
                let key = p.key().map_or("NULL".to_string(), |c| t.dict().get(c).to_string());
                let rows =
                    (0..p.len()).map(|i| cols.iter().map(|c| format!("{:?}", c.get(i))).collect::<Vec<_>>().join("|"));
                (key, rows.collect())
            })
            .collect();
        out.sort();
        out
    }

    /// Rows of two writers that drifted apart (each sending its own run of time, one ahead):
    /// deferred and folded on every core, nearly every partition's rows land behind its last
    /// time and are merged into its tail in place (`merge.rs`); the table is what appending
    /// each batch directly, through the general sort, leaves.
    #[test]
    fn late_rows_of_drifting_writers_merge_as_appended_ones() {
        let mut rng = crate::rng::XorShift::new(9);
        let columns =
            [("ts", DataType::Timestamp), ("k", DataType::Symbol), ("v", DataType::Int64), ("f", DataType::Float64)]
                .iter()
                .map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t })
                .collect();
        let new =
            || Table::new("t", Schema { columns: Vec::clone(&columns) }, &TableOptions::default()).expect("table");
        let (mut deferred, mut direct) = (new(), new());
        let keys = 2000u64;
        // Batch `b` covers times [b * 100, b * 100 + 150): neighbours overlap.
        let batch = |rng: &mut crate::rng::XorShift, b: i64, n: usize| -> Vec<Column> {
            let types = [DataType::Timestamp, DataType::Varchar, DataType::Int64, DataType::Float64];
            let mut cols: Vec<ColumnBuilder> = types.iter().map(|&t| ColumnBuilder::new(t, n)).collect();
            for i in 0..n {
                let push = |c: &mut ColumnBuilder, v: Value| c.push_value(&v).expect("push");
                push(&mut cols[0], Value::Timestamp(b * 100 + rng.below(150) as i64));
                push(&mut cols[1], Value::Str(format!("k{}", (i as u64 * 7 + rng.below(3)) % keys)));
                push(&mut cols[2], Value::Int64(b * 1_000_000 + i as i64));
                push(&mut cols[3], Value::Float64(rng.below(1000) as f64 / 8.0));
            }
            cols.into_iter().map(ColumnBuilder::finish).collect()
        };
        let first = batch(&mut rng, 0, 2 * keys as usize);
        deferred.append_deferred(first.clone()).expect("append");
        direct.append(first).expect("append");
        // Writer A sends batches 1, 3, 5, ...; writer B 2, 4, 6, ... but runs four ahead.
        let order: Vec<i64> = (0..40).flat_map(|r| [2 * r + 1, 2 * (r + 4) + 2]).collect();
        for b in order {
            let n = 1500 + rng.below(2500) as usize;
            let rows = batch(&mut rng, b, n);
            deferred.append_deferred(rows.clone()).expect("append");
            direct.append(rows).expect("append");
        }
        deferred.fold();
        assert_eq!(deferred.row_count(), direct.row_count());
        assert_eq!(contents(&deferred), contents(&direct));
    }

    /// Folds, thin or by size, leave the partitions they touch out of the pack (appending
    /// copied them out) and pack none; an append as large as the table is wide packs every
    /// small partition again (`pack.rs`).
    #[test]
    fn folds_do_not_pack_bulk_appends_do() {
        let mut rng = crate::rng::XorShift::new(11);
        let mut next = |n: u64| rng.below(n);
        let keys = 2000u64;
        let mut t = table();
        t.append(batch(&mut next, 4 * keys as usize, keys, 0)).expect("append");
        let packed = |t: &Table| t.partitions().iter().filter(|p| p.is_packed()).count();
        let parts = t.partitions().len();
        assert_eq!(packed(&t), parts, "a bulk append packs the small partitions");
        // Four folds before a read, then folds by size (of 16 rows a partition).
        for round in 0..12 {
            let before = packed(&t);
            let by_size = round >= 4;
            loop {
                t.append_deferred(batch(&mut next, 3000, keys, 1000 * (round + 1))).expect("append");
                if !by_size || !t.has_deferred() {
                    break;
                }
            }
            t.fold();
            assert!(packed(&t) <= before, "fold {round} packed: {} of {parts} packed, {before} before", packed(&t));
        }
        assert_eq!(packed(&t), 0, "the folds touched every partition");
        t.append(batch(&mut next, 3 * keys as usize, keys, 20_000)).expect("append");
        assert_eq!(packed(&t), t.partitions().len(), "a bulk append packs again");
    }

    /// Partitions are numbered (their slots) in the order their keys first arrive, the NULL
    /// key's too, whether batches are deferred and folded together or appended one by one, as
    /// the log replays them: a logged DELETE names its partitions by slot.
    #[test]
    fn a_fold_numbers_new_partitions_as_appends_one_by_one_do() {
        let mut rng = crate::rng::XorShift::new(13);
        let mut next = |n: u64| rng.below(n);
        let (mut deferred, mut direct) = (table(), table());
        let first = batch(&mut next, 4000, 2000, 0);
        deferred.append(first.clone()).expect("append");
        direct.append(first).expect("append");
        let rows = |keys: Vec<Option<String>>, t0: i64| -> Vec<Column> {
            let types = [DataType::Timestamp, DataType::Varchar, DataType::Int64, DataType::Varchar];
            let mut b: Vec<ColumnBuilder> = types.iter().map(|&t| ColumnBuilder::new(t, keys.len())).collect();
            for (i, k) in keys.into_iter().enumerate() {
                let push = |b: &mut ColumnBuilder, v: Value| b.push_value(&v).expect("push");
                push(&mut b[0], Value::Timestamp(t0 + i as i64));
                push(&mut b[1], k.map_or(Value::Null, Value::Str));
                push(&mut b[2], Value::Int64(i as i64));
                push(&mut b[3], Value::Str("x".into()));
            }
            b.into_iter().map(ColumnBuilder::finish).collect()
        };
        // The table's first NULL keys late in one batch, keys new to it in the next.
        let a = (0..1500).map(|i| (i < 1400 || i % 7 != 0).then(|| format!("k{}", i % 2000))).collect();
        let b = (0..1500).map(|i| Some(format!("new{}", i % 300))).collect();
        for batch in [rows(a, 10_000), rows(b, 20_000)] {
            deferred.append_deferred(batch.clone()).expect("append");
            direct.append(batch).expect("append");
        }
        assert!(deferred.has_deferred(), "both batches deferred");
        deferred.fold();
        let keys = |t: &Table| -> Vec<Option<String>> {
            t.partitions().iter().map(|p| p.key().map(|c| t.dict().get(c).to_string())).collect()
        };
        let (got, want) = (keys(&deferred), keys(&direct));
        let first_diff = got.iter().zip(&want).position(|(g, w)| g != w);
        assert!(got.len() == want.len() && first_diff.is_none(), "slot {first_diff:?} differs");
        assert_eq!(contents(&deferred), contents(&direct));
    }

    /// Thin batches deferred and folded (by size, or before a read, a non-thin batch or a new
    /// column) leave the table an append of each batch in turn leaves: same partitions, same
    /// rows in the same order (late rows sorted in, ties in arrival order).
    #[test]
    fn deferred_rows_land_as_appended_ones() {
        let mut rng = crate::rng::XorShift::new(5);
        let mut next = |n: u64| rng.below(n);
        let (mut deferred, mut direct) = (table(), table());
        let first = batch(&mut next, 20_000, 3000, 0);
        deferred.append_deferred(first.clone()).expect("append");
        direct.append(first).expect("append");
        let mut folds_by_size = 0;
        for round in 0..60 {
            let n = if round % 17 == 16 { 20_000 } else { 1 + next(11_000) as usize };
            let b = batch(&mut next, n, 3000, round * 500);
            let before = deferred.deferred.rows();
            deferred.append_deferred(b.clone()).expect("append");
            direct.append(b).expect("append");
            if before > 0 && deferred.deferred.rows() == 0 && n < 12_000 {
                folds_by_size += 1;
            }
            assert_eq!(deferred.row_count(), direct.row_count());
            if round % 13 == 12 {
                deferred.fold();
                assert_eq!(contents(&deferred), contents(&direct), "round {round}");
            }
        }
        assert!(folds_by_size > 0, "no fold by size");
        deferred.append_deferred(batch(&mut next, 2000, 3000, 0)).expect("append");
        assert!(deferred.has_deferred());
        deferred.add_column(ColumnDef { name: "x".into(), data_type: DataType::Float64 }).expect("add");
        assert!(!deferred.has_deferred(), "a new column folds the deferred rows in first");
        assert_eq!(deferred.row_count(), direct.row_count() + 2000);
    }
}
