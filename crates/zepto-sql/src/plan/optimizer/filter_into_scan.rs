//! Rule `push_filter_into_scan`: a filter over a scan hands the scan what it can enforce
//! exactly. `key = 'X'` / `key IN (...)` on the table's partition key select partitions;
//! comparisons of the designated timestamp with constants become an inclusive time range each
//! partition binary-searches. Those conjuncts leave the filter; the rest stay above the scan
//! (no filter at all when none is left).
//!
//! The filter may sit directly on the scan or on other filters over it (a WHERE over the
//! tenant scope's filter, see [`crate::access`]; a WINDOW JOIN's WHERE conjuncts, one filter
//! each): the range goes to the scan below them all, and a scan that has a range already
//! (from a filter nearer to it) has it narrowed. A range is enforced by cutting partitions,
//! which evaluates no expression, so moving a conjunct below another filter changes nothing
//! but the work; the filters that stay keep their order.

use super::{transform_up, Rule};
use crate::parser::ast::BinaryOp;
use crate::plan::{BExpr, Plan, ScanRange};
use zepto_storage::Value;

/// The rule (see the module doc).
pub struct PushFilterIntoScan;

impl Rule for PushFilterIntoScan {
    fn name(&self) -> &'static str {
        "push_filter_into_scan"
    }

    fn rewrite(&self, plan: Plan) -> Plan {
        transform_up(plan, &push)
    }
}

/// One node: a `Filter` over a scan (directly or through other filters) narrows the scan's
/// range by what it can enforce, and keeps what is left of its predicate.
fn push(plan: Plan) -> Plan {
    let Plan::Filter { mut input, pred } = plan else { return plan };
    let Some(Plan::Scan { table, columns, range }) = scan_below_filters(&mut input) else {
        return Plan::Filter { input, pred };
    };
    let key = table.key_col().and_then(|k| columns.iter().position(|&c| c == k));
    let ts = table.ts_col().and_then(|k| columns.iter().position(|&c| c == k));
    let (narrowed, rest) = narrow(range.clone(), pred, key, ts);
    *range = narrowed;
    match rest {
        Some(pred) => Plan::Filter { input, pred },
        None => *input,
    }
}

/// The scan at the bottom of a stack of filters (`p` itself when it is one), if that is
/// what `p` is. Filters keep their input's columns, so a predicate of any of them reads the
/// scan's column positions.
fn scan_below_filters(p: &mut Plan) -> Option<&mut Plan> {
    if matches!(p, Plan::Scan { .. }) {
        return Some(p);
    }
    match p {
        Plan::Filter { input, .. } => scan_below_filters(input),
        _ => None,
    }
}

/// What a scan can enforce of `pred` (`key_col`, `ts_col` are positions in the scan's
/// output): its range, and the conjuncts left over (`None`: nothing is).
pub(crate) fn scan_range(pred: BExpr, key_col: Option<usize>, ts_col: Option<usize>) -> (ScanRange, Option<BExpr>) {
    narrow(ScanRange::default(), pred, key_col, ts_col)
}

/// `range` narrowed by what a scan can enforce of `pred`, and the conjuncts left over.
fn narrow(range: ScanRange, pred: BExpr, key_col: Option<usize>, ts_col: Option<usize>) -> (ScanRange, Option<BExpr>) {
    let mut conj = Vec::new();
    pred.conjuncts(&mut conj);
    let (range, rest) = extract(range, conj, key_col, ts_col);
    (range, BExpr::and_all(rest))
}

/// Take the conjuncts a scan can enforce (`key_col`, `ts_col` are scan output positions) into
/// `range`. Returns the range and the remaining conjuncts.
fn extract(
    mut range: ScanRange,
    preds: Vec<BExpr>,
    key_col: Option<usize>,
    ts_col: Option<usize>,
) -> (ScanRange, Vec<BExpr>) {
    let mut rest = Vec::new();
    for p in preds {
        if !absorb(&p, key_col, ts_col, &mut range) {
            rest.push(p);
        }
    }
    (range, rest)
}

