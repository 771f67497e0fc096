//! Every aggregate gives one answer whichever way it is driven (`exec::accum`): groups by id
//! (hash GROUP BY) are the reference; the same groups as runs of time-sorted rows (bars,
//! partition-wise), window frames (sliding where the aggregate slides, against the same
//! frames gathered as groups), and partial states of random splits of the input merged per
//! group (history row groups, cluster nodes) must agree with it. Random inputs with NULLs,
//! integer and float values, empty groups and empty inputs.

use zepto_sql::exec::accum::{accumulator, min_and_max, Input, Rows};
use zepto_sql::expr::functions::{AggFunc, AggOrder, MomentStat, PairStat};
use zepto_storage::{Bitmap, Column, ColumnData, DataType, Value};

use crate::common;
use common::Rng;

const FUNCS: [AggFunc; 28] = [
    AggFunc::CountStar,
    AggFunc::Count,
    AggFunc::Sum,
    AggFunc::Avg,
    AggFunc::Min,
    AggFunc::Max,
    AggFunc::First,
    AggFunc::Last,
    AggFunc::ArgMin,
    AggFunc::ArgMax,
    AggFunc::VarSamp,
    AggFunc::VarPop,
    AggFunc::StddevSamp,
    AggFunc::StddevPop,
    AggFunc::Vwap,
    AggFunc::Median,
    AggFunc::Quantile(0.3),
    AggFunc::PercentileCont(0.7),
    AggFunc::Twap,
    AggFunc::StringAgg(AggOrder { desc: false, nulls_first: false }),
    AggFunc::ArrayAgg(AggOrder { desc: true, nulls_first: false }),
    AggFunc::Pair(PairStat::Corr),
    AggFunc::Pair(PairStat::RegrSlope),
    AggFunc::Pair(PairStat::RegrCount),
    AggFunc::Moment(MomentStat::Skewness),
    AggFunc::Moment(MomentStat::Kurtosis),
    AggFunc::Moment(MomentStat::KurtosisPop),
    AggFunc::Product,
];

/// One random input: values `x` (BIGINT or DOUBLE, ~10% NULL), sizes `w` for vwap, unique
/// times `t` in random row order, unique keys `v` (~10% NULL) for arg_min/arg_max, and each
/// row's group.
struct Case {
    x: Column,
    w: Column,
    t: Column,
    v: Column,
    ids: Vec<u32>,
    groups: usize,
}

fn case(rng: &mut Rng, floats: bool) -> Case {
    let n = [0, 1, 7, 60, 300][rng.below(5) as usize];
    let groups = 1 + rng.below(8) as usize;
    let valid: Vec<bool> = (0..n).map(|_| rng.below(10) != 0).collect();
    let data = if floats {
        ColumnData::Float64((0..n).map(|_| (rng.below(2000) as f64 - 1000.0) / 8.0).collect())
    } else {
        ColumnData::Int64((0..n).map(|_| rng.below(2000) as i64 - 1000).collect())
    };
    let x = Column::new(data, Some(Bitmap::from_bools(valid)));
    let w = Column::from_data(ColumnData::Int64((0..n).map(|_| 1 + rng.below(500) as i64).collect()));
    // Unique times, shuffled: row order is not time order.
    let mut times: Vec<i64> = (0..n as i64).map(|i| 1_000 + i * 7).collect();
    for i in (1..times.len()).rev() {
        times.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let t = Column::from_data(ColumnData::Timestamp(times.into()));
    // Unique keys, in an order of their own: no ties, so any way of driving picks one row.
    let mut keys: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 40.0).collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let kept: Vec<bool> = (0..n).map(|_| rng.below(10) != 0).collect();
    let keys = keys.iter().zip(&kept).map(|(&k, &ok)| if ok { k } else { 0.0 }).collect();
    let v = Column::new(ColumnData::Float64(keys), Some(Bitmap::from_bools(kept)));
    let ids = (0..n).map(|_| rng.below(groups as u64) as u32).collect();
    Case { x, w, t, v, ids, groups }
}

