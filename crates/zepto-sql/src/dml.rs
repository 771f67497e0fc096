//! DELETE and UPDATE: corrections of bad ticks, durable like every other change.
//!
//! The WHERE and SET expressions are bound against the table outside any lock (uncorrelated
//! subqueries run then). Under the table's write lock the rows are chosen, per partition, by
//! evaluating the predicate over the partition's columns, and the change is logged as its
//! resolved effect (partition slot + row positions, and the new values), never as the
//! expression: replay needs no re-evaluation, so `now()` or a subquery over another table
//! cannot make a replay differ. Then it is applied. Writers of that table wait meanwhile;
//! readers keep their snapshots.
//!
//! In a session scoped to a tenant ([`crate::access`]), a table with a `tenant_id` column
//! shows the statement only the tenant's rows: the scope's predicate chooses rows first, and
//! the WHERE (and SET expressions) are evaluated over those alone. An UPDATE may not SET
//! `tenant_id` there.
//!
//! UPDATE of the partition key or the designated timestamp moves rows (to another partition,
//! or to another place in time order): it is logged and applied as the deletion of the rows
//! and the append of their new versions, in one record. Other columns change in place.
//!
//! A statement is bound once ([`bind_delete`], [`bind_update`]: an [`Edit`]); what it changes
//! is decided against a state of the table ([`Edit::decide`]: a [`Decided`]). Outside a
//! transaction that state is the stored table under its write lock. Inside one
//! ([`crate::txn`]) the statement is decided over the transaction's own copy (its count), held,
//! and decided again at COMMIT, in order with the transaction's other changes.

use crate::access::TableAccess;
use crate::error::{Pos, Result, SqlError};
use crate::exec::eval::eval;
use crate::exec::{rows_passing, Batch, ExecContext};
use crate::interrupt::RunContext;
use crate::parser::ast::{Expr, TableRef};
use crate::plan::bind_expr::{cast_to, ExprBinder};
use crate::plan::binder::{tenant, Binder};
use crate::plan::optimizer::scan_range;
use crate::plan::{BExpr, Field, ScanRange};
use std::collections::HashSet;
use zepto_storage::{Catalog, Change, Column, ColumnDef, DataType, Partition, Schema, StorageError, Table, Value};

/// Rows chosen per partition slot (only slots with rows).
type Selection = Vec<(u32, Vec<u32>)>;

/// What a statement binds against: a binder, the table's fields (access checked) and the
/// tenant scope's predicate over them, if the session is scoped and the table has `tenant_id`.
struct Bound {
    binder: Binder,
    fields: Vec<Field>,
    /// The scope's predicate, and the position of `tenant_id` among the fields.
    scope: Option<(BExpr, usize)>,
}

fn bind_target(mut binder: Binder, access: &TableAccess, table: &str, pos: Pos) -> Result<Bound> {
    let tref = TableRef::Table { name: table.to_string(), system: None, alias: None, pos };
    let (_, fields) = binder.bind_from(&tref)?;
    let schema = fields_schema(&fields);
    let scope = match tenant::scope_filter(access, &schema)? {
        Some(pred) => access.scope_of(&schema).map(|(_, i)| (pred, i)),
        None => None,
    };
    Ok(Bound { binder, fields, scope })
}

fn fields_schema(fields: &[Field]) -> Schema {
    Schema { columns: fields.iter().map(|f| ColumnDef { name: f.name.clone(), data_type: f.data_type }).collect() }
}

/// Under the lock: the table is scoped for this session exactly as it was when the statement
/// was bound (a `tenant_id` column added meanwhile would leave the statement unscoped).
fn same_scope(t: &Table, access: &TableAccess, scope: Option<&(BExpr, usize)>) -> Result<()> {
    if access.scope_of(t.schema()).map(|(_, i)| i) == scope.map(|(_, i)| *i) {
        return Ok(());
    }
    Err(SqlError::exec(format!("table '{}' was changed while the statement was prepared; run it again", t.name())))
}

fn bind_row_expr(binder: &mut Binder, fields: &[Field], e: &Expr, boolean: bool) -> Result<BExpr> {
    let mut b = ExprBinder { scope: fields, agg: None, win: None, runner: binder };
    let bound = if boolean { b.bind_bool(e)? } else { b.bind(e)? };
    if bound.any(&|x| matches!(x, BExpr::Correlated { .. })) {
        return Err(SqlError::plan(
            "correlated subqueries are not supported in DELETE and UPDATE (use an uncorrelated one or a join in a SELECT first)",
            None,
        ));
    }
    Ok(bound)
}

