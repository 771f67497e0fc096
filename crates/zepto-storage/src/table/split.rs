//! A batch's rows split among partitions in one pass per column. Gathering each partition's
//! rows by index (`Column::take` per partition) reads the whole column once per partition that
//! has rows on a cache line; scattering reads it once and appends each row to its partition's
//! buffer, sized exactly beforehand. A bulk load spends most of its partitioning time here.
//!
//! - [`Placement`]: which partition each row of a batch goes to.
//! - [`ColumnSplit`]: one column's rows scattered among parts, whole or a chunk at a time.
//! - [`KeyGroups`]: a load's rows grouped by partition key before its other columns are
//!   decoded, so that each is split as it is decoded (`zepto_io`'s grouped reads).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use super::chunk_order::{ChunkOrder, ChunkOrders};
use super::scatter::{scatter_into, scatter_ordered};
use crate::bitmap::Bitmap;
use crate::column::{Column, ColumnData, ValidRun};
use crate::dict::Dict;
use crate::strings::StrVec;
use crate::types::DataType;
use std::sync::Arc;

/// A batch's rows grouped by the partitions that get any: work and memory follow the batch,
/// not the table's partition count (an ingest batch of 1,000 rows into a table of 100k
/// symbols touches at most 1,000 partitions).
#[derive(Debug)]
pub(super) struct Placement {
    /// Row `i` goes to `targets[part[i]]`.
    part: Vec<u32>,
    /// Partition slots that get rows, in order of first row.
    targets: Vec<usize>,
    /// Rows per target.
    sizes: Vec<usize>,
}

/// A slot without a target in [`Placement::by_slot`]'s scratch and [`Placement::dense`]'s map.
pub(super) const NO_TARGET: u32 = u32::MAX;

impl Placement {
    /// `slots[i]` is row `i`'s partition slot, each below `nslots`.
    pub(super) fn new(slots: Vec<u32>, nslots: usize) -> Placement {
        // A table wider than the batch: a map of the slots seen, not one entry per partition.
        if nslots <= slots.len().saturating_mul(4) {
            return Placement::dense(slots, nslots);
        }
        let (mut targets, mut sizes) = (Vec::new(), Vec::new());
        let mut seen: HashMap<u32, u32> = HashMap::new();
        let part = slots
            .iter()
            .map(|&s| {
                let t = *seen.entry(s).or_insert_with(|| {
                    targets.push(s as usize);
                    sizes.push(0);
                    targets.len() as u32 - 1
                });
                sizes[t as usize] += 1;
                t
            })
            .collect();
        Placement { part, targets, sizes }
    }

    /// [`Placement::new`] when slots are few beside the rows: counted first, then numbered
    /// in order of first row by a scan that stops once every slot with rows is seen, and
    /// `slots` becomes `part` in place, untouched where the numbering is the slots' own (a
    /// load's key codes, interned in order of first row, usually are).
    fn dense(mut slots: Vec<u32>, nslots: usize) -> Placement {
        let counts = count_slots(&slots, nslots);
        let mut target = vec![NO_TARGET; nslots];
        let (mut targets, mut sizes) = (Vec::new(), Vec::new());
        let used = counts.iter().filter(|&&k| k > 0).count();
        for &s in &slots {
            if targets.len() == used {
                break;
            }
            let t = &mut target[s as usize];
            if *t == NO_TARGET {
                *t = targets.len() as u32;
                targets.push(s as usize);
                sizes.push(counts[s as usize]);
            }
        }
        if targets.iter().enumerate().any(|(t, &s)| t != s) {
            slots.iter_mut().for_each(|s| *s = target[*s as usize]);
        }
        Placement { part: slots, targets, sizes }
    }

    /// All `n` rows to partition slot `slot`.
    pub(super) fn one(slot: usize, n: usize) -> Placement {
        Placement { part: vec![0; n], targets: vec![slot], sizes: vec![n] }
    }

    /// The rows whose partition slots `slots` yields in row order, in one pass: `scratch` maps
    /// a slot to its target meanwhile. It must hold [`NO_TARGET`] at every slot `slots` yields,
    /// and is left so (only the targets' entries are reset), so one scratch of the table's
    /// width serves every batch, however few rows.
    pub(super) fn by_slot(slots: impl ExactSizeIterator<Item = u32>, scratch: &mut [u32]) -> Placement {
        let mut targets = Vec::new();
        let mut part = Vec::with_capacity(slots.len());
        // Numbered here, counted after (`count_slots`' lanes): a count per target bumped in
        // this loop made each row wait on the store of the row before it (5 ns a row).
        part.extend(slots.map(|s| {
            let t = &mut scratch[s as usize];
            if *t == NO_TARGET {
                *t = targets.len() as u32;
                targets.push(s as usize);
            }
            *t
        }));
        targets.iter().for_each(|&s| scratch[s] = NO_TARGET);
        let sizes = count_slots(&part, targets.len());
        Placement { part, targets, sizes }
    }

