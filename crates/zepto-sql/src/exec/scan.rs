//! Table scans: pick partitions by key, cut each to the time range by binary search, and hand
//! out the requested columns. A whole partition is shared, not copied (`Arc`); a partial range
//! is copied once; several partitions are concatenated — unless the consumer works piece by
//! piece ([`pieces`] + [`piece_batch`], used by partition-wise aggregation).

use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::physical::ScanShape;
use crate::plan::{BExpr, ScanRange};
use std::ops::Range;
use std::sync::Arc;
use zepto_storage::par;
use zepto_storage::table::{Run, PACK_ROWS};
use zepto_storage::{Column, ColumnData, Partition, Table};

/// One partition's rows that a scan reads.
pub struct Piece<'a> {
    pub part: &'a Arc<Partition>,
    /// Rows of the partition (its row 0 first).
    pub range: Range<usize>,
}

impl<'a> Piece<'a> {
    /// Column `c` of the piece's rows where they live: the storage column and the rows' range
    /// in it (the partition's own column, or the pack it shares with other small partitions).
    pub fn col(&self, c: usize) -> (&'a Column, Range<usize>) {
        let (col, at) = self.part.source(c);
        (col, at + self.range.start..at + self.range.end)
    }

    /// Whether the piece is every row of its partition.
    pub fn is_whole(&self) -> bool {
        self.range == (0..self.part.len())
    }
}

/// Rows a scan reads in one place: a piece of a partition, or a whole pack ([`Unit`]).
pub trait ScanPart {
    /// How many rows.
    fn rows(&self) -> usize;
    /// Column `c` of the rows where they live, pushed onto `out`: storage columns and the rows'
    /// ranges in them, in order (one for a piece or a whole pack).
    fn spans<'s>(&'s self, c: usize, out: &mut Vec<(&'s Column, Range<usize>)>);
    /// The partition key every row holds: the key of a piece's partition (`None` for the
    /// NULL-key partition, and for a pack, whose rows hold many keys).
    fn key(&self) -> Option<u32>;
    /// The rows of `columns` as a batch: shared where the columns hold exactly these rows.
    fn batch(&self, columns: &[usize]) -> Result<Batch>;
    /// Whether [`ScanPart::batch`] shares the columns as they are: every row of a loose partition,
    /// or a whole pack.
    fn is_shared_whole(&self) -> bool;
}

impl ScanPart for Piece<'_> {
    fn rows(&self) -> usize {
        self.range.len()
    }

    fn spans<'s>(&'s self, c: usize, out: &mut Vec<(&'s Column, Range<usize>)>) {
        out.push(self.col(c));
    }

    fn key(&self) -> Option<u32> {
        self.part.key()
    }

    fn batch(&self, columns: &[usize]) -> Result<Batch> {
        Ok(piece_batch(self, columns))
    }

    fn is_shared_whole(&self) -> bool {
        self.is_whole() && !self.part.is_packed()
    }
}