/// The columns a bound expression may read: the bound schema (a column added since is not
/// referenced).
fn partition_batch(t: &Table, slot: usize, width: usize) -> Batch {
    let p = &t.partitions()[slot];
    Batch::shared(p.columns()[..width].to_vec(), p.len())
}

/// Under the lock: the table must still start with the columns the statement was bound to.
fn same_layout(t: &Table, fields: &[Field]) -> Result<()> {
    let same = t.schema().columns.len() >= fields.len()
        && t.schema().columns.iter().zip(fields).all(|(c, f)| c.name == f.name && c.data_type == f.data_type);
    if same {
        Ok(())
    } else {
        Err(SqlError::exec(format!("table '{}' was changed while the statement was prepared; run it again", t.name())))
    }
}

/// The rows `preds` keep, per partition, each predicate evaluated over the rows the ones
/// before it kept (the tenant scope's comes first). The last one (the statement's WHERE) also
/// narrows the rows looked at, as a scan would: its conjuncts on the partition key and the
/// designated timestamp choose partitions and a time span by binary search, and `ts IN (...)`
/// the rows at those times; the rest of it is evaluated over those rows alone.
fn select(ctx: &ExecContext, t: &Table, width: usize, preds: &[&BExpr]) -> Result<Selection> {
    let (scopes, last) = match preds.split_last() {
        Some((last, scopes)) => (scopes, Some(*last)),
        None => (preds, None),
    };
    let (range, rest) = match last {
        None => (ScanRange::default(), None),
        Some(p) => scan_range(p.clone(), t.key_col(), t.ts_col()),
    };
    let (points, rest) = split_points(rest, t.ts_col());
    let mut stack: Vec<&BExpr> = scopes.to_vec();
    stack.extend(rest.as_ref());
    let codes: Option<HashSet<u32>> = match (&range.keys, t.key_col()) {
        (Some(keys), Some(_)) => Some(keys.iter().filter_map(|k| t.dict().code(k)).collect()),
        _ => None,
    };
    let mut sel = Vec::new();
    for (slot, p) in t.partitions().iter().enumerate() {
        if p.is_empty() || codes.as_ref().is_some_and(|c| !p.key().is_some_and(|k| c.contains(&k))) {
            continue;
        }
        let cand = candidates(p, t.ts_col(), &range, points.as_deref());
        if cand.is_empty() {
            continue;
        }
        let all = partition_batch(t, slot, width);
        let batch = if cand.len() == p.len() { all } else { all.take(&cand) };
        let rows = match rows_passing(ctx, &batch, &stack)? {
            None => cand,
            Some(kept) => kept.into_iter().filter_map(|i| cand.get(i as usize).copied()).collect(),
        };
        if !rows.is_empty() {
            sel.push((slot as u32, rows));
        }
    }
    Ok(sel)
}

/// The rows of partition `p` within the time range (binary searches on the designated
/// timestamp), and at one of `points` when given.
fn candidates(p: &Partition, ts: Option<usize>, range: &ScanRange, points: Option<&[i64]>) -> Vec<u32> {
    let Some(ts) = ts else {
        return (0..p.len() as u32).collect();
    };
    // Unbounded: every row, those with a NULL timestamp too (a time range never holds them).
    let bounded = range.ts_lo != i64::MIN || range.ts_hi != i64::MAX;
    let span = if bounded { p.ts_range(ts, range.ts_lo, range.ts_hi) } else { 0..p.len() };
    match points {
        None => (span.start as u32..span.end as u32).collect(),
        Some(pts) => pts
            .iter()
            .flat_map(|&x| {
                let r = p.ts_range(ts, x, x);
                r.start.max(span.start) as u32..r.end.min(span.end) as u32
            })
            .collect(),
    }
}

