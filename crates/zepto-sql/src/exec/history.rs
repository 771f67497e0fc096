//! Queries over memory and Parquet history, transparently.
//!
//! Before a plan runs, every scan of a table whose history files overlap the scan's time range
//! is replaced by a scan of one in-memory table holding exactly what the scan can read: the
//! history rows the reader returns after file and row-group pruning (time and partition key),
//! followed by the in-memory rows of the same keys and time range, partitioned and time-sorted
//! like any table. Every operator (partition-wise aggregation, ASOF merges, LATEST ON, window
//! functions) then runs unchanged. Only the scan's columns are decoded (plus the key and
//! timestamp the table layout needs).
//!
//! A scan whose time range misses the history (the usual real-time query) is left alone and
//! pays nothing.

use super::scan::{pieces, Piece};
use super::ExecContext;
use crate::error::{Result, SqlError};
use crate::plan::{Plan, ScanRange};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, Dict, HistoryChunk, Partition, Schema, Span, Table};

pub(super) use crate::plan::physical::reads_history;

fn any_history(p: &Plan) -> bool {
    match p {
        Plan::Scan { table, range, .. } => reads_history(table, range),
        p => p.inputs().into_iter().any(any_history),
    }
}

/// `plan` with its history scans materialized (borrowed as is when there are none): the first
/// step of running a physical plan, so that every operator reads memory.
pub fn resolve<'a>(ctx: &ExecContext, plan: &'a Plan) -> Result<Cow<'a, Plan>> {
    if !any_history(plan) {
        return Ok(Cow::Borrowed(plan));
    }
    Ok(Cow::Owned(rewrite(ctx, plan.clone())?))
}

fn rewrite(ctx: &ExecContext, p: Plan) -> Result<Plan> {
    match p {
        // Aggregated straight from the files (`partials`), never assembled.
        Plan::Aggregate { how: crate::plan::AggHow::HistoryPartials, .. } => Ok(p),
        Plan::Scan { table, columns, range } if reads_history(&table, &range) => {
            let (table, columns) = materialize(ctx, &table, &columns, &range)?;
            Ok(Plan::Scan { table, columns, range })
        }
        p => p.map_inputs(|i| rewrite(ctx, i)),
    }
}

/// One table with what a scan of `table` over `columns` and `range` reads, from history and
/// memory, and the scan's columns renumbered into it.
///
/// History files decode in parallel (see the reader); then each key's partition is assembled
/// in one copy: its runs from every file, cut to the scan's time range, then its in-memory
/// rows, into exact-size columns. A partition's rows are in time order unless files overlap in
/// time or late rows reached memory after tiering; those partitions are sorted once.
fn materialize(
    ctx: &ExecContext,
    table: &Table,
    columns: &[usize],
    range: &ScanRange,
) -> Result<(Arc<Table>, Vec<usize>)> {
    let reader = table
        .history_reader()
        .ok_or_else(|| SqlError::Internal(format!("table '{}' has history but no reader", table.name())))?;
    // The scan's columns plus the layout columns, in schema order.
    let mut need: Vec<usize> = columns.iter().copied().chain(table.key_col()).chain(table.ts_col()).collect();
    need.sort_unstable();
    need.dedup();
    let pos = |c: Option<usize>| c.and_then(|c| need.iter().position(|&n| n == c));
    let (key_pos, ts_pos) = (pos(table.key_col()), pos(table.ts_col()));
    let schema = Schema { columns: need.iter().map(|&c| table.schema().columns[c].clone()).collect() };
    let units = match super::scan::history_keys(table, range) {
        Some(keys) => reader.units(table, keys, range.ts_lo, range.ts_hi)?,
        None => Vec::new(),
    };
    let total = units.iter().map(|u| u.rows).sum();
    let chunks = ctx.par_map(&units, total, |_, u| Ok(reader.read_unit(table, &need, u)?))?;
    ctx.check()?;
    let memory = pieces(table, range);
    let (dict, remaps, groups) = sources(table, &chunks, &memory, range, ts_pos)?;
    let a = Assembly {
        chunks: &chunks,
        memory: &memory,
        remaps: &remaps,
        dict: &dict,
        need: &need,
        schema: &schema,
        key_pos,
        ts_pos,
    };
    let rows = groups.iter().flat_map(|(_, srcs)| srcs.iter().map(|s| a.src_len(s))).sum();
    let parts = ctx.par_map(&groups, rows, |_, (key, srcs)| a.partition(*key, srcs))?;
    let out = Table::assembled(table.name(), schema, key_pos, ts_pos, dict, parts)?;
    let remap = columns
        .iter()
        .map(|c| need.iter().position(|n| n == c))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| SqlError::Internal("a scan column went missing".into()))?;
    Ok((Arc::new(out), remap))
}

