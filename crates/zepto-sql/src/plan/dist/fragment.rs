//! A plan fragment: the part of a query every owner of the cluster's partitions runs over its
//! own rows, sent to the other nodes as bytes.
//!
//! A fragment is a small tree: scans of tables under their filters; a GROUP BY into partial
//! states ([`crate::exec::accum`]) over a scan; or an operator whose rows of one
//! partition key never meet another key's — an ASOF or WINDOW JOIN of two scans on their
//! partition keys, window functions partitioned by the partition key — which every owner
//! runs whole over its keys. A fragment names its tables and columns, not positions or
//! snapshots: the node that runs it binds them against its own catalog and checks the types
//! are the ones the asking node planned with. Encoded with postcard (serde); a fragment that
//! holds what cannot travel (a correlated subquery) does not encode, and the planner keeps
//! that part of the query on the asking node.

use super::scope::Scope;
use crate::error::{Result, SqlError};
use crate::eval::partitioner::kafka_partition;
use crate::parser::ast::BinaryOp;
use crate::plan::shape::ScanShape;
use crate::plan::window::WinCall;
use crate::plan::{AggCall, AsofHow, AsofOuter, BExpr, PairHow, Plan, ScanRange, WindowHow};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use zepto_storage::{Catalog, ColumnDef, DataType, Schema, Table, TableOptions};

/// GROUP BY into partial states: the keys, then each aggregate's state columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partial {
    /// Group keys over the scan's columns.
    pub keys: Vec<BExpr>,
    /// The aggregates (every one mergeable).
    pub aggs: Vec<AggCall>,
}

/// A scan of one table under its filters, by names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ScanPart {
    table: String,
    columns: Vec<(String, DataType)>,
    range: ScanRange,
    filters: Vec<BExpr>,
}

/// The two sides of a join and how they meet (as in [`Plan::AsofJoin`] and
/// [`Plan::WindowJoin`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Sides {
    left: ScanPart,
    right: ScanPart,
    left_keys: Vec<BExpr>,
    right_keys: Vec<BExpr>,
    left_ts: BExpr,
    right_ts: BExpr,
}

/// One part of a fragment (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Part {
    Scan(ScanPart),
    Partial(ScanPart, Partial),
    Asof {
        sides: Sides,
        op: BinaryOp,
        outer: AsofOuter,
        tolerance: Option<i64>,
        residual: Option<BExpr>,
        emit: Option<Vec<usize>>,
    },
    WindowJoin {
        sides: Sides,
        lo: i64,
        hi: i64,
        aggs: Vec<AggCall>,
    },
    Window(ScanPart, Vec<WinCall>),
}

/// What every owner runs: see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fragment {
    root: Part,
}

/// A fragment for one node: the partitions it answers for, of how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The fragment.
    pub fragment: Fragment,
    /// The topic's partition count as the asking node planned with it.
    pub count: i32,
    /// The partitions the node answers for.
    pub partitions: Vec<i32>,
    /// The asking query's limits, which the fragment runs under too.
    pub limits: Limits,
}

/// The limits of the query a fragment is part of, as the asking node planned it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Milliseconds left before the query's deadline; `None` without one.
    pub time_left_ms: Option<u64>,
    /// The bytes one thread of the query may hold; `None` when unlimited.
    pub memory: Option<u64>,
}

impl Limits {
    /// The limits of the query `run`.
    pub fn of(run: &crate::interrupt::RunContext) -> Limits {
        let Some(c) = run.control() else { return Limits::default() };
        Limits {
            time_left_ms: c.time_left().map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            memory: c.mem_limit().map(|m| m as u64),
        }
    }

    /// A run context under these limits (unlimited when there are none).
    pub fn run_context(&self) -> crate::interrupt::RunContext {
        if *self == Limits::default() {
            return crate::interrupt::RunContext::unlimited();
        }
        let timeout = self.time_left_ms.map(std::time::Duration::from_millis);
        let memory = self.memory.map(|m| usize::try_from(m).unwrap_or(usize::MAX));
        crate::interrupt::RunContext::new(Some(crate::interrupt::QueryControl::new(timeout, memory)))
    }
}

impl Request {
    /// The request as bytes.
    pub fn encode(&self) -> Result<Vec<u8>> {
        postcard::to_stdvec(self).map_err(|e| SqlError::Internal(format!("encoding a plan fragment: {e}")))
    }

    /// A request from bytes another node sent.
    pub fn decode(bytes: &[u8]) -> Result<Request> {
        postcard::from_bytes(bytes)
            .map_err(|e| SqlError::Execution(format!("a plan fragment that does not decode: {e}")))
    }
}

/// A snapshot of a table by name, if the node has the table.
pub(crate) type Tables<'a> = &'a dyn Fn(&str) -> Option<Arc<Table>>;

