//! The engine's changes as WAL records, and recovery: replaying them into a catalog.
//!
//! One record holds the changes one operation logged together (a multi-table ILP batch is one
//! record, so it is replayed all or not at all). Record payload:
//! ```text
//! count u32 | change*        change = kind u8 | body length u32 | body
//! 1 create: name | ncols u32 | (name, type)* | partition key (opt name) | timestamp (opt name)
//! 2 drop:   name
//! 3 add:    table | column | type
//! 4 append: table | Arrow IPC stream of the batch (columns named c0, c1, ...; integers and
//!           symbol keys as narrow as the batch allows, read back in the table's types)
//! 5 delete: table | selection
//! 6 update: table | selection | ncols u32 | column index u32* | Arrow IPC stream of the values
//! 7 tier:   table | before i64 | files
//! 8 retain: table | before i64
//! 9 ttl:    table | ttl ns i64 (0: none)
//! 10 index: table | definition line (`IndexDef::to_line`)
//! 11 drop index: table | index name
//! 12 tier shard: table | shard | before i64 | files
//! 13 adopt shard: table | shard | path prefix | files
//! 14 dedup: table | nkeys u32 | key column name* (none: deduplication off)
//! 15 create view: name | base table | query text
//! 16 drop view: name
//! selection = nparts u32 | (slot u32 | nrows u32 | row u32*)*
//! files = nfiles u32 | (path | rows i64 | bytes i64 | min_ts i64 | max_ts i64)*
//! shard = null key u8 | nkeys u32 | key*
//! ```
//! Strings are u32 length + UTF-8; types are their SQL names; an optional name is a u8 flag and
//! the name. Batches travel as Arrow IPC because that format already carries every column
//! type with its NULLs, and its reader already converts into engine columns.

use zepto_storage::feed::{FeedChange, FeedEvent, Pos};
use zepto_storage::{
    Catalog, Change, Column, ColumnDef, DataType, HistFile, IndexDef, Schema, Shard, StorageError, Table, TableOptions,
    ViewDef,
};

/// The kinds of change a record holds (the layout in the module docs): written by
/// `put_change`, read by `apply`, `feed_events` and `appended_rows`. A number is never reused:
/// logs of earlier versions still load.
mod kinds {
    pub const CREATE_TABLE: u8 = 1;
    pub const DROP_TABLE: u8 = 2;
    pub const ADD_COLUMN: u8 = 3;
    pub const APPEND: u8 = 4;
    pub const DELETE: u8 = 5;
    pub const UPDATE: u8 = 6;
    pub const TIER: u8 = 7;
    pub const RETAIN: u8 = 8;
    pub const SET_TTL: u8 = 9;
    pub const CREATE_INDEX: u8 = 10;
    pub const DROP_INDEX: u8 = 11;
    pub const TIER_SHARD: u8 = 12;
    pub const ADOPT_SHARD: u8 = 13;
    pub const SET_DEDUP: u8 = 14;
    pub const CREATE_VIEW: u8 = 15;
    pub const DROP_VIEW: u8 = 16;
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_opt(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
        None => out.push(0),
    }
}

fn put_selection(out: &mut Vec<u8>, sel: &[(u32, Vec<u32>)]) {
    out.extend_from_slice(&(sel.len() as u32).to_le_bytes());
    for (slot, rows) in sel {
        out.extend_from_slice(&slot.to_le_bytes());
        out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        for r in rows {
            out.extend_from_slice(&r.to_le_bytes());
        }
    }
}