fn result_type(f: AggFunc, x: DataType) -> DataType {
    match f {
        AggFunc::CountStar | AggFunc::Count => DataType::Int64,
        AggFunc::Sum
        | AggFunc::Min
        | AggFunc::Max
        | AggFunc::First
        | AggFunc::Last
        | AggFunc::ArgMin
        | AggFunc::ArgMax
        | AggFunc::Quantile(_) => x,
        AggFunc::StringAgg(_) | AggFunc::ArrayAgg(_) => DataType::Varchar,
        AggFunc::Pair(PairStat::RegrCount) => DataType::Int64,
        _ => DataType::Float64,
    }
}

fn args(f: AggFunc, c: &Case) -> Vec<&Column> {
    match f {
        AggFunc::CountStar => vec![],
        AggFunc::Vwap => vec![&c.x, &c.w],
        // arg_min by unique keys; arg_max by sizes, full of ties (settled by x).
        AggFunc::ArgMin => vec![&c.x, &c.v],
        AggFunc::ArgMax => vec![&c.x, &c.w],
        // The values against the sizes.
        AggFunc::Pair(_) => vec![&c.x, &c.w],
        _ => vec![&c.x],
    }
}

/// The reference: hash-style groups by id, rows in any order, first/last by time.
fn by_ids(f: AggFunc, c: &Case) -> Column {
    let mut acc = accumulator(f, result_type(f, c.x.data_type()));
    let input = Input { args: args(f, c), order: Some(&c.t), sorted: false };
    acc.update(&input, Rows::sparse(&c.ids), c.groups).expect("update");
    acc.finish().expect("finish")
}

fn same(a: &Column, b: &Column, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for i in 0..a.len() {
        let ok = match (a.get(i), b.get(i)) {
            (Value::Float64(x), Value::Float64(y)) => {
                x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
            }
            (x, y) => x == y,
        };
        assert!(ok, "{what}: row {i}: {:?} vs {:?}", a.get(i), b.get(i));
    }
}

/// Rows reordered by (group, time): each group a run, in time order.
fn as_runs(c: &Case) -> (Case, Vec<u32>) {
    let times = c.t.as_i64_slice().expect("times");
    let mut order: Vec<u32> = (0..c.ids.len() as u32).collect();
    order.sort_by_key(|&i| (c.ids[i as usize], times[i as usize]));
    let sorted = Case {
        x: c.x.take(&order),
        w: c.w.take(&order),
        t: c.t.take(&order),
        v: c.v.take(&order),
        ids: order.iter().map(|&i| c.ids[i as usize]).collect(),
        groups: c.groups,
    };
    let starts: Vec<u32> =
        (0..sorted.ids.len()).filter(|&i| i == 0 || sorted.ids[i] != sorted.ids[i - 1]).map(|i| i as u32).collect();
    (sorted, starts)
}

