//! The row layout shared by window calls with the same PARTITION BY and ORDER BY: partition
//! ids, a permutation into (partition, order) sequence, partition bounds and peer groups.
//!
//! Input that is already grouped by partition and ordered within each (the common case: a
//! scan of a symbol-partitioned, time-sorted table) is detected in one pass and never sorted
//! or permuted: the check costs one comparison per row.

use super::super::eval::eval;
use super::super::hash::{group_ids, rows_equal};
use super::super::{Batch, ExecContext};
use crate::error::Result;
use crate::exec::cmp::{key_cmp, RowCmp};
use crate::plan::{BExpr, SortKey};
use std::borrow::Cow;
use std::cmp::Ordering;
use zepto_storage::{Column, ColumnData};

pub struct Layout<'a> {
    pub n: usize,
    /// Partition of each input row (original order), made on demand (see [`Layout::gid`]).
    gid: Option<Vec<u32>>,
    pub ngroups: usize,
    /// Sorted position → input row; `None` when the input is already in window order.
    pub perm: Option<Vec<u32>>,
    /// Partition start positions in window order, followed by `n`.
    pub bounds: Vec<usize>,
    /// ORDER BY columns (input order) and their keys.
    pub order: Vec<(Cow<'a, Column>, &'a SortKey)>,
    peers: Option<(Vec<u32>, Vec<u32>)>,
    inv: Option<Vec<u32>>,
}