    /// The partition slots that get rows, in order of first row.
    pub(super) fn targets(&self) -> &[usize] {
        &self.targets
    }

    /// The indices of the batch's rows in `range` grouped by target (input order within
    /// each), and each target's span in them (one per target; empty where the range has none
    /// of its rows): one counting sort, no buffer per target.
    pub(super) fn grouped_rows_in(&self, range: Range<usize>) -> (Vec<u32>, Vec<Range<usize>>) {
        if range == (0..self.part.len()) {
            return group_rows(&self.part, 0, &self.sizes);
        }
        let part = &self.part[range.clone()];
        group_rows(part, range.start, &count_slots(part, self.targets.len()))
    }

    /// The rows a batch of `n` rows is spread in, a chunk of about [`SPREAD_CHUNK_ROWS`] at a
    /// time when its targets are few enough to get many rows of each chunk (see there), else
    /// the whole batch at once.
    pub(super) fn spread_chunks(&self) -> Vec<Range<usize>> {
        let n = self.part.len();
        if self.targets.len() * SPREAD_CHUNK_MIN_TARGET_ROWS > SPREAD_CHUNK_ROWS || n <= SPREAD_CHUNK_ROWS {
            return std::iter::once(0..n).collect();
        }
        // Chunks of nearly equal size, none much smaller than the others.
        let k = n.div_ceil(SPREAD_CHUNK_ROWS);
        (0..k).map(|i| i * n / k..(i + 1) * n / k).collect()
    }

    /// Each target's rows of `batch`, in input order: split once per column (on every core
    /// when `parallel`, as for a bulk load), or the whole batch when it goes to one partition.
    /// Each column is dropped once split, so a bulk load holds its rows about once, not twice:
    /// only the columns being split exist both whole and in parts.
    pub(super) fn split_batch(&self, batch: Vec<Column>, parallel: bool) -> Vec<Vec<Column>> {
        if let [_] = self.targets[..] {
            return vec![batch];
        }
        let width = batch.len();
        let cells: Vec<Mutex<Vec<Column>>> = (0..width).map(|_| Mutex::new(Vec::new())).collect();
        let one = |(i, c): (usize, Column)| {
            let parts = split(&c, &self.part, &self.sizes);
            drop(c);
            *cells[i].lock().unwrap_or_else(PoisonError::into_inner) = parts;
        };
        let items: Vec<(usize, Column)> = batch.into_iter().enumerate().collect();
        if parallel {
            crate::par::for_each(items, one);
        } else {
            items.into_iter().for_each(one);
        }
        let mut out: Vec<Vec<Column>> = self.targets.iter().map(|_| Vec::with_capacity(width)).collect();
        for cell in cells {
            let parts = cell.into_inner().unwrap_or_else(PoisonError::into_inner);
            debug_assert_eq!(parts.len(), out.len());
            parts.into_iter().zip(out.iter_mut()).for_each(|(c, cols)| cols.push(c));
        }
        out
    }
}

/// The rows of `c` split by `slots` (row `i` goes to part `slots[i]`), in input order within a
/// part; `sizes[s]` is the number of rows of part `s`.
fn split(c: &Column, slots: &[u32], sizes: &[usize]) -> Vec<Column> {
    debug_assert_eq!(c.len(), slots.len());
    debug_assert_eq!(sizes.iter().sum::<usize>(), slots.len());
    let mut parts = ColumnSplit::new(c.data_type(), sizes);
    parts.push(c.data(), c.validity(), slots, None);
    parts.finish(c.symbol_dict().cloned())
}

/// One column's rows split among parts as they arrive, a chunk at a time: each part's buffer
/// is allocated at its final size up front, so a loader that decodes a file in chunks
/// (`zepto_io::parquet_grouped::read_parquet_grouped`) never holds the whole column, and each row's
/// bytes are written once. Every part must get the rows it was sized for (asserted in debug
/// builds by [`ColumnSplit::finish`]).
#[derive(Debug)]
pub struct ColumnSplit {
    dt: DataType,
    bufs: Buffers,
    /// A part's NULLs, once it has any.
    validity: Vec<Option<Bitmap>>,
    sizes: Vec<usize>,
    /// Scratch of [`ColumnSplit::push_validity`] (zero between chunks).
    seen: Vec<usize>,
}

/// Each part's values, by the width of the column's values.
#[derive(Debug)]
enum Buffers {
    Bool(Vec<Vec<bool>>),
    I32(Vec<Vec<i32>>),
    I64(Vec<Vec<i64>>),
    I128(Vec<Vec<i128>>),
    F32(Vec<Vec<f32>>),
    F64(Vec<Vec<f64>>),
    Codes(Vec<Vec<u32>>),
    Str(Vec<StrVec>),
    Vector(u16, Vec<Vec<f32>>),
    Null(Vec<usize>),
}