#[test]
fn dense_ids_give_the_answer_of_sparse_ids() {
    let mut rng = Rng::new(0x6a09_e667_f3bc_c908);
    let mut checked = 0;
    for round in 0..200 {
        let c = case(&mut rng, round % 2 == 0);
        // Renumber the groups that have rows densely, so "every group has a row" holds.
        let mut map = vec![u32::MAX; c.groups];
        let (mut ids, mut groups) = (Vec::with_capacity(c.ids.len()), 0);
        for &g in &c.ids {
            if map[g as usize] == u32::MAX {
                map[g as usize] = groups;
                groups += 1;
            }
            ids.push(map[g as usize]);
        }
        let d = Case { ids, groups: groups as usize, ..c };
        for f in FUNCS {
            let want = by_ids(f, &d);
            let mut acc = accumulator(f, result_type(f, d.x.data_type()));
            let input = Input { args: args(f, &d), order: Some(&d.t), sorted: false };
            acc.update(&input, Rows::dense(&d.ids, d.groups), d.groups).expect("dense");
            same(&acc.finish().expect("finish"), &want, &format!("round {round} {f:?} dense"));
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn runs_give_the_answer_of_ids() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    for round in 0..200 {
        let c = case(&mut rng, round % 2 == 0);
        let (s, starts) = as_runs(&c);
        // Runs cover only the groups that have rows: compare those.
        let present: Vec<u32> = starts.iter().map(|&i| s.ids[i as usize]).collect();
        for f in FUNCS {
            let want = by_ids(f, &c).take(&present);
            let mut acc = accumulator(f, result_type(f, c.x.data_type()));
            let input = Input { args: args(f, &s), order: Some(&s.t), sorted: true };
            acc.update(&input, Rows::Runs { starts: &starts, n: s.ids.len() }, starts.len()).expect("runs");
            same(&acc.finish().expect("finish"), &want, &format!("round {round} {f:?} runs"));
        }
    }
}

/// The NULL-free case: runs of plain numbers take their own loops (fixed chunks per run for
/// min/max, a running sum for integer sums), which must agree with groups by id, with NaN and
/// infinities among doubles and integers whose running sum leaves i64.
#[test]
fn null_free_runs_give_the_answer_of_ids() {
    let mut rng = Rng::new(0x3c6e_f372_fe94_f82b);
    for round in 0..300 {
        let mut c = case(&mut rng, round % 2 == 0);
        let n = c.ids.len();
        c.x = match c.x.data() {
            ColumnData::Float64(v) => {
                let mut v = v.clone();
                if n > 0 && round % 6 == 0 {
                    let i = rng.below(n as u64) as usize;
                    v[i] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][round / 6 % 3];
                }
                Column::from_data(ColumnData::Float64(v))
            }
            ColumnData::Int64(v) => {
                let mut v = v.clone();
                if round % 10 == 1 {
                    v.iter_mut().for_each(|y| *y = y.signum() * (i64::MAX - rng.below(1000) as i64));
                }
                Column::from_data(ColumnData::Int64(v))
            }
            d => panic!("unexpected input {}", d.data_type()),
        };
        let (s, starts) = as_runs(&c);
        let present: Vec<u32> = starts.iter().map(|&i| s.ids[i as usize]).collect();
        let mut extremes = Vec::new();
        for f in [AggFunc::Sum, AggFunc::Avg, AggFunc::Min, AggFunc::Max] {
            // sum(BIGINT) is a HUGEINT: sums past i64 are answers, not errors.
            let ty = match (f, c.x.data_type()) {
                (AggFunc::Sum, DataType::Int64) => DataType::Int128,
                (f, x) => result_type(f, x),
            };
            let drive = |input: &Input, rows: Rows, groups: usize| {
                let mut acc = accumulator(f, ty);
                acc.update(input, rows, groups).expect("update");
                acc.finish().expect("finish")
            };
            let want =
                drive(&Input { args: args(f, &c), order: Some(&c.t), sorted: false }, Rows::sparse(&c.ids), c.groups);
            let input = Input { args: args(f, &s), order: Some(&s.t), sorted: true };
            let got = drive(&input, Rows::Runs { starts: &starts, n }, starts.len());
            same(&got, &want.take(&present), &format!("round {round} {f:?} null-free runs"));
            if matches!(f, AggFunc::Min | AggFunc::Max) {
                extremes.push(got);
            }
        }
        // min and max at once (bars' low and high) are each one's answer, bit for bit.
        match (min_and_max(&s.x, Rows::Runs { starts: &starts, n }), &extremes[..]) {
            (Some((lo, hi)), [min, max]) => {
                let bits = |c: &Column| (0..c.len()).map(|i| format!("{:?}", c.get(i))).collect::<Vec<_>>();
                assert_eq!((bits(&lo), bits(&hi)), (bits(min), bits(max)), "round {round} min and max at once");
            }
            (None, _) => assert!(n == 0 || s.x.data_type() != DataType::Float64, "round {round}: DOUBLE runs at once"),
            (Some(_), e) => panic!("round {round}: {} extremes", e.len()),
        }
    }
}

/// NaN in every place a run's min/max can meet it: runs of only NaN (1 to 9 rows), NaN first,
/// last and in a chunk read twice, and in a run longer than the fixed chunks. NaN is the
/// largest double: a max with one is NaN, a min is NaN only when every row is.
#[test]
fn runs_rank_nan_as_the_largest_double() {
    let nan = f64::NAN;
    let runs: Vec<Vec<f64>> = vec![
        vec![nan],
        vec![nan; 3],
        vec![nan; 4],
        vec![1.0, nan],
        vec![nan; 9],
        vec![nan, 2.0, 3.0, 4.0, 5.0, -1.0],
        vec![5.0, 4.0, 3.0, 2.0, 1.0, 0.5, nan],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
        (0..100).map(|i| if i == 57 { nan } else { i as f64 }).collect(),
        (0..100).map(|i| i as f64 - 50.0).collect(),
    ];
    let (mut v, mut starts, mut ids) = (Vec::new(), Vec::new(), Vec::new());
    for (g, r) in runs.iter().enumerate() {
        starts.push(v.len() as u32);
        v.extend_from_slice(r);
        ids.extend(std::iter::repeat_n(g as u32, r.len()));
    }
    let x = Column::from_data(ColumnData::Float64(v.clone().into()));
    let t = Column::from_data(ColumnData::Timestamp((0..v.len() as i64).collect()));
    for f in [AggFunc::Min, AggFunc::Max] {
        let mut acc = accumulator(f, DataType::Float64);
        let input = Input { args: vec![&x], order: Some(&t), sorted: true };
        acc.update(&input, Rows::Runs { starts: &starts, n: v.len() }, runs.len()).expect("runs");
        let got = acc.finish().expect("finish");
        for (g, r) in runs.iter().enumerate() {
            let want = match f {
                AggFunc::Max if r.iter().any(|y| y.is_nan()) => nan,
                AggFunc::Max => r.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                _ => r.iter().copied().filter(|y| !y.is_nan()).reduce(f64::min).unwrap_or(nan),
            };
            let Value::Float64(y) = got.get(g) else { panic!("{f:?} run {g}: {:?}", got.get(g)) };
            assert!(y == want || (y.is_nan() && want.is_nan()), "{f:?} run {g} {r:?}: {y} vs {want}");
        }
        let by_ids = {
            let mut acc = accumulator(f, DataType::Float64);
            let input = Input { args: vec![&x], order: Some(&t), sorted: false };
            acc.update(&input, Rows::sparse(&ids), runs.len()).expect("ids");
            acc.finish().expect("finish")
        };
        same(&got, &by_ids, &format!("{f:?} runs against ids"));
        let (lo, hi) = min_and_max(&x, Rows::Runs { starts: &starts, n: v.len() }).expect("doubles over runs");
        same(if f == AggFunc::Min { &lo } else { &hi }, &got, &format!("{f:?} with its partner at once"));
    }
}

/// `arg_min(x, ts)` and `arg_max(x, ts)` by the column the runs are in order of (the input's
/// order is `v` itself) read each run from its end: they agree with the walk of every row,
/// with times tied at the ends (settled by `x`), NULL `x` at the ends, and runs of only NULL.
#[test]
fn arg_extremes_by_the_runs_order_read_the_ends() {
    let mut rng = Rng::new(0xbb67_ae85_84ca_a73b);
    let mut ends_read = 0;
    for round in 0..300 {
        let c = case(&mut rng, round % 2 == 0);
        let (s, starts) = as_runs(&c);
        let n = s.ids.len();
        // Coarser times keep each run's order and tie neighbours (several rows a tick).
        let tick = [1, 7, 21, 70][round % 4];
        let t = s.t.as_i64_slice().expect("times").iter().map(|&t| t / tick * tick).collect::<Vec<_>>();
        let t = Column::from_data(ColumnData::Timestamp(t.into()));
        for f in [AggFunc::ArgMin, AggFunc::ArgMax] {
            let drive = |input: &Input, rows: Rows, groups: usize| {
                let mut acc = accumulator(f, s.x.data_type());
                acc.update(input, rows, groups).expect("update");
                acc.finish().expect("finish")
            };
            let runs = Rows::Runs { starts: &starts, n };
            let walked = drive(&Input { args: vec![&s.x, &t], order: None, sorted: true }, runs, starts.len());
            let ids: Vec<u32> = (0..starts.len() as u32)
                .flat_map(|g| {
                    let end = starts.get(g as usize + 1).map_or(n as u32, |&e| e);
                    std::iter::repeat_n(g, (end - starts[g as usize]) as usize)
                })
                .collect();
            let by_ids =
                drive(&Input { args: vec![&s.x, &t], order: None, sorted: false }, Rows::sparse(&ids), starts.len());
            same(&walked, &by_ids, &format!("round {round} {f:?} walked runs"));
            let ends = drive(&Input { args: vec![&s.x, &t], order: Some(&t), sorted: true }, runs, starts.len());
            same(&ends, &by_ids, &format!("round {round} {f:?} runs read from their ends"));
            ends_read += starts.len();
        }
    }
    assert!(ends_read > 1000, "{ends_read} runs");
}

/// `arg_min` and `arg_max` rank NaN in `v` as the largest double, as `min` and `max` do (and
/// DuckDB): a NaN row is `arg_max`'s pick and never `arg_min`'s while a number is there.
#[test]
fn arg_extremes_rank_nan_as_the_largest_double() {
    let nan = f64::NAN;
    let v = Column::from_data(ColumnData::Float64(vec![1.0, nan, 3.0, nan, 2.0, -1.0, nan].into()));
    let x = Column::from_data(ColumnData::Int64(vec![10, 20, 30, 40, 50, 60, 70].into()));
    let ids = [0, 0, 0, 1, 1, 1, 2];
    for (f, want) in [(AggFunc::ArgMin, [10, 60, 70]), (AggFunc::ArgMax, [20, 40, 70])] {
        let mut acc = accumulator(f, DataType::Int64);
        let input = Input { args: vec![&x, &v], order: None, sorted: false };
        acc.update(&input, Rows::sparse(&ids), 3).expect("update");
        let got = acc.finish().expect("finish");
        let got: Vec<Value> = (0..got.len()).map(|i| got.get(i)).collect();
        assert_eq!(got, want.map(Value::Int64).to_vec(), "{f:?}");
    }
}

#[test]
fn merged_partials_give_the_answer_of_ids() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    for round in 0..200 {
        let c = case(&mut rng, round % 2 == 1);
        let n = c.ids.len();
        let parts = 1 + rng.below(4) as usize;
        let part_of: Vec<usize> = (0..n).map(|_| rng.below(parts as u64) as usize).collect();
        for f in FUNCS.into_iter().filter(|f| f.mergeable()) {
            let ty = result_type(f, c.x.data_type());
            let (mut states, mut state_ids): (Vec<Vec<Column>>, Vec<u32>) = (Vec::new(), Vec::new());
            for p in 0..parts {
                let rows: Vec<u32> = (0..n as u32).filter(|&i| part_of[i as usize] == p).collect();
                let sub = Case {
                    x: c.x.take(&rows),
                    w: c.w.take(&rows),
                    t: c.t.take(&rows),
                    v: c.v.take(&rows),
                    ids: rows.iter().map(|&i| c.ids[i as usize]).collect(),
                    groups: c.groups,
                };
                let mut acc = accumulator(f, ty);
                let input = Input { args: args(f, &sub), order: Some(&sub.t), sorted: false };
                acc.update(&input, Rows::sparse(&sub.ids), c.groups).expect("partial");
                states.push(acc.state().expect("state"));
                state_ids.extend(0..c.groups as u32);
            }
            let width = states[0].len();
            let cols: Vec<Column> =
                (0..width).map(|j| Column::concat(&states.iter().map(|s| &s[j]).collect::<Vec<_>>())).collect();
            let mut acc = accumulator(f, ty);
            acc.merge(&cols.iter().collect::<Vec<_>>(), &state_ids, c.groups).expect("merge");
            same(&acc.finish().expect("finish"), &by_ids(f, &c), &format!("round {round} {f:?} in {parts} parts"));
        }
    }
}

