//! The default mapping of FIX application messages to table rows, and their all-or-nothing
//! append through the [`Catalog`] together with the session's sequence numbers.
//!
//! - MarketDataSnapshotFullRefresh (`W`) and MarketDataIncrementalRefresh (`X`): each MDEntry
//!   (NoMDEntries 268) of MDEntryType (269) `0` (bid) or `1` (offer) is a row of `quotes`,
//!   of type `2` (trade) a row of `trades`; other entry types are skipped. Columns: `sym`
//!   (Symbol 55 of the entry, else of the message; the partition key), `timestamp` (the
//!   designated timestamp: MDEntryDate 272 + MDEntryTime 273, a time alone on SendingTime's
//!   day, else SendingTime), `side` (`bid`/`offer`; for trades Side 54 as `buy`/`sell` if
//!   given), `price` (270), `size` (271), `action` (MDUpdateAction 279 of `X`:
//!   `new`/`change`/`delete`), `sending_time` (52; OrigSendingTime 122 of a resent message),
//!   `md_req_id` (262) and `seq` (34).
//! - ExecutionReport (`8`) is one row of `executions`: `sym` (55), `timestamp` (TransactTime
//!   60, else SendingTime), `cl_ord_id` (11), `order_id` (37), `exec_id` (17), `exec_type`
//!   (150) and `ord_status` (39) as sent, `side` (54), `last_px` (31), `last_qty` (32),
//!   `cum_qty` (14), `avg_px` (6), `sending_time` and `seq`.
//! - Tags named in `--fix-config` "tags" are added as columns after these ([`crate::extra`]).
//! - Other tags are ignored. A message with a required tag missing or a value of the wrong
//!   type adds no row at all ([`Batch::add`] fails and leaves the batch as it was).
//!
//! [`Batch::apply`] appends every table's rows and the session's sequence numbers (a row of
//! `fix_sessions`) as one write-ahead-log record: after a crash either both are there or
//! neither, so a message is never lost nor stored twice.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::extra::{self, Extra, ExtraTag, Role, Slots};
use crate::parse::{Field, FixError, Message};
use crate::time::{parse_date, parse_time, parse_timestamp};
use zepto_storage::{
    Catalog, Change, Column, ColumnBuilder, ColumnDef, DataType, Schema, StorageError, Table, TableOptions, Value,
};

const NS_PER_DAY: i64 = 86_400_000_000_000;

/// Columns of `quotes` and `trades`.
pub const MD_COLUMNS: [(&str, DataType); 9] = [
    ("sym", DataType::Symbol),
    ("timestamp", DataType::Timestamp),
    ("side", DataType::Symbol),
    ("price", DataType::Float64),
    ("size", DataType::Float64),
    ("action", DataType::Symbol),
    ("sending_time", DataType::Timestamp),
    ("md_req_id", DataType::Varchar),
    ("seq", DataType::Int64),
];

/// Columns of `executions`.
pub const EXEC_COLUMNS: [(&str, DataType); 14] = [
    ("sym", DataType::Symbol),
    ("timestamp", DataType::Timestamp),
    ("cl_ord_id", DataType::Varchar),
    ("order_id", DataType::Varchar),
    ("exec_id", DataType::Varchar),
    ("exec_type", DataType::Symbol),
    ("ord_status", DataType::Symbol),
    ("side", DataType::Symbol),
    ("last_px", DataType::Float64),
    ("last_qty", DataType::Float64),
    ("cum_qty", DataType::Float64),
    ("avg_px", DataType::Float64),
    ("sending_time", DataType::Timestamp),
    ("seq", DataType::Int64),
];

/// Columns of `fix_sessions`: one row per applied batch, the session's sequence numbers
/// after it (`in_seq`: the last incoming message processed; `out_seq`: the last one sent).
pub const SESSION_COLUMNS: [(&str, DataType); 4] = [
    ("session", DataType::Symbol),
    ("timestamp", DataType::Timestamp),
    ("in_seq", DataType::Int64),
    ("out_seq", DataType::Int64),
];

/// The tables the mapping writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    /// Bids and offers (default `quotes`).
    pub quotes: String,
    /// Trades (default `trades`).
    pub trades: String,
    /// Execution reports (default `executions`).
    pub executions: String,
    /// Session sequence numbers (default `fix_sessions`).
    pub sessions: String,
    /// Columns renamed (`sym` → `symbol`, ...), in every table the mapping writes.
    pub columns: Vec<(String, String)>,
    /// Tags added as columns, after the mapping's own, in this order.
    pub tags: Vec<ExtraTag>,
}