impl ColumnSplit {
    /// Parts of `sizes[s]` rows each for a column of type `dt`.
    pub fn new(dt: DataType, sizes: &[usize]) -> ColumnSplit {
        fn each<T>(sizes: &[usize], width: usize) -> Vec<Vec<T>> {
            sizes.iter().map(|&n| Vec::with_capacity(n.saturating_mul(width))).collect()
        }
        let bufs = match dt {
            DataType::Bool => Buffers::Bool(each(sizes, 1)),
            DataType::Int32 | DataType::Date => Buffers::I32(each(sizes, 1)),
            DataType::Int64 | DataType::Timestamp | DataType::Interval => Buffers::I64(each(sizes, 1)),
            DataType::Int128 => Buffers::I128(each(sizes, 1)),
            DataType::Float32 => Buffers::F32(each(sizes, 1)),
            DataType::Float64 => Buffers::F64(each(sizes, 1)),
            DataType::Symbol => Buffers::Codes(each(sizes, 1)),
            DataType::Varchar => Buffers::Str(sizes.iter().map(|&n| StrVec::with_capacity(n, 0)).collect()),
            DataType::Vector(d) => Buffers::Vector(d, each(sizes, d as usize)),
            DataType::Null => Buffers::Null(vec![0; sizes.len()]),
        };
        ColumnSplit { dt, bufs, validity: vec![None; sizes.len()], sizes: sizes.to_vec(), seen: Vec::new() }
    }

    /// Append the rows of a chunk (`data`, NULLs where `validity` says): row `i` to part
    /// `slots[i]`, numbers in `order` when it is the chunk's ([`KeyGroups::order`]). The
    /// chunk is of the type the split was made for.
    pub fn push(&mut self, data: &ColumnData, validity: Option<&Bitmap>, slots: &[u32], order: Option<&ChunkOrder>) {
        debug_assert_eq!(data.len(), slots.len());
        if validity.is_some() || self.validity.iter().any(Option::is_some) {
            self.push_validity(validity, slots);
        }
        use Buffers as B;
        use ColumnData as D;
        match (&mut self.bufs, data) {
            (B::Bool(o), D::Bool(v)) => scatter_into(o, v, slots),
            (B::I32(o), D::Int32(v) | D::Date(v)) => put(o, v, slots, order),
            (B::I64(o), D::Int64(v) | D::Timestamp(v) | D::Interval(v)) => put(o, v, slots, order),
            (B::I128(o), D::Int128(v)) => scatter_into(o, v, slots),
            (B::F32(o), D::Float32(v)) => put(o, v, slots, order),
            (B::F64(o), D::Float64(v)) => put(o, v, slots, order),
            (B::Codes(o), D::Symbol { codes, .. }) => put(o, codes, slots, order),
            (B::Str(o), D::Varchar(s)) => slots.iter().enumerate().for_each(|(i, &p)| o[p as usize].push(s.get(i))),
            (B::Vector(d, o), D::Vector { dim, values }) if d == dim => {
                for (row, &p) in values.chunks_exact((*d).max(1) as usize).zip(slots) {
                    o[p as usize].extend_from_slice(row);
                }
            }
            (B::Null(o), D::Null(_)) => slots.iter().for_each(|&p| o[p as usize] += 1),
            (_, d) => unreachable!("a {:?} chunk split as {:?}: a split takes its own type", d.data_type(), self.dt),
        }
    }

    /// Append a chunk without NULLs whose values a loader holds as the column stores them
    /// (an Arrow array's buffer): split straight from there, no copy between (in `order` as
    /// [`ColumnSplit::push`]). `false`, and nothing appended, when the values are not of the
    /// split's type.
    pub fn push_plain(&mut self, values: ValidRun<'_>, slots: &[u32], order: Option<&ChunkOrder>) -> bool {
        debug_assert_eq!(values.len(), slots.len());
        use Buffers as B;
        let dt = self.dt;
        match (&mut self.bufs, values) {
            (B::I32(o), ValidRun::I32(v)) if matches!(dt, DataType::Int32 | DataType::Date) => put(o, v, slots, order),
            (B::I64(o), ValidRun::I64(v)) if matches!(dt, DataType::Int64 | DataType::Timestamp) => {
                put(o, v, slots, order)
            }
            (B::F32(o), ValidRun::F32(v)) => put(o, v, slots, order),
            (B::F64(o), ValidRun::F64(v)) => put(o, v, slots, order),
            _ => return false,
        }
        // After the values: a bitmap only grows by the rows' count, never reads their lengths.
        if self.validity.iter().any(Option::is_some) {
            self.push_validity(None, slots);
        }
        true
    }

