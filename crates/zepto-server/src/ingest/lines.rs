//! Line protocol typed straight into column builders.
//!
//! The tokenizer ([`super::ilp::tokenize`]) hands each line's measurement, tags, fields and
//! timestamp to a [`Decoder`], which finds the line's table and each key's column and pushes
//! the value: nothing is allocated per line, and the work is proportional to the line's
//! bytes. Lines repeat their measurement and keys, in the same order, so the table is the
//! previous line's when the measurement is the same text, and a key's column is the one the
//! previous line had at the same position when the key is the same text; only a new name is
//! lower-cased and looked up. A line of a known series (the catalog's memo or the body's own
//! cache, by its text) that writes the fields of the table's previous line goes faster still:
//! staged by the table's `fast::Shape` into plain vectors, moved into the builders a run at a time.
//!
//! The result is one [`TablePlan`] per table the body touches, in order of first appearance,
//! typed and checked against the schemas as they were read (`super::create_and_apply`
//! checks them again under the tables' locks). A key may only touch tables it has a grant for,
//! and that is checked at a table's first line, before any of its columns is looked at.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use super::fast::{Kind, Shape};
use super::ilp::{FieldValue, IlpError, LineSink, Precision};
use super::TablePlan;
use crate::auth::Principal;
use crate::error::ApiError;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::RwLockReadGuard;
use zepto_storage::series_memo::{Memo, MemoTable};
use zepto_storage::vector::VectorError;
use zepto_storage::{Catalog, Column, ColumnBuilder, ColumnDef, DataType, Dict, Value};

/// Most columns an ILP batch may give a table (each new column costs a NULL per earlier row).
pub(crate) const MAX_COLUMNS: usize = 1024;

/// The error for a batch that would take `table` past [`MAX_COLUMNS`].
pub(crate) fn too_many_columns(table: &str) -> String {
    format!("table '{table}' would have more than {MAX_COLUMNS} columns")
}

/// Rows the builders of a table other than the body's first start with (they grow).
const SMALL_TABLE_ROWS: usize = 1024;

/// Most rows a table's shape stages before they move into its builders: the staged values
/// are a second copy, bounded (a run this long costs one call per column to move).
const STAGED_ROWS: usize = 4096;

/// Where a line went: asked for by the cluster's check, which routes lines by their
/// partition key.
#[derive(Debug, Clone)]
pub(super) struct LineAt {
    /// 1-based line number in the body.
    pub line: usize,
    /// Index of its table among the decoder's plans.
    pub table: usize,
    /// Its row in that table's columns.
    pub row: usize,
    /// Whether the line had its own timestamp.
    pub timestamped: bool,
    /// Its text in the body (see `ilp::Point::span`).
    pub span: std::ops::Range<usize>,
}

/// The [`LineSink`] that types lines into per-table column builders.
pub(super) struct Decoder<'c, 'a> {
    catalog: &'c Catalog,
    who: &'c Principal,
    now_ns: i64,
    /// Rows the first table's builders are sized for (the body's line count, at most).
    capacity: usize,
    tables: Vec<TableBuild>,
    /// Lower-cased table name → index into `tables`.
    by_name: HashMap<String, usize>,
    /// The previous line's measurement as written, and its table.
    last: Option<(String, usize)>,
    /// The current line: its number and table.
    line: usize,
    cur: usize,
    /// Where each line went, when asked for.
    lines: Option<Vec<LineAt>>,
    /// The series seen, and the current line's when it is new.
    series: SeriesCache<'a>,
    /// The series earlier batches taught the catalog (`zepto_storage::series_memo`), read
    /// while the body is decoded; and per memo table, its table here once looked at (`None`
    /// when the memo's codes no longer fit it).
    memo: Option<RwLockReadGuard<'c, Memo>>,
    memo_tables: Vec<Option<Option<usize>>>,
    /// The current line's series when [`LineSink::series`] knew it: its tags are pushed by
    /// [`LineSink::known_rest`], staged with the fields or into the builders.
    known: Option<Known>,
    /// The memo's series of the last line it knew (`Memo::find_after`).
    last_memo: Option<u32>,
}

/// Where a known series' tags are: the memo's series or the body's.
#[derive(Clone, Copy)]
enum Known {
    Memo(u32),
    Body(u32),
}