impl<'a> Layout<'a> {
    pub fn build(ctx: &ExecContext, b: &'a Batch, partition: &'a [BExpr], order: &'a [SortKey]) -> Result<Layout<'a>> {
        let n = b.rows;
        let pcols = partition.iter().map(|e| eval(ctx, e, b)).collect::<Result<Vec<_>>>()?;
        let prefs: Vec<&Column> = pcols.iter().map(|c| &**c).collect();
        let ocols = order.iter().map(|k| eval(ctx, &k.expr, b)).collect::<Result<Vec<_>>>()?;
        let order: Vec<(Cow<Column>, &SortKey)> = ocols.into_iter().zip(order).collect();
        // No PARTITION BY, or one SYMBOL key whose values come in runs (a scan of a table
        // partitioned by it): partition bounds straight from the codes, no per-row ids.
        if let Some(mut bounds) = contiguous_bounds(&prefs, n) {
            let ngroups = bounds.len();
            bounds.push(n);
            if n == 0 {
                bounds = vec![0];
            }
            let mut l = Layout { n, gid: None, ngroups, perm: None, bounds, order, peers: None, inv: None };
            l.sort_partitions();
            return Ok(l);
        }
        let gid = group_ids(&prefs, n).ids;
        let ngroups = gid.iter().map(|&g| g as usize + 1).max().unwrap_or(0);
        // Group ids are assigned in first-seen order, so partitions are contiguous exactly
        // when the ids never decrease.
        let contiguous = gid.windows(2).all(|w| w[0] <= w[1]);
        let mut perm = None;
        let mut bounds = Vec::with_capacity(ngroups + 1);
        if contiguous {
            bounds.push(0);
            for i in 1..n {
                if gid[i] != gid[i - 1] {
                    bounds.push(i);
                }
            }
        } else {
            // Counting sort by partition: stable, so input order survives inside each one.
            let mut start = vec![0usize; ngroups + 1];
            for &g in &gid {
                start[g as usize + 1] += 1;
            }
            for g in 0..ngroups {
                start[g + 1] += start[g];
            }
            bounds.extend_from_slice(&start[..ngroups]);
            let mut p = vec![0u32; n];
            for (i, &g) in gid.iter().enumerate() {
                p[start[g as usize]] = i as u32;
                start[g as usize] += 1;
            }
            perm = Some(p);
        }
        if n == 0 {
            bounds.clear();
        }
        bounds.push(n);
        let mut l = Layout { n, gid: Some(gid), ngroups, perm, bounds, order, peers: None, inv: None };
        l.sort_partitions();
        Ok(l)
    }

    /// Partition id of every input row (original order).
    pub fn gid(&mut self) -> &[u32] {
        if self.gid.is_none() {
            let mut gid = vec![0u32; self.n];
            for (p, w) in self.bounds.windows(2).enumerate() {
                for k in w[0]..w[1] {
                    gid[self.row(k)] = p as u32;
                }
            }
            self.gid = Some(gid);
        }
        self.gid.as_deref().unwrap_or(&[])
    }

    fn cmp(&self) -> impl Fn(usize, usize) -> Ordering + '_ {
        let cmps: Vec<RowCmp> = self.order.iter().map(|(c, k)| key_cmp(c, k.desc, k.nulls_first)).collect();
        move |a, b| {
            for c in &cmps {
                let o = c(a, b);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        }
    }

    /// Order each partition by the ORDER BY keys (stable), unless it already is.
    fn sort_partitions(&mut self) {
        if self.order.is_empty() || self.n < 2 {
            return;
        }
        // Fast path: one NULL-free ascending i64-backed key (a timestamp) in input order.
        if let ([(c, k)], None) = (self.order.as_slice(), &self.perm) {
            if let (Some(v), None, false) = (c.as_i64_slice(), c.validity(), k.desc) {
                let sorted = self.bounds.windows(2).all(|w| non_decreasing(&v[w[0]..w[1]]));
                if sorted {
                    return;
                }
            }
        }
        let unsorted: Vec<usize> = {
            let cmp = self.cmp();
            let row = |k: usize| self.perm.as_ref().map_or(k, |p| p[k] as usize);
            (0..self.bounds.len() - 1)
                .filter(|&g| {
                    let (s, e) = (self.bounds[g], self.bounds[g + 1]);
                    (s + 1..e).any(|k| cmp(row(k - 1), row(k)) == Ordering::Greater)
                })
                .collect()
        };
        if unsorted.is_empty() {
            return;
        }
        let mut perm = self.perm.take().unwrap_or_else(|| (0..self.n as u32).collect());
        {
            let cmp = self.cmp();
            for g in unsorted {
                perm[self.bounds[g]..self.bounds[g + 1]].sort_by(|&a, &b| cmp(a as usize, b as usize));
            }
        }
        self.perm = Some(perm);
    }

    /// Input row at window position `k`.
    #[inline]
    pub fn row(&self, k: usize) -> usize {
        self.perm.as_ref().map_or(k, |p| p[k] as usize)
    }

    /// A column of input rows brought into window order.
    pub fn gather<'c>(&self, c: &'c Column) -> Cow<'c, Column> {
        match &self.perm {
            None => Cow::Borrowed(c),
            Some(p) => Cow::Owned(c.take(p)),
        }
    }

    /// A column in window order brought back to input order.
    pub fn scatter(&mut self, c: Column) -> Column {
        let Some(p) = &self.perm else { return c };
        let inv = self.inv.get_or_insert_with(|| {
            let mut inv = vec![0u32; p.len()];
            for (k, &r) in p.iter().enumerate() {
                inv[r as usize] = k as u32;
            }
            inv
        });
        c.take(inv)
    }

    /// Peer groups (rows with equal ORDER BY values) in window order: for each position,
    /// the first position of its group and one past the last. Without ORDER BY, a whole
    /// partition is one peer group.
    pub fn peers(&mut self) -> (&[u32], &[u32]) {
        if self.peers.is_none() {
            let mut lo = vec![0u32; self.n];
            let mut hi = vec![0u32; self.n];
            let cols: Vec<&Column> = self.order.iter().map(|(c, _)| &**c).collect();
            for g in 0..self.bounds.len() - 1 {
                let (s, e) = (self.bounds[g], self.bounds[g + 1]);
                let mut start = s;
                for k in s..e {
                    if k > s && !rows_equal(&cols, self.row(k - 1), &cols, self.row(k)) {
                        start = k;
                    }
                    lo[k] = start as u32;
                }
                let mut end = e;
                for k in (s..e).rev() {
                    if k + 1 < e && lo[k + 1] != lo[k] {
                        end = k + 1;
                    }
                    hi[k] = end as u32;
                }
            }
            self.peers = Some((lo, hi));
        }
        let (lo, hi) = self.peers.as_ref().map(|(a, b)| (a.as_slice(), b.as_slice())).unwrap_or((&[], &[]));
        (lo, hi)
    }

    /// Partitions as `(start, end)` ranges of window positions.
    pub fn partitions(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.bounds.windows(2).map(|w| (w[0], w[1]))
    }
}