impl Default for TableNames {
    fn default() -> TableNames {
        TableNames {
            quotes: "quotes".into(),
            trades: "trades".into(),
            executions: "executions".into(),
            sessions: "fix_sessions".into(),
            columns: Vec::new(),
            tags: Vec::new(),
        }
    }
}

impl TableNames {
    /// The name the mapping's column `name` has in the tables (renamed, or as is).
    pub fn column<'a>(&'a self, name: &'a str) -> &'a str {
        self.columns.iter().find(|(from, _)| from == name).map_or(name, |(_, to)| to.as_str())
    }

    /// The columns the tags of `role` add, in order.
    pub fn extra_columns(&self, role: Role) -> Vec<ColumnDef> {
        let def = |t: &ExtraTag| ColumnDef { name: t.column.clone(), data_type: t.data_type };
        self.tags.iter().filter(|t| t.role == role).map(def).collect()
    }

    /// Check the renames (each of a known column, once, to a name no other column has) and
    /// the added tags (of a type [`extra::TYPES`] holds, named apart from a table's columns).
    pub fn check(&self) -> Result<(), String> {
        let known: Vec<&str> =
            MD_COLUMNS.iter().chain(&EXEC_COLUMNS).chain(&SESSION_COLUMNS).map(|(n, _)| *n).collect();
        for (i, (from, to)) in self.columns.iter().enumerate() {
            if !known.contains(&from.as_str()) {
                return Err(format!("column '{from}' is not one the FIX mapping writes"));
            }
            if to.is_empty() || self.columns.iter().take(i).any(|(f, _)| f == from) {
                return Err(format!("column '{from}' renamed twice, or to an empty name"));
            }
        }
        for t in &self.tags {
            if t.tag == 0 || t.column.is_empty() || !extra::TYPES.contains(&t.data_type) {
                let types: Vec<_> = extra::TYPES.iter().map(|d| d.sql_name()).collect();
                return Err(format!(
                    "tag {} as '{}': needs a tag number, a name, a type of {}",
                    t.tag,
                    t.column,
                    types.join(", ")
                ));
            }
        }
        let tables = [
            (&MD_COLUMNS[..], Some(Role::Quotes)),
            (&MD_COLUMNS[..], Some(Role::Trades)),
            (&EXEC_COLUMNS[..], Some(Role::Executions)),
            (&SESSION_COLUMNS[..], None),
        ];
        for (types, role) in tables {
            let mut names: Vec<String> = types.iter().map(|(n, _)| self.column(n).to_ascii_lowercase()).collect();
            names.extend(role.into_iter().flat_map(|r| self.extra_columns(r)).map(|c| c.name.to_ascii_lowercase()));
            if let Some(d) = first_duplicate(names) {
                return Err(format!("two columns of one table would be named '{d}'"));
            }
        }
        let tables: Vec<String> = [&self.quotes, &self.trades, &self.executions, &self.sessions]
            .iter()
            .map(|t| t.to_ascii_lowercase())
            .collect();
        if tables.iter().any(String::is_empty) {
            return Err("a table name is empty".into());
        }
        match first_duplicate(tables) {
            Some(d) => Err(format!("two of the tables would be '{d}' (each is written apart)")),
            None => Ok(()),
        }
    }
}

/// A name `names` holds twice, if any.
fn first_duplicate(mut names: Vec<String>) -> Option<String> {
    names.sort();
    names.iter().zip(names.iter().skip(1)).find(|(a, b)| a == b).map(|(a, _)| a.clone())
}

/// Where a session stands: the row [`Batch::apply`] writes with the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionState {
    /// The session's name (`OURS-THEIRS` CompIDs).
    pub name: String,
    /// The last incoming MsgSeqNum processed.
    pub in_seq: u64,
    /// The last outgoing MsgSeqNum used.
    pub out_seq: u64,
    /// When the state was stored, nanoseconds since the epoch: the newest row is the state
    /// (each session's are increasing, even if the clock steps back).
    pub at: i64,
}