/// Series (a measurement and its tags, as written) the body has had: each line of a known
/// series takes its table and tag values at once, by one hash of its bytes, instead of its
/// tags being read, their columns found and their values looked up in the dictionaries.
#[derive(Default)]
struct SeriesCache<'a> {
    /// Series text → index into `known`.
    index: HashMap<&'a [u8], u32, foldhash::fast::RandomState>,
    /// Per series, in order of first appearance: its table, its range of `tags`, its text.
    known: Vec<(usize, std::ops::Range<usize>, &'a [u8])>,
    /// Every series' tags: (slot, symbol code in that slot's builder).
    tags: Vec<(u32, u32)>,
    /// The current line's series when new, and whether its tags can be cached so far (they
    /// all went to SYMBOL columns).
    pending: Option<(&'a [u8], bool)>,
    /// The current line's tags so far, when its series is new.
    line_tags: Vec<(u32, u32)>,
}

/// A series to teach the memo: its text and its tags as (column slot, code).
type Learned<'a> = (&'a [u8], Vec<(u32, u32)>);

impl<'a> SeriesCache<'a> {
    /// The tags of series `k`.
    fn tags_of(&self, k: u32) -> &[(u32, u32)] {
        let range = self.known.get(k as usize).map_or(0..0, |(_, r, _)| r.clone());
        self.tags.get(range).unwrap_or_default()
    }

    /// The series of table `table` whose tags all went to its first `columns` columns, with
    /// their codes as the memo keeps them, in the body's order (the memo's guess of the next
    /// series follows it).
    fn learned(&self, table: usize, columns: usize) -> Vec<Learned<'a>> {
        let mut out = Vec::new();
        for (t, range, text) in &self.known {
            let Some(tags) = self.tags.get(range.clone()).filter(|_| *t == table) else { continue };
            if tags.iter().all(|&(slot, _)| (slot as usize) < columns) {
                out.push((*text, tags.to_vec()));
            }
        }
        out
    }
}

/// One table's rows so far: in its builders, and the last of them perhaps staged by its
/// shape (`fast.rs`), moved into the builders before any other line of the table is read.
struct TableBuild {
    exists: bool,
    cols: IlpColumns,
    rows: usize,
    shape: Option<Shape>,
    /// Shapes made for the body, bounded (a body whose lines keep changing shape reads them
    /// the general way), and the lines in a row of a known series the shape did not read.
    shapes_made: usize,
    misses: u8,
}

impl<'c, 'a> Decoder<'c, 'a> {
    /// A decoder for a body of about `lines` lines (its builders' first capacity); with
    /// `track`, it records where each line goes ([`Decoder::finish`]).
    pub fn new(catalog: &'c Catalog, who: &'c Principal, now_ns: i64, lines: usize, track: bool) -> Decoder<'c, 'a> {
        Decoder {
            catalog,
            who,
            now_ns,
            capacity: lines,
            tables: Vec::new(),
            by_name: HashMap::new(),
            last: None,
            line: 0,
            cur: 0,
            lines: track.then(Vec::new),
            series: SeriesCache::default(),
            memo: Some(catalog.series_memo().read()),
            memo_tables: Vec::new(),
            known: None,
            last_memo: None,
        }
    }

    /// The plans, in order of first appearance, after the tenant check of each (a key bound to
    /// a tenant may not write a table with a `tenant_id` column, nor give it one); and where
    /// each line went, if tracked.
    pub fn finish(mut self) -> Result<(Vec<TablePlan>, Vec<LineAt>), ApiError> {
        self.memo = None;
        self.teach_memo();
        let mut plans = Vec::with_capacity(self.tables.len());
        for mut t in self.tables {
            t.drain_shape()?;
            let (name, ts_name) = (t.cols.table.clone(), t.cols.ts_name.clone());
            let (defs, cols) = t.cols.finish();
            let has_tenant_id = defs.iter().any(|d| d.name.eq_ignore_ascii_case(zepto_sql::access::TENANT_COLUMN));
            self.who.require_unscoped_write(&name, has_tenant_id)?;
            plans.push(TablePlan { name, exists: t.exists, defs, cols, ts_name });
        }
        Ok((plans, self.lines.unwrap_or_default()))
    }