impl ScanPart {
    /// The part of a scan shape (names and types of its columns), if its columns exist.
    fn of(shape: &ScanShape) -> Option<ScanPart> {
        let schema = shape.table.schema();
        let columns = shape
            .columns
            .iter()
            .map(|&c| schema.columns.get(c).map(|d| (d.name.clone(), d.data_type)))
            .collect::<Option<Vec<_>>>()?;
        Some(ScanPart {
            table: shape.table.name().to_string(),
            columns,
            range: shape.range.clone(),
            filters: shape.filters.iter().map(|&e| e.clone()).collect(),
        })
    }

    /// The scan over the snapshot `tables` gives (an empty table of its columns when there is
    /// none: no row of it reached this node), cut to `scope`, under its filters.
    fn plan(&self, tables: Tables, scope: &Scope) -> Result<Plan> {
        let Some(table) = tables(&self.table) else { return Ok(self.empty()) };
        let schema = table.schema();
        let mut columns = Vec::with_capacity(self.columns.len());
        for (name, ty) in &self.columns {
            let pos = schema.index_of(name).ok_or_else(|| {
                SqlError::Execution(format!("table '{}' has no column '{name}' on this node", self.table))
            })?;
            let here = schema.columns[pos].data_type;
            if here != *ty {
                return Err(SqlError::Execution(format!(
                    "column '{name}' of '{}' is {here} on this node, {ty} where the query was planned",
                    self.table
                )));
            }
            columns.push(pos);
        }
        let range = scope.restrict(&table, &self.range);
        let mut plan = Plan::Scan { table, columns, range };
        for pred in &self.filters {
            plan = Plan::Filter { input: Box::new(plan), pred: pred.clone() };
        }
        Ok(plan)
    }

    /// The scan over no rows (of an empty table with the scan's columns).
    fn empty(&self) -> Plan {
        let defs = self.columns.iter().map(|(n, t)| ColumnDef { name: n.clone(), data_type: *t }).collect();
        match Table::new(&self.table, Schema { columns: defs }, &TableOptions::default()) {
            Ok(t) => Plan::Scan {
                table: Arc::new(t),
                columns: (0..self.columns.len()).collect(),
                range: ScanRange::default(),
            },
            Err(_) => Plan::Values { rows: Vec::new(), width: self.columns.len() },
        }
    }
}

impl Sides {
    fn of(left: &Plan, right: &Plan, keys: (&[BExpr], &[BExpr]), ts: (&BExpr, &BExpr)) -> Option<Sides> {
        Some(Sides {
            left: ScanPart::of(&crate::plan::shape::scan_shape(left)?)?,
            right: ScanPart::of(&crate::plan::shape::scan_shape(right)?)?,
            left_keys: keys.0.to_vec(),
            right_keys: keys.1.to_vec(),
            left_ts: ts.0.clone(),
            right_ts: ts.1.clone(),
        })
    }

    fn plan(&self, tables: Tables, scope: &Scope) -> Result<(Box<Plan>, Box<Plan>)> {
        Ok((Box::new(self.left.plan(tables, scope)?), Box::new(self.right.plan(tables, scope)?)))
    }
}

impl Fragment {
    /// The fragment of `shape` (and of a GROUP BY over it), if it can travel.
    pub fn of(shape: &ScanShape, partial: Option<Partial>) -> Option<Fragment> {
        let scan = ScanPart::of(shape)?;
        let root = match partial {
            Some(p) => Part::Partial(scan, p),
            None => Part::Scan(scan),
        };
        Fragment { root }.encodable()
    }

    /// The fragment of a key-local operator over scans (an ASOF or WINDOW JOIN, window
    /// functions), if `p` is one and it can travel. Whether its rows of one key stay apart
    /// from other keys' is the caller's to know.
    pub fn of_key_local(p: &Plan) -> Option<Fragment> {
        let root = match p {
            Plan::AsofJoin {
                left,
                right,
                left_keys,
                right_keys,
                left_ts,
                right_ts,
                op,
                outer,
                tolerance,
                residual,
                emit,
                ..
            } => {
                let sides = Sides::of(left, right, (left_keys, right_keys), (left_ts, right_ts))?;
                let (op, outer, tolerance, residual) = (*op, *outer, *tolerance, residual.clone());
                Part::Asof { sides, op, outer, tolerance, residual, emit: emit.clone() }
            }
            Plan::WindowJoin { left, right, left_keys, right_keys, left_ts, right_ts, lo, hi, aggs, .. } => {
                let sides = Sides::of(left, right, (left_keys, right_keys), (left_ts, right_ts))?;
                Part::WindowJoin { sides, lo: *lo, hi: *hi, aggs: aggs.clone() }
            }
            Plan::Window { input, calls, .. } => {
                Part::Window(ScanPart::of(&crate::plan::shape::scan_shape(input)?)?, calls.clone())
            }
            _ => return None,
        };
        Fragment { root }.encodable()
    }