fn put_files(out: &mut Vec<u8>, files: &[HistFile]) {
    out.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for f in files {
        put_str(out, &f.path);
        for v in [f.rows as i64, f.bytes as i64, f.min_ts, f.max_ts] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

fn put_shard(out: &mut Vec<u8>, shard: &Shard<'_>) {
    out.push(u8::from(shard.null_key));
    out.extend_from_slice(&(shard.keys.len() as u32).to_le_bytes());
    for k in shard.keys {
        put_str(out, k);
    }
}

/// `columns` as an Arrow IPC stream at the end of `out`, integers and symbol codes as narrow
/// as their values allow (`zepto_io::narrow`: replay reads them into the table's types).
/// A SYMBOL column coded against its table's large dictionary (an ingest door's batch) is
/// written with a dictionary of the strings its rows use ([`Column::compact_symbols`]).
fn ipc_batch(columns: &[Column], out: &mut Vec<u8>) -> Result<(), StorageError> {
    let names: Vec<String> = (0..columns.len()).map(|i| format!("c{i}")).collect();
    let compact: Vec<Option<Column>> = columns.iter().map(Column::compact_symbols).collect();
    let refs: Vec<&Column> = columns.iter().zip(&compact).map(|(c, own)| own.as_ref().unwrap_or(c)).collect();
    let rows = columns.iter().map(Column::len).max().unwrap_or(0);
    let mut w = zepto_io::ipc::IpcResultWriter::narrow(&names, &refs, rows)
        .map_err(|e| StorageError::Durability(format!("encoding a batch for the WAL: {e}")))?;
    // Room for the whole stream up front, generously (pages never written are never touched):
    // grown by doubling, a large batch was copied again and again into fresh pages. Messages
    // carry at most 64k rows, each with its metadata and padding.
    let data: usize = refs.iter().map(|c| c.data_bytes()).sum();
    out.reserve(data + data / 8 + (rows / 65_536 + 2) * 8192);
    while let Some(chunk) = w.next_chunk().map_err(|e| StorageError::Durability(e.to_string()))? {
        out.extend_from_slice(&chunk);
    }
    Ok(())
}

/// Encode changes as one record payload.
pub fn encode(changes: &[Change<'_>]) -> Result<Vec<u8>, StorageError> {
    let mut out = Vec::new();
    out.extend_from_slice(&(changes.len() as u32).to_le_bytes());
    for c in changes {
        // Kind, then the body's length (filled in below), then the body, written in place.
        let head = out.len();
        out.extend_from_slice(&[0u8; 5]);
        let kind = put_change(c, &mut out)?;
        let body = out.len() - head - 5;
        let len = u32::try_from(body)
            .map_err(|_| StorageError::Durability(format!("a change of {body} bytes is too large to log")))?;
        out[head] = kind;
        out[head + 1..head + 5].copy_from_slice(&len.to_le_bytes());
    }
    Ok(out)
}

/// `c`'s body at the end of `body`; returns its kind.
fn put_change(c: &Change<'_>, body: &mut Vec<u8>) -> Result<u8, StorageError> {
    Ok(match c {
        Change::CreateTable { name, schema, partition_key, timestamp } => {
            put_str(body, name);
            body.extend_from_slice(&(schema.columns.len() as u32).to_le_bytes());
            for d in &schema.columns {
                put_str(body, &d.name);
                put_str(body, &d.data_type.sql_name());
            }
            put_opt(body, *partition_key);
            put_opt(body, *timestamp);
            kinds::CREATE_TABLE
        }
        Change::DropTable { name } => {
            put_str(body, name);
            kinds::DROP_TABLE
        }
        Change::AddColumn { table, def } => {
            put_str(body, table);
            put_str(body, &def.name);
            put_str(body, &def.data_type.sql_name());
            kinds::ADD_COLUMN
        }
        Change::Append { table, columns } => {
            put_str(body, table);
            ipc_batch(columns, body)?;
            kinds::APPEND
        }
        Change::Delete { table, rows } => {
            put_str(body, table);
            put_selection(body, rows);
            kinds::DELETE
        }
        Change::Update { table, rows, columns, values } => {
            put_str(body, table);
            put_selection(body, rows);
            body.extend_from_slice(&(columns.len() as u32).to_le_bytes());
            for &c in *columns {
                body.extend_from_slice(&(c as u32).to_le_bytes());
            }
            ipc_batch(values, body)?;
            kinds::UPDATE
        }
        Change::Tier { table, before, files } => {
            put_str(body, table);
            body.extend_from_slice(&before.to_le_bytes());
            put_files(body, files);
            kinds::TIER
        }
        Change::TierShard { table, shard, before, files } => {
            put_str(body, table);
            put_shard(body, shard);
            body.extend_from_slice(&before.to_le_bytes());
            put_files(body, files);
            kinds::TIER_SHARD
        }
        Change::AdoptShard { table, shard, prefix, files } => {
            put_str(body, table);
            put_shard(body, shard);
            put_str(body, prefix);
            put_files(body, files);
            kinds::ADOPT_SHARD
        }
        Change::Retain { table, before } => {
            put_str(body, table);
            body.extend_from_slice(&before.to_le_bytes());
            kinds::RETAIN
        }
        Change::SetTtl { table, ttl_ns } => {
            put_str(body, table);
            body.extend_from_slice(&ttl_ns.unwrap_or(0).to_le_bytes());
            kinds::SET_TTL
        }
        Change::CreateIndex { table, def } => {
            put_str(body, table);
            put_str(body, &def.to_line());
            kinds::CREATE_INDEX
        }
        Change::DropIndex { table, name } => {
            put_str(body, table);
            put_str(body, name);
            kinds::DROP_INDEX
        }
        Change::SetDedup { table, keys } => {
            put_str(body, table);
            body.extend_from_slice(&(keys.len() as u32).to_le_bytes());
            keys.iter().for_each(|k| put_str(body, k));
            kinds::SET_DEDUP
        }
        Change::CreateView { def } => {
            put_str(body, def.name());
            put_str(body, def.base());
            put_str(body, def.sql());
            kinds::CREATE_VIEW
        }
        Change::DropView { name } => {
            put_str(body, name);
            kinds::DROP_VIEW
        }
    })
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or("record ends early")?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self) -> Result<i64, String> {
        let b = self.take(8)?;
        Ok(i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn str(&mut self) -> Result<&'a str, String> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| "a name is not UTF-8".to_string())
    }

    fn opt(&mut self) -> Result<Option<&'a str>, String> {
        match self.u8()? {
            0 => Ok(None),
            _ => self.str().map(Some),
        }
    }

    fn selection(&mut self) -> Result<Vec<(u32, Vec<u32>)>, String> {
        let n = self.u32()? as usize;
        let mut sel = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let slot = self.u32()?;
            let k = self.u32()? as usize;
            let raw = self.take(k.checked_mul(4).ok_or("selection too large")?)?;
            let rows = raw.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            sel.push((slot, rows));
        }
        Ok(sel)
    }

    fn files(&mut self) -> Result<Vec<HistFile>, String> {
        let n = self.u32()? as usize;
        let mut files = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let path = self.str()?.to_string();
            let (rows, bytes, min_ts, max_ts) = (self.i64()?, self.i64()?, self.i64()?, self.i64()?);
            files.push(HistFile { path, rows: rows as u64, bytes: bytes as u64, min_ts, max_ts });
        }
        Ok(files)
    }

    /// A shard: whether it holds the NULL key, and its keys.
    fn shard(&mut self) -> Result<(bool, Vec<String>), String> {
        let null_key = self.u8()? != 0;
        let n = self.u32()? as usize;
        let keys = (0..n).map(|_| self.str().map(str::to_string)).collect::<Result<Vec<_>, _>>()?;
        Ok((null_key, keys))
    }

    fn data_type(&mut self) -> Result<DataType, String> {
        let s = self.str()?;
        DataType::from_sql(s).ok_or_else(|| format!("unknown type '{s}'"))
    }
}