    /// The catalog's memo learns the series this body's lines introduced into tables that
    /// exist, their tags coded against the table's dictionary in columns it had (a column
    /// this batch adds is learned from the next one). Called with the memo no longer read.
    fn teach_memo(&self) {
        let memo = self.catalog.series_memo();
        for (i, t) in self.tables.iter().enumerate() {
            let (Some(dict), true) = (&t.cols.dict, t.exists) else { continue };
            let known = t.cols.known;
            let series = self.series.learned(i, known);
            if series.is_empty() {
                continue;
            }
            let table = MemoTable { name: t.cols.table.clone(), lineage: dict.lineage(), columns: t.cols.defs(known) };
            memo.learn(&table, series.iter().map(|(text, codes)| (*text, codes.as_slice())));
        }
    }

    /// A line whose series an earlier batch taught the memo: its table is the current one and
    /// its tags are known. False when the memo does not know it, or its codes no longer fit
    /// the table.
    fn known_by_memo(&mut self, raw: &[u8]) -> Result<bool, ApiError> {
        let last = self.last_memo;
        let Some((id, t)) =
            self.memo.as_ref().and_then(|m| m.find_after(last, raw).and_then(|id| Some((id, m.table_of(id)?))))
        else {
            return Ok(false);
        };
        self.last_memo = Some(id);
        let Some(b) = self.memo_table(t)? else { return Ok(false) };
        (self.cur, self.known) = (b, Some(Known::Memo(id)));
        Ok(true)
    }

    /// The batch's table of memo table `t`, looked at once per batch: `None` unless the table
    /// exists with the dictionary lineage and the first columns the memo's codes refer to.
    fn memo_table(&mut self, t: u32) -> Result<Option<usize>, ApiError> {
        if let Some(Some(known)) = self.memo_tables.get(t as usize) {
            return Ok(*known);
        }
        let Some(mt) = self.memo.as_ref().and_then(|m| m.table(t)).cloned() else { return Ok(None) };
        let i = self.table(&mt.name)?;
        let fits = self.tables.get(i).is_some_and(|b| {
            b.exists
                && b.cols.dict.as_ref().is_some_and(|d| d.lineage() == mt.lineage)
                && mt.columns.len() <= b.cols.known
                && b.cols.slots.iter().zip(&mt.columns).all(|(c, d)| c.def == *d)
        });
        let at = t as usize;
        if self.memo_tables.len() <= at {
            self.memo_tables.resize(at + 1, None);
        }
        if let Some(slot) = self.memo_tables.get_mut(at) {
            *slot = Some(fits.then_some(i));
        }
        Ok(fits.then_some(i))
    }

    /// The table of a line whose measurement is `name`: the previous line's, a table already
    /// in the batch, or one started now (from the catalog's schema when it exists).
    fn table(&mut self, name: &str) -> Result<usize, ApiError> {
        if let Some((last, i)) = &self.last {
            if last == name {
                return Ok(*i);
            }
        }
        let lower = name.to_ascii_lowercase();
        let i = match self.by_name.get(&lower) {
            Some(&i) => i,
            None => {
                self.who.require_table(name)?;
                let rows = if self.tables.is_empty() { self.capacity } else { SMALL_TABLE_ROWS.min(self.capacity) };
                self.tables.push(TableBuild::new(self.catalog, name, rows));
                self.by_name.insert(lower, self.tables.len() - 1);
                self.tables.len() - 1
            }
        };
        match &mut self.last {
            Some((last, j)) => {
                last.clear();
                last.push_str(name);
                *j = i;
            }
            None => self.last = Some((name.to_string(), i)),
        }
        Ok(i)
    }

    /// The current line's table.
    fn current(&mut self) -> Result<&mut TableBuild, ApiError> {
        let line = self.line;
        self.tables.get_mut(self.cur).ok_or_else(|| line_err(line, "lost track of the line's table".into()))
    }

