//! The distribution pass: scans of the cluster's tables become exchanges, GROUP BYs over them
//! partial states merged here (see the module docs of [`super`]).

use super::fragment::{Fragment, Limits, Partial, Request};
use super::scope::Scope;
use crate::cluster::{ClusterRef, Layout, Remote};
use crate::error::{Result, SqlError};
use crate::interrupt::RunContext;
use crate::plan::shape::scan_shape;
use crate::plan::window::WinCall;
use crate::plan::{AggCall, BExpr, Plan};
use std::cell::OnceCell;
use std::sync::Arc;
use zepto_storage::Table;

/// The cluster a query is planned over, its layout read once, when a scan first needs it.
pub(crate) struct Dist<'c> {
    cluster: &'c ClusterRef,
    layout: OnceCell<Layout>,
    run: &'c RunContext,
}

impl<'c> Dist<'c> {
    /// Planning the query `run` over `cluster`, under its settings: `cluster_scope = local`
    /// asks no other node; `allow_partial` plans without the partitions nobody can answer
    /// for (noted in `run`) instead of failing.
    pub(crate) fn new(cluster: &'c ClusterRef, run: &'c RunContext) -> Dist<'c> {
        Dist { cluster, layout: OnceCell::new(), run }
    }

    /// The layout, with every partition owned (else the query cannot be answered whole).
    fn layout(&self) -> Result<&Layout> {
        if let Some(l) = self.layout.get() {
            return Ok(l);
        }
        let l = self.cluster.get().layout()?;
        if self.run.settings().cluster_local() {
            return Ok(self.layout.get_or_init(|| Layout::new(l.count(), l.mine(), &[])));
        }
        let missing = l.missing();
        if !missing.is_empty() && self.run.settings().allow_partial() {
            self.run.note_missing(&missing);
        } else if !missing.is_empty() {
            return Err(SqlError::Execution(format!(
                "partitions {missing:?} of the cluster's {} have no owner that can answer now (a node \
                 left and Kafka has not moved its partitions yet, or their new owner is still \
                 replaying them): retry in a few seconds, or SET allow_partial = on",
                l.count()
            )));
        }
        Ok(self.layout.get_or_init(|| l))
    }

    /// An exchange of `fragment`, this node's share planned over the snapshots the query was
    /// bound to (the scans of `from`, the subtree the fragment stands for).
    fn exchange(&self, fragment: &Fragment, from: &Plan) -> Result<Plan> {
        let layout = self.layout()?;
        let bound = |name: &str| snapshot_in(from, name);
        let input = fragment.plan_with(&bound, &Scope::new(layout.count(), layout.mine()))?;
        // Nodes none of whose partitions can hold the scan's keys are not asked.
        let touched = fragment.key_partitions(layout.count());
        let remotes = layout
            .others()
            .iter()
            .map(|(node, ps)| {
                let ps: Vec<i32> =
                    ps.iter().copied().filter(|p| touched.as_ref().is_none_or(|t| t.contains(p))).collect();
                (node, ps)
            })
            .filter(|(_, ps)| !ps.is_empty())
            .map(|(node, partitions)| {
                let limits = Limits::of(self.run);
                let r = Request {
                    fragment: fragment.clone(),
                    count: layout.count(),
                    partitions: partitions.clone(),
                    limits,
                };
                Ok(Remote { node: node.clone(), partitions, request: r.encode()?.into() })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Plan::Exchange {
            input: Box::new(input),
            remotes,
            mine: layout.mine().to_vec(),
            cluster: self.cluster.clone(),
        })
    }

    /// Whether the cluster spreads `table`'s rows over its nodes. The system catalogs never:
    /// they are built on this node from its catalog, which holds every table of the cluster.
    fn spreads(&self, table: &Table) -> bool {
        !crate::system::is_catalog_table(table.name()) && self.cluster.get().distributes(table.name())
    }

    /// `input` (a scan shape) gathered from every owner, if its table is the cluster's.
    fn gather(&self, input: &Plan) -> Result<Option<Plan>> {
        let Some(mut s) = scan_shape(input) else { return Ok(None) };
        if !self.spreads(s.table) {
            return Ok(None);
        }
        if let Some(f) = Fragment::of(&s, None) {
            return self.exchange(&f, input).map(Some);
        }
        // Filters that cannot travel run here, over the gathered scan.
        let filters = std::mem::take(&mut s.filters);
        let Some(f) = Fragment::of(&s, None) else { return Ok(None) };
        let mut plan = self.exchange(&f, input)?;
        for pred in filters {
            plan = Plan::Filter { input: Box::new(plan), pred: pred.clone() };
        }
        Ok(Some(plan))
    }

    /// A GROUP BY over a scan shape of the cluster's, split into partial states on every owner
    /// and their merge here, if every aggregate merges.
    fn split_aggregate(&self, input: &Plan, keys: &[BExpr], aggs: &[AggCall]) -> Result<Option<Plan>> {
        let Some(s) = scan_shape(input) else { return Ok(None) };
        if !aggs.iter().all(AggCall::mergeable) || !self.spreads(s.table) {
            return Ok(None);
        }
        let partial = Partial { keys: keys.to_vec(), aggs: aggs.to_vec() };
        let Some(f) = Fragment::of(&s, Some(partial)) else { return Ok(None) };
        let exchange = self.exchange(&f, input)?;
        Ok(Some(Plan::MergeAggregate {
            input: Box::new(exchange),
            nkeys: keys.len(),
            aggs: aggs.to_vec(),
            empty: f.column_types(),
        }))
    }
}

