//! Rule `prune_columns`: "which columns are needed" flows down the plan from its output, so
//! scans copy only the columns a query reads (`count(*)` reads none), every expression above
//! is renumbered to the narrower inputs, and an ASOF JOIN emits only what its parent reads
//! (the key and time columns it reads to match are never gathered into its output).

use super::Rule;
use crate::plan::window::WinCall;
use crate::plan::{AggCall, AggHow, BExpr, Plan, SortKey, WindowHow};

/// The rule (see the module doc).
pub struct PruneColumns;

impl Rule for PruneColumns {
    fn name(&self) -> &'static str {
        "prune_columns"
    }

    fn rewrite(&self, plan: Plan) -> Plan {
        prune_plan(plan)
    }
}

/// Old column position → new position (None: column dropped).
type Map = Vec<Option<usize>>;

fn mark(e: &BExpr, need: &mut [bool]) {
    e.for_each_col(&mut |i| {
        if let Some(n) = need.get_mut(i) {
            *n = true;
        }
    });
}

fn remap(e: &mut BExpr, map: &Map) {
    e.map_cols(&|i| map.get(i).copied().flatten().unwrap_or(i));
}

fn identity(n: usize) -> Map {
    (0..n).map(Some).collect()
}

/// Prune both inputs of a join-like node whose output is `[left..., right...]`, keeping what
/// `need` asks for plus what the `lx` (left) and `rx` (right) expressions read, which are
/// remapped in place. Returns the pruned inputs and the output column map.
fn prune_pair(
    left: Plan,
    right: Plan,
    need: &[bool],
    lx: &mut [&mut BExpr],
    rx: &mut [&mut BExpr],
) -> (Plan, Plan, Map) {
    let (wl, wr) = (left.width(), right.width());
    let mut nl: Vec<bool> = (0..wl).map(|i| need.get(i).copied().unwrap_or(true)).collect();
    let mut nr: Vec<bool> = (0..wr).map(|i| need.get(wl + i).copied().unwrap_or(true)).collect();
    lx.iter().for_each(|k| mark(k, &mut nl));
    rx.iter().for_each(|k| mark(k, &mut nr));
    let (left, ml) = prune(left, &nl);
    let (right, mr) = prune(right, &nr);
    lx.iter_mut().for_each(|k| remap(k, &ml));
    rx.iter_mut().for_each(|k| remap(k, &mr));
    let new_wl = left.width();
    let map: Map = ml.iter().copied().chain(mr.iter().map(|m| m.map(|j| new_wl + j))).collect();
    (left, right, map)
}

/// Prune the whole plan: every output column is needed.
fn prune_plan(p: Plan) -> Plan {
    let need = vec![true; p.width()];
    prune(p, &need).0
}

fn prune(p: Plan, need: &[bool]) -> (Plan, Map) {
    match p {
        Plan::Scan { table, columns, range } => {
            let (columns, map) = keep_needed(columns, need);
            (Plan::Scan { table, columns, range }, map)
        }
        // The distributed operators appear only after optimizing (see `crate::plan::dist`).
        Plan::Values { .. }
        | Plan::Series { .. }
        | Plan::Distinct { .. }
        | Plan::ProjectSet { .. }
        | Plan::SetOp { .. }
        | Plan::Fill { .. }
        | Plan::Exchange { .. }
        | Plan::PartialAggregate { .. }
        | Plan::MergeAggregate { .. } => prune_whole_rows(p),
        Plan::Filter { input, mut pred } => {
            let mut n = need.to_vec();
            n.resize(input.width(), false);
            mark(&pred, &mut n);
            let (input, map) = prune(*input, &n);
            remap(&mut pred, &map);
            (Plan::Filter { input: Box::new(input), pred }, map)
        }
        Plan::Sort { input, mut keys, limit, how } => {
            let mut n = need.to_vec();
            n.resize(input.width(), false);
            keys.iter().for_each(|k| mark(&k.expr, &mut n));
            let (input, map) = prune(*input, &n);
            keys.iter_mut().for_each(|k: &mut SortKey| remap(&mut k.expr, &map));
            (Plan::Sort { input: Box::new(input), keys, limit, how }, map)
        }
        Plan::Window { input, calls, how } => prune_window(*input, calls, how, need),
        Plan::Latest { input, mut keys, mut ts, how } => {
            let mut n = need.to_vec();
            n.resize(input.width(), false);
            keys.iter().chain(std::iter::once(&ts)).for_each(|k| mark(k, &mut n));
            let (input, map) = prune(*input, &n);
            keys.iter_mut().chain(std::iter::once(&mut ts)).for_each(|k| remap(k, &map));
            (Plan::Latest { input: Box::new(input), keys, ts, how }, map)
        }
        Plan::Limit { input, offset, limit, from_end } => {
            let (input, map) = prune(*input, need);
            (Plan::Limit { input: Box::new(input), offset, limit, from_end }, map)
        }
        Plan::Project { input, exprs } => {
            let (mut exprs, map) = keep_needed(exprs, need);
            let mut n = vec![false; input.width()];
            exprs.iter().for_each(|e| mark(e, &mut n));
            let (input, imap) = prune(*input, &n);
            exprs.iter_mut().for_each(|e| remap(e, &imap));
            (Plan::Project { input: Box::new(input), exprs }, map)
        }
        Plan::Aggregate { input, keys, aggs, how } => prune_aggregate(*input, keys, aggs, how),
        p @ (Plan::WindowJoin { .. }
        | Plan::SpliceJoin { .. }
        | Plan::RangeJoin { .. }
        | Plan::AsofJoin { .. }
        | Plan::Join { .. }) => prune_join(p, need),
    }
}