/// What a scan reads: a piece of a partition, or rows of a pack.
pub enum Unit<'a> {
    /// One partition's rows.
    Piece(Piece<'a>),
    /// A whole pack's columns ([`zepto_storage::table::Run::pack`]): the rows of a run of
    /// neighbouring small partitions, slot after slot, read without visiting them.
    Pack(&'a [Arc<Column>]),
    /// The rows of a whole pack in a time range: ranges of the pack's rows, in order (each
    /// partition's rows in the range are one run, being time-sorted), `rows` in all.
    PackCut { cols: &'a [Arc<Column>], ranges: Vec<Range<usize>>, rows: usize },
}

impl ScanPart for Unit<'_> {
    fn rows(&self) -> usize {
        match self {
            Unit::Piece(p) => p.rows(),
            Unit::Pack(cols) => pack_rows(cols),
            Unit::PackCut { rows, .. } => *rows,
        }
    }

    fn spans<'s>(&'s self, c: usize, out: &mut Vec<(&'s Column, Range<usize>)>) {
        match self {
            Unit::Piece(p) => p.spans(c, out),
            Unit::Pack(cols) => out.push((&cols[c], 0..cols[c].len())),
            Unit::PackCut { cols, ranges, .. } => out.extend(ranges.iter().map(|r| (&*cols[c], r.clone()))),
        }
    }

    fn key(&self) -> Option<u32> {
        match self {
            Unit::Piece(p) => p.key(),
            Unit::Pack(_) | Unit::PackCut { .. } => None,
        }
    }

    fn batch(&self, columns: &[usize]) -> Result<Batch> {
        match self {
            Unit::Piece(p) => p.batch(columns),
            Unit::Pack(cols) => Ok(Batch::shared(columns.iter().map(|&c| cols[c].clone()).collect(), self.rows())),
            Unit::PackCut { rows, .. } => {
                let gather = |spans: Vec<_>| Column::concat_ranges(&spans).map(Arc::new).map_err(SqlError::Internal);
                let cols = column_spans(&[self], columns).into_iter().map(gather).collect::<Result<_>>()?;
                Ok(Batch::shared(cols, *rows))
            }
        }
    }

    fn is_shared_whole(&self) -> bool {
        match self {
            Unit::Piece(p) => p.is_shared_whole(),
            Unit::Pack(_) => true,
            Unit::PackCut { .. } => false,
        }
    }
}

/// The units of a scan over `range`. Without a key list it reads every partition: the table's
/// runs then give each whole pack of at least [`PACK_ROWS`] rows as its columns (or, with a
/// time bound, as the ranges of its rows inside it, found by one pass over its timestamps), and
/// a piece for every other partition with rows in range, without visiting the packed ones.
/// With a key list, a piece for every partition read ([`pieces`]).
pub fn units<'a>(table: &'a Table, range: &ScanRange) -> Vec<Unit<'a>> {
    if range.keys.is_some() {
        return pieces(table, range).into_iter().map(Unit::Piece).collect();
    }
    let ts = table.ts_col().filter(|_| range.is_time_bounded());
    let parts = table.partitions();
    let runs = table.runs();
    // With a time bound, each whole pack's rows in it, on every core.
    let cuts: Vec<Option<Vec<Range<usize>>>> = match ts.filter(|_| runs.iter().any(|r| whole(r).is_some())) {
        Some(t) => par::map(runs, |r| whole(r).map(|cols| rows_in(&cols[t], range.ts_lo, range.ts_hi))),
        None => vec![None; runs.len()],
    };
    let mut out = Vec::new();
    for (run, cut) in runs.iter().zip(cuts) {
        match (whole(run), cut) {
            (Some(cols), None) => out.push(Unit::Pack(cols)),
            (Some(cols), Some(ranges)) => {
                let rows: usize = ranges.iter().map(|r| r.len()).sum();
                match rows {
                    0 => {}
                    n if n == pack_rows(cols) => out.push(Unit::Pack(cols)),
                    _ => out.push(Unit::PackCut { cols, ranges, rows }),
                }
            }
            (None, _) => out.extend(parts[run.slots()].iter().filter_map(|p| piece_in(p, ts, range)).map(Unit::Piece)),
        }
    }
    out
}

/// A run's pack when it is whole and large enough to read as one unit.
fn whole(r: &Run) -> Option<&[Arc<Column>]> {
    r.pack().filter(|cols| pack_rows(cols) >= PACK_ROWS)
}

fn pack_rows(cols: &[Arc<Column>]) -> usize {
    cols.first().map_or(0, |c| c.len())
}

/// The runs of rows of timestamp column `ts` with a value in `[lo, hi]` (NULLs never are), in
/// order: within a pack, a partition's rows in range are one run, its rows being time-sorted.
/// Runs are short (ten rows a partition over 100k symbols), so rows are tested 64 at a time
/// into a word without a branch, and the runs read off where its bits change.
fn rows_in(ts: &Column, lo: i64, hi: i64) -> Vec<Range<usize>> {
    let Some(v) = ts.as_i64_slice() else { return Vec::new() };
    let valid = ts.validity().map(|b| b.as_bytes());
    let (mut out, mut open, mut prev) = (Vec::new(), None, 0u64);
    for (w, chunk) in v.chunks(64).enumerate() {
        let mut m = 0u64;
        for (k, &x) in chunk.iter().enumerate() {
            m |= u64::from(lo <= x && x <= hi) << k;
        }
        if let Some(bytes) = valid {
            let mut word = [0u8; 8];
            let have = bytes.get(w * 8..).unwrap_or(&[]);
            let n = have.len().min(8);
            word[..n].copy_from_slice(&have[..n]);
            m &= u64::from_le_bytes(word);
        }
        // Bit k of `changes`: row k is in a run and row k - 1 is not, or the other way round.
        let mut changes = m ^ ((m << 1) | prev);
        while changes != 0 {
            let at = w * 64 + changes.trailing_zeros() as usize;
            match open.take() {
                None => open = Some(at),
                Some(s) => out.push(s..at),
            }
            changes &= changes - 1;
        }
        prev = m >> 63;
    }
    if let Some(s) = open {
        out.push(s..v.len());
    }
    out
}