    /// NULLs of a chunk (none when `b` is `None`), before its values: a part's bitmap starts
    /// (all set for its rows so far, in earlier chunks and this one) at its first NULL, and
    /// from then on takes every row.
    fn push_validity(&mut self, b: Option<&Bitmap>, slots: &[u32]) {
        // Rows of this chunk per part so far, kept only for the parts it touches.
        self.seen.resize(self.sizes.len(), 0);
        let mut touched: Vec<u32> = Vec::new();
        for (i, &p) in slots.iter().enumerate() {
            let p = p as usize;
            if self.seen[p] == 0 {
                touched.push(p as u32);
            }
            self.seen[p] += 1;
            let valid = b.is_none_or(|b| b.get(i));
            if self.validity[p].is_none() && !valid {
                let before = self.part_len(p) + self.seen[p] - 1;
                self.validity[p] = Some(Bitmap::new_set(before));
            }
            if let Some(bits) = &mut self.validity[p] {
                bits.push(valid);
            }
        }
        touched.into_iter().for_each(|p| self.seen[p as usize] = 0);
    }

    /// Rows part `p` holds so far.
    fn part_len(&self, p: usize) -> usize {
        match &self.bufs {
            Buffers::Bool(o) => o[p].len(),
            Buffers::I32(o) => o[p].len(),
            Buffers::I64(o) => o[p].len(),
            Buffers::I128(o) => o[p].len(),
            Buffers::F32(o) => o[p].len(),
            Buffers::F64(o) => o[p].len(),
            Buffers::Codes(o) => o[p].len(),
            Buffers::Str(o) => o[p].len(),
            Buffers::Vector(d, o) => o[p].len() / (*d).max(1) as usize,
            Buffers::Null(o) => o[p],
        }
    }

    /// The parts as columns (SYMBOL codes index `dict`, the dictionary of the chunks pushed).
    pub fn finish(self, dict: Option<Arc<Dict>>) -> Vec<Column> {
        let n = self.sizes.len();
        debug_assert!((0..n).all(|p| self.part_len(p) == self.sizes[p]), "every part got the rows it was sized for");
        let dt = self.dt;
        let data: Vec<ColumnData> = match self.bufs {
            Buffers::Bool(o) => o.into_iter().map(|v| ColumnData::Bool(v.into())).collect(),
            Buffers::I32(o) => o
                .into_iter()
                .map(|v| if dt == DataType::Date { ColumnData::Date(v.into()) } else { ColumnData::Int32(v.into()) })
                .collect(),
            Buffers::I64(o) => o
                .into_iter()
                .map(|v| match dt {
                    DataType::Timestamp => ColumnData::Timestamp(v.into()),
                    DataType::Interval => ColumnData::Interval(v.into()),
                    _ => ColumnData::Int64(v.into()),
                })
                .collect(),
            Buffers::I128(o) => o.into_iter().map(|v| ColumnData::Int128(v.into())).collect(),
            Buffers::F32(o) => o.into_iter().map(|v| ColumnData::Float32(v.into())).collect(),
            Buffers::F64(o) => o.into_iter().map(|v| ColumnData::Float64(v.into())).collect(),
            Buffers::Codes(o) => {
                let dict = dict.unwrap_or_default();
                o.into_iter().map(|codes| ColumnData::Symbol { codes: codes.into(), dict: dict.clone() }).collect()
            }
            Buffers::Str(o) => o.into_iter().map(ColumnData::Varchar).collect(),
            Buffers::Vector(dim, o) => {
                o.into_iter().map(|values| ColumnData::Vector { dim, values: values.into() }).collect()
            }
            Buffers::Null(o) => o.into_iter().map(ColumnData::Null).collect(),
        };
        data.into_iter().zip(self.validity).map(|(d, v)| Column::new(d, v)).collect()
    }
}

/// `v` appended to parts `o` in the chunk's group `order` when there is one, else row by
/// row by `slots`.
fn put<T: Copy + 'static>(o: &mut [Vec<T>], v: &[T], slots: &[u32], order: Option<&ChunkOrder>) {
    match order {
        Some(order) => scatter_ordered(o, v, order),
        None => scatter_into(o, v, slots),
    }
}

/// Rows of a batch spread over its partitions a chunk at a time ([`Placement::spread_chunks`]):
/// a chunk's columns stay in the core's cache while every partition takes its rows of it. A
/// 100k-row batch over 100 symbols spread whole read its rows from all over 2.8 MB of columns
/// for each partition (in process, 1M rows in 100k-row appends to a table: 19.4 ms split into
/// buffers per partition, 15.3 spread whole, 12.2 a 16k-row chunk at a time).
pub(super) const SPREAD_CHUNK_ROWS: usize = 16 * 1024;