    /// Once a new series' tags are all read (`known_rest` comes after them): the series is
    /// known from now on, unless a tag went elsewhere than a SYMBOL column.
    fn cache_series(&mut self) {
        if let Some((raw, true)) = self.series.pending.take() {
            let cache = &mut self.series;
            let from = cache.tags.len();
            cache.tags.extend_from_slice(&cache.line_tags);
            cache.known.push((self.cur, from..cache.tags.len(), raw));
            let k = u32::try_from(cache.known.len() - 1).unwrap_or(u32::MAX);
            cache.index.insert(raw, k);
        }
    }

    /// One tag or field of the current line into its column.
    fn value(&mut self, key: &str, is_tag: bool, value: FieldValue<'_>) -> Result<(), ApiError> {
        let line = self.line;
        let t = self.tables.get_mut(self.cur).ok_or_else(|| line_err(line, "lost track of the line's table".into()))?;
        let dt = if is_tag { DataType::Symbol } else { new_type(&value) };
        let j = t.cols.slot(key, dt, t.rows).map_err(|m| line_err(line, m))?;
        let c = t.cols.column(j).map_err(|m| line_err(line, m))?;
        if c.filled {
            return Err(line_err(line, format!("'{key}' is given twice")));
        }
        let dt = c.def.data_type;
        if let (FieldValue::Str(text), DataType::Symbol, true) = (&value, dt, is_tag) {
            let code = c.builder.push_symbol(text).map_err(|e| ApiError::internal(e.to_string()))?;
            c.filled = true;
            if self.series.pending.is_some() {
                self.series.line_tags.push((u32::try_from(j).unwrap_or(u32::MAX), code));
            }
            return Ok(());
        }
        if let (FieldValue::Str(text), DataType::Varchar | DataType::Symbol) = (&value, dt) {
            // Text goes in as it is, without a `Value` (a `String`) of its own.
            if is_tag {
                // A tag into a VARCHAR column: the series is not cached.
                self.series.pending = None;
            }
            return c.push_str(text);
        }
        let Some(v) = convert(&value, dt) else {
            let column = &c.def.name;
            if dt.vector_dim().is_some() {
                // ILP has no array type: vectors come by JSON lines, CSV, Arrow or SQL.
                return Err(line_err(
                    line,
                    format!("column '{column}' is {dt}: ILP has no array type; write vectors with JSON lines, CSV, Arrow or SQL"),
                ));
            }
            let what = if is_tag { "tag" } else { value.kind() };
            return Err(line_err(
                line,
                format!("{what} value for '{key}' does not fit column '{column}' of type {dt}"),
            ));
        };
        c.push(&v)
    }
}

impl<'a> LineSink<'a> for Decoder<'_, 'a> {
    type Error = ApiError;

    fn syntax(&mut self, e: IlpError) -> ApiError {
        line_err(e.line, e.message)
    }

    fn wants_series(&self) -> bool {
        true
    }

    fn series(&mut self, line: usize, raw: &'a [u8]) -> Result<bool, ApiError> {
        self.line = line;
        if self.known_by_memo(raw)? {
            return Ok(true);
        }
        let cache = &mut self.series;
        let Some(&k) = cache.index.get(raw) else {
            cache.pending = Some((raw, true));
            cache.line_tags.clear();
            return Ok(false);
        };
        self.cur = cache.known.get(k as usize).map_or(usize::MAX, |(table, _, _)| *table);
        self.known = Some(Known::Body(k));
        Ok(true)
    }

    fn known_rest(&mut self, body: &'a [u8], at: usize, precision: Precision) -> Result<Option<usize>, ApiError> {
        let line = self.line;
        let Some(known) = self.known.take() else {
            // A line whose tags were read the general way: its fields are, too.
            self.cache_series();
            return Ok(None);
        };
        let tags = match known {
            Known::Memo(id) => self.memo.as_ref().map_or(&[][..], |m| m.codes(id)),
            Known::Body(k) => self.series.tags_of(k),
        };
        let t = self.tables.get_mut(self.cur).ok_or_else(|| line_err(line, "lost track of the line's table".into()))?;
        if self.lines.is_none() {
            if let Some(next) = t.read_staged(body, at, precision, tags)? {
                return Ok(Some(next));
            }
        }
        t.start_row()?;
        for &(slot, code) in tags {
            t.cols.push_code(slot as usize, code).map_err(|m| line_err(line, m))?;
        }
        Ok(None)
    }