/// A piece's rows of `columns`, filtered by the shape's filters when there are any.
pub fn filtered_piece(ctx: &ExecContext, s: &ScanShape, p: &Piece) -> Result<Batch> {
    s.apply_filter(ctx, piece_batch(p, s.columns))
}

impl ScanShape<'_> {
    /// The rows of `b` (the scan's columns) that pass the filters, applied nearest first.
    /// Each filter gathers only the columns a later filter or the consumer reads
    /// ([`ScanShape::gather_only`]); the others become untyped NULL placeholders.
    pub fn apply_filter(&self, ctx: &ExecContext, mut b: Batch) -> Result<Batch> {
        for (k, pred) in self.filters.iter().enumerate() {
            let mut need: Vec<bool> = (0..b.columns.len()).map(|c| self.gathers(c)).collect();
            for later in &self.filters[k + 1..] {
                mark_reads(later, &mut need);
            }
            let idx = super::eval::selection(ctx, pred, &b)?;
            if idx.len() == b.rows {
                continue;
            }
            let gather = |(c, &n): (&Arc<Column>, &bool)| match n {
                true => Arc::new(c.take(&idx)),
                false => unread(idx.len()),
            };
            b = Batch::shared(b.columns.iter().zip(&need).map(gather).collect(), idx.len());
        }
        Ok(b)
    }

    /// The positions of the rows of `b` (the scan's columns) that pass the filters, each
    /// evaluated over the rows the ones before it keep; `None` without filters (every row).
    pub fn kept_rows(&self, ctx: &ExecContext, b: &Batch) -> Result<Option<Vec<u32>>> {
        super::rows_passing(ctx, b, &self.filters)
    }
}

/// The pieces of `table` a scan over `range` reads: the partitions of its keys (all without a
/// key list), each cut to its time range.
pub fn pieces<'a>(table: &'a Table, range: &ScanRange) -> Vec<Piece<'a>> {
    let ts = table.ts_col().filter(|_| range.is_time_bounded());
    partitions(table, range).into_iter().filter_map(|p| piece_in(p, ts, range)).collect()
}

/// The partitions of `table` a scan over `range` reads from: those of its keys (all without
/// a key list), before its time range cuts them.
pub fn partitions<'a>(table: &'a Table, range: &ScanRange) -> Vec<&'a Arc<Partition>> {
    match &range.keys {
        Some(keys) => {
            let keyed = keys.iter().filter_map(|k| table.dict().code(k)).filter_map(|c| table.partition_for_code(c));
            let null = table.null_key_partition().filter(|_| range.null_key);
            keyed.filter(|_| table.key_col().is_some()).chain(null).collect()
        }
        None => table.partitions().iter().collect(),
    }
}

/// Partition `p`'s rows in `range`'s time bound (`ts`: the designated timestamp, when the
/// range has a bound), `None` when there are none.
fn piece_in<'a>(p: &'a Arc<Partition>, ts: Option<usize>, range: &ScanRange) -> Option<Piece<'a>> {
    let r = match ts {
        Some(t) => p.ts_range(t, range.ts_lo, range.ts_hi),
        None => 0..p.len(),
    };
    (!r.is_empty()).then_some(Piece { part: p, range: r })
}

/// The keys a scan over `range` reads in `table`'s history: `Some(None)` every key,
/// `Some(Some(keys))` those, `None` nothing. A table without a partition key reads its history
/// whole when the range takes its NULL-key partition ([`ScanRange::null_key`]); history rows
/// whose key is NULL are read only without a key list.
pub fn history_keys<'r>(table: &Table, range: &'r ScanRange) -> Option<Option<&'r [String]>> {
    match (&range.keys, table.key_col()) {
        (Some(keys), Some(_)) => Some(Some(keys)),
        (Some(_), None) => range.null_key.then_some(None),
        (None, _) => Some(None),
    }
}