/// Why a batch could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// A message does not map (a required tag missing, a value of the wrong type).
    #[error(transparent)]
    Fix(#[from] FixError),
    /// The store refused the batch (nothing of it was applied).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// One table's share of a batch: its name, the mapping's columns, the added ones, the rows.
struct Part<'a> {
    name: String,
    types: &'a [(&'a str, DataType)],
    extra: Vec<ColumnDef>,
    columns: Vec<Column>,
}

/// Builders of one table's columns: the mapping's, then the added tags'.
struct Cols {
    builders: Vec<ColumnBuilder>,
    extra: Vec<ColumnBuilder>,
    rows: usize,
}

impl Cols {
    fn new(types: &[(&str, DataType)], extra: &[(u32, DataType)]) -> Cols {
        Cols {
            builders: types.iter().map(|(_, dt)| ColumnBuilder::new(*dt, 64)).collect(),
            extra: extra.iter().map(|(_, dt)| ColumnBuilder::new(*dt, 64)).collect(),
            rows: 0,
        }
    }

    fn take(&mut self, types: &[(&str, DataType)], extra: &[(u32, DataType)]) -> Vec<Column> {
        let old = std::mem::replace(self, Cols::new(types, extra));
        old.builders.into_iter().chain(old.extra).map(ColumnBuilder::finish).collect()
    }

    /// Push one row: `vals` in column order, then the added tags' values (text of `raw`).
    fn push_row(&mut self, vals: &[Cell<'_>], raw: &[u8], extras: &[Extra]) -> Result<(), StorageError> {
        extra::push(raw, &mut self.extra, extras)?;
        self.push(vals)
    }

    /// Push one row: `vals` in column order.
    fn push(&mut self, vals: &[Cell<'_>]) -> Result<(), StorageError> {
        for (b, v) in self.builders.iter_mut().zip(vals) {
            match v {
                Cell::Str(Some(s)) => b.push_str(s)?,
                Cell::F64(Some(x)) => b.push_value(&Value::Float64(*x))?,
                Cell::Ts(x) => b.push_value(&Value::Timestamp(*x))?,
                Cell::I64(x) => b.push_value(&Value::Int64(*x))?,
                Cell::Str(None) | Cell::F64(None) => b.push_null(),
            }
        }
        self.rows += 1;
        Ok(())
    }
}

/// One value of a row being pushed.
#[derive(Debug, Clone, Copy)]
enum Cell<'a> {
    Str(Option<&'a str>),
    F64(Option<f64>),
    Ts(i64),
    I64(i64),
}

/// One MDEntry, checked, waiting for the rest of its message to check too. Text is kept as
/// the byte span of the value in the message, so the scratch vector outlives messages.
#[derive(Debug, Clone, Copy)]
struct MdRow {
    quote: bool,
    side: Option<&'static str>,
    action: Option<&'static str>,
    sym: (usize, usize),
    price: Option<f64>,
    size: Option<f64>,
    ts: i64,
}

/// The rows of one or more messages, built column by column, stored by [`Batch::apply`].
pub struct Batch {
    /// The tables written.
    pub names: TableNames,
    quotes: Cols,
    trades: Cols,
    executions: Cols,
    scratch: Vec<MdRow>,
    /// The added tags of quotes, then of trades (read from each MDEntry and its message).
    md_slots: Slots,
    /// How many of `md_slots` are the quotes'.
    quote_slots: usize,
    exec_slots: Slots,
    /// Added values: of the message being read (parallel to `md_slots`), of each scratch row
    /// (`md_slots.len()` a row), of the execution report being read.
    msg_vals: Vec<Extra>,
    md_vals: Vec<Extra>,
    exec_vals: Vec<Extra>,
}

impl Default for Batch {
    fn default() -> Batch {
        Batch::new(TableNames::default())
    }
}

fn text<'a>(f: &Field<'a>) -> Result<&'a str, FixError> {
    f.as_str()
}

/// The span of `value` (a slice of `raw`) in `raw`.
fn span(raw: &[u8], value: &[u8]) -> (usize, usize) {
    let start = (value.as_ptr() as usize).saturating_sub(raw.as_ptr() as usize);
    (start, start + value.len())
}

fn md_member(tag: u32) -> bool {
    // The group is the body's last part; these are the fields that may follow it.
    !matches!(tag, 89 | 93 | 813 | 814)
}