/// The items (scan columns, projected expressions) whose output position `need` asks for,
/// and the output map.
fn keep_needed<T>(items: Vec<T>, need: &[bool]) -> (Vec<T>, Map) {
    let mut map = vec![None; items.len()];
    let mut kept = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        if need.get(i).copied().unwrap_or(true) {
            map[i] = Some(kept.len());
            kept.push(item);
        }
    }
    (kept, map)
}

/// The nodes whose every output column depends on every input column (DISTINCT, set
/// operations, SAMPLE BY fill, literal rows): each input keeps all its columns, and the node
/// keeps its own.
fn prune_whole_rows(p: Plan) -> (Plan, Map) {
    let w = p.width();
    let all = |input: &Plan| vec![true; input.width()];
    let p = match p {
        Plan::Fill { input, spec } => {
            let n = all(&input);
            Plan::Fill { input: Box::new(prune(*input, &n).0), spec }
        }
        Plan::Distinct { input } => {
            let n = all(&input);
            Plan::Distinct { input: Box::new(prune(*input, &n).0) }
        }
        Plan::ProjectSet { input, calls } => {
            let n = all(&input);
            Plan::ProjectSet { input: Box::new(prune(*input, &n).0), calls }
        }
        Plan::SetOp { op, all: set_all, left, right } => {
            let (nl, nr) = (all(&left), all(&right));
            Plan::SetOp { op, all: set_all, left: Box::new(prune(*left, &nl).0), right: Box::new(prune(*right, &nr).0) }
        }
        p => p,
    };
    (p, identity(w))
}

/// A Window node: its input keeps what the output and the calls' arguments, partitions and
/// orders read; the calls' columns follow the input's.
fn prune_window(input: Plan, mut calls: Vec<WinCall>, how: WindowHow, need: &[bool]) -> (Plan, Map) {
    let w = input.width();
    let mut n: Vec<bool> = (0..w).map(|i| need.get(i).copied().unwrap_or(true)).collect();
    for c in &calls {
        c.args.iter().chain(&c.partition).for_each(|x| mark(x, &mut n));
        c.order.iter().for_each(|k| mark(&k.expr, &mut n));
    }
    let (input, imap) = prune(input, &n);
    for c in &mut calls {
        c.args.iter_mut().chain(c.partition.iter_mut()).for_each(|x| remap(x, &imap));
        c.order.iter_mut().for_each(|k| remap(&mut k.expr, &imap));
    }
    let new_w = input.width();
    let map: Map = imap.iter().copied().chain((0..calls.len()).map(|k| Some(new_w + k))).collect();
    (Plan::Window { input: Box::new(input), calls, how }, map)
}

/// An Aggregate keeps all its outputs; its input keeps what the keys and the aggregates'
/// arguments and orders read.
fn prune_aggregate(input: Plan, mut keys: Vec<BExpr>, mut aggs: Vec<AggCall>, how: AggHow) -> (Plan, Map) {
    let w = keys.len() + aggs.len();
    let mut n = vec![false; input.width()];
    keys.iter().for_each(|k| mark(k, &mut n));
    for a in &aggs {
        a.args.iter().for_each(|x| mark(x, &mut n));
        if let Some(o) = &a.order {
            mark(o, &mut n);
        }
    }
    let (input, imap) = prune(input, &n);
    keys.iter_mut().for_each(|k| remap(k, &imap));
    aggs.iter_mut().for_each(|a: &mut AggCall| {
        a.args.iter_mut().for_each(|x| remap(x, &imap));
        if let Some(o) = &mut a.order {
            remap(o, &imap);
        }
    });
    (Plan::Aggregate { input: Box::new(input), keys, aggs, how }, identity(w))
}