/// Take `ts IN (timestamp, ...)` out of `pred` (the first such conjunct): its times, sorted and
/// without repeats, which [`candidates`] finds by binary search.
fn split_points(pred: Option<BExpr>, ts: Option<usize>) -> (Option<Vec<i64>>, Option<BExpr>) {
    let Some(ts) = ts else {
        return (None, pred);
    };
    let Some(pred) = pred else {
        return (None, None);
    };
    let mut conj = Vec::new();
    pred.conjuncts(&mut conj);
    let times = |e: &BExpr| -> Option<Vec<i64>> {
        if let BExpr::InSet { expr, set, negated: false } = e {
            let on_ts = matches!(**expr, BExpr::Col(c, _) if c == ts) && set.data_type() == DataType::Timestamp;
            let times = |v| if let Value::Timestamp(t) = v { Some(t) } else { None };
            return on_ts.then(|| set.values().into_iter().filter_map(times).collect());
        }
        let BExpr::InList { expr, list, negated: false } = e else { return None };
        if !matches!(**expr, BExpr::Col(c, _) if c == ts) {
            return None;
        }
        list.iter()
            .filter(|x| !matches!(x, BExpr::Lit(Value::Null, _)))
            .map(|x| match x {
                BExpr::Lit(Value::Timestamp(t), _) => Some(*t),
                _ => None,
            })
            .collect()
    };
    let Some(i) = conj.iter().position(|e| times(e).is_some()) else {
        return (None, BExpr::and_all(conj));
    };
    let mut pts = times(&conj.remove(i)).unwrap_or_default();
    pts.sort_unstable();
    pts.dedup();
    (Some(pts), BExpr::and_all(conj))
}

/// DELETE and UPDATE change rows in memory only: the Parquet history is immutable (whole
/// days leave it by retention). A statement whose time range reaches the history is refused
/// rather than applied to the in-memory rows alone.
fn refuse_history(t: &Table, pred: Option<&BExpr>, what: &str) -> Result<()> {
    let h = t.history();
    if h.files.is_empty() {
        return Ok(());
    }
    let (lo, hi) = match pred {
        None => (i64::MIN, i64::MAX),
        Some(p) => {
            let (r, _) = crate::plan::optimizer::scan_range(p.clone(), None, t.ts_col());
            (r.ts_lo, r.ts_hi)
        }
    };
    match h.overlapping(lo, hi).map(|f| f.max_ts).max() {
        None => Ok(()),
        Some(max) => {
            let ts = t.ts_col().map_or("ts", |c| t.schema().columns[c].name.as_str());
            Err(SqlError::exec(format!(
                "{what} cannot change rows in the Parquet history of table '{}' (up to {}); restrict it with {ts} > '{}', or drop whole days with ALTER TABLE ... SET TTL",
                t.name(),
                zepto_storage::time::format_timestamp(max),
                zepto_storage::time::format_timestamp(max)
            )))
        }
    }
}

/// Run `f` under the table's write lock (a missing table is reported at the statement's name).
fn locked<R>(catalog: &Catalog, table: &str, pos: Pos, f: impl FnOnce(&mut Table) -> Result<R>) -> Result<R> {
    catalog.modify(table, f).map_err(|e| match e {
        SqlError::TableNotFound { name, pos: None } => SqlError::TableNotFound { name, pos: Some(pos) },
        e => e,
    })
}

/// A DELETE or UPDATE bound once, outside any lock: what it changes is decided against a
/// state of its table by [`Edit::decide`] (the stored table under its write lock, or a
/// transaction's own copy of it), then logged and applied ([`Decided`]).
pub(crate) struct Edit {
    table: String,
    pos: Pos,
    access: TableAccess,
    fields: Vec<Field>,
    /// The tenant scope's predicate, and the position of `tenant_id` among the fields.
    scope: Option<(BExpr, usize)>,
    pred: Option<BExpr>,
    /// UPDATE's SET columns (field positions) and their values; `None` for DELETE.
    sets: Option<(Vec<usize>, Vec<BExpr>)>,
}

/// What an [`Edit`] changes in one state of its table: rows deleted, columns set in place,
/// or rows moved (an UPDATE of the partition key or the designated timestamp: deleted, and
/// their new versions appended).
#[derive(Clone)]
pub(crate) enum Decided {
    Delete(Selection),
    Set { sel: Selection, targets: Vec<usize>, values: Vec<Column> },
    Move { sel: Selection, full: Vec<Column> },
}

impl Decided {
    /// The rows the statement changes (its command tag's count).
    pub(crate) fn rows(&self) -> usize {
        let (Decided::Delete(sel) | Decided::Set { sel, .. } | Decided::Move { sel, .. }) = self;
        sel.iter().map(|(_, r)| r.len()).sum()
    }

    /// The change as the log holds it (a move as a deletion and an append, in one record).
    pub(crate) fn changes<'a>(&'a self, table: &'a str) -> Vec<Change<'a>> {
        match self {
            Decided::Delete(sel) => vec![Change::Delete { table, rows: sel }],
            Decided::Set { sel, targets, values } => {
                vec![Change::Update { table, rows: sel, columns: targets, values }]
            }
            Decided::Move { sel, full } => {
                vec![Change::Delete { table, rows: sel }, Change::Append { table, columns: full }]
            }
        }
    }