/// A batch is spread a chunk at a time only while each chunk gives its targets this many rows
/// on average: a target's append has a fixed cost (its columns taken to write, its time order
/// checked), paid once per chunk.
const SPREAD_CHUNK_MIN_TARGET_ROWS: usize = 64;

/// Rows `offset + i` for each `i` of `part` (the target of each row), grouped by target in
/// input order, and each target's span in them; `sizes[t]` is the number of rows of target
/// `t`.
fn group_rows(part: &[u32], offset: usize, sizes: &[usize]) -> (Vec<u32>, Vec<Range<usize>>) {
    let mut spans = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for &k in sizes {
        spans.push(at..at + k);
        at += k;
    }
    // The four quarters of the rows placed side by side, each with cursors of its own
    // (quarter `k`'s rows of a target go after those of the quarters before it): a row's
    // cursor is seldom the one the rows just before it move, which stalled a single cursor per
    // target on the store before it.
    let n = part.len();
    let q = n / 4;
    let counts = quarter_counts(part, sizes.len());
    debug_assert!(
        counts.iter().zip(sizes).all(|(c, &k)| c.iter().sum::<usize>() == k),
        "a placement's sizes are its rows per target"
    );
    let mut next: Vec<[usize; 4]> = spans
        .iter()
        .zip(&counts)
        .map(|(span, c)| {
            let a = span.start;
            [a, a + c[0], a + c[0] + c[1], a + c[0] + c[1] + c[2]]
        })
        .collect();
    let mut rows = vec![0u32; n];
    let mut place = |r: usize, k: usize| {
        let at = &mut next[part[r] as usize][k];
        rows[*at] = (offset + r) as u32;
        *at += 1;
    };
    for i in 0..q {
        (0..4).for_each(|k| place(k * q + i, k));
    }
    // The last quarter is up to three rows longer.
    (4 * q..n).for_each(|r| place(r, 3));
    (rows, spans)
}

/// How many of each quarter's entries of `part` are each target's (`[target][quarter]`; the
/// last quarter takes the up to three rows left over), the quarters counted side by side.
fn quarter_counts(part: &[u32], ntargets: usize) -> Vec<[usize; 4]> {
    let q = part.len() / 4;
    let mut counts = vec![[0usize; 4]; ntargets];
    let (a, rest) = part.split_at(q);
    let (b, rest) = rest.split_at(q);
    let (c, d) = rest.split_at(q);
    for (((&w, &x), &y), &z) in a.iter().zip(b).zip(c).zip(d) {
        counts[w as usize][0] += 1;
        counts[x as usize][1] += 1;
        counts[y as usize][2] += 1;
        counts[z as usize][3] += 1;
    }
    d[q..].iter().for_each(|&z| counts[z as usize][3] += 1);
    counts
}

/// Rows per slot of `slots`, each below `nslots`. Four counters per slot, taken in turn: a
/// run of one slot (a file sorted by key) would otherwise wait on its own last increment.
fn count_slots(slots: &[u32], nslots: usize) -> Vec<usize> {
    let mut lanes = vec![[0usize; 4]; nslots];
    let mut quads = slots.chunks_exact(4);
    for q in &mut quads {
        for (lane, &s) in q.iter().enumerate() {
            lanes[s as usize][lane] += 1;
        }
    }
    quads.remainder().iter().for_each(|&s| lanes[s as usize][0] += 1);
    lanes.iter().map(|l| l.iter().sum()).collect()
}

/// The rows of a load grouped by their partition key before the rest of it is decoded: a
/// file's key column is read first, and every other column is then split
/// ([`ColumnSplit`]) as it is decoded. Groups are numbered in order of first row; NULL keys
/// are a group of their own.
#[derive(Debug)]
pub struct KeyGroups {
    place: Placement,
    /// The rows' chunks ordered by group, when there are few groups.
    orders: Option<ChunkOrders>,
    /// The key column's dictionary: group `g`'s key is `place.targets[g]` in it (its length
    /// for the NULL group).
    dict: Arc<Dict>,
}

impl KeyGroups {
    /// Groups of the rows of `key`, a SYMBOL column (`None` for any other type); its codes
    /// become the rows' group numbers in place.
    pub fn of(key: Column) -> Option<KeyGroups> {
        let (data, validity) = key.into_parts();
        let ColumnData::Symbol { mut codes, dict } = data else { return None };
        let null = u32::try_from(dict.len()).ok()?;
        if let Some(v) = validity {
            codes.iter_mut().enumerate().filter(|(i, _)| !v.get(*i)).for_each(|(_, c)| *c = null);
        }
        let place = Placement::new(codes.into(), dict.len() + 1);
        let orders = ChunkOrders::of(&place.part, place.targets.len());
        Some(KeyGroups { place, orders, dict })
    }

