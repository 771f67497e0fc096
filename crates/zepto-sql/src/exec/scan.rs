//! Table scans: pick partitions by key, cut each to the time range by binary search, and hand
//! out the requested columns. A whole partition is shared, not copied (`Arc`); a partial range
//! is copied once; several partitions are concatenated — unless the consumer works piece by
//! piece ([`pieces`] + [`piece_batch`], used by partition-wise aggregation).

use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::physical::ScanShape;
use crate::plan::ScanRange;
use std::ops::Range;
use std::sync::Arc;
use zepto_storage::table::PACK_ROWS;
use zepto_storage::{Column, ColumnData, Partition, Table};

/// One partition's rows that a scan reads.
pub struct Piece<'a> {
    pub part: &'a Partition,
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
pub trait Span {
    /// How many rows.
    fn rows(&self) -> usize;
    /// Column `c` of the rows where they live: a storage column and the rows' range in it.
    fn col(&self, c: usize) -> (&Column, Range<usize>);
    /// The partition key every row holds: the key of a piece's partition (`None` for the
    /// NULL-key partition, and for a pack, whose rows hold many keys).
    fn key(&self) -> Option<u32>;
    /// The rows of `columns` as a batch: shared where the columns hold exactly these rows.
    fn batch(&self, columns: &[usize]) -> Batch;
    /// Whether [`Span::batch`] shares the columns as they are: every row of a loose partition,
    /// or a whole pack.
    fn is_shared_whole(&self) -> bool;
}

impl Span for Piece<'_> {
    fn rows(&self) -> usize {
        self.range.len()
    }

    fn col(&self, c: usize) -> (&Column, Range<usize>) {
        Piece::col(self, c)
    }

    fn key(&self) -> Option<u32> {
        self.part.key()
    }

    fn batch(&self, columns: &[usize]) -> Batch {
        piece_batch(self, columns)
    }

    fn is_shared_whole(&self) -> bool {
        self.is_whole() && !self.part.is_packed()
    }
}

/// What a scan reads: a piece of a partition, or every row of a pack.
pub enum Unit<'a> {
    /// One partition's rows.
    Piece(Piece<'a>),
    /// A whole pack's columns ([`zepto_storage::table::Run::pack`]): the rows of a run of
    /// neighbouring small partitions, slot after slot, read without visiting them.
    Pack(&'a [Arc<Column>]),
}

impl Span for Unit<'_> {
    fn rows(&self) -> usize {
        match self {
            Unit::Piece(p) => p.range.len(),
            Unit::Pack(cols) => cols.first().map_or(0, |c| c.len()),
        }
    }

    fn col(&self, c: usize) -> (&Column, Range<usize>) {
        match self {
            Unit::Piece(p) => p.col(c),
            Unit::Pack(cols) => (&cols[c], 0..cols[c].len()),
        }
    }

    fn key(&self) -> Option<u32> {
        match self {
            Unit::Piece(p) => p.part.key(),
            Unit::Pack(_) => None,
        }
    }

    fn batch(&self, columns: &[usize]) -> Batch {
        match self {
            Unit::Piece(p) => piece_batch(p, columns),
            Unit::Pack(cols) => Batch::shared(columns.iter().map(|&c| cols[c].clone()).collect(), self.rows()),
        }
    }

    fn is_shared_whole(&self) -> bool {
        match self {
            Unit::Piece(p) => p.is_shared_whole(),
            Unit::Pack(_) => true,
        }
    }
}