    /// Apply it to the state of the table it was decided on (or one equal to it).
    pub(crate) fn apply(self, t: &mut Table) -> std::result::Result<usize, StorageError> {
        match self {
            Decided::Delete(sel) => t.delete_rows(&sel),
            Decided::Set { sel, targets, values } => t.update_rows(&sel, &targets, values),
            Decided::Move { sel, full } => {
                let n = t.delete_rows(&sel)?;
                t.append(full)?;
                Ok(n)
            }
        }
    }
}

/// Bind `DELETE FROM table [WHERE filter]` with the session's `binder` (in a transaction, its
/// subqueries read the transaction's changes).
pub(crate) fn bind_delete(
    binder: Binder,
    access: &TableAccess,
    table: &str,
    filter: Option<&Expr>,
    pos: Pos,
) -> Result<Edit> {
    let Bound { mut binder, fields, scope } = bind_target(binder, access, table, pos)?;
    let pred = filter.map(|f| bind_row_expr(&mut binder, &fields, f, true)).transpose()?;
    Ok(Edit { table: table.to_string(), pos, access: access.clone(), fields, scope, pred, sets: None })
}

/// Bind `UPDATE table SET ... [WHERE filter]` with the session's `binder` (in a transaction,
/// its subqueries read the transaction's changes).
pub(crate) fn bind_update(
    binder: Binder,
    access: &TableAccess,
    table: &str,
    sets: &[(String, Expr, Pos)],
    filter: Option<&Expr>,
    pos: Pos,
) -> Result<Edit> {
    let Bound { mut binder, fields, scope } = bind_target(binder, access, table, pos)?;
    let pred = filter.map(|f| bind_row_expr(&mut binder, &fields, f, true)).transpose()?;
    let mut targets: Vec<usize> = Vec::with_capacity(sets.len());
    let mut exprs = Vec::with_capacity(sets.len());
    for (name, e, cpos) in sets {
        let i =
            fields.iter().position(|f| f.name.eq_ignore_ascii_case(name)).ok_or_else(|| SqlError::ColumnNotFound {
                message: format!("column '{name}' does not exist in table '{table}'"),
                pos: Some(*cpos),
                table: Some(table.to_string()),
                name: name.clone(),
            })?;
        if targets.contains(&i) {
            return Err(SqlError::plan(format!("column '{name}' is set twice"), Some(*cpos)));
        }
        if let (Some((_, tc)), Some(tenant)) = (&scope, access.tenant()) {
            if *tc == i {
                return Err(SqlError::PermissionDenied(format!(
                    "UPDATE may not SET column '{name}' of table '{table}' in a session scoped to tenant '{tenant}'"
                )));
            }
        }
        let bound = bind_row_expr(&mut binder, &fields, e, false)?;
        let want = fields[i].data_type;
        // SYMBOL columns take strings (interned on apply); everything else is cast exactly.
        let bound = match want {
            DataType::Symbol if bound.data_type().is_string() => bound,
            DataType::Symbol => cast_to(bound, DataType::Varchar)?,
            _ => cast_to(bound, want)?,
        };
        targets.push(i);
        exprs.push(bound);
    }
    let sets = Some((targets, exprs));
    Ok(Edit { table: table.to_string(), pos, access: access.clone(), fields, scope, pred, sets })
}

impl crate::txn::HeldEdit for Edit {
    fn table(&self) -> &str {
        &self.table
    }

    fn decide_and_apply(&self, run: &RunContext, t: &mut Table) -> Result<Option<Box<dyn crate::txn::Decision>>> {
        let Some(d) = self.decide(run, t)? else { return Ok(None) };
        d.clone().apply(t)?;
        Ok(Some(Box::new(d)))
    }
}

impl crate::txn::Decision for Decided {
    fn changes<'a>(&'a self, table: &'a str) -> Vec<Change<'a>> {
        Decided::changes(self, table)
    }

    fn apply(self: Box<Self>, t: &mut Table) -> std::result::Result<usize, StorageError> {
        Decided::apply(*self, t)
    }
}

impl Edit {
    /// The table it changes, as the statement named it.
    pub(crate) fn table(&self) -> &str {
        &self.table
    }

    /// Decide it under the table's write lock, log it and apply it: the rows changed.
    pub(crate) fn store(&self, run: &RunContext, catalog: &Catalog) -> Result<usize> {
        locked(catalog, &self.table, self.pos, |t| {
            let Some(d) = self.decide(run, t)? else { return Ok(0) };
            let logged = catalog.log(&d.changes(t.name()))?;
            Ok(logged.apply(|| d.apply(t))?)
        })
    }