    /// Rows grouped.
    pub fn rows(&self) -> usize {
        self.place.part.len()
    }

    /// Rows per group.
    pub fn sizes(&self) -> &[usize] {
        &self.place.sizes
    }

    /// The group of each of rows `rows` (`None` past the last row).
    pub fn slots(&self, rows: Range<usize>) -> Option<&[u32]> {
        self.place.part.get(rows)
    }

    /// The group order of rows `rows` when they are one whole chunk of a load of few groups
    /// (for [`ColumnSplit::push`]).
    pub fn order(&self, rows: Range<usize>) -> Option<&ChunkOrder> {
        self.orders.as_ref()?.chunk(rows)
    }

    /// Where the ordered chunk holding row `at` ends (past the last row: the rows' count),
    /// for a loader to cut its batches there; `usize::MAX` when the rows are not ordered by
    /// chunk (many groups).
    pub fn chunk_end(&self, at: usize) -> usize {
        self.orders.as_ref().map_or(usize::MAX, |o| o.chunk_end(at))
    }

    /// A split of a column of type `dt` into these groups.
    pub fn splitter(&self, dt: DataType) -> ColumnSplit {
        ColumnSplit::new(dt, &self.place.sizes)
    }

    /// Each group's key column: its key, once per row (NULL in the NULL group's), coded
    /// against the key column's dictionary.
    pub fn key_columns(&self) -> Vec<Column> {
        let null = self.dict.len();
        let column = |(&key, &n): (&usize, &usize)| {
            let codes = vec![if key == null { 0 } else { key as u32 }; n];
            let validity = (key == null).then(|| Bitmap::new_unset(n));
            Column::new(ColumnData::Symbol { codes: codes.into(), dict: self.dict.clone() }, validity)
        };
        self.place.targets.iter().zip(&self.place.sizes).map(column).collect()
    }

    /// Each group's rows of a column of type `dt` that the input lacks: NULLs (a SYMBOL
    /// column's parts sharing one empty dictionary, as a split column's parts share theirs).
    pub fn null_columns(&self, dt: DataType) -> Vec<Column> {
        let dict = Arc::new(Dict::default());
        let column = |&n: &usize| match dt {
            DataType::Symbol => Column::new(
                ColumnData::Symbol { codes: vec![0; n].into(), dict: dict.clone() },
                Some(Bitmap::new_unset(n)),
            ),
            _ => Column::nulls(dt, n),
        };
        self.place.sizes.iter().map(column).collect()
    }