/// The requested columns of one piece (shared when the piece is a whole loose partition).
pub fn piece_batch(piece: &Piece, columns: &[usize]) -> Batch {
    let p = piece.part;
    let whole = piece.is_whole() && !p.is_packed();
    let cols = columns
        .iter()
        .map(|&c| match whole {
            true => p.columns()[c].clone(),
            false => {
                let (col, r) = piece.col(c);
                Arc::new(col.slice(r.start, r.len()))
            }
        })
        .collect();
    Batch::shared(cols, piece.range.len())
}

pub fn scan(table: &Table, columns: &[usize], range: &ScanRange) -> Result<Batch> {
    // No column over every row (`count(*)`): the table's row count, without visiting its
    // partitions one by one (100k of them with as many symbols).
    if columns.is_empty() && range.keys.is_none() && !range.is_time_bounded() {
        debug_assert_eq!(table.row_count(), table.partitions().iter().map(|p| p.len()).sum::<usize>());
        return Ok(Batch::new(Vec::new(), table.row_count()));
    }
    let us = units(table, range);
    pieces_batch(table, columns, &us.iter().collect::<Vec<_>>())
}

/// The rows of `ps` (pieces or units) of `table`, one after another, in its `columns`: one
/// shared as [`ScanPart::batch`] gives it, several copied once per column (no slice of each made
/// first), none as empty columns of the schema's types.
pub fn pieces_batch<S: ScanPart>(table: &Table, columns: &[usize], ps: &[&S]) -> Result<Batch> {
    match ps {
        [] => {
            let cols = columns.iter().map(|&c| Column::nulls(table.schema().columns[c].data_type, 0)).collect();
            Ok(Batch::new(cols, 0))
        }
        [p] => p.batch(columns),
        _ => {
            let rows = ps.iter().map(|p| p.rows()).sum();
            let spans = column_spans(ps, columns);
            let cols = columns.iter().zip(&spans).map(|(&j, s)| span_column(table, j, s, ps, rows));
            Ok(Batch::shared(cols.collect::<Result<Vec<_>>>()?, rows))
        }
    }
}

/// Column `j` of pieces `ps` (`rows` in all), stored as `spans`, copied into one column: the
/// key from the pieces' codes, unless packs make it a few spans to copy.
pub fn span_column<S: ScanPart>(
    table: &Table,
    j: usize,
    spans: &[(&Column, Range<usize>)],
    ps: &[&S],
    rows: usize,
) -> Result<Arc<Column>> {
    match (spans.len() == ps.len()).then(|| key_codes(table, j, ps, rows)).flatten() {
        Some(keys) => Ok(Arc::new(keys)),
        None => Column::concat_ranges(spans).map(Arc::new).map_err(SqlError::Internal),
    }
}

/// Mark in `reads` the columns (positions in a batch) `pred` reads.
pub fn mark_reads(pred: &BExpr, reads: &mut [bool]) {
    pred.for_each_col(&mut |c| {
        if let Some(r) = reads.get_mut(c) {
            *r = true;
        }
    });
}

/// A stand-in for a column of `rows` rows nothing after this point reads: untyped NULLs.
pub fn unread(rows: usize) -> Arc<Column> {
    Arc::new(Column::nulls(zepto_storage::DataType::Null, rows))
}

/// Per column of `columns`, where the rows of `ps` live, one after another: every column's spans
/// in one walk over the parts, so each partition is reached once, and neighbours in one pack
/// made one span.
pub(super) fn column_spans<'s, S: ScanPart>(ps: &[&'s S], columns: &[usize]) -> Vec<Vec<(&'s Column, Range<usize>)>> {
    let mut spans: Vec<Vec<(&Column, Range<usize>)>> = vec![Vec::with_capacity(ps.len()); columns.len()];
    let mut one = Vec::new();
    for p in ps {
        for (out, &j) in spans.iter_mut().zip(columns) {
            p.spans(j, &mut one);
            for (col, r) in one.drain(..) {
                match out.last_mut() {
                    Some((last, lr)) if std::ptr::eq(*last, col) && lr.end == r.start => lr.end = r.end,
                    _ => out.push((col, r)),
                }
            }
        }
    }
    spans
}