    /// What it changes in `t` (`None`: no row), checking first that `t` is still shaped and
    /// scoped as the statement was bound, and that its rows are not in the Parquet history.
    pub(crate) fn decide(&self, run: &RunContext, t: &Table) -> Result<Option<Decided>> {
        same_layout(t, &self.fields)?;
        same_scope(t, &self.access, self.scope.as_ref())?;
        let what = if self.sets.is_some() { "UPDATE" } else { "DELETE" };
        refuse_history(t, self.pred.as_ref(), what)?;
        let ctx = ExecContext::new(run);
        let preds: Vec<&BExpr> = self.scope.as_ref().map(|(p, _)| p).into_iter().chain(self.pred.as_ref()).collect();
        let sel = select(&ctx, t, self.fields.len(), &preds)?;
        if sel.is_empty() {
            return Ok(None);
        }
        Ok(Some(match &self.sets {
            None => Decided::Delete(sel),
            Some((targets, exprs)) => set_values(&ctx, t, self.fields.len(), sel, targets, exprs)?,
        }))
    }
}

/// UPDATE's new values for the rows `sel` of `t`: set in place, or, when a SET column is the
/// partition key or the designated timestamp, whole new rows to append after deleting them.
fn set_values(
    ctx: &ExecContext,
    t: &Table,
    width: usize,
    sel: Selection,
    targets: &[usize],
    exprs: &[BExpr],
) -> Result<Decided> {
    // New values per SET column, over the selected rows in selection order.
    let mut parts: Vec<Vec<Column>> = vec![Vec::new(); exprs.len()];
    for (slot, rows) in &sel {
        let batch = partition_batch(t, *slot as usize, width).take(rows);
        for (k, e) in exprs.iter().enumerate() {
            let c = eval(ctx, e, &batch)?.into_owned();
            if c.len() != rows.len() {
                return Err(SqlError::exec("UPDATE: a SET expression gave the wrong number of values"));
            }
            parts[k].push(c);
        }
    }
    let values: Vec<Column> = parts.iter().map(|cs| Column::concat(&cs.iter().collect::<Vec<_>>())).collect();
    let moves = targets.iter().any(|&i| Some(i) == t.key_col() || Some(i) == t.ts_col());
    if !moves {
        return Ok(Decided::Set { sel, targets: targets.to_vec(), values });
    }
    // Rows move: whole rows, every column (a packed partition's are copied out of its pack).
    let parts: Vec<_> = sel.iter().map(|(slot, rows)| (t.partitions()[*slot as usize].columns(), rows)).collect();
    let mut full: Vec<Column> = (0..t.schema().len())
        .map(|c| {
            let pieces: Vec<Column> = parts.iter().map(|(cols, rows)| cols[c].take(rows)).collect();
            Column::concat(&pieces.iter().collect::<Vec<_>>())
        })
        .collect();
    drop(parts);
    for (&c, v) in targets.iter().zip(values) {
        full[c] = v;
    }
    t.validate(&full)?;
    Ok(Decided::Move { sel, full })
}

#[cfg(test)]
mod tests {
    use crate::engine::{first_value, Engine};
    use zepto_storage::Value;

    #[test]
    fn refuses_what_it_cannot_decide_and_changes_nothing() {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE)").expect("create");
        e.execute("INSERT INTO t VALUES (1, 'A', 1.0), (2, 'B', 2.0)").expect("insert");
        let err =
            e.execute("DELETE FROM t WHERE px > (SELECT avg(px) FROM t t2 WHERE t2.sym = t.sym)").expect_err("refused");
        assert!(err.to_string().contains("correlated subqueries are not supported"), "{err}");
        // A failing SET expression (a bad cast on one row) leaves every row as it was.
        let err = e
            .execute("UPDATE t SET px = CAST(CASE WHEN sym = 'B' THEN 'x' ELSE '3' END AS DOUBLE)")
            .expect_err("bad cast");
        assert!(err.to_string().contains("'x'"), "{err}");
        let r = e.execute("SELECT sum(px) FROM t").expect("sum");
        assert_eq!(first_value(&r), Some(Value::Float64(3.0)));
        let r = e.execute("UPDATE t SET sym = 'C' WHERE sym = 'A'").expect("move");
        assert_eq!(r.status.as_deref(), Some("UPDATE 1"));
    }
}
