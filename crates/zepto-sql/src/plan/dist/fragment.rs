//! A plan fragment: the part of a query every owner of the cluster's partitions runs over its
//! own rows, sent to the other nodes as bytes.
//!
//! A fragment is a scan of one table under its filters, and optionally a GROUP BY into
//! partial states ([`crate::exec::accum`]). It names its table and columns, not positions or
//! snapshots: the node that runs it binds them against its own catalog and checks the types
//! are the ones the asking node planned with. Encoded with postcard (serde); a fragment that
//! holds what cannot travel (a correlated subquery) does not encode, and the planner keeps
//! that part of the query on the asking node.

use super::scope::Scope;
use crate::error::{Result, SqlError};
use crate::eval::partitioner::kafka_partition;
use crate::plan::shape::ScanShape;
use crate::plan::{AggCall, BExpr, Plan, ScanRange};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use zepto_storage::{Catalog, DataType, Table};

/// GROUP BY into partial states: the keys, then each aggregate's state columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partial {
    /// Group keys over the scan's columns.
    pub keys: Vec<BExpr>,
    /// The aggregates (every one mergeable).
    pub aggs: Vec<AggCall>,
}

/// What every owner runs: see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fragment {
    table: String,
    columns: Vec<(String, DataType)>,
    range: ScanRange,
    filters: Vec<BExpr>,
    partial: Option<Partial>,
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

impl Fragment {
    /// The fragment of `shape` (and of a GROUP BY over it), if it can travel.
    pub fn of(shape: &ScanShape, partial: Option<Partial>) -> Option<Fragment> {
        let schema = shape.table.schema();
        let columns = shape
            .columns
            .iter()
            .map(|&c| schema.columns.get(c).map(|d| (d.name.clone(), d.data_type)))
            .collect::<Option<Vec<_>>>()?;
        let f = Fragment {
            table: shape.table.name().to_string(),
            columns,
            range: shape.range.clone(),
            filters: shape.filters.iter().map(|&e| e.clone()).collect(),
            partial,
        };
        // What does not encode (a correlated subquery) stays on the asking node.
        let probe = Request { fragment: f, count: 0, partitions: Vec::new() };
        probe.encode().ok().map(|_| probe.fragment)
    }

    /// The table it reads.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The partitions (of `count`) its rows can be in, when its scan reads a key list
    /// (`sym = 'X'`, `sym IN (...)`): a query for one key goes to one node. `None`: any.
    pub fn key_partitions(&self, count: i32) -> Option<Vec<i32>> {
        let keys = self.range.keys.as_ref()?;
        let mut ps: Vec<i32> =
            keys.iter().filter_map(|k| i32::try_from(kafka_partition(k.as_bytes(), i64::from(count))).ok()).collect();
        ps.sort_unstable();
        ps.dedup();
        Some(ps)
    }

    /// The types of the scan's columns.
    pub fn column_types(&self) -> Vec<DataType> {
        self.columns.iter().map(|(_, t)| *t).collect()
    }

    /// The partial GROUP BY, if any.
    pub fn partial(&self) -> Option<&Partial> {
        self.partial.as_ref()
    }

    /// The fragment over `table` (a snapshot of the table it names), cut to `scope`.
    pub fn plan_over(&self, table: Arc<Table>, scope: &Scope) -> Result<Plan> {
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
        if let Some(p) = &self.partial {
            plan = Plan::PartialAggregate { input: Box::new(plan), keys: p.keys.clone(), aggs: p.aggs.clone() };
        }
        Ok(plan)
    }

    /// The fragment bound against `catalog` (its table now), cut to `scope`. A table this
    /// node has not seen yet (no row of it reached here) reads as empty.
    pub fn plan_in(&self, catalog: &Catalog, scope: &Scope) -> Result<Plan> {
        match catalog.snapshot(&self.table) {
            Ok(t) => self.plan_over(t, scope),
            Err(_) => Ok(self.empty()),
        }
    }

    /// The fragment over no rows.
    fn empty(&self) -> Plan {
        let schema = zepto_storage::Schema {
            columns: self
                .columns
                .iter()
                .map(|(n, t)| zepto_storage::ColumnDef { name: n.clone(), data_type: *t })
                .collect(),
        };
        let table = Table::new(&self.table, schema, &zepto_storage::TableOptions::default());
        match table {
            Ok(t) => {
                let columns = (0..self.columns.len()).collect();
                let mut plan = Plan::Scan { table: Arc::new(t), columns, range: ScanRange::default() };
                if let Some(p) = &self.partial {
                    plan = Plan::PartialAggregate { input: Box::new(plan), keys: p.keys.clone(), aggs: p.aggs.clone() };
                }
                plan
            }
            Err(_) => Plan::Values { rows: Vec::new(), width: self.columns.len() },
        }
    }
}