/// Column `j` of pieces `ps` (`rows` in all) when it is the partition key and each is a piece
/// of a keyed partition (not the NULL-key one, not a pack): each piece's key code repeated,
/// without reading the partitions' key columns (every row of a partition holds its key).
fn key_codes<S: ScanPart>(table: &Table, j: usize, ps: &[&S], rows: usize) -> Option<Column> {
    if table.key_col() != Some(j) {
        return None;
    }
    let mut codes = Vec::with_capacity(rows);
    for p in ps {
        codes.resize(codes.len() + p.rows(), p.key()?);
    }
    debug_assert!(ps.iter().all(|p| {
        let mut spans = Vec::new();
        p.spans(j, &mut spans);
        spans.into_iter().all(|(col, r)| r.into_iter().all(|i| col.is_valid(i)))
    }));
    Some(Column::from_data(ColumnData::Symbol { codes: codes.into(), dict: table.dict().clone() }))
}

#[cfg(test)]
mod tests {
    use super::rows_in;
    use zepto_storage::{ColumnBuilder, DataType, Value};

    /// Two partitions' times one after another (the second led by NULLs): each partition's
    /// rows in range are one run, and runs that meet are one.
    #[test]
    fn rows_in_finds_each_partitions_run() {
        let times: [Option<i64>; 12] =
            [Some(1), Some(5), Some(9), Some(12), None, None, Some(2), Some(5), Some(7), Some(20), Some(5), Some(6)];
        let mut b = ColumnBuilder::new(DataType::Timestamp, times.len());
        for t in times {
            b.push_value(&t.map_or(Value::Null, Value::Timestamp)).expect("timestamp");
        }
        let col = b.finish();
        assert_eq!(rows_in(&col, 5, 9), vec![1..3, 7..9, 10..12]);
        assert_eq!(rows_in(&col, i64::MIN, i64::MAX), vec![0..4, 6..12], "NULLs are in no range");
        assert_eq!(rows_in(&col, 1, 20), vec![0..4, 6..12]);
        assert!(rows_in(&col, 21, 30).is_empty());
        assert_eq!(rows_in(&col, 12, 12), vec![3..4]);
        // The same without NULLs (another path).
        let mut b = ColumnBuilder::new(DataType::Timestamp, times.len());
        for t in times.iter().flatten() {
            b.push_value(&Value::Timestamp(*t)).expect("timestamp");
        }
        let col = b.finish();
        assert!(col.validity().is_none());
        assert_eq!(rows_in(&col, 5, 9), vec![1..3, 5..7, 8..10]);
        assert_eq!(rows_in(&col, 1, 20), vec![0..10]);
        assert!(rows_in(&col, 21, 30).is_empty());
        assert_eq!(rows_in(&col, 6, 6), vec![9..10]);
    }

    /// Against a row-by-row reading, over columns of many partitions' runs, word edges and
    /// NULLs included.
    #[test]
    fn rows_in_agrees_with_row_by_row() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..200 {
            let n = next(300) as usize;
            let nulls = round % 2 == 0;
            let mut b = ColumnBuilder::new(DataType::Timestamp, n);
            let mut vals = Vec::new();
            let mut t = 0;
            for _ in 0..n {
                t = if next(8) == 0 { next(50) as i64 } else { t + next(3) as i64 };
                let v = (!nulls || next(9) != 0).then_some(t);
                b.push_value(&v.map_or(Value::Null, Value::Timestamp)).expect("timestamp");
                vals.push(v);
            }
            let col = b.finish();
            let (lo, hi) = (next(60) as i64, next(60) as i64);
            let mut want: Vec<std::ops::Range<usize>> = Vec::new();
            for (i, v) in vals.iter().enumerate() {
                if v.is_some_and(|x| lo <= x && x <= hi) {
                    match want.last_mut() {
                        Some(r) if r.end == i => r.end = i + 1,
                        _ => want.push(i..i + 1),
                    }
                }
            }
            assert_eq!(rows_in(&col, lo, hi), want, "round {round}: [{lo}, {hi}] over {vals:?}");
        }
    }
}
