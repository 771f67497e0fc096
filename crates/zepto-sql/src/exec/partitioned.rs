//! Partition-wise aggregation: when a GROUP BY includes the partition key, no group spans two
//! partitions, so each partition (piece of a scan) is aggregated on its own — over its shared
//! columns, without concatenating the table — and the results are appended. Inside a
//! time-sorted partition, keys that are monotonic in the designated timestamp (`ts`,
//! `xbar(w, ts)`, `date_trunc(u, ts)`) change only between runs, so groups are found by
//! comparing neighbours: no hashing at all (kdb+'s `select ... by sym, bar` on a sorted table).

use super::accum::Mode;
use super::aggregate::{aggregate, aggregate_runs, columns_read, grouped};
use super::bucket_walk as buckets;
use super::bundle::{bundles, filtered_bundle};
use super::scan::{filtered_piece, units, Piece, ScanPart, Unit};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::expr::functions::ScalarFunc;
use crate::plan::physical::{scan_shape, ScanShape};
use crate::plan::{AggCall, BExpr, Plan};
use zepto_storage::Column;

/// Each partition's groups in scan order, small ones joined into few batches (`joined`; one
/// empty batch when no partition has rows). The physical planner chose this path: `input` is a (filtered)
/// scan and `keys` include its partition key; `runs`: every other key is monotonic in the
/// designated timestamp, so a time-sorted partition's groups are runs; `ends`: each partition
/// is one group whose aggregates read a few rows of it, so a partition costs about the same
/// whatever its rows ([`PIECE_COST_ROWS`]).
pub fn aggregate_chunks(
    ctx: &ExecContext,
    input: &Plan,
    keys: &[BExpr],
    aggs: &[AggCall],
    runs: bool,
    ends: bool,
) -> Result<Vec<Batch>> {
    let shape =
        scan_shape(input).ok_or_else(|| SqlError::Internal("partition-wise GROUP BY over a non-scan".into()))?;
    let ScanShape { table, columns, range, .. } = shape;
    let kp = columns.iter().position(|&c| Some(c) == table.key_col());
    let tp = table.ts_col().and_then(|t| columns.iter().position(|&c| c == t));
    let shape = shape.gather_only(columns_read(columns.len(), keys, aggs, &[kp, tp]));
    // The positions of the run keys (every key but the partition key).
    let run_keys: Option<Vec<usize>> = runs.then(|| {
        keys.iter()
            .enumerate()
            .filter(|(_, k)| !matches!(k, BExpr::Col(i, _) if Some(*i) == kp))
            .map(|(j, _)| j)
            .collect()
    });
    let us = units(table, range);
    // Partitions aggregate independently: on every core, small ones a bundle (or a whole pack)
    // at a time.
    let one = |c: &ExecContext, bundle: &&[Unit]| -> Result<Option<Batch>> {
        if let [Unit::Piece(p)] = bundle {
            return piece_groups(c, &shape, p, keys, aggs, run_keys.as_deref(), [kp, tp]);
        }
        bundle_groups(c, &shape, bundle, keys, aggs, run_keys.is_some())
    };
    let bs = bundles(&us);
    // Each core takes neighbouring bundles and joins their groups itself (see `joined`). A
    // bundle copies its rows; a loose partition read at its ends costs what its rows do not.
    let weight = |b: &&[Unit]| match b {
        [Unit::Piece(_)] if ends => PIECE_COST_ROWS,
        b => b.iter().map(ScanPart::rows).sum(),
    };
    let work = bs.iter().map(weight).sum();
    let join = |parts: Vec<Option<Batch>>| joined(parts.into_iter().flatten().collect());
    let outs = ctx.par_map_stretches(&bs, work, weight, one, join)?;
    if outs.is_empty() {
        // No rows: no groups (the keys include the partition key), in the output's types.
        let empty =
            Batch::new(columns.iter().map(|&c| Column::nulls(table.schema().columns[c].data_type, 0)).collect(), 0);
        return Ok(vec![aggregate(ctx, &empty, keys, aggs)?]);
    }
    Ok(outs)
}

/// What a partition whose group is read at its ends costs (its batch, accumulators and result
/// made), in rows of a pass over a column: about a microsecond. The parallel threshold
/// ([`ExecContext::par_map_stretches`]) counts this instead of its rows. On two cores, `SELECT
/// sym, last(price) ... GROUP BY sym` over 100 partitions took 166 us on both (waking the
/// other and waiting for it) and 126 us on one.
const PIECE_COST_ROWS: usize = 512;