/// Forward-moving frames over `n` rows: ROWS BETWEEN `before` PRECEDING AND `after`
/// FOLLOWING inside partitions of random lengths (a new partition restarts the frames).
fn forward_frames(rng: &mut Rng, n: usize, before: usize, after: usize) -> (Vec<u32>, Vec<u32>) {
    let mut fs = Vec::with_capacity(n);
    let mut fe = Vec::with_capacity(n);
    let mut ps = 0;
    while ps < n {
        let pe = (ps + 1 + rng.below(40) as usize).min(n);
        for k in ps..pe {
            fs.push(k.saturating_sub(before).max(ps) as u32);
            fe.push((k + 1 + after).min(pe) as u32);
        }
        ps = pe;
    }
    (fs, fe)
}

/// The frames' rows one after another, and the frame of each.
fn gathered_frames(fs: &[u32], fe: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let idx: Vec<u32> = fs.iter().zip(fe).flat_map(|(&s, &e)| s..e).collect();
    let ids = fs.iter().zip(fe).enumerate().flat_map(|(k, (&s, &e))| (s..e).map(move |_| k as u32)).collect();
    (idx, ids)
}

/// Float sums and averages over frames holding infinities and NaNs answer as their own rows
/// would (IEEE addition, as the groups do), and frames without one are untouched by it: a
/// sliding sum once carried an infinity's NaN into every later frame of its partition.
#[test]
fn float_frames_keep_infinities_and_nans_to_their_frames() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let odd = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
    for round in 0..300 {
        let c = case(&mut rng, true);
        let n = c.ids.len();
        let v: Vec<f64> = (0..n)
            .map(|i| match c.x.get(i) {
                _ if rng.below(12) == 0 => odd[rng.below(3) as usize],
                Value::Float64(y) => y,
                _ => 0.0,
            })
            .collect();
        let x = Column::new(ColumnData::Float64(v.into()), c.x.validity().cloned());
        let (before, after) = (rng.below(6) as usize, rng.below(3) as usize);
        let (fs, fe) = forward_frames(&mut rng, n, before, after);
        let (idx, ids) = gathered_frames(&fs, &fe);
        let taken = x.take(&idx);
        for f in [AggFunc::Sum, AggFunc::Avg] {
            let mut acc = accumulator(f, DataType::Float64);
            let input = Input { args: vec![&taken], order: None, sorted: false };
            acc.update(&input, Rows::sparse(&ids), n).expect("update");
            let want = acc.finish().expect("finish");
            let input = Input { args: vec![&x], order: None, sorted: true };
            let got = accumulator(f, DataType::Float64).frames(&input, &fs, &fe).expect("frames");
            same(&got, &want, &format!("round {round} {f:?} frames {before}/{after}"));
        }
    }
}