/// Rows one record appends (its INSERT/COPY/ingest batches), read without applying it: what
/// recovery reports when it has to drop an intact record. `None` if the record does not decode.
pub fn appended_rows(payload: &[u8]) -> Option<u64> {
    let mut c = Cursor { b: payload, pos: 0 };
    let mut rows = 0;
    for _ in 0..c.u32().ok()? {
        let kind = c.u8().ok()?;
        let len = c.u32().ok()? as usize;
        let mut b = Cursor { b: c.take(len).ok()?, pos: 0 };
        if kind == kinds::APPEND {
            b.str().ok()?;
            rows += zepto_io::ipc::count_ipc_rows(&b.b[b.pos..])?;
        }
    }
    Some(rows)
}

/// A table created: its columns, partition key and designated timestamp (deduplication keys
/// come in a change of their own).
fn replay_create(catalog: &Catalog, b: &mut Cursor<'_>) -> Result<(), String> {
    let err = |e: StorageError| e.to_string();
    let name = b.str()?;
    let ncols = b.u32()? as usize;
    let mut columns = Vec::with_capacity(ncols.min(4096));
    for _ in 0..ncols {
        let col = b.str()?.to_string();
        columns.push(ColumnDef { name: col, data_type: b.data_type()? });
    }
    let opts = TableOptions {
        partition_key: b.opt()?.map(str::to_string),
        timestamp: b.opt()?.map(str::to_string),
        dedup_keys: Vec::new(),
        one_partition: false,
    };
    let t = Table::new(name, Schema { columns }, &opts).map_err(err)?;
    catalog.create(t, false).map_err(err)?;
    Ok(())
}