/// Partition results under this many rows are joined with their small neighbours.
const JOIN_BELOW_ROWS: usize = 8 << 10;

/// The partition results of one stretch (neighbouring partitions one core ran,
/// [`ExecContext::par_map_stretches`]) with each run of small neighbours (a few hundred rows of
/// 1-minute bars per partition) joined into one batch; a large one (a group per row) stays as
/// it is, never copied. Whoever reads a result pays per batch (an Arrow batch imported into
/// pyarrow, a chunk in Polars, a loop in every door), and a join of a whole query's results
/// after it runs is one thread copying memory other cores wrote and freeing their allocations
/// (a third of 1-minute bars over 1M rows): here the core that made the parts copies them
/// while they are in its cache and frees them into its own arena.
fn joined(parts: Vec<Batch>) -> Vec<Batch> {
    let mut out = Vec::with_capacity(parts.len());
    let mut small: Vec<Batch> = Vec::new();
    let flush = |small: &mut Vec<Batch>, out: &mut Vec<Batch>| match small.len() {
        0 => {}
        1 => out.append(small),
        _ => {
            let (rows, width) = (small.iter().map(|b| b.rows).sum(), small[0].columns.len());
            out.push(Batch::shared((0..width).map(|j| super::concat_column(small, j)).collect(), rows));
            small.clear();
        }
    };
    for b in parts {
        if b.rows < JOIN_BELOW_ROWS {
            small.push(b);
        } else {
            flush(&mut small, &mut out);
            out.push(b);
        }
    }
    flush(&mut small, &mut out);
    out
}

/// One partition's groups (`None` when no row passes the filters): runs found by counting
/// over the times, or by comparing neighbours, or (`runs` is `None`) by hashing. `kp`, `tp`:
/// the positions of the partition key (one value on all the partition's rows) and the
/// designated timestamp.
fn piece_groups(
    c: &ExecContext,
    shape: &ScanShape,
    p: &Piece,
    keys: &[BExpr],
    aggs: &[AggCall],
    runs: Option<&[usize]>,
    [kp, tp]: [Option<usize>; 2],
) -> Result<Option<Batch>> {
    let b = filtered_piece(c, shape, p)?;
    if b.rows == 0 {
        return Ok(None);
    }
    if let Some(starts) = runs.and_then(|r| bucket_starts(&b, keys, r, tp?)) {
        return aggregate_runs(c, &b, keys, aggs, &starts, kp).map(Some);
    }
    Ok(Some(grouped(c, &b, keys, aggs, runs, Mode::Final)?.into_batch()))
}

/// The groups of several small partitions at once, over their filtered rows one after another
/// (`None` when no row passes). The keys include the partition key, which differs between
/// neighbouring pieces: with `runs`, a group is a run of equal keys (every key compared
/// between neighbours); without, hashing keeps the groups in the order they first appear, so
/// partition by partition, as one at a time would.
fn bundle_groups(
    c: &ExecContext,
    shape: &ScanShape,
    bundle: &[Unit],
    keys: &[BExpr],
    aggs: &[AggCall],
    runs: bool,
) -> Result<Option<Batch>> {
    let b = filtered_bundle(c, shape, bundle)?;
    if b.rows == 0 {
        return Ok(None);
    }
    let every: Vec<usize> = (0..keys.len()).collect();
    let runs = runs.then_some(every.as_slice());
    Ok(Some(grouped(c, &b, keys, aggs, runs, Mode::Final)?.into_batch()))
}