    /// A whole column of these rows split into the groups.
    pub fn split(&self, c: &Column) -> Vec<Column> {
        assert_eq!(c.len(), self.rows(), "a column of the rows grouped");
        split(c, &self.place.part, &self.place.sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;
    use crate::value::Value;
    use crate::ColumnBuilder;

    #[test]
    fn split_equals_taking_each_parts_rows() {
        let mut r = crate::rng::XorShift::new(0x2545_f491_4f6c_dd1du64);
        let mut rnd = move |n: u64| r.below(n);
        for round in 0..40 {
            let n = rnd(300) as usize;
            let parts = 1 + rnd(7) as usize;
            let slots: Vec<u32> = (0..n).map(|_| rnd(parts as u64) as u32).collect();
            let mut sizes = vec![0usize; parts];
            slots.iter().for_each(|&s| sizes[s as usize] += 1);
            let cols = [DataType::Int64, DataType::Float64, DataType::Varchar, DataType::Symbol, DataType::Bool]
                .into_iter()
                .map(|dt| {
                    let mut b = ColumnBuilder::new(dt, n);
                    for i in 0..n {
                        let v = match (rnd(5), dt) {
                            (0, _) => Value::Null,
                            (_, DataType::Int64) => Value::Int64(i as i64),
                            (_, DataType::Float64) => Value::Float64(i as f64 / 4.0),
                            (_, DataType::Bool) => Value::Bool(i % 3 == 0),
                            _ => Value::Str(format!("s{}", i % 11)),
                        };
                        b.push_value(&v).expect("a value of the column's type");
                    }
                    b.finish()
                })
                .chain([Column::nulls(DataType::Int32, n)]);
            for c in cols {
                let got = split(&c, &slots, &sizes);
                assert_eq!(got.len(), parts);
                for (s, g) in got.iter().enumerate() {
                    let rows: Vec<u32> = (0..n as u32).filter(|&i| slots[i as usize] == s as u32).collect();
                    let want = c.take(&rows);
                    assert_eq!(g.len(), rows.len(), "round {round}");
                    let same = (0..rows.len()).all(|i| g.get(i) == want.get(i));
                    assert!(same, "round {round}, {:?}, part {s}", c.data_type());
                }
            }
        }
    }

    /// A column split a chunk at a time (chunks with NULLs, and chunks without a bitmap after
    /// them) equals the whole column split at once.
    #[test]
    fn a_split_in_chunks_equals_the_whole_split() {
        let mut r = crate::rng::XorShift::new(0x5851_f42d_4c95_7f2d);
        for round in 0..60 {
            let n = 1 + r.below(400) as usize;
            let parts = 1 + r.below(9) as usize;
            let slots: Vec<u32> = (0..n).map(|_| r.below(parts as u64) as u32).collect();
            let mut sizes = vec![0usize; parts];
            slots.iter().for_each(|&s| sizes[s as usize] += 1);
            for dt in [DataType::Int64, DataType::Float64, DataType::Varchar, DataType::Symbol, DataType::Date] {
                let mut b = ColumnBuilder::new(dt, n);
                for i in 0..n {
                    // NULLs only in some stretches, so that chunks after them have none.
                    let v = match ((i / 50) % 3 == 1 && r.below(4) == 0, dt) {
                        (true, _) => Value::Null,
                        (_, DataType::Int64) => Value::Int64(i as i64),
                        (_, DataType::Float64) => Value::Float64(i as f64 / 8.0),
                        (_, DataType::Date) => Value::Date(i as i32),
                        _ => Value::Str(format!("v{}", i % 13)),
                    };
                    b.push_value(&v).expect("a value of the column's type");
                }
                let c = b.finish();
                let whole = split(&c, &slots, &sizes);
                let mut parts_split = ColumnSplit::new(c.data_type(), &sizes);
                let mut at = 0;
                while at < n {
                    let end = (at + 1 + r.below(120) as usize).min(n);
                    let chunk = c.take(&(at as u32..end as u32).collect::<Vec<_>>());
                    let (data, validity) = chunk.into_parts();
                    let validity = validity.filter(|v| (0..v.len()).any(|i| !v.get(i)));
                    parts_split.push(&data, validity.as_ref(), &slots[at..end], None);
                    at = end;
                }
                let chunked = parts_split.finish(c.symbol_dict().cloned());
                for (p, (a, w)) in chunked.iter().zip(&whole).enumerate() {
                    assert_eq!(a.len(), w.len(), "round {round}, {dt:?}, part {p}");
                    assert!((0..a.len()).all(|i| a.get(i) == w.get(i)), "round {round}, {dt:?}, part {p}");
                }
            }
        }
    }

    /// A load of few groups splits its whole chunks in their group order: the same parts as
    /// the whole column split row by row, NULL keys and NULL values in some chunks included.
    #[test]
    fn chunks_split_in_group_order_equal_the_whole_split() {
        use crate::table::chunk_order::ORDER_CHUNK_ROWS;
        let mut r = crate::rng::XorShift::new(0x3c6e_f372_fe94_f82b);
        let n = ORDER_CHUNK_ROWS * 3 + 777;
        let mut key = ColumnBuilder::new(DataType::Symbol, n);
        for i in 0..n {
            let v = if i % 1000 == 7 { Value::Null } else { Value::Str(format!("k{}", r.below(50))) };
            key.push_value(&v).expect("a key");
        }
        let groups = KeyGroups::of(key.finish()).expect("SYMBOL keys");
        for dt in [DataType::Int64, DataType::Float64, DataType::Symbol, DataType::Date, DataType::Int32] {
            let mut b = ColumnBuilder::new(dt, n);
            for i in 0..n {
                let v = match (i / ORDER_CHUNK_ROWS == 1 && r.below(9) == 0, dt) {
                    (true, _) => Value::Null,
                    (_, DataType::Int64) => Value::Int64(r.next_u64() as i64),
                    (_, DataType::Float64) => Value::Float64(i as f64 / 8.0 - 99.0),
                    (_, DataType::Date | DataType::Int32) if dt == DataType::Date => Value::Date(i as i32),
                    (_, DataType::Int32) => Value::Int32(-(i as i32)),
                    _ => Value::Str(format!("v{}", i % 13)),
                };
                b.push_value(&v).expect("a value of the column's type");
            }
            let c = b.finish();
            let whole = groups.split(&c);
            let mut parts_split = groups.splitter(dt);
            for at in (0..n).step_by(ORDER_CHUNK_ROWS) {
                let end = (at + ORDER_CHUNK_ROWS).min(n);
                let order = groups.order(at..end);
                assert!(order.is_some(), "a whole chunk has its order");
                let (data, validity) = c.take(&(at as u32..end as u32).collect::<Vec<_>>()).into_parts();
                let validity = validity.filter(|v| (0..v.len()).any(|i| !v.get(i)));
                parts_split.push(&data, validity.as_ref(), groups.slots(at..end).expect("rows"), order);
            }
            let chunked = parts_split.finish(c.symbol_dict().cloned());
            assert_eq!(chunked.len(), whole.len());
            for (p, (a, w)) in chunked.iter().zip(&whole).enumerate() {
                assert_eq!(a.len(), w.len(), "{dt:?}, part {p}");
                assert!((0..a.len()).all(|i| a.get(i) == w.get(i)), "{dt:?}, part {p}");
            }
        }
    }

    /// A large batch over few partitions is spread in chunks that cover it in order, each at
    /// most `SPREAD_CHUNK_ROWS`, and each target's rows over the chunks are its rows of the
    /// whole batch; over many partitions, or small, it is spread whole.
    #[test]
    fn spread_chunks_cover_the_batch_in_order() {
        let mut r = crate::rng::XorShift::new(11);
        for (n, nslots) in [(50_000, 100), (16_385, 3), (SPREAD_CHUNK_ROWS, 100), (50_000, 1_000)] {
            let slots: Vec<u32> = (0..n).map(|_| r.below(nslots as u64) as u32).collect();
            let place = Placement::new(slots, nslots);
            let chunks = place.spread_chunks();
            let chunked =
                place.targets().len() * SPREAD_CHUNK_MIN_TARGET_ROWS <= SPREAD_CHUNK_ROWS && n > SPREAD_CHUNK_ROWS;
            assert_eq!(chunks.len() > 1, chunked, "{n} rows over {nslots} slots");
            assert_eq!(chunks.first().map(|c| c.start), Some(0));
            assert_eq!(chunks.last().map(|c| c.end), Some(n));
            assert!(chunks.windows(2).all(|w| w[0].end == w[1].start));
            assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= SPREAD_CHUNK_ROWS.max(n / chunks.len() + 1)));
            let (whole, whole_spans) = place.grouped_rows_in(0..n);
            let mut by_target: Vec<Vec<u32>> = vec![Vec::new(); place.targets().len()];
            for c in chunks {
                let (rows, spans) = place.grouped_rows_in(c);
                spans.iter().enumerate().for_each(|(t, s)| by_target[t].extend_from_slice(&rows[s.clone()]));
            }
            for (t, s) in whole_spans.iter().enumerate() {
                assert_eq!(by_target[t], whole[s.clone()], "{n} rows over {nslots} slots, target {t}");
            }
        }
    }