/// An update: values replaced in place (their types come from the table's schema).
fn replay_update(catalog: &Catalog, b: &mut Cursor<'_>) -> Result<(), String> {
    let table = b.str()?;
    let sel = b.selection()?;
    let n = b.u32()? as usize;
    let columns = (0..n).map(|_| b.u32().map(|c| c as usize)).collect::<Result<Vec<_>, _>>()?;
    let snap = catalog.snapshot(table).map_err(|e| e.to_string())?;
    let defs = columns
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let d = snap.schema().columns.get(c).ok_or_else(|| format!("table '{table}' has no column {c}"))?;
            Ok(ColumnDef { name: format!("c{k}"), data_type: d.data_type })
        })
        .collect::<Result<Vec<_>, String>>()?;
    drop(snap);
    let values = zepto_io::ipc::read_ipc_stream(&b.b[b.pos..], &defs).map_err(|e| e.to_string())?;
    // Through the catalog's log, as the statement went (see the delete's replay).
    catalog
        .modify(table, |t| {
            let logged =
                catalog.log(&[Change::Update { table: t.name(), rows: &sel, columns: &columns, values: &values }])?;
            logged.apply(|| t.update_rows(&sel, &columns, values))
        })
        .map_err(|e: StorageError| e.to_string())?;
    Ok(())
}

/// A shard's rows tiered to shared storage (12) or a shard adopted from it (13).
fn replay_shard(catalog: &Catalog, kind: u8, b: &mut Cursor<'_>) -> Result<(), String> {
    let err = |e: StorageError| e.to_string();
    let table = b.str()?;
    let (null_key, keys) = b.shard()?;
    let shard = Shard { keys: &keys, null_key };
    if kind == kinds::TIER_SHARD {
        let before = b.i64()?;
        let files = b.files()?;
        catalog.tier_shard_logged(table, shard, before, &files).map_err(err)?;
    } else {
        let prefix = b.str()?;
        let files = b.files()?;
        catalog.adopt_shard(table, shard, prefix, &files).map_err(err)?;
    }
    Ok(())
}

/// A materialized view's creation (15) or drop (16). Only the definition is logged: the
/// view is compiled and built from its table when first read.
fn replay_view(catalog: &Catalog, kind: u8, b: &mut Cursor<'_>) -> Result<(), String> {
    let err = |e: StorageError| e.to_string();
    if kind == kinds::CREATE_VIEW {
        let def = ViewDef::new(b.str()?, b.str()?, b.str()?).map_err(err)?;
        catalog.create_view(def, None, false).map_err(err)?;
    } else {
        catalog.drop_view(b.str()?, false).map_err(err)?;
    }
    Ok(())
}