/// [`prune`] for the two-input joins: each side keeps what the output and the join's keys,
/// times and residual read.
fn prune_join(p: Plan, need: &[bool]) -> (Plan, Map) {
    match p {
        Plan::WindowJoin { .. } => prune_window_join(p, need),
        Plan::SpliceJoin { left, right, mut left_keys, mut right_keys, mut left_ts, mut right_ts } => {
            let sides = [(&mut left_keys, &mut left_ts), (&mut right_keys, &mut right_ts)];
            let (left, right, map) = prune_timed_pair(*left, *right, need, sides);
            let plan = Plan::SpliceJoin {
                left: Box::new(left),
                right: Box::new(right),
                left_keys,
                right_keys,
                left_ts,
                right_ts,
            };
            (plan, map)
        }
        Plan::RangeJoin { left, right, mut left_keys, mut right_keys, mut left_ts, mut right_ts, lo, hi, outer } => {
            let sides = [(&mut left_keys, &mut left_ts), (&mut right_keys, &mut right_ts)];
            let (left, right, map) = prune_timed_pair(*left, *right, need, sides);
            let plan = Plan::RangeJoin {
                left: Box::new(left),
                right: Box::new(right),
                left_keys,
                right_keys,
                left_ts,
                right_ts,
                lo,
                hi,
                outer,
            };
            (plan, map)
        }
        Plan::AsofJoin { .. } => prune_asof_join(p, need),
        Plan::Join { .. } => prune_hash_join(p, need),
        p => {
            let w = p.width();
            (p, identity(w))
        }
    }
}

/// [`prune_pair`] for the joins that match each side's keys and time (SPLICE and range joins):
/// `sides` are the left and right (keys, time) expressions, remapped in place.
fn prune_timed_pair(
    left: Plan,
    right: Plan,
    need: &[bool],
    sides: [(&mut Vec<BExpr>, &mut BExpr); 2],
) -> (Plan, Plan, Map) {
    let [(lk, lt), (rk, rt)] = sides;
    let mut lx: Vec<&mut BExpr> = lk.iter_mut().chain(std::iter::once(lt)).collect();
    let mut rx: Vec<&mut BExpr> = rk.iter_mut().chain(std::iter::once(rt)).collect();
    prune_pair(left, right, need, &mut lx, &mut rx)
}

/// A WINDOW JOIN outputs its left columns and one column per aggregate: the left side keeps
/// what the output and the keys and time read, the right side what its keys, time and the
/// aggregates read.
fn prune_window_join(p: Plan, need: &[bool]) -> (Plan, Map) {
    let Plan::WindowJoin {
        left,
        right,
        mut left_keys,
        mut right_keys,
        mut left_ts,
        mut right_ts,
        lo,
        hi,
        mut aggs,
        how,
    } = p
    else {
        let w = p.width();
        return (p, identity(w));
    };
    let (wl, wr) = (left.width(), right.width());
    let mut nl: Vec<bool> = (0..wl).map(|i| need.get(i).copied().unwrap_or(true)).collect();
    let mut nr = vec![false; wr];
    left_keys.iter().chain(std::iter::once(&left_ts)).for_each(|k| mark(k, &mut nl));
    right_keys.iter().chain(std::iter::once(&right_ts)).for_each(|k| mark(k, &mut nr));
    for a in &aggs {
        a.args.iter().chain(a.order.iter()).for_each(|x| mark(x, &mut nr));
    }
    let (left, ml) = prune(*left, &nl);
    let (right, mr) = prune(*right, &nr);
    left_keys.iter_mut().chain(std::iter::once(&mut left_ts)).for_each(|k| remap(k, &ml));
    right_keys.iter_mut().chain(std::iter::once(&mut right_ts)).for_each(|k| remap(k, &mr));
    for a in &mut aggs {
        a.args.iter_mut().chain(a.order.iter_mut()).for_each(|x| remap(x, &mr));
    }
    let new_wl = left.width();
    let map: Map = ml.iter().copied().chain((0..aggs.len()).map(|k| Some(new_wl + k))).collect();
    let plan = Plan::WindowJoin {
        left: Box::new(left),
        right: Box::new(right),
        left_keys,
        right_keys,
        left_ts,
        right_ts,
        lo,
        hi,
        aggs,
        how,
    };
    (plan, map)
}