#[test]
fn frames_give_the_answer_of_their_rows_as_groups() {
    let mut rng = Rng::new(0xd1b5_4a32_d192_ed03);
    for round in 0..200 {
        let c = case(&mut rng, round % 2 == 0);
        // Every third round without NULLs in x (counted by the frames' lengths).
        let c = match round % 3 {
            2 => Case { x: Column::from_data(c.x.data().clone()), ..c },
            _ => c,
        };
        let n = c.ids.len();
        // Forward-moving frames: ROWS BETWEEN a PRECEDING AND b FOLLOWING inside partitions
        // of random lengths (a new partition restarts the frames).
        let (before, after) = (rng.below(4) as usize, rng.below(3) as usize);
        let (fs, fe) = forward_frames(&mut rng, n, before, after);
        let (idx, frame_ids) = gathered_frames(&fs, &fe);
        // Frames are in window order: first/last are positional, so the time is the position.
        let pos = Column::from_data(ColumnData::Timestamp((0..n as i64).collect()));
        let gathered = Case {
            x: c.x.take(&idx),
            w: c.w.take(&idx),
            t: pos.take(&idx),
            v: c.v.take(&idx),
            ids: frame_ids,
            groups: n,
        };
        for f in FUNCS {
            let ty = result_type(f, c.x.data_type());
            let want = by_ids(f, &gathered);
            let input = Input { args: args(f, &c), order: Some(&pos), sorted: true };
            let got = accumulator(f, ty).frames(&input, &fs, &fe).expect("frames");
            same(&got, &want, &format!("round {round} {f:?} frames {before}/{after}"));
        }
    }
}