fn absorb(p: &BExpr, key_col: Option<usize>, ts_col: Option<usize>, r: &mut ScanRange) -> bool {
    match p {
        BExpr::Binary { op, left, right, .. } if op.is_comparison() => {
            let (col, op, v) = match (&**left, &**right) {
                (BExpr::Col(c, _), BExpr::Lit(v, _)) => (*c, *op, v),
                (BExpr::Lit(v, _), BExpr::Col(c, _)) => (*c, op.flip(), v),
                _ => return false,
            };
            if Some(col) == key_col && op == BinaryOp::Eq {
                if let Value::Str(s) = v {
                    intersect_keys(r, vec![s.clone()]);
                    return true;
                }
                if v.is_null() {
                    intersect_keys(r, vec![]);
                    return true;
                }
            }
            if Some(col) == ts_col {
                let t = match v {
                    Value::Timestamp(t) => *t,
                    Value::Null => {
                        // Comparison with NULL is never true.
                        r.ts_lo = i64::MAX;
                        r.ts_hi = i64::MIN;
                        return true;
                    }
                    _ => return false,
                };
                // A bound at the end of the range (`ts <= TIMESTAMP 'infinity'`) would leave it
                // looking unbounded, and an unbounded scan also yields NULL times: keep such a
                // predicate as a filter. Past the end (`ts > 'infinity'`): no row at all.
                match op {
                    BinaryOp::Eq => {
                        r.ts_lo = r.ts_lo.max(t);
                        r.ts_hi = r.ts_hi.min(t);
                    }
                    BinaryOp::GtEq | BinaryOp::LtEq if t == i64::MIN || t == i64::MAX => return false,
                    BinaryOp::Gt => match t.checked_add(1) {
                        Some(t1) => r.ts_lo = r.ts_lo.max(t1),
                        None => (r.ts_lo, r.ts_hi) = (i64::MAX, i64::MIN),
                    },
                    BinaryOp::GtEq => r.ts_lo = r.ts_lo.max(t),
                    BinaryOp::Lt => match t.checked_sub(1) {
                        Some(t1) => r.ts_hi = r.ts_hi.min(t1),
                        None => (r.ts_lo, r.ts_hi) = (i64::MAX, i64::MIN),
                    },
                    BinaryOp::LtEq => r.ts_hi = r.ts_hi.min(t),
                    _ => return false,
                }
                return true;
            }
            false
        }
        BExpr::InList { expr, list, negated: false } => {
            let BExpr::Col(c, _) = **expr else {
                return false;
            };
            if Some(c) != key_col {
                return false;
            }
            let mut keys = Vec::new();
            for item in list {
                match item {
                    BExpr::Lit(Value::Str(s), _) => keys.push(s.clone()),
                    BExpr::Lit(Value::Null, _) => {}
                    _ => return false,
                }
            }
            intersect_keys(r, keys);
            true
        }
        BExpr::InSet { expr, set, negated: false } => {
            let BExpr::Col(c, _) = **expr else {
                return false;
            };
            if Some(c) != key_col || !set.data_type().is_string() {
                return false;
            }
            intersect_keys(r, set.strs().map(str::to_owned).collect());
            true
        }
        _ => false,
    }
}