/// Per chunk, per needed column: file code -> result code (SYMBOL columns only).
type Remaps = Vec<Vec<Option<Vec<u32>>>>;

/// The sources of each partition key (result code; `None`: NULL key or unkeyed), first seen
/// first.
type Groups = Vec<(Option<u32>, Vec<Src>)>;

/// Where the rows of the scan's partitions come from: each key's runs of the history `chunks`
/// cut to the scan's time range, then its in-memory `memory` pieces; with the result's
/// dictionary and each chunk's SYMBOL codes mapped into it.
///
/// The dictionary is the table's when it already holds every history string (memory rows keep
/// their codes, nothing is copied), else a fork of it under a new lineage (same codes for the
/// table's strings) that takes the others: codes it adds must never meet the table's lineage,
/// where they could mean other strings.
fn sources(
    table: &Table,
    chunks: &[HistoryChunk],
    memory: &[Piece<'_>],
    range: &ScanRange,
    ts_pos: Option<usize>,
) -> Result<(Arc<Dict>, Remaps, Groups)> {
    let table_dict = table.dict();
    let mut fork = (!dict_covers(table_dict, chunks)).then(|| table_dict.fork());
    let mut code_of = |s: &str| -> Result<u32> {
        match &mut fork {
            Some(d) => Ok(d.intern(s)),
            None => table_dict.code(s).ok_or_else(|| SqlError::Internal(format!("symbol '{s}' went missing"))),
        }
    };
    let remaps = symbol_remaps(chunks, &mut code_of)?;
    let mut slot_of: HashMap<Option<u32>, usize> = HashMap::new();
    let mut groups: Groups = Vec::new();
    let mut add = |key: Option<u32>, src: Src| {
        let i = *slot_of.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(src);
    };
    let bounded = range.is_time_bounded();
    for (ci, ch) in chunks.iter().enumerate() {
        for (key, run) in &ch.runs {
            let run = match ts_pos {
                Some(t) if bounded => ts_cut(&ch.columns[t], run.clone(), range.ts_lo, range.ts_hi),
                _ => run.clone(),
            };
            if !run.is_empty() {
                add(key.as_deref().map(&mut code_of).transpose()?, Src::History(ci, run));
            }
        }
    }
    for (pi, piece) in memory.iter().enumerate() {
        add(piece.part.key(), Src::Memory(pi));
    }
    let dict = match fork {
        Some(d) => Arc::new(d),
        None => table_dict.clone(),
    };
    Ok((dict, remaps, groups))
}

/// What the partitions of a materialized scan are assembled from ([`sources`]): the needed
/// columns (`need`, table positions; `schema`, their definitions) of the history chunks and
/// in-memory pieces, and where the result's key and time columns are among them.
struct Assembly<'a> {
    chunks: &'a [HistoryChunk],
    memory: &'a [Piece<'a>],
    remaps: &'a Remaps,
    dict: &'a Arc<Dict>,
    need: &'a [usize],
    schema: &'a Schema,
    key_pos: Option<usize>,
    ts_pos: Option<usize>,
}