    fn measurement(&mut self, line: usize, name: Cow<'a, str>) -> Result<(), ApiError> {
        self.line = line;
        self.cur = self.table(&name)?;
        self.current()?.start_row()
    }

    fn tag(&mut self, key: Cow<'a, str>, value: Cow<'a, str>) -> Result<(), ApiError> {
        self.value(&key, true, FieldValue::Str(value))
    }

    fn field(&mut self, key: Cow<'a, str>, value: FieldValue<'a>) -> Result<(), ApiError> {
        if let FieldValue::Vector(v) = &value {
            finite_vector(self.line, &key, v)?;
        }
        self.value(&key, false, value)
    }

    fn end(&mut self, timestamp: Option<i64>, span: std::ops::Range<usize>) -> Result<(), ApiError> {
        let (line, now, cur) = (self.line, self.now_ns, self.cur);
        let t = self.current()?;
        let row = t.rows;
        let c = t.cols.ts_slot(row).map_err(|m| line_err(line, m))?;
        c.push(&Value::Timestamp(timestamp.unwrap_or(now)))?;
        t.cols.end_row();
        t.rows += 1;
        if let Some(lines) = &mut self.lines {
            lines.push(LineAt { line, table: cur, row, timestamped: timestamp.is_some(), span });
        }
        Ok(())
    }
}

impl TableBuild {
    /// A table's rows, starting from its schema in `catalog` if it exists; its designated
    /// timestamp is the table's, else `timestamp`.
    fn new(catalog: &Catalog, name: &str, rows: usize) -> TableBuild {
        let existing = catalog.layout(name).ok();
        let ts_name = existing
            .as_ref()
            .and_then(|t| t.ts_col.and_then(|i| t.schema.columns.get(i)).map(|c| c.name.clone()))
            .unwrap_or_else(|| "timestamp".to_string());
        let defs: Vec<ColumnDef> = existing.as_ref().map(|t| t.schema.columns.clone()).unwrap_or_default();
        let exists = existing.is_some();
        let cols = IlpColumns::new(name, defs, rows, ts_name, existing.map(|t| t.dict));
        TableBuild { exists, cols, rows: 0, shape: None, shapes_made: 0, misses: 0 }
    }

    /// Start a line read the general way: after the staged rows.
    fn start_row(&mut self) -> Result<(), ApiError> {
        self.drain_shape()?;
        self.cols.start_row();
        Ok(())
    }

    /// The line at `body[at..]` staged by the table's shape: where the next line starts, or
    /// `None` (nothing staged) for the general path. The shape is made for the series' tags
    /// and the previous line's fields when there is none, or again after two lines in a row
    /// did not fit it (a rare odd line keeps the shape; a stream that changed its fields gets
    /// a new one), at most once per 64 of the table's lines (and a few to start).
    fn read_staged(
        &mut self,
        body: &[u8],
        at: usize,
        precision: Precision,
        tags: &[(u32, u32)],
    ) -> Result<Option<usize>, ApiError> {
        let stale = self.shape.is_none() || self.misses >= 2;
        if stale && self.shapes_made <= 4 + self.rows / 64 {
            self.drain_shape()?;
            self.shape = self.cols.shape(tags);
            (self.shapes_made, self.misses) = (self.shapes_made + 1, 0);
        }
        let read = self.shape.as_mut().filter(|s| s.fits(tags)).and_then(|s| s.read(body, at, precision.0, tags));
        match read {
            Some(_) => (self.rows, self.misses) = (self.rows + 1, 0),
            None => self.misses = self.misses.saturating_add(1),
        }
        if self.shape.as_ref().is_some_and(|s| s.rows() >= STAGED_ROWS) {
            self.drain_shape()?;
        }
        Ok(read)
    }

    /// The staged rows moved into the builders, NULL in the columns the shape does not fill.
    fn drain_shape(&mut self) -> Result<(), ApiError> {
        let Some(shape) = self.shape.as_mut().filter(|s| s.rows() > 0) else { return Ok(()) };
        let cols = &mut self.cols.slots;
        let err = |m: String| ApiError::internal(format!("staged rows of table '{}': {m}", self.cols.table));
        shape
            .drain(|slot, values| {
                let c = cols.get_mut(slot).ok_or_else(|| format!("lost track of column {slot}"))?;
                c.builder.extend_valid(values).map_err(|e| e.to_string())
            })
            .map_err(err)?;
        for c in cols.iter_mut() {
            c.builder.push_nulls(self.rows.saturating_sub(c.builder.len()));
            debug_assert_eq!(c.builder.len(), self.rows, "column '{}' out of step", c.def.name);
        }
        Ok(())
    }
}