/// Partition starts when the partition key is absent (one partition) or one SYMBOL column whose
/// equal values are adjacent; `None` otherwise (then rows are grouped by hashing).
fn contiguous_bounds(keys: &[&Column], n: usize) -> Option<Vec<usize>> {
    match keys {
        [] => Some(if n == 0 { vec![] } else { vec![0] }),
        [c] => {
            let ColumnData::Symbol { codes, dict } = &c.data() else { return None };
            let null = dict.len();
            let (starts, runs) = match c.validity() {
                None => run_starts(codes.get(..n)?),
                Some(_) => {
                    let code = |i: usize| if c.is_valid(i) { codes[i] as usize } else { null };
                    (0..n).filter(|&i| i == 0 || code(i) != code(i - 1)).map(|i| (i, code(i))).unzip()
                }
            };
            distinct(runs, null + 1).then_some(starts)
        }
        _ => None,
    }
}

/// How many neighbouring pairs [`pairs_hold`] tests at once.
const W: usize = 16;

/// Whether `f(v[k], v[k + 1])` holds for the `W` pairs starting at `i`; `None` when fewer
/// than `W` pairs are left. No early exit, so the fixed-width loop vectorizes: a scan of a
/// partitioned table has a few long runs, and a branch per row was a third of an EMA over 1M
/// rows.
#[inline(always)]
fn pairs_hold<T: Copy>(v: &[T], i: usize, f: impl Fn(T, T) -> bool) -> Option<bool> {
    let (a, b) = (v.get(i..i + W)?, v.get(i + 1..i + 1 + W)?);
    Some(a.iter().zip(b).fold(true, |ok, (&x, &y)| ok & f(x, y)))
}

/// Where each run of equal codes starts, and its code, skipping `W` codes at a time inside a
/// run.
fn run_starts(codes: &[u32]) -> (Vec<usize>, Vec<usize>) {
    let (mut starts, mut runs) = (Vec::new(), Vec::new());
    let Some(&first) = codes.first() else { return (starts, runs) };
    starts.push(0);
    runs.push(first as usize);
    let mut i = 1;
    while i < codes.len() {
        if pairs_hold(codes, i - 1, |x, y| x == y) == Some(true) {
            i += W;
            continue;
        }
        if codes[i] != codes[i - 1] {
            starts.push(i);
            runs.push(codes[i] as usize);
        }
        i += 1;
    }
    (starts, runs)
}

/// Whether `v` never decreases, `W` pairs at a time (a sorted input, the usual case, reads to
/// its end either way).
fn non_decreasing(v: &[i64]) -> bool {
    let mut i = 0;
    while let Some(ok) = pairs_hold(v, i, |x, y| x <= y) {
        if !ok {
            return false;
        }
        i += W;
    }
    v.get(i..).unwrap_or_default().windows(2).all(|p| p[0] <= p[1])
}

/// Whether the values (each below `domain`) are all different. Few values against a large
/// domain (a partition's one run among 100k symbols) are sorted, not marked in a table the
/// size of the domain.
fn distinct(mut v: Vec<usize>, domain: usize) -> bool {
    if v.len() < 2 {
        return true;
    }
    if v.len() * 16 < domain {
        v.sort_unstable();
        return v.windows(2).all(|w| w[0] != w[1]);
    }
    let mut seen = vec![false; domain];
    v.into_iter().all(|k| !std::mem::replace(&mut seen[k], true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::rng::XorShift;

    #[test]
    fn run_starts_and_order_checks_match_a_row_at_a_time() {
        let mut r = XorShift::new(42);
        for round in 0..500 {
            let n = r.below(80) as usize;
            // Runs of random lengths (some longer than the 16-wide step, some of one row).
            let mut codes = Vec::with_capacity(n);
            while codes.len() < n {
                let (code, len) = (r.below(4) as u32, 1 + r.below(40) as usize);
                codes.extend(std::iter::repeat_n(code, len.min(n - codes.len())));
            }
            let want: (Vec<usize>, Vec<usize>) =
                (0..n).filter(|&i| i == 0 || codes[i] != codes[i - 1]).map(|i| (i, codes[i] as usize)).unzip();
            assert_eq!(run_starts(&codes), want, "round {round}: {codes:?}");
            let mut ts: Vec<i64> = (0..n).map(|_| r.below(1000) as i64).collect();
            if round % 2 == 0 {
                ts.sort_unstable();
            }
            if round % 4 == 0 && n > 1 {
                // One step down anywhere, the last pair included.
                let k = 1 + r.below(n as u64 - 1) as usize;
                ts[k] = ts[k - 1] - 1;
            }
            assert_eq!(non_decreasing(&ts), ts.windows(2).all(|p| p[0] <= p[1]), "round {round}: {ts:?}");
        }
    }
}