impl Assembly<'_> {
    /// The rows `s` gives.
    fn src_len(&self, s: &Src) -> usize {
        match s {
            Src::History(_, run) => run.len(),
            Src::Memory(pi) => self.memory[*pi].range.len(),
        }
    }

    /// The partition of `key` (kept only where the result has a key column, `key_pos`), its
    /// sources' rows one after another in one copy into exact-size columns; sorted by time
    /// (column `ts_pos`) once when the sources overlap in time.
    fn partition(&self, key: Option<u32>, srcs: &[Src]) -> Result<Partition> {
        let cols = (0..self.need.len()).map(|j| self.column(j, srcs)).collect::<Result<Vec<_>>>()?;
        let key = key.filter(|_| self.key_pos.is_some());
        // Each source is in time order; so is the whole when every boundary is.
        Ok(match self.ts_pos {
            Some(t) if !ordered(&cols[t], srcs.iter().map(|s| self.src_len(s))) => {
                Partition::in_time_order(cols, key, self.ts_pos)
            }
            _ => Partition::time_sorted(cols, key, self.ts_pos),
        })
    }

    /// Needed column `j` of sources `srcs`, one after another.
    fn column(&self, j: usize, srcs: &[Src]) -> Result<Arc<Column>> {
        let spans: Vec<Span> = srcs
            .iter()
            .map(|s| match s {
                Src::History(ci, run) => {
                    Span { col: &self.chunks[*ci].columns[j], rows: run.clone(), remap: self.remaps[*ci][j].as_deref() }
                }
                Src::Memory(pi) => {
                    let (col, rows) = self.memory[*pi].col(self.need[j]);
                    Span { col, rows, remap: None }
                }
            })
            .collect();
        Column::concat_spans(self.schema.columns[j].data_type, Some(self.dict), &spans)
            .map(Arc::new)
            .map_err(SqlError::Internal)
    }
}

/// Whether `dict` already holds every string of the chunks (their SYMBOL columns and run keys).
fn dict_covers(dict: &Dict, chunks: &[HistoryChunk]) -> bool {
    let known = |s: &str| dict.code(s).is_some();
    chunks.iter().all(|ch| {
        ch.runs.iter().all(|(k, _)| k.as_deref().is_none_or(known))
            && ch.columns.iter().all(|c| match &c.data() {
                ColumnData::Symbol { dict: fd, .. } => fd.iter().all(known),
                _ => true,
            })
    })
}

/// The chunks' [`Remaps`], each of their strings coded by `code_of`.
fn symbol_remaps(chunks: &[HistoryChunk], code_of: &mut impl FnMut(&str) -> Result<u32>) -> Result<Remaps> {
    chunks
        .iter()
        .map(|ch| {
            ch.columns
                .iter()
                .map(|c| match &c.data() {
                    ColumnData::Symbol { dict: fd, .. } => {
                        fd.iter().map(&mut *code_of).collect::<Result<_>>().map(Some)
                    }
                    _ => Ok(None),
                })
                .collect::<Result<_>>()
        })
        .collect()
}

/// Where a partition's rows come from: a run of a history chunk, or an in-memory piece.
enum Src {
    History(usize, Range<usize>),
    Memory(usize),
}

/// Whether `ts`, made of consecutive segments of `lens` rows each time-sorted with NULLs first,
/// is time-sorted as a whole: no NULL after a value, no segment starting before the last one
/// ended. Costs a look at each boundary.
fn ordered(ts: &Column, lens: impl Iterator<Item = usize>) -> bool {
    let Some(v) = ts.as_i64_slice() else { return true };
    let mut last: Option<i64> = None;
    let mut start = 0;
    for len in lens {
        let end = start + len;
        let nulls = (start..end).take_while(|&i| !ts.is_valid(i)).count();
        if nulls > 0 && last.is_some() {
            return false;
        }
        if nulls < len {
            if last.is_some_and(|l| l > v[start + nulls]) {
                return false;
            }
            last = Some(v[end - 1]);
        }
        start = end;
    }
    true
}

/// The rows of `run` (time-sorted, NULLs first) with a timestamp in `[lo, hi]`, as a scan of an
/// in-memory partition cuts them (NULL timestamps never satisfy a bounded range).
pub(super) fn ts_cut(ts: &Column, run: Range<usize>, lo: i64, hi: i64) -> Range<usize> {
    let Some(v) = ts.as_i64_slice() else { return run };
    let nulls = (run.start..run.end).take_while(|&i| !ts.is_valid(i)).count();
    let vals = &v[run.start + nulls..run.end];
    let a = vals.partition_point(|&t| t < lo);
    let b = vals.partition_point(|&t| t <= hi).max(a);
    run.start + nulls + a..run.start + nulls + b
}