/// An array field's elements, all finite: a `FLOAT[n]` vector holds no NaN and no infinity
/// (the table refuses them too, but only once the batch is logged), so the line is refused here.
fn finite_vector(line: usize, key: &str, v: &[f32]) -> Result<(), ApiError> {
    let Err(VectorError::NotFinite(i)) = zepto_storage::vector::check_finite(v) else { return Ok(()) };
    let dim = v.len();
    let m =
        format!("field '{key}': element {} of the array is NaN or infinite (FLOAT[{dim}] holds finite values)", i + 1);
    Err(line_err(line, m))
}

fn line_err(line: usize, message: String) -> ApiError {
    ApiError::ingest(format!("line {line}: {message}")).at_line(line)
}

/// A value of an ILP point as a value of column type `dt`.
pub(super) fn convert(v: &FieldValue<'_>, dt: DataType) -> Option<Value> {
    Some(match (v, dt) {
        (FieldValue::Float(f), DataType::Float64) => Value::Float64(*f),
        (FieldValue::Float(f), DataType::Float32) => Value::Float32(*f as f32),
        (FieldValue::Int(i), DataType::Int64) => Value::Int64(*i),
        (FieldValue::Int(i), DataType::Int32) => Value::Int32(i32::try_from(*i).ok()?),
        (FieldValue::Int(i), DataType::Float64) => Value::Float64(*i as f64),
        (FieldValue::Int(i), DataType::Float32) => Value::Float32(*i as f32),
        (FieldValue::Int(i), DataType::Timestamp) => Value::Timestamp(*i),
        (FieldValue::UInt(u), DataType::Int64) => Value::Int64(i64::try_from(*u).ok()?),
        (FieldValue::UInt(u), DataType::Int32) => Value::Int32(i32::try_from(*u).ok()?),
        (FieldValue::UInt(u), DataType::Float64) => Value::Float64(*u as f64),
        (FieldValue::UInt(u), DataType::Float32) => Value::Float32(*u as f32),
        (FieldValue::Str(s), DataType::Varchar | DataType::Symbol) => Value::Str(s.to_string()),
        (FieldValue::Bool(b), DataType::Bool) => Value::Bool(*b),
        (FieldValue::Timestamp(t), DataType::Timestamp) => Value::Timestamp(*t),
        (FieldValue::Vector(v), DataType::Vector(d)) if v.len() == usize::from(d) => Value::Vector(v.clone()),
        _ => return None,
    })
}

/// The column type a new field gets.
fn new_type(v: &FieldValue<'_>) -> DataType {
    match v {
        FieldValue::Float(_) => DataType::Float64,
        FieldValue::Int(_) | FieldValue::UInt(_) => DataType::Int64,
        FieldValue::Str(_) => DataType::Varchar,
        FieldValue::Bool(_) => DataType::Bool,
        FieldValue::Timestamp(_) => DataType::Timestamp,
        // The parser takes 1 to 65,535 values, each a vector's width.
        FieldValue::Vector(v) => DataType::vector(v.len()).unwrap_or(DataType::Null),
    }
}

/// A builder of `rows` rows of type `dt`; a SYMBOL one codes against the table's `dict`, if
/// given.
fn builder(dt: DataType, rows: usize, dict: Option<&Dict>) -> ColumnBuilder {
    match dict {
        Some(d) if dt == DataType::Symbol => ColumnBuilder::symbols_in(d.clone(), rows),
        _ => ColumnBuilder::new(dt, rows),
    }
}