    /// The fragment, if it encodes (what does not, a correlated subquery, stays here).
    fn encodable(self) -> Option<Fragment> {
        let probe = Request { fragment: self, count: 0, partitions: Vec::new(), limits: Limits::default() };
        probe.encode().ok().map(|_| probe.fragment)
    }

    /// The partitions (of `count`) its rows can be in, when it scans one table for a key list
    /// (`sym = 'X'`, `sym IN (...)`): a query for one key goes to one node. `None`: any.
    pub fn key_partitions(&self, count: i32) -> Option<Vec<i32>> {
        let scan = match &self.root {
            Part::Scan(s) | Part::Partial(s, _) => s,
            _ => return None,
        };
        let keys = scan.range.keys.as_ref()?;
        let mut ps: Vec<i32> =
            keys.iter().filter_map(|k| i32::try_from(kafka_partition(k.as_bytes(), i64::from(count))).ok()).collect();
        ps.sort_unstable();
        ps.dedup();
        Some(ps)
    }

    /// The types of the columns a partial GROUP BY reads (empty for other fragments).
    pub fn column_types(&self) -> Vec<DataType> {
        match &self.root {
            Part::Partial(s, _) => s.columns.iter().map(|(_, t)| *t).collect(),
            _ => Vec::new(),
        }
    }

    /// The fragment over the snapshots `tables` gives, cut to `scope`. Its operators'
    /// strategies are left to the physical planner.
    pub(crate) fn plan_with(&self, tables: Tables, scope: &Scope) -> Result<Plan> {
        Ok(match &self.root {
            Part::Scan(s) => s.plan(tables, scope)?,
            Part::Partial(s, p) => Plan::PartialAggregate {
                input: Box::new(s.plan(tables, scope)?),
                keys: p.keys.clone(),
                aggs: p.aggs.clone(),
            },
            Part::Asof { sides, op, outer, tolerance, residual, emit } => {
                let (left, right) = sides.plan(tables, scope)?;
                Plan::AsofJoin {
                    left,
                    right,
                    left_keys: sides.left_keys.clone(),
                    right_keys: sides.right_keys.clone(),
                    left_ts: sides.left_ts.clone(),
                    right_ts: sides.right_ts.clone(),
                    op: *op,
                    outer: *outer,
                    tolerance: *tolerance,
                    residual: residual.clone(),
                    emit: emit.clone(),
                    how: AsofHow::KeySearch,
                }
            }
            Part::WindowJoin { sides, lo, hi, aggs } => {
                let (left, right) = sides.plan(tables, scope)?;
                Plan::WindowJoin {
                    left,
                    right,
                    left_keys: sides.left_keys.clone(),
                    right_keys: sides.right_keys.clone(),
                    left_ts: sides.left_ts.clone(),
                    right_ts: sides.right_ts.clone(),
                    lo: *lo,
                    hi: *hi,
                    aggs: aggs.clone(),
                    how: PairHow::Sweep,
                }
            }
            Part::Window(s, calls) => {
                Plan::Window { input: Box::new(s.plan(tables, scope)?), calls: calls.clone(), how: WindowHow::Whole }
            }
        })
    }

    /// The fragment bound against `catalog` (its tables now), cut to `scope`.
    pub fn plan_in(&self, catalog: &Catalog, scope: &Scope) -> Result<Plan> {
        self.plan_with(&|name| catalog.snapshot(name).ok(), scope)
    }
}

#[cfg(test)]
mod tests {
    use super::Limits;
    use crate::error::SqlError;
    use crate::interrupt::{QueryControl, RunContext};
    use std::time::Duration;

    #[test]
    fn a_fragment_runs_under_the_asking_querys_limits() {
        assert_eq!(Limits::of(&RunContext::unlimited()), Limits::default());
        assert!(Limits::default().run_context().control().is_none(), "no limits, no control");
        let asking = RunContext::new(Some(QueryControl::new(Some(Duration::from_secs(30)), Some(1 << 20))));
        let l = Limits::of(&asking);
        assert_eq!(l.memory, Some(1 << 20));
        assert!(l.time_left_ms.is_some_and(|ms| ms > 25_000 && ms <= 30_000), "{l:?}");
        let back: Limits = postcard::from_bytes(&postcard::to_stdvec(&l).expect("encodes")).expect("decodes");
        assert_eq!(back, l);
        let remote = back.run_context();
        assert_eq!(remote.control().and_then(|c| c.mem_limit()), Some(1 << 20));
        assert!(remote.reserve(2 << 20).is_err(), "the memory limit holds on the remote node");
        let late = Limits { time_left_ms: Some(0), memory: None }.run_context();
        std::thread::sleep(Duration::from_millis(2));
        assert!(matches!(late.check(), Err(SqlError::Timeout(_))), "a deadline already passed stops the fragment");
    }
}