fn intersect_keys(r: &mut ScanRange, mut keys: Vec<String>) {
    keys.sort_unstable();
    keys.dedup();
    r.keys = Some(match r.keys.take() {
        None => keys,
        Some(old) => old.into_iter().filter(|k| keys.binary_search(k).is_ok()).collect(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use zepto_storage::{ColumnDef, DataType, Schema, Table, TableOptions};

    /// `t(ts TIMESTAMP, sym SYMBOL, x DOUBLE)`: `sym` is the partition key, `ts` the
    /// designated timestamp.
    fn table() -> Arc<Table> {
        let col = |name: &str, data_type| ColumnDef { name: name.into(), data_type };
        let schema = Schema {
            columns: vec![col("ts", DataType::Timestamp), col("sym", DataType::Symbol), col("x", DataType::Float64)],
        };
        Arc::new(Table::new("t", schema, &TableOptions::default()).expect("table"))
    }

    fn scan(columns: Vec<usize>) -> Plan {
        Plan::Scan { table: table(), columns, range: ScanRange::default() }
    }

    fn filter(input: Plan, pred: BExpr) -> Plan {
        Plan::Filter { input: Box::new(input), pred }
    }

    fn cmp(op: BinaryOp, col: usize, ty: DataType, v: Value) -> BExpr {
        BExpr::Binary {
            op,
            left: Box::new(BExpr::Col(col, ty)),
            right: Box::new(BExpr::Lit(v, ty)),
            ty: DataType::Bool,
        }
    }

    fn sym_is(col: usize, s: &str) -> BExpr {
        cmp(BinaryOp::Eq, col, DataType::Symbol, Value::Str(s.into()))
    }

    fn ts_from(col: usize, t: i64) -> BExpr {
        cmp(BinaryOp::GtEq, col, DataType::Timestamp, Value::Timestamp(t))
    }

    fn x_over(col: usize, v: f64) -> BExpr {
        cmp(BinaryOp::Gt, col, DataType::Float64, Value::Float64(v))
    }

    fn and(l: BExpr, r: BExpr) -> BExpr {
        BExpr::and_all(vec![l, r]).expect("two conjuncts")
    }

    fn rewrite(p: Plan) -> Plan {
        PushFilterIntoScan.rewrite(p)
    }

    #[test]
    fn key_and_time_conjuncts_move_into_the_scan_and_the_rest_stays() {
        let p = rewrite(filter(scan(vec![0, 1, 2]), and(and(sym_is(1, "A"), ts_from(0, 100)), x_over(2, 1.0))));
        let Plan::Filter { input, pred } = p else { panic!("the x conjunct stays a filter") };
        assert_eq!(pred, x_over(2, 1.0));
        let Plan::Scan { range, .. } = *input else { panic!("a scan under the filter") };
        assert_eq!(range, ScanRange { keys: Some(vec!["A".into()]), ts_lo: 100, ts_hi: i64::MAX, null_key: false });
    }

    #[test]
    fn a_filter_the_scan_enforces_whole_disappears() {
        let p = rewrite(filter(scan(vec![0, 1, 2]), and(sym_is(1, "B"), ts_from(0, 5))));
        let Plan::Scan { range, .. } = p else { panic!("no filter left: {p:?}") };
        assert_eq!(range, ScanRange { keys: Some(vec!["B".into()]), ts_lo: 5, ts_hi: i64::MAX, null_key: false });
    }

    #[test]
    fn key_and_time_are_found_by_position_in_the_scan_columns() {
        // The scan reads x, sym, ts: the key is its column 1, the time its column 2.
        let p = rewrite(filter(scan(vec![2, 1, 0]), and(sym_is(1, "A"), ts_from(2, 7))));
        let Plan::Scan { range, .. } = p else { panic!("pushed whole: {p:?}") };
        assert_eq!(range, ScanRange { keys: Some(vec!["A".into()]), ts_lo: 7, ts_hi: i64::MAX, null_key: false });
        // A scan that reads neither has nothing to select by: its column 0 is x here.
        let p = rewrite(filter(scan(vec![2]), x_over(0, 1.0)));
        assert!(
            matches!(p, Plan::Filter { input, .. } if matches!(*input, Plan::Scan { ref range, .. } if *range == ScanRange::default()))
        );
    }

    #[test]
    fn fires_below_other_nodes_and_on_both_join_inputs() {
        let side = || filter(scan(vec![0, 1, 2]), sym_is(1, "A"));
        let join = Plan::Join {
            left: Box::new(side()),
            right: Box::new(side()),
            kind: crate::parser::ast::JoinKind::Inner,
            left_keys: vec![],
            right_keys: vec![],
            residual: None,
        };
        let p = rewrite(Plan::Limit { input: Box::new(join), offset: 0, limit: Some(1), from_end: false });
        let Plan::Limit { input, .. } = p else { panic!("limit on top") };
        for side in input.inputs() {
            assert!(matches!(side, Plan::Scan { range, .. } if range.keys == Some(vec!["A".to_string()])));
        }
    }

    #[test]
    fn leaves_filters_not_over_a_scan() {
        // Over a projection: the scan is not below the filter (through filters only).
        let project =
            Plan::Project { input: Box::new(scan(vec![0, 1, 2])), exprs: vec![BExpr::Col(1, DataType::Symbol)] };
        let p = rewrite(filter(project, sym_is(0, "A")));
        let Plan::Filter { input, .. } = p else { panic!("still a filter") };
        assert!(matches!(*input, Plan::Project { .. }));
        // Nothing the scan can enforce: the filter stays as it was.
        let p = rewrite(filter(scan(vec![0, 1, 2]), x_over(2, 0.5)));
        assert!(matches!(p, Plan::Filter { pred, .. } if pred == x_over(2, 0.5)));
    }

    #[test]
    fn a_scan_with_a_range_has_it_narrowed() {
        let ranged = Plan::Scan {
            table: table(),
            columns: vec![0, 1, 2],
            range: ScanRange { keys: Some(vec!["A".into(), "B".into()]), ..ScanRange::default() },
        };
        let p = rewrite(filter(ranged, and(ts_from(0, 5), sym_is(1, "B"))));
        let Plan::Scan { range, .. } = p else { panic!("pushed whole: {p:?}") };
        assert_eq!(range, ScanRange { keys: Some(vec!["B".into()]), ts_lo: 5, ts_hi: i64::MAX, null_key: false });
    }

    #[test]
    fn stacked_filters_push_into_the_scan_below_them_all_and_keep_their_order() {
        // The inner filter's key conjunct moves into the scan; the outer filter then narrows
        // the scan's range by its time conjunct.
        let p = rewrite(filter(filter(scan(vec![0, 1, 2]), sym_is(1, "A")), ts_from(0, 9)));
        let Plan::Scan { range, .. } = p else { panic!("both pushed: {p:?}") };
        assert_eq!(range, ScanRange { keys: Some(vec!["A".into()]), ts_lo: 9, ts_hi: i64::MAX, null_key: false });
        // An inner filter the scan cannot enforce stays next to the scan, under what is left of
        // the outer one, whose time conjunct goes past it into the scan.
        let p = rewrite(filter(filter(scan(vec![0, 1, 2]), x_over(2, 1.0)), and(ts_from(0, 9), x_over(2, 2.0))));
        let Plan::Filter { input: outer_in, pred: outer } = p else { panic!("outer filter stays") };
        assert_eq!(outer, x_over(2, 2.0));
        let Plan::Filter { input, pred: inner } = *outer_in else { panic!("inner filter stays") };
        assert_eq!(inner, x_over(2, 1.0));
        assert!(matches!(*input, Plan::Scan { range, .. } if range.ts_lo == 9 && range.keys.is_none()));
    }

    #[test]
    fn time_bounds_intersect_and_null_selects_nothing() {
        let le = cmp(BinaryOp::Lt, 0, DataType::Timestamp, Value::Timestamp(50));
        let (r, rest) = scan_range(and(ts_from(0, 10), le), None, Some(0));
        assert_eq!((r.ts_lo, r.ts_hi, rest), (10, 49, None));
        let (r, _) = scan_range(cmp(BinaryOp::Eq, 0, DataType::Timestamp, Value::Null), None, Some(0));
        assert!(r.ts_lo > r.ts_hi);
        let in_list = BExpr::InList {
            expr: Box::new(BExpr::Col(1, DataType::Symbol)),
            list: vec![
                BExpr::Lit(Value::Str("B".into()), DataType::Varchar),
                BExpr::Lit(Value::Str("A".into()), DataType::Varchar),
            ],
            negated: false,
        };
        let (r, _) = scan_range(and(in_list, sym_is(1, "A")), Some(1), None);
        assert_eq!(r.keys, Some(vec!["A".into()]));
    }
}