fn side_name(v: &[u8]) -> Option<&'static str> {
    Some(match v {
        b"1" => "buy",
        b"2" => "sell",
        b"5" => "sell_short",
        b"6" => "sell_short_exempt",
        b"8" => "cross",
        _ => return None,
    })
}

impl Batch {
    /// An empty batch writing to `names`.
    pub fn new(names: TableNames) -> Batch {
        let (q, t) = (extra::slots(&names.tags, Role::Quotes), extra::slots(&names.tags, Role::Trades));
        let exec_slots = extra::slots(&names.tags, Role::Executions);
        Batch {
            quotes: Cols::new(&MD_COLUMNS, &q),
            trades: Cols::new(&MD_COLUMNS, &t),
            executions: Cols::new(&EXEC_COLUMNS, &exec_slots),
            scratch: Vec::new(),
            quote_slots: q.len(),
            md_slots: q.into_iter().chain(t).collect(),
            exec_slots,
            msg_vals: Vec::new(),
            md_vals: Vec::new(),
            exec_vals: Vec::new(),
            names,
        }
    }

    /// Rows waiting to be applied.
    pub fn rows(&self) -> usize {
        self.quotes.rows + self.trades.rows + self.executions.rows
    }

    /// Add the rows of `m` (`W`, `X` or `8`; other types add nothing). Returns the rows
    /// added; on error none are.
    pub fn add(&mut self, m: &Message<'_>) -> Result<usize, MapError> {
        match m.header.msg_type {
            b"W" => self.add_md(m, false),
            b"X" => self.add_md(m, true),
            b"8" => self.add_execution(m).map(|()| 1),
            _ => Ok(0),
        }
    }

    fn add_md(&mut self, m: &Message<'_>, incremental: bool) -> Result<usize, MapError> {
        let sending = sending_time(m)?;
        let (mut msg_sym, mut md_req_id) = (None, None);
        self.msg_vals.clear();
        self.msg_vals.resize(self.md_slots.len(), Extra::Null);
        for f in m.fields() {
            let f = f?;
            extra::read(m.raw, &f, &self.md_slots, &mut self.msg_vals)?;
            match f.tag {
                55 if msg_sym.is_none() => msg_sym = Some(span(m.raw, text(&f)?.as_bytes())),
                262 if md_req_id.is_none() => md_req_id = Some(text(&f)?),
                268 => break,
                _ => {}
            }
        }
        let first = if incremental { 279 } else { 269 };
        let groups = m.group(268, first, md_member)?.ok_or(m.require(268).err().unwrap_or(FixError::Incomplete))?;
        self.scratch.clear();
        self.md_vals.clear();
        for e in groups {
            let e = e?;
            let base = self.md_vals.len();
            self.md_vals.extend_from_slice(&self.msg_vals);
            let vals = self.md_vals.get_mut(base..).unwrap_or_default();
            let entry = Entry { raw: m.raw, offset: e.offset(), slots: &self.md_slots, vals };
            match md_row(entry, e.fields(), msg_sym, sending)? {
                Some(row) => self.scratch.push(row),
                None => self.md_vals.truncate(base),
            }
        }
        let seq = i64::try_from(m.header.seq).unwrap_or(i64::MAX);
        let k = self.md_slots.len();
        for (i, r) in self.scratch.iter().enumerate() {
            let sym = m.raw.get(r.sym.0..r.sym.1).and_then(|s| std::str::from_utf8(s).ok());
            let vals = self.md_vals.get(i * k..(i + 1) * k).unwrap_or_default();
            let (qv, tv) = vals.split_at(self.quote_slots.min(vals.len()));
            let (cols, extras) = if r.quote { (&mut self.quotes, qv) } else { (&mut self.trades, tv) };
            cols.push_row(
                &[
                    Cell::Str(sym),
                    Cell::Ts(r.ts),
                    Cell::Str(r.side),
                    Cell::F64(r.price),
                    Cell::F64(r.size),
                    Cell::Str(r.action),
                    Cell::Ts(sending),
                    Cell::Str(md_req_id),
                    Cell::I64(seq),
                ],
                m.raw,
                extras,
            )?;
        }
        Ok(self.scratch.len())
    }