/// The columns an ILP batch builds for one table: the table's own, then those its lines add,
/// each with whether the current line gave it a value.
struct IlpColumns {
    /// The table's name, as the batch's first line of it wrote it.
    table: String,
    /// Its designated timestamp's name: no tag or field may have it.
    ts_name: String,
    slots: Vec<IlpColumn>,
    /// Lower-cased name → index into `slots`.
    by_name: HashMap<String, usize>,
    /// Name as a line wrote it → index into `slots`: lines repeat their keys, so this finds
    /// them without lower-casing a copy of each.
    by_written: HashMap<String, usize>,
    /// The previous line's keys in its order, each with its slot and whether it is written
    /// without escapes: a line that writes the same keys in the same order (the usual case)
    /// finds each by one comparison, without hashing, and is read by `fast.rs` when the keys
    /// are plain. The designated timestamp's entry, last, has the empty name.
    recent: Vec<(String, usize, bool)>,
    /// Keys of the current line so far.
    at: usize,
    /// Rows the batch will have (the builders' capacity).
    rows: usize,
    /// How many of `slots` the table had (the rest this batch adds).
    known: usize,
    /// The table's symbol dictionary when it exists: its SYMBOL columns are coded against it
    /// (`ColumnBuilder::symbols_in`), so a known string is looked up rather than added to a
    /// dictionary of the batch's own, and the rows are appended without re-encoding.
    dict: Option<Dict>,
}

/// One column of [`IlpColumns`].
struct IlpColumn {
    def: ColumnDef,
    builder: ColumnBuilder,
    /// The current line gave it a value.
    filled: bool,
}

impl IlpColumn {
    fn push(&mut self, v: &Value) -> Result<(), ApiError> {
        self.builder.push_value(v).map_err(|e| ApiError::internal(e.to_string()))?;
        self.filled = true;
        Ok(())
    }

    /// [`IlpColumn::push`] of text into a VARCHAR or SYMBOL column.
    fn push_str(&mut self, s: &str) -> Result<(), ApiError> {
        self.builder.push_str(s).map_err(|e| ApiError::internal(e.to_string()))?;
        self.filled = true;
        Ok(())
    }
}

impl IlpColumns {
    fn new(table: &str, defs: Vec<ColumnDef>, rows: usize, ts_name: String, dict: Option<Dict>) -> IlpColumns {
        let by_name = defs.iter().enumerate().map(|(i, d)| (d.name.to_ascii_lowercase(), i)).collect();
        let known = defs.len();
        let slots = defs
            .into_iter()
            .map(|def| IlpColumn { builder: builder(def.data_type, rows, dict.as_ref()), def, filled: false })
            .collect();
        let (by_written, recent, table) = (HashMap::new(), Vec::new(), table.to_string());
        IlpColumns { table, ts_name, slots, by_name, by_written, recent, at: 0, rows, known, dict }
    }

    /// The definitions of the first `n` columns.
    fn defs(&self, n: usize) -> Vec<ColumnDef> {
        self.slots.iter().take(n).map(|c| c.def.clone()).collect()
    }

    fn start_row(&mut self) {
        self.slots.iter_mut().for_each(|c| c.filled = false);
        self.at = 0;
    }

    /// The column of tag or field `name` (matched without regard to case), added as `dt` with
    /// NULLs for the `row` lines before this one when the table has no such column yet; an
    /// error (its message) when it is the designated timestamp, or past [`MAX_COLUMNS`].
    fn slot(&mut self, name: &str, dt: DataType, row: usize) -> Result<usize, String> {
        self.recent_slot(name, |cols| {
            if name.eq_ignore_ascii_case(&cols.ts_name) {
                return Err(format!("'{name}' is the table's timestamp column, not a tag or field"));
            }
            cols.find(name, dt, row)
        })
    }

    /// The column in slot `j`.
    fn column(&mut self, j: usize) -> Result<&mut IlpColumn, String> {
        self.slots.get_mut(j).ok_or_else(|| format!("lost track of column {j}"))
    }

    /// The next tag of the line, known by its series: symbol `code` of slot `j`'s builder.
    fn push_code(&mut self, j: usize, code: u32) -> Result<(), String> {
        self.at += 1;
        let c = self.column(j)?;
        c.builder.push_code(code).map_err(|e| e.to_string())?;
        c.filled = true;
        Ok(())
    }