    #[test]
    fn placement_numbers_the_slots_that_get_rows_in_order_of_first_row() {
        let mut r = crate::rng::XorShift::new(0x9e37_79b9_7f4a_7c15u64);
        for round in 0..60 {
            let n = 1 + r.below(200) as usize;
            // Both ways of numbering: tables narrower and far wider than the batch.
            let nslots = 1 + r.below(if round % 2 == 0 { 8 } else { 100_000 }) as usize;
            let mut slots: Vec<u32> = (0..n).map(|_| r.below(nslots as u64) as u32).collect();
            if round % 3 == 2 {
                // Runs of one slot, in slot order: numbered as the slots are.
                slots.sort_unstable();
            }
            let place = Placement::new(slots.clone(), nslots);
            let mut scratch = vec![NO_TARGET; nslots];
            let by = Placement::by_slot(slots.iter().copied(), &mut scratch);
            assert_eq!(
                (&by.part, &by.targets, &by.sizes),
                (&place.part, &place.targets, &place.sizes),
                "round {round}"
            );
            assert!(scratch.iter().all(|&t| t == NO_TARGET), "round {round}: scratch left as found");
            let mut want_targets: Vec<usize> = Vec::new();
            for &s in &slots {
                if !want_targets.contains(&(s as usize)) {
                    want_targets.push(s as usize);
                }
            }
            assert_eq!(place.targets(), &want_targets[..], "round {round}");
            for (i, &s) in slots.iter().enumerate() {
                assert_eq!(place.targets()[place.part[i] as usize], s as usize, "round {round}, row {i}");
            }
            let want_sizes: Vec<usize> =
                want_targets.iter().map(|&t| slots.iter().filter(|&&s| s as usize == t).count()).collect();
            assert_eq!(place.sizes, want_sizes, "round {round}");
            // The whole batch, a range inside it, and the chunks it is spread in.
            let mut ranges = vec![0..n, n / 3..n - n / 5];
            ranges.extend(place.spread_chunks());
            for range in ranges {
                let (rows, spans) = place.grouped_rows_in(range.clone());
                assert_eq!(spans.len(), place.targets().len(), "round {round}: a span per target");
                for (t, span) in spans.iter().enumerate() {
                    let want: Vec<u32> = (range.start as u32..range.end as u32)
                        .filter(|&i| slots[i as usize] as usize == place.targets()[t])
                        .collect();
                    assert_eq!(rows[span.clone()], want[..], "round {round}, rows {range:?}, target {t}");
                }
            }
        }
    }
}