/// The snapshot of table `name` a scan of `p` reads.
fn snapshot_in(p: &Plan, name: &str) -> Option<Arc<Table>> {
    match p {
        Plan::Scan { table, .. } if table.name() == name => Some(table.clone()),
        p => p.inputs().into_iter().find_map(|i| snapshot_in(i, name)),
    }
}

impl Dist<'_> {
    /// `input` is a (filtered) scan of a table the cluster spreads, and `keys` are exactly its
    /// partition key: rows that meet on these keys live on one node.
    fn keyed(&self, input: &Plan, keys: &[BExpr]) -> bool {
        let Some(s) = scan_shape(input) else { return false };
        let is_key = matches!(keys, [BExpr::Col(i, _)] if s.table.key_col().is_some() && s.columns.get(*i).copied() == s.table.key_col());
        is_key && self.spreads(s.table)
    }

    /// Window calls that all partition by `input`'s partition key (a scan the cluster spreads).
    fn by_key(&self, input: &Plan, calls: &[WinCall]) -> bool {
        let Some(s) = scan_shape(input) else { return false };
        let Some(kp) = s.columns.iter().position(|&c| Some(c) == s.table.key_col()) else { return false };
        let by_key = |c: &WinCall| c.partition.iter().any(|e| matches!(e, BExpr::Col(i, _) if *i == kp));
        !calls.is_empty() && calls.iter().all(by_key) && self.spreads(s.table)
    }

    /// An ASOF or WINDOW JOIN of two scans on their partition keys, or window functions
    /// partitioned by the partition key, run whole on every owner (a key's rows never meet
    /// another node's), if `p` is one.
    fn key_local(&self, p: &Plan) -> Result<Option<Plan>> {
        let local = match p {
            Plan::AsofJoin { left, right, left_keys, right_keys, .. }
            | Plan::WindowJoin { left, right, left_keys, right_keys, .. } => {
                self.keyed(left, left_keys) && self.keyed(right, right_keys)
            }
            Plan::Window { input, calls, .. } => self.by_key(input, calls),
            _ => false,
        };
        match local.then(|| Fragment::of_key_local(p)).flatten() {
            Some(f) => self.exchange(&f, p).map(Some),
            None => Ok(None),
        }
    }
}

/// `p` with every scan of the cluster's tables an exchange (see the module docs).
pub(crate) fn distribute(p: Plan, d: &Dist) -> Result<Plan> {
    if let Plan::Aggregate { input, keys, aggs, .. } = &p {
        if let Some(split) = d.split_aggregate(input, keys, aggs)? {
            return Ok(split);
        }
    }
    if let Some(local) = d.key_local(&p)? {
        return Ok(local);
    }
    if scan_shape(&p).is_some() {
        return Ok(d.gather(&p)?.unwrap_or(p));
    }
    p.map_inputs(|c| distribute(c, d))
}