/// The units of a scan over `range`. Without a key list or a time bound it reads every row:
/// the table's runs then give each whole pack of at least [`PACK_ROWS`] rows as its columns, and
/// a piece for every other partition with rows, without visiting the packed ones. Otherwise, a
/// piece for every partition read ([`pieces`]).
pub fn units<'a>(table: &'a Table, range: &ScanRange) -> Vec<Unit<'a>> {
    if range.keys.is_some() || ts_bounded(range) {
        return pieces(table, range).into_iter().map(Unit::Piece).collect();
    }
    let parts = table.partitions();
    let mut out = Vec::new();
    for run in table.runs() {
        match run.pack() {
            Some(cols) if cols.first().is_some_and(|c| c.len() >= PACK_ROWS) => out.push(Unit::Pack(cols)),
            _ => out.extend(
                parts[run.slots()]
                    .iter()
                    .filter(|p| !p.is_empty())
                    .map(|p| Unit::Piece(Piece { part: p, range: 0..p.len() })),
            ),
        }
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
                later.for_each_col(&mut |c| need[c] = true);
            }
            let m = super::eval::eval(ctx, pred, &b)?;
            let idx = super::mask_indices(&m);
            if idx.len() == b.rows {
                continue;
            }
            let gather = |(c, &n): (&Arc<Column>, &bool)| match n {
                true => Arc::new(c.take(&idx)),
                false => Arc::new(Column::nulls(zepto_storage::DataType::Null, idx.len())),
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

fn ts_bounded(range: &ScanRange) -> bool {
    range.ts_lo != i64::MIN || range.ts_hi != i64::MAX
}

/// The pieces of `table` a scan over `range` reads: the partitions of its keys (all without a
/// key list), each cut to its time range.
pub fn pieces<'a>(table: &'a Table, range: &ScanRange) -> Vec<Piece<'a>> {
    let parts: Vec<&Arc<Partition>> = match &range.keys {
        Some(keys) => {
            let keyed = keys.iter().filter_map(|k| table.dict().code(k)).filter_map(|c| table.partition_for_code(c));
            let null = table.null_key_partition().filter(|_| range.null_key);
            keyed.filter(|_| table.key_col().is_some()).chain(null).collect()
        }
        None => table.partitions().iter().collect(),
    };
    let bounded = ts_bounded(range);
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        let r = match (table.ts_col(), bounded) {
            (Some(t), true) => p.ts_range(t, range.ts_lo, range.ts_hi),
            _ => 0..p.len(),
        };
        if !r.is_empty() {
            out.push(Piece { part: p, range: r });
        }
    }
    out
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
    if columns.is_empty() && range.keys.is_none() && !ts_bounded(range) {
        debug_assert_eq!(table.row_count(), table.partitions().iter().map(|p| p.len()).sum::<usize>());
        return Ok(Batch::new(Vec::new(), table.row_count()));
    }
    let us = units(table, range);
    pieces_batch(table, columns, &us.iter().collect::<Vec<_>>())
}

/// The rows of `ps` (pieces or units) of `table`, one after another, in its `columns`: one
/// shared as [`Span::batch`] gives it, several copied once per column (no slice of each made
/// first), none as empty columns of the schema's types.
pub fn pieces_batch<S: Span>(table: &Table, columns: &[usize], ps: &[&S]) -> Result<Batch> {
    match ps {
        [] => {
            let cols = columns.iter().map(|&c| Column::nulls(table.schema().columns[c].data_type, 0)).collect();
            Ok(Batch::new(cols, 0))
        }
        [p] => Ok(p.batch(columns)),
        _ => {
            let rows = ps.iter().map(|p| p.rows()).sum();
            // Every column's spans in one walk over the pieces: each partition is reached once.
            // Neighbours in one pack are one span.
            let mut spans: Vec<Vec<(&Column, Range<usize>)>> = vec![Vec::with_capacity(ps.len()); columns.len()];
            for p in ps {
                for (out, &j) in spans.iter_mut().zip(columns) {
                    let (col, r) = p.col(j);
                    match out.last_mut() {
                        Some((last, lr)) if std::ptr::eq(*last, col) && lr.end == r.start => lr.end = r.end,
                        _ => out.push((col, r)),
                    }
                }
            }
            let cols = columns
                .iter()
                .zip(&spans)
                // The key from the pieces' codes, unless packs make it a few spans to copy.
                .map(|(&j, spans)| match (spans.len() == ps.len()).then(|| key_codes(table, j, ps, rows)).flatten() {
                    Some(keys) => Ok(Arc::new(keys)),
                    None => Column::concat_ranges(spans).map(Arc::new).map_err(SqlError::Internal),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Batch::shared(cols, rows))
        }
    }
}

/// Column `j` of pieces `ps` (`rows` in all) when it is the partition key and each is a piece of
/// a keyed partition (not the NULL-key one, not a pack): each piece's key code repeated, without reading the partitions' key
/// columns (every row of a partition holds its key).
fn key_codes<S: Span>(table: &Table, j: usize, ps: &[&S], rows: usize) -> Option<Column> {
    if table.key_col() != Some(j) {
        return None;
    }
    let mut codes = Vec::with_capacity(rows);
    for p in ps {
        codes.resize(codes.len() + p.rows(), p.key()?);
    }
    debug_assert!(ps.iter().all(|p| {
        let (col, r) = p.col(j);
        r.clone().all(|i| col.is_valid(i))
    }));
    Some(Column::from_data(ColumnData::Symbol { codes, dict: table.dict().clone() }))
}
