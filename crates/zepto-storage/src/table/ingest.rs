//! A table's appends: a batch checked against the schema, its strings coded into the
//! dictionary, its rows placed by partition key and copied onto the partitions (spread thin
//! over many, or split into one part per partition and filled on every core).

use super::append::*;
use super::{dedup, groups, split, ColumnDef, Partition, Table, NO_SLOT};
use crate::column::{Column, ColumnBuilder, ColumnData};
use crate::error::StorageError;
use crate::types::DataType;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

impl Table {
    /// Check that `batch` fits the schema (count, length, types; strings may feed SYMBOL and
    /// VARCHAR columns; vectors' elements finite). Nothing is changed.
    pub fn validate(&self, batch: &[Column]) -> Result<usize, StorageError> {
        self.validate_widened(&[], batch)
    }

    /// [`Table::validate`] of `batch` against the schema widened by columns `add`, each checked
    /// as [`Table::add_column`] checks it (and no two of the same name): what a writer that logs
    /// new columns and rows as one change checks before it logs, so that no table refuses its
    /// part once it is logged. Nothing is changed.
    pub fn validate_widened(&self, add: &[ColumnDef], batch: &[Column]) -> Result<usize, StorageError> {
        for (k, d) in add.iter().enumerate() {
            if add[..k].iter().any(|a| a.name.eq_ignore_ascii_case(&d.name)) {
                return Err(StorageError::Invalid(format!("column '{}' is given twice", d.name)));
            }
            self.check_new_column(d)?;
        }
        let width = self.schema.len() + add.len();
        if batch.len() != width {
            return Err(StorageError::Invalid(format!(
                "table '{}' has {width} columns but {} were supplied",
                self.name,
                batch.len()
            )));
        }
        let n = batch.first().map_or(0, Column::len);
        for (c, def) in batch.iter().zip(self.schema.columns.iter().chain(add)) {
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
    pub(super) fn append_checked(&mut self, batch: Vec<Column>, n: usize) -> usize {
        self.split_in(batch, n);
        self.after_append(n);
        n
    }

    /// [`Table::append_checked`] without the packing that may follow it (`pack.rs`).
    pub(super) fn split_in(&mut self, batch: Vec<Column>, n: usize) {
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
    pub(super) fn mostly_filled(&self, targets: &[usize]) -> bool {
        2 * targets.iter().filter(|&&s| self.parts.get(s).is_some_and(|p| !p.is_empty())).count() > targets.len()
    }

    /// Append `by_target[i]` (rows of one key each) to partition slot `targets[i]` (each slot
    /// once), on every core when `parallel`, deduplicating as the table's keys say.
    pub(super) fn fill_targets(&mut self, targets: &[usize], by_target: Vec<Vec<Column>>, parallel: bool) {
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
    pub(super) fn append_spread(&mut self, batch: &[Column], place: &split::Placement) {
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
    pub(super) fn normalize(&mut self, batch: Vec<Column>) -> Vec<Column> {
        let defs = self.schema.columns.clone();
        batch.into_iter().zip(&defs).map(|(c, def)| self.normalize_column(c, def.data_type)).collect()
    }

    /// One column of a batch as [`Table::normalize`] leaves it, for a column of type `dt`.
    pub(super) fn normalize_column(&mut self, c: Column, dt: DataType) -> Column {
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

    pub(super) fn encode_symbols(&mut self, mut c: Column) -> Column {
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
    pub(super) fn place(&mut self, batch: &[Column], n: usize) -> split::Placement {
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
    pub(super) fn slot_of_key(&mut self, code: Option<u32>) -> usize {
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

    pub(super) fn new_partition(&mut self, key: Option<u32>) -> usize {
        let columns = self.schema.columns.iter().map(|c| Arc::new(self.empty_column(c.data_type))).collect();
        self.parts.push(Arc::new(Partition::raw(columns, key)));
        self.parts.len() - 1
    }

    pub(super) fn empty_column(&self, dt: DataType) -> Column {
        match dt {
            DataType::Symbol => {
                Column::from_data(ColumnData::Symbol { codes: Vec::new().into(), dict: self.dict.clone() })
            }
            _ => Column::from_data(ColumnData::empty(dt)),
        }
    }
}

/// A `FLOAT[n]` column's elements are all finite (every door checks this; the table re-checks
/// so that no path can store a NaN the distance functions would then spread). Column `name`'s
/// first such row is named in the error.
pub(super) fn check_vector_elements(name: &str, c: &Column) -> Result<(), StorageError> {
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