    fn add_execution(&mut self, m: &Message<'_>) -> Result<(), MapError> {
        let sending = sending_time(m)?;
        let mut s: [Option<&str>; 7] = [None; 7]; // 55 11 37 17 150 39 54
        let mut x: [Option<f64>; 4] = [None; 4]; // 31 32 14 6
        let mut transact = None;
        self.exec_vals.clear();
        self.exec_vals.resize(self.exec_slots.len(), Extra::Null);
        for f in m.fields() {
            let f = f?;
            extra::read(m.raw, &f, &self.exec_slots, &mut self.exec_vals)?;
            let slot = match f.tag {
                55 => s.get_mut(0),
                11 => s.get_mut(1),
                37 => s.get_mut(2),
                17 => s.get_mut(3),
                150 => s.get_mut(4),
                39 => s.get_mut(5),
                54 => s.get_mut(6),
                31 | 32 | 14 | 6 => {
                    let i = match f.tag {
                        31 => 0,
                        32 => 1,
                        14 => 2,
                        _ => 3,
                    };
                    if let Some(v) = x.get_mut(i) {
                        *v = Some(f.as_f64()?);
                    }
                    None
                }
                60 => {
                    transact = Some(parse_timestamp(f.value).ok_or(f.bad("TransactTime is a UTCTimestamp"))?);
                    None
                }
                _ => None,
            };
            if let Some(v) = slot.filter(|v| v.is_none()) {
                *v = Some(text(&f)?);
            }
        }
        let [sym, cl_ord_id, order_id, exec_id, exec_type, ord_status, side] = s;
        for (tag, v) in [(55, sym), (37, order_id), (17, exec_id), (150, exec_type), (39, ord_status), (54, side)] {
            if v.is_none() {
                return Err(m.require(tag).err().unwrap_or(FixError::MissingTag { offset: 0, tag }).into());
            }
        }
        let side = side.map(|v| side_name(v.as_bytes()).unwrap_or(v));
        let [last_px, last_qty, cum_qty, avg_px] = x;
        let seq = i64::try_from(m.header.seq).unwrap_or(i64::MAX);
        self.executions.push_row(
            &[
                Cell::Str(sym),
                Cell::Ts(transact.unwrap_or(sending)),
                Cell::Str(cl_ord_id),
                Cell::Str(order_id),
                Cell::Str(exec_id),
                Cell::Str(exec_type),
                Cell::Str(ord_status),
                Cell::Str(side),
                Cell::F64(last_px),
                Cell::F64(last_qty),
                Cell::F64(cum_qty),
                Cell::F64(avg_px),
                Cell::Ts(sending),
                Cell::I64(seq),
            ],
            m.raw,
            &self.exec_vals,
        )?;
        Ok(())
    }

    /// Store the batch's rows, and `session`'s row if given, as one logged change: all or
    /// nothing. Creates missing tables first (each empty). The batch is empty afterwards
    /// either way. Returns the data rows stored.
    pub fn apply(&mut self, catalog: &Catalog, session: Option<&SessionState>) -> Result<usize, StorageError> {
        let rows = self.rows();
        let parts = self.parts(session)?;
        if parts.is_empty() {
            return Ok(0);
        }
        for p in &parts {
            ensure_table(catalog, p, &self.names)?;
        }
        let owned: Vec<String> = parts.iter().map(|p| p.name.clone()).collect();
        let names: Vec<&str> = owned.iter().map(String::as_str).collect();
        catalog.write_many(&names, |tables| {
            for (t, p) in tables.iter().zip(&parts) {
                check_schema(t, p, &self.names)?;
                t.validate(&p.columns)?;
            }
            let changes: Vec<Change<'_>> = tables
                .iter()
                .zip(&parts)
                .map(|(t, p)| Change::Append { table: t.name(), columns: &p.columns })
                .collect();
            let logged = catalog.log(&changes)?;
            drop(changes);
            let batches: Vec<Vec<Column>> = parts.into_iter().map(|p| p.columns).collect();
            logged.apply(|| {
                for (t, cols) in tables.iter_mut().zip(batches) {
                    t.append(cols)?;
                }
                Ok::<_, StorageError>(())
            })
        })?;
        Ok(rows)
    }