/// The groups of a time-sorted batch whose one run key is `ts` or `xbar(w, ts)` (`t`: the
/// designated timestamp's position, without NULLs): the first row of each bucket, found by
/// [`buckets::starts`] a few steps per bucket instead of evaluating the key on every row.
/// `None` for other keys.
fn bucket_starts(b: &Batch, keys: &[BExpr], runs: &[usize], t: usize) -> Option<Vec<u32>> {
    let [k] = runs else { return None };
    let width = match keys.get(*k)? {
        BExpr::Col(i, _) if *i == t => 1,
        BExpr::Func { func: ScalarFunc::Xbar, args, .. } => match args.as_slice() {
            [BExpr::Lit(w, _), BExpr::Col(i, _)] if *i == t => w.as_i64().filter(|&w| w > 0)?,
            _ => return None,
        },
        _ => return None,
    };
    let ts = b.columns.get(t)?;
    if ts.validity().is_some() {
        return None;
    }
    let v = ts.as_i64_slice()?;
    debug_assert!(v.windows(2).all(|w| w[0] <= w[1]), "a time-sorted piece");
    Some(buckets::starts(v, width))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::bucket_walk::tests::reference;
    use zepto_storage::{Column, ColumnData, DataType, Value};

    /// `xbar(w, ts)` over the batch's column 0.
    fn xbar(w: i64) -> BExpr {
        BExpr::Func {
            func: ScalarFunc::Xbar,
            args: vec![BExpr::Lit(Value::Int64(w), DataType::Int64), BExpr::Col(0, DataType::Timestamp)],
            ty: DataType::Timestamp,
        }
    }

    #[test]
    fn bucket_starts_match_bucketing_every_row() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let ts = BExpr::Col(0, DataType::Timestamp);
        for round in 0..300 {
            // Runs of dense and sparse rows, equal times, negative times, gaps of many buckets.
            // Long enough for the walks side by side every third round.
            let n = rnd(if round % 3 == 0 { 4000 } else { 400 }) as usize;
            let mut t = rnd(1000) as i64 - 500;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(t);
                t += match rnd(10) {
                    0 => 0,
                    1 => rnd(500) as i64,
                    2..=4 => rnd(3) as i64,
                    _ => rnd(20) as i64,
                };
            }
            let w = [1, 2, 7, 10, 60, 1000][round % 6];
            let key = if w == 1 && round % 12 == 0 { ts.clone() } else { xbar(w) };
            let b = Batch::new(vec![Column::from_data(ColumnData::Timestamp(v.clone().into()))], n);
            let got = bucket_starts(&b, &[key], &[0], 0).expect("an xbar or time key");
            assert_eq!(got, reference(&v, w), "round {round}, width {w}, times {v:?}");
        }
        // Bucket lengths that jump between short and long, so that a bucket's end falls before,
        // inside and after the window its predecessor's length predicts.
        let lens = [1usize, 200, 3, 90, 40, 5, 33, 31, 16, 17, 64, 2, 120, 119, 1, 1, 48];
        let v: Vec<i64> =
            lens.iter().enumerate().flat_map(|(b, &l)| (0..l).map(move |i| b as i64 * 1000 + i as i64)).collect();
        let b = Batch::new(vec![Column::from_data(ColumnData::Timestamp(v.clone().into()))], v.len());
        assert_eq!(bucket_starts(&b, &[xbar(1000)], &[0], 0), Some(reference(&v, 1000)), "jumping lengths");
        // Dense times at the bottom of i64 (the window counts there; the first bucket
        // saturates), and times spanning all of i64 (no window: `t - hi` could overflow).
        let low: Vec<i64> = (0..300).map(|i| i64::MIN + i * 37).collect();
        let wide: Vec<i64> = (0..300u64).map(|i| i64::MIN.wrapping_add((i * (u64::MAX / 300)) as i64)).collect();
        for v in [low, wide] {
            let b = Batch::new(vec![Column::from_data(ColumnData::Timestamp(v.clone().into()))], v.len());
            for w in [1000, 10_000_000_000_000_000] {
                assert_eq!(bucket_starts(&b, &[xbar(w)], &[0], 0), Some(reference(&v, w)), "width {w}, {v:?}");
            }
        }
        // Times near the i64 ends: buckets saturate at the bottom, and the top one runs to the
        // end, as xbar computes them.
        for v in [
            vec![i64::MIN, i64::MIN + 5, i64::MIN + 2000],
            vec![i64::MIN, i64::MIN + 900, i64::MIN + 1100, i64::MIN + 1900],
            vec![i64::MAX - 2500, i64::MAX - 900, i64::MAX],
        ] {
            let b = Batch::new(vec![Column::from_data(ColumnData::Timestamp(v.clone().into()))], v.len());
            assert_eq!(bucket_starts(&b, &[xbar(1000)], &[0], 0), Some(reference(&v, 1000)), "{v:?}");
        }
    }
}