/// An ASOF JOIN: the inputs keep what the emitted columns and the keys and times read, and
/// the join then emits only what is needed (not the columns read to match).
fn prune_asof_join(p: Plan, need: &[bool]) -> (Plan, Map) {
    let Plan::AsofJoin {
        left,
        right,
        mut left_keys,
        mut right_keys,
        mut left_ts,
        mut right_ts,
        op,
        outer,
        tolerance,
        mut residual,
        emit,
        how,
    } = p
    else {
        let w = p.width();
        return (p, identity(w));
    };
    // `need` is over the emitted columns; the inputs are pruned over `[left, right]`,
    // and the join then emits only what is needed (not the columns read to match).
    let emit = emit.unwrap_or_else(|| (0..left.width() + right.width()).collect());
    let mut need_pair = vec![false; left.width() + right.width()];
    for (k, &c) in emit.iter().enumerate() {
        need_pair[c] |= need.get(k).copied().unwrap_or(true);
    }
    if let Some(r) = &residual {
        mark(r, &mut need_pair);
    }
    let mut lx: Vec<&mut BExpr> = left_keys.iter_mut().chain(std::iter::once(&mut left_ts)).collect();
    let mut rx: Vec<&mut BExpr> = right_keys.iter_mut().chain(std::iter::once(&mut right_ts)).collect();
    let (left, right, pair_map) = prune_pair(*left, *right, &need_pair, &mut lx, &mut rx);
    if let Some(r) = &mut residual {
        remap(r, &pair_map);
    }
    let mut new_emit = Vec::new();
    let map: Map = emit
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let keep = need.get(k).copied().unwrap_or(true);
            pair_map[c].filter(|_| keep).map(|j| {
                new_emit.push(j);
                new_emit.len() - 1
            })
        })
        .collect();
    let emit = Some(new_emit);
    let plan = Plan::AsofJoin {
        left: Box::new(left),
        right: Box::new(right),
        left_keys,
        right_keys,
        left_ts,
        right_ts,
        op,
        outer,
        tolerance,
        residual,
        emit,
        how,
    };
    (plan, map)
}