#[test]
fn updates_batch_by_batch_give_the_answer_of_one() {
    let mut rng = Rng::new(0x94d0_49bb_1331_11eb);
    for round in 0..200 {
        let c = case(&mut rng, round % 2 == 0);
        let n = c.ids.len();
        // Contiguous batches of random lengths, groups numbered across them.
        let mut cuts = vec![0];
        while *cuts.last().unwrap_or(&n) < n {
            cuts.push((cuts[cuts.len() - 1] + 1 + rng.below(80) as usize).min(n));
        }
        for f in FUNCS {
            let mut acc = accumulator(f, result_type(f, c.x.data_type()));
            for w in cuts.windows(2) {
                let rows: Vec<u32> = (w[0] as u32..w[1] as u32).collect();
                let part = Case {
                    x: c.x.take(&rows),
                    w: c.w.take(&rows),
                    t: c.t.take(&rows),
                    v: c.v.take(&rows),
                    ids: c.ids[w[0]..w[1]].to_vec(),
                    groups: c.groups,
                };
                let input = Input { args: args(f, &part), order: Some(&part.t), sorted: false };
                acc.update(&input, Rows::sparse(&part.ids), c.groups).expect("update");
            }
            if cuts.len() == 1 {
                // No rows: one update over nothing, as a global aggregate does.
                let input = Input { args: args(f, &c), order: Some(&c.t), sorted: false };
                acc.update(&input, Rows::sparse(&[]), c.groups).expect("empty update");
            }
            same(&acc.finish().expect("finish"), &by_ids(f, &c), &format!("round {round} {f:?} in batches"));
        }
    }
}

/// Sum and avg over frames of an untyped NULL column (no validity bitmap, and no values):
/// NULL for every frame, empty or not, not a count of the frame's rows.
#[test]
fn frames_over_an_untyped_null_column_are_null() {
    let x = Column::from_data(ColumnData::Null(5));
    let (fs, fe) = ([0u32, 1, 2, 5], [2u32, 3, 2, 5]);
    for f in [AggFunc::Sum, AggFunc::Avg] {
        let input = Input { args: vec![&x], order: None, sorted: true };
        let got = accumulator(f, DataType::Float64).frames(&input, &fs, &fe).expect("frames");
        assert_eq!(got.len(), 4, "{f:?}");
        assert!((0..4).all(|i| !got.is_valid(i)), "{f:?}: {:?}", (0..4).map(|i| got.get(i)).collect::<Vec<_>>());
    }
}