/// Apply one record's changes to `catalog` (which must not log them again).
pub fn apply(catalog: &Catalog, payload: &[u8]) -> Result<(), String> {
    let mut c = Cursor { b: payload, pos: 0 };
    let n = c.u32()?;
    for _ in 0..n {
        let kind = c.u8()?;
        let len = c.u32()? as usize;
        let mut b = Cursor { b: c.take(len)?, pos: 0 };
        let err = |e: StorageError| e.to_string();
        match kind {
            kinds::CREATE_TABLE => replay_create(catalog, &mut b)?,
            kinds::DROP_TABLE => {
                catalog.drop_table(b.str()?, false).map_err(err)?;
            }
            kinds::ADD_COLUMN => {
                let table = b.str()?;
                let name = b.str()?.to_string();
                catalog.add_column(table, ColumnDef { name, data_type: b.data_type()? }).map_err(err)?;
            }
            kinds::APPEND => {
                let table = b.str()?;
                let cols = read_batch(catalog, table, &b.b[b.pos..])?;
                catalog.append(table, cols).map_err(err)?;
            }
            kinds::DELETE => {
                let table = b.str()?;
                let sel = b.selection()?;
                // Through the catalog's log, as the statement went: its materialized views
                // are invalidated and its subscribers told, as for every other change.
                catalog
                    .modify(table, |t| {
                        catalog.log(&[Change::Delete { table: t.name(), rows: &sel }])?.apply(|| t.delete_rows(&sel))
                    })
                    .map_err(err)?;
            }
            kinds::UPDATE => replay_update(catalog, &mut b)?,
            kinds::TIER => {
                let table = b.str()?;
                let before = b.i64()?;
                let files = b.files()?;
                catalog.tier_logged(table, before, &files).map_err(err)?;
            }
            kinds::TIER_SHARD | kinds::ADOPT_SHARD => replay_shard(catalog, kind, &mut b)?,
            kinds::RETAIN => {
                let table = b.str()?;
                catalog.retain_before(table, b.i64()?).map_err(err)?;
            }
            kinds::SET_TTL => {
                let table = b.str()?;
                let ttl = b.i64()?;
                catalog.set_ttl(table, (ttl > 0).then_some(ttl)).map_err(err)?;
            }
            kinds::CREATE_INDEX => {
                let table = b.str()?;
                let def = IndexDef::from_line(b.str()?).map_err(err)?;
                catalog.create_index(table, def, false).map_err(err)?;
            }
            kinds::DROP_INDEX => {
                b.str()?;
                catalog.drop_index(b.str()?, false).map_err(err)?;
            }
            kinds::SET_DEDUP => {
                let table = b.str()?;
                let n = b.u32()? as usize;
                let keys = (0..n).map(|_| b.str().map(str::to_string)).collect::<Result<Vec<_>, _>>()?;
                catalog.set_dedup(table, &keys).map_err(err)?;
            }
            kinds::CREATE_VIEW | kinds::DROP_VIEW => replay_view(catalog, kind, &mut b)?,
            k => return Err(format!("unknown change kind {k}")),
        }
    }
    Ok(())
}

/// The change-feed events of `table` in record `lsn` (its appends as columns, its deletes and
/// updates as row counts, its drop), placed as the catalog placed them when it published the
/// record: among the record's appends, deletes, updates and drops of every table, in order
/// (`Catalog::log`). Appended batches are read with the table's columns as they are now.
pub fn feed_events(catalog: &Catalog, lsn: u64, payload: &[u8], table: &str) -> Result<Vec<FeedEvent>, String> {
    let mut c = Cursor { b: payload, pos: 0 };
    let n = c.u32()?;
    let mut found = Vec::new();
    let mut rowful = 0usize;
    for _ in 0..n {
        let kind = c.u8()?;
        let len = c.u32()? as usize;
        let mut b = Cursor { b: c.take(len)?, pos: 0 };
        if !matches!(kind, kinds::DROP_TABLE | kinds::APPEND | kinds::DELETE | kinds::UPDATE) {
            continue;
        }
        rowful += 1;
        let name = b.str()?;
        if !name.eq_ignore_ascii_case(table) {
            continue;
        }
        let change = match kind {
            kinds::DROP_TABLE => FeedChange::Drop,
            kinds::APPEND => FeedChange::Append(read_batch(catalog, name, &b.b[b.pos..])?),
            kinds::DELETE => FeedChange::Delete(b.selection()?.iter().map(|(_, r)| r.len()).sum()),
            _ => FeedChange::Update(b.selection()?.iter().map(|(_, r)| r.len()).sum()),
        };
        found.push((rowful, name.to_string(), change));
    }
    let pos: Vec<Pos> = Pos::of_record(lsn, rowful).collect();
    Ok(found.into_iter().map(|(i, table, change)| FeedEvent { seq: 0, pos: pos[i - 1], table, change }).collect())
}