    /// The batch's rows by table, and `session`'s row; the batch is empty afterwards.
    fn parts(&mut self, session: Option<&SessionState>) -> Result<Vec<Part<'static>>, StorageError> {
        let mut parts = Vec::new();
        let (q, t) = self.md_slots.split_at(self.quote_slots.min(self.md_slots.len()));
        for (name, cols, types, slots, role) in [
            (&self.names.quotes, &mut self.quotes, &MD_COLUMNS[..], q, Role::Quotes),
            (&self.names.trades, &mut self.trades, &MD_COLUMNS[..], t, Role::Trades),
            (&self.names.executions, &mut self.executions, &EXEC_COLUMNS[..], &self.exec_slots[..], Role::Executions),
        ] {
            if cols.rows > 0 {
                let (extra, columns) = (self.names.extra_columns(role), cols.take(types, slots));
                parts.push(Part { name: name.clone(), types, extra, columns });
            }
        }
        if let Some(s) = session {
            let (name, columns) = (self.names.sessions.clone(), session_row(s)?);
            parts.push(Part { name, types: &SESSION_COLUMNS[..], extra: Vec::new(), columns });
        }
        Ok(parts)
    }
}

/// When the message was first sent: OrigSendingTime (122) of a resent message (PossDupFlag),
/// else SendingTime (52).
fn sending_time(m: &Message<'_>) -> Result<i64, FixError> {
    if m.header.poss_dup {
        if let Some(f) = m.field(122) {
            return parse_timestamp(f.value).ok_or(f.bad("OrigSendingTime is a UTCTimestamp"));
        }
    }
    let f = m.require(52)?;
    parse_timestamp(f.value).ok_or(f.bad("SendingTime is a UTCTimestamp"))
}

/// One MDEntry being read: its message, where it starts, and the added tags' slots and
/// values (those of its message until the entry's own replace them).
struct Entry<'e> {
    raw: &'e [u8],
    offset: usize,
    slots: &'e [(u32, DataType)],
    vals: &'e mut [Extra],
}

/// The row of one MDEntry (`None` for an entry type not mapped).
fn md_row<'a>(
    entry: Entry<'_>,
    fields: impl Iterator<Item = Field<'a>>,
    msg_sym: Option<(usize, usize)>,
    sending: i64,
) -> Result<Option<MdRow>, FixError> {
    let Entry { raw, offset, slots, vals } = entry;
    let (mut kind, mut date, mut time, mut trade_side) = (None, None, None, None);
    let mut row = MdRow { quote: true, side: None, action: None, sym: (0, 0), price: None, size: None, ts: sending };
    let mut sym = msg_sym;
    for f in fields {
        extra::read(raw, &f, slots, vals)?;
        match f.tag {
            269 => kind = Some(f.value),
            279 => {
                row.action = Some(match f.value {
                    b"0" => "new",
                    b"1" => "change",
                    b"2" => "delete",
                    _ => return Err(f.bad("MDUpdateAction is 0, 1 or 2")),
                })
            }
            55 => sym = Some(span(raw, text(&f)?.as_bytes())),
            270 => row.price = Some(f.as_f64()?),
            271 => row.size = Some(f.as_f64()?),
            272 => date = Some(parse_date(f.value).ok_or(f.bad("MDEntryDate is a UTCDateOnly"))?),
            273 => time = Some(parse_time(f.value).ok_or(f.bad("MDEntryTime is a UTCTimeOnly"))?),
            54 => trade_side = side_name(f.value),
            _ => {}
        }
    }
    let kind = kind.ok_or(FixError::MissingTag { offset, tag: 269 })?;
    (row.quote, row.side) = match kind {
        b"0" => (true, Some("bid")),
        b"1" => (true, Some("offer")),
        b"2" => (false, trade_side),
        _ => return Ok(None),
    };
    row.sym = sym.ok_or(FixError::MissingTag { offset, tag: 55 })?;
    let day = sending.div_euclid(NS_PER_DAY) * NS_PER_DAY;
    row.ts = match (date, time) {
        (Some(d), Some(t)) => d.saturating_add(t),
        (None, Some(t)) => day.saturating_add(t),
        (Some(d), None) => d,
        (None, None) => sending,
    };
    Ok(Some(row))
}

fn session_row(s: &SessionState) -> Result<Vec<Column>, StorageError> {
    let mut c = Cols::new(&SESSION_COLUMNS, &[]);
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    c.push(&[Cell::Str(Some(&s.name)), Cell::Ts(s.at), Cell::I64(int(s.in_seq)), Cell::I64(int(s.out_seq))])?;
    Ok(c.take(&SESSION_COLUMNS, &[]))
}

