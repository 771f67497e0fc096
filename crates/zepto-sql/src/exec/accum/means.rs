//! Means for the two-pass spreads (variance, covariance, correlation, regression): a first
//! pass sums, a second corrects the quotient by the mean of the deviations from it. A constant
//! column's deviations are then exactly 0, as a running (Welford) update gives and DuckDB
//! answers, not the last bit of a quotient's rounding, which squared and summed gave a
//! variance of 3e-34 for 0.1 three times.

/// Per group: how many rows `valid` keeps (row `i` in group `ids[i]`), and the corrected mean
/// of each of the `K` columns' values at those rows (`v[c][i]`; 0 for a group without rows),
/// the columns in the same two passes.
pub(super) fn group_means<const K: usize>(
    ids: &[u32],
    ng: usize,
    valid: impl Fn(usize) -> bool,
    v: [&[f64]; K],
) -> (Vec<i64>, [Vec<f64>; K]) {
    let kept = || ids.iter().enumerate().filter(|&(i, _)| valid(i)).map(|(i, &g)| (i, g as usize));
    let mut cnt = vec![0i64; ng];
    let mut mean: [Vec<f64>; K] = std::array::from_fn(|_| vec![0.0f64; ng]);
    for (i, g) in kept() {
        cnt[g] += 1;
        for c in 0..K {
            mean[c][g] += v[c][i];
        }
    }
    let mut dev: [Vec<f64>; K] = std::array::from_fn(|_| vec![0.0f64; ng]);
    for c in 0..K {
        mean[c].iter_mut().zip(&cnt).filter(|(_, &n)| n > 0).for_each(|(m, &n)| *m /= n as f64);
    }
    for (i, g) in kept() {
        for c in 0..K {
            dev[c][g] += v[c][i] - mean[c][g];
        }
    }
    for c in 0..K {
        let fix = mean[c].iter_mut().zip(dev[c].iter().zip(&cnt)).filter(|(_, (_, &n))| n > 0);
        fix.for_each(|(m, (d, &n))| *m += d / n as f64);
    }
    (cnt, mean)
}

/// How many values `vals` gives (a fresh iterator each call), and their corrected mean (0
/// without values).
pub(super) fn mean_of<I: Iterator<Item = f64>>(vals: impl Fn() -> I) -> (i64, f64) {
    let (mut n, mut sum) = (0i64, 0.0f64);
    for x in vals() {
        n += 1;
        sum += x;
    }
    if n == 0 {
        return (0, 0.0);
    }
    let mean = sum / n as f64;
    (n, mean + vals().map(|x| x - mean).sum::<f64>() / n as f64)
}

#[cfg(test)]
mod tests {
    use super::{group_means, mean_of};

    #[test]
    fn a_constant_column_has_its_value_as_its_mean() {
        let v = [0.1, 0.1, 0.1, 7.0, 0.1];
        let (n, m) = mean_of(|| v[..3].iter().copied());
        assert_eq!((n, m), (3, 0.1));
        assert!(v[..3].iter().all(|&x| x - m == 0.0));
        // Grouped: rows 0-2 and 4 in group 0 (row 3 not kept), nothing in group 1.
        let (cnt, [mean, twice]) = group_means(&[0, 0, 0, 0, 0], 2, |i| i != 3, [&v, &v.map(|x| 2.0 * x)]);
        assert_eq!((cnt, mean, twice), (vec![4, 0], vec![0.1, 0.0], vec![0.2, 0.0]));
        assert_eq!(mean_of(std::iter::empty), (0, 0.0));
    }
}