    /// The column of the designated timestamp, after the line's tags and fields; an error
    /// (its message) when the table has a column of that name of another type.
    fn ts_slot(&mut self, row: usize) -> Result<&mut IlpColumn, String> {
        let j = self.recent_slot("", |cols| cols.find_ts(row))?;
        let (table, ts) = (&self.table, &self.ts_name);
        match self.slots.get_mut(j) {
            Some(c) if c.def.data_type == DataType::Timestamp => Ok(c),
            Some(c) => Err(format!("column '{}' of table '{table}' is not a TIMESTAMP", c.def.name)),
            None => Err(format!("lost track of column '{ts}'")),
        }
    }

    /// The slot the previous line had at this key's position when it wrote the same `name`,
    /// else `find`'s (remembered for the next line).
    fn recent_slot(
        &mut self,
        name: &str,
        find: impl FnOnce(&mut IlpColumns) -> Result<usize, String>,
    ) -> Result<usize, String> {
        let k = self.at;
        self.at += 1;
        if let Some((n, j, _)) = self.recent.get(k) {
            if n == name {
                return Ok(*j);
            }
        }
        let j = find(self)?;
        self.recent.truncate(k);
        let plain = !name.bytes().any(|c| matches!(c, b',' | b'=' | b' ' | b'\\' | b'\n' | b'\r' | b'\t' | b'"'));
        self.recent.push((name.to_string(), j, plain));
        Ok(j)
    }

    /// The shape (`fast.rs`) of lines of a series whose tags are `tags` (slot, code) and whose
    /// fields are those the previous line wrote after as many keys; `None` when one of them
    /// cannot be read that way (a key with bytes that need escapes, a column of another type,
    /// a column twice).
    fn shape(&self, tags: &[(u32, u32)]) -> Option<Shape> {
        let mut fields = Vec::new();
        for (name, slot, plain) in self.recent.iter().skip(tags.len()) {
            let c = self.slots.get(*slot)?;
            if name.is_empty() {
                let tag_slots: Vec<u32> = tags.iter().map(|&(slot, _)| slot).collect();
                let ts = c.def.data_type == DataType::Timestamp;
                return Shape::new(&tag_slots, fields.into_iter(), *slot).filter(|_| ts);
            }
            let kind = match c.def.data_type {
                DataType::Int64 => Kind::Int64,
                DataType::Int32 => Kind::Int32,
                DataType::Float64 => Kind::Float64,
                _ => return None,
            };
            if !plain {
                return None;
            }
            fields.push((name.as_bytes(), *slot, kind));
        }
        None
    }

    /// The slot of column `name` (see [`IlpColumns::slot`]), by its name as written, else its
    /// lower-cased name, else a new one.
    fn find(&mut self, name: &str, dt: DataType, row: usize) -> Result<usize, String> {
        if let Some(&j) = self.by_written.get(name) {
            return Ok(j);
        }
        let j = self.find_lower(name, dt, row)?;
        self.by_written.insert(name.to_string(), j);
        Ok(j)
    }

    /// The designated timestamp's slot (added as a TIMESTAMP when the table is new).
    fn find_ts(&mut self, row: usize) -> Result<usize, String> {
        let ts = self.ts_name.clone();
        self.find_lower(&ts, DataType::Timestamp, row)
    }

    fn find_lower(&mut self, name: &str, dt: DataType, row: usize) -> Result<usize, String> {
        let lower = name.to_ascii_lowercase();
        if let Some(&j) = self.by_name.get(&lower) {
            return Ok(j);
        }
        if self.slots.len() >= MAX_COLUMNS {
            return Err(format!("{} ('{name}')", too_many_columns(&self.table)));
        }
        let mut builder = builder(dt, self.rows, self.dict.as_ref());
        (0..row).for_each(|_| builder.push_null());
        let def = ColumnDef { name: name.to_string(), data_type: dt };
        self.slots.push(IlpColumn { def, builder, filled: false });
        self.by_name.insert(lower, self.slots.len() - 1);
        Ok(self.slots.len() - 1)
    }

    /// NULL in every column the line did not give.
    fn end_row(&mut self) {
        for c in self.slots.iter_mut().filter(|c| !c.filled) {
            c.builder.push_null();
        }
    }

    fn finish(self) -> (Vec<ColumnDef>, Vec<Column>) {
        self.slots.into_iter().map(|c| (c.def, c.builder.finish())).unzip()
    }
}