/// A hash or nested-loop join: each side keeps what the output, its keys and the residual read.
fn prune_hash_join(p: Plan, need: &[bool]) -> (Plan, Map) {
    let Plan::Join { left, right, kind, mut left_keys, mut right_keys, mut residual } = p else {
        let w = p.width();
        return (p, identity(w));
    };
    let (wl, wr) = (left.width(), right.width());
    let mut nl: Vec<bool> = (0..wl).map(|i| need.get(i).copied().unwrap_or(true)).collect();
    let mut nr: Vec<bool> = (0..wr).map(|i| need.get(wl + i).copied().unwrap_or(true)).collect();
    left_keys.iter().for_each(|k| mark(k, &mut nl));
    right_keys.iter().for_each(|k| mark(k, &mut nr));
    if let Some(r) = &residual {
        r.for_each_col(&mut |i| {
            if i < wl {
                nl[i] = true;
            } else if i - wl < wr {
                nr[i - wl] = true;
            }
        });
    }
    let (left, ml) = prune(*left, &nl);
    let (right, mr) = prune(*right, &nr);
    let new_wl = left.width();
    left_keys.iter_mut().for_each(|k| remap(k, &ml));
    right_keys.iter_mut().for_each(|k| remap(k, &mr));
    let map: Map = ml.iter().copied().chain(mr.iter().map(|m| m.map(|j| new_wl + j))).collect();
    if let Some(r) = &mut residual {
        remap(r, &map);
    }
    (Plan::Join { left: Box::new(left), right: Box::new(right), kind, left_keys, right_keys, residual }, map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::functions::AggFunc;
    use crate::parser::ast::BinaryOp;
    use crate::plan::{AggHow, ScanRange};
    use std::sync::Arc;
    use zepto_storage::{ColumnDef, DataType, Schema, Table, TableOptions, Value};

    /// `t(ts TIMESTAMP, sym SYMBOL, x DOUBLE, y DOUBLE)`.
    fn scan() -> Plan {
        let col = |name: &str, data_type| ColumnDef { name: name.into(), data_type };
        let schema = Schema {
            columns: vec![
                col("ts", DataType::Timestamp),
                col("sym", DataType::Symbol),
                col("x", DataType::Float64),
                col("y", DataType::Float64),
            ],
        };
        let table = Arc::new(Table::new("t", schema, &TableOptions::default()).expect("table"));
        Plan::Scan { table, columns: vec![0, 1, 2, 3], range: ScanRange::default() }
    }

    fn x() -> BExpr {
        BExpr::Col(2, DataType::Float64)
    }

    fn scan_columns(p: &Plan) -> Vec<usize> {
        match p {
            Plan::Scan { columns, .. } => columns.clone(),
            p => scan_columns(p.inputs()[0]),
        }
    }

    #[test]
    fn a_projection_reads_only_its_columns_renumbered() {
        let p = Plan::Project { input: Box::new(scan()), exprs: vec![BExpr::Col(3, DataType::Float64), x()] };
        let p = PruneColumns.rewrite(p);
        assert_eq!(scan_columns(&p), [2, 3]);
        let Plan::Project { exprs, .. } = p else { panic!("project on top") };
        assert_eq!(exprs, [BExpr::Col(1, DataType::Float64), BExpr::Col(0, DataType::Float64)]);
    }

    #[test]
    fn a_filter_keeps_the_columns_its_predicate_reads() {
        let pred = BExpr::Binary {
            op: BinaryOp::Gt,
            left: Box::new(BExpr::Col(3, DataType::Float64)),
            right: Box::new(BExpr::Lit(Value::Float64(1.0), DataType::Float64)),
            ty: DataType::Bool,
        };
        let filtered = Plan::Filter { input: Box::new(scan()), pred };
        let p = PruneColumns.rewrite(Plan::Project { input: Box::new(filtered), exprs: vec![x()] });
        assert_eq!(scan_columns(&p), [2, 3]);
        let Plan::Project { input, exprs } = p else { panic!("project on top") };
        assert_eq!(exprs, [BExpr::Col(0, DataType::Float64)]);
        assert!(
            matches!(*input, Plan::Filter { pred: BExpr::Binary { left, .. }, .. } if *left == BExpr::Col(1, DataType::Float64))
        );
    }

    #[test]
    fn count_star_reads_no_column() {
        let count =
            AggCall { func: AggFunc::CountStar, args: vec![], distinct: false, order: None, ty: DataType::Int64 };
        let p = Plan::Aggregate { input: Box::new(scan()), keys: vec![], aggs: vec![count], how: AggHow::Hash };
        assert_eq!(scan_columns(&PruneColumns.rewrite(p)), Vec::<usize>::new());
    }

    #[test]
    fn leaves_alone_what_needs_every_column() {
        // The plan's own output is all needed.
        assert_eq!(scan_columns(&PruneColumns.rewrite(scan())), [0, 1, 2, 3]);
        // DISTINCT compares whole rows: its input keeps every column even under a projection.
        let distinct = Plan::Distinct { input: Box::new(scan()) };
        let p = PruneColumns.rewrite(Plan::Project { input: Box::new(distinct), exprs: vec![x()] });
        assert_eq!(scan_columns(&p), [0, 1, 2, 3]);
    }

    #[test]
    fn an_asof_join_emits_only_what_its_parent_reads() {
        // Both sides joined on sym and ts; the parent reads the left x and the right y.
        let asof = Plan::AsofJoin {
            left: Box::new(scan()),
            right: Box::new(scan()),
            left_keys: vec![BExpr::Col(1, DataType::Symbol)],
            right_keys: vec![BExpr::Col(1, DataType::Symbol)],
            left_ts: BExpr::Col(0, DataType::Timestamp),
            right_ts: BExpr::Col(0, DataType::Timestamp),
            op: BinaryOp::GtEq,
            outer: crate::plan::AsofOuter::Inner,
            tolerance: None,
            residual: None,
            emit: None,
            how: crate::plan::AsofHow::KeySearch,
        };
        let exprs = vec![x(), BExpr::Col(7, DataType::Float64)];
        let p = PruneColumns.rewrite(Plan::Project { input: Box::new(asof), exprs });
        let Plan::Project { input, exprs } = p else { panic!("project on top") };
        let Plan::AsofJoin { left, right, emit, .. } = *input else { panic!("asof under it") };
        // Each side reads its key and time to match, plus the column the parent wants ...
        assert_eq!((scan_columns(&left), scan_columns(&right)), (vec![0, 1, 2], vec![0, 1, 3]));
        // ... and the join emits only those two (left x, right y of the pruned [left, right]).
        assert_eq!(emit, Some(vec![2, 5]));
        assert_eq!(exprs, [BExpr::Col(0, DataType::Float64), BExpr::Col(1, DataType::Float64)]);
    }
}