/// The columns a part's table has: the mapping's (renamed), then the added tags'.
fn schema_of(p: &Part<'_>, names: &TableNames) -> Schema {
    let def = |(n, dt): &(&str, DataType)| ColumnDef { name: names.column(n).to_string(), data_type: *dt };
    Schema { columns: p.types.iter().map(def).chain(p.extra.iter().cloned()).collect() }
}

/// Create the part's table unless it exists. A table made before tags were added gets their
/// columns (added at the end, NULL in its earlier rows).
fn ensure_table(catalog: &Catalog, p: &Part<'_>, names: &TableNames) -> Result<(), StorageError> {
    let want = schema_of(p, names);
    let Ok(t) = catalog.snapshot(&p.name) else {
        let key = p.types.first().map(|(n, _)| names.column(n).to_string());
        let opts = TableOptions {
            partition_key: key,
            timestamp: Some(names.column("timestamp").to_string()),
            ..Default::default()
        };
        return catalog.create(Table::new(&p.name, want, &opts)?, true).map(|_| ());
    };
    let have = &t.schema().columns;
    let prefix = have.len() < want.columns.len() && have.iter().zip(&want.columns).all(|(a, b)| same(a, b));
    if prefix {
        for def in want.columns.iter().skip(have.len()) {
            catalog.add_column(&p.name, def.clone())?;
        }
    }
    Ok(())
}

fn same(a: &ColumnDef, b: &ColumnDef) -> bool {
    a.name.eq_ignore_ascii_case(&b.name) && a.data_type == b.data_type
}

/// The table has the part's columns, in order.
fn check_schema(t: &Table, p: &Part<'_>, names: &TableNames) -> Result<(), StorageError> {
    let want = schema_of(p, names).columns;
    let cols = &t.schema().columns;
    if cols.len() == want.len() && cols.iter().zip(&want).all(|(a, b)| same(a, b)) {
        Ok(())
    } else {
        Err(StorageError::Invalid(format!(
            "table '{}' exists with other columns than the FIX mapping's ({})",
            t.name(),
            want.iter().map(|c| format!("{} {}", c.name, c.data_type)).collect::<Vec<_>>().join(", ")
        )))
    }
}

/// The last sequence numbers stored for session `name` (the highest of each), if any.
pub fn last_state(catalog: &Catalog, names: &TableNames, name: &str) -> Option<SessionState> {
    let t = catalog.snapshot(&names.sessions).ok()?;
    let mut best: Option<SessionState> = None;
    for p in t.partitions() {
        let cols = p.columns();
        let [sess, ts, ins, outs] = &*cols else { continue };
        for i in 0..p.len() {
            if sess.str_at(i) != Some(name) {
                continue;
            }
            let (Value::Timestamp(at), Value::Int64(a), Value::Int64(b)) = (ts.get(i), ins.get(i), outs.get(i)) else {
                continue;
            };
            // The newest row (rows of one time keep their order: the later one wins).
            if best.as_ref().is_none_or(|s| at >= s.at) {
                let (in_seq, out_seq) = (u64::try_from(a).unwrap_or(0), u64::try_from(b).unwrap_or(0));
                best = Some(SessionState { name: name.to_string(), in_seq, out_seq, at });
            }
        }
    }
    best
}

/// Delete every row of the sessions table but each session's newest (the one
/// [`last_state`] reads): the table gains a row per stored batch, and only the last says
/// where a session resumes. Returns the rows deleted.
pub fn compact_sessions(catalog: &Catalog, names: &TableNames) -> Result<usize, StorageError> {
    if !catalog.exists(&names.sessions) {
        return Ok(0);
    }
    catalog.modify(&names.sessions, |t| {
        // A partition is one session's rows in time order (its key is the session's name).
        let sel: Vec<(u32, Vec<u32>)> = t
            .partitions()
            .iter()
            .enumerate()
            .filter(|(_, p)| p.len() > 1)
            .map(|(s, p)| (s as u32, (0..p.len() as u32 - 1).collect()))
            .collect();
        if sel.is_empty() {
            return Ok(0);
        }
        catalog.log(&[zepto_storage::Change::Delete { table: t.name(), rows: &sel }])?.apply(|| t.delete_rows(&sel))
    })
}