/// An appended batch of `table` from its Arrow IPC stream, in the table's column types: its
/// layout read without waiting for, or folding in, a writer's deferred rows; when that
/// layout is one a writer has since changed (a column added), the table's as it is now.
fn read_batch(catalog: &Catalog, table: &str, ipc: &[u8]) -> Result<Vec<Column>, String> {
    let defs = |schema: &Schema| -> Vec<ColumnDef> {
        let def = |(i, d): (usize, &ColumnDef)| ColumnDef { name: format!("c{i}"), data_type: d.data_type };
        schema.columns.iter().enumerate().map(def).collect()
    };
    let layout = catalog.layout(table).map_err(|e| e.to_string())?;
    match zepto_io::ipc::read_ipc_stream(ipc, &defs(&layout.schema)) {
        Ok(cols) => Ok(cols),
        Err(first) => {
            let now = catalog.snapshot(table).map_err(|e| e.to_string())?;
            if now.schema() == &layout.schema {
                return Err(format!("a batch of '{table}' as the table is now: {first}"));
            }
            zepto_io::ipc::read_ipc_stream(ipc, &defs(now.schema()))
                .map_err(|e| format!("a batch of '{table}' as the table is now: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every change kind keeps the number the layout gives it (module docs): a log written by
    /// an earlier version is read by these numbers.
    #[test]
    fn each_change_is_logged_under_its_documented_kind() {
        let int = |name: &str| ColumnDef { name: name.into(), data_type: DataType::Int64 };
        let schema = Schema { columns: vec![int("a")] };
        let cols = [Column::nulls(DataType::Int64, 2)];
        let rows = [(0u32, vec![0u32, 1])];
        let files =
            [HistFile { path: "t/date=2024-01-02/part-1-a.parquet".into(), rows: 2, bytes: 9, min_ts: 1, max_ts: 2 }];
        let keys = ["k".to_string()];
        let shard = || Shard { keys: &keys, null_key: false };
        let index = IndexDef::new("i", "a", "hnsw", Vec::new()).expect("an index definition");
        let view = ViewDef::new("v", "t", "SELECT count(*) FROM t").expect("a view definition");
        let def = int("b");
        let cases = [
            (Change::CreateTable { name: "t", schema: &schema, partition_key: None, timestamp: None }, 1),
            (Change::DropTable { name: "t" }, 2),
            (Change::AddColumn { table: "t", def: &def }, 3),
            (Change::Append { table: "t", columns: &cols }, 4),
            (Change::Delete { table: "t", rows: &rows }, 5),
            (Change::Update { table: "t", rows: &rows, columns: &[0], values: &cols }, 6),
            (Change::Tier { table: "t", before: 5, files: &files }, 7),
            (Change::Retain { table: "t", before: 5 }, 8),
            (Change::SetTtl { table: "t", ttl_ns: Some(7) }, 9),
            (Change::CreateIndex { table: "t", def: &index }, 10),
            (Change::DropIndex { table: "t", name: "i" }, 11),
            (Change::TierShard { table: "t", shard: shard(), before: 5, files: &files }, 12),
            (Change::AdoptShard { table: "t", shard: shard(), prefix: "p", files: &files }, 13),
            (Change::SetDedup { table: "t", keys: &keys }, 14),
            (Change::CreateView { def: &view }, 15),
            (Change::DropView { name: "v" }, 16),
        ];
        for (change, kind) in cases {
            let payload = encode(std::slice::from_ref(&change)).expect("the change encodes");
            // count u32, then the change's kind.
            assert_eq!(payload[4], kind, "{change:?}");
        }
    }
}
