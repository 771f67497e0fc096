//! Cursors over sorted times, shared by the merges of the ASOF join and the WINDOW JOIN: a
//! cursor moves over a partition's right times as the left rows' times grow, and never back.
//!
//! [`advance`] moves one cursor four values at a time, counting without a branch on each: the
//! streams advance zero to a few rows a step, which a one-step loop mispredicts about every
//! other row. [`quarters`] walks a left partition in four quarters, each with its own cursor
//! (the later ones placed by bisection where one cursor would have been), in one loop: a merge
//! of one cursor runs at the latency of a load and a compare per row, each step waiting on the
//! last, while the quarters' chains overlap. [`first_valid`] skips a partition's NULL times,
//! which sort first.

use std::ops::Range;
use zepto_storage::Column;

/// The first row of `rows` where `c` holds a value (`rows.end` if none): a time-sorted
/// partition's rows past its NULL times.
pub(super) fn first_valid(c: &Column, rows: &Range<usize>) -> usize {
    (rows.start..rows.end).find(|&i| c.is_valid(i)).unwrap_or(rows.end)
}

/// Move a merge cursor over `rs`, sorted ascending from `j` on, past every value `<= t`
/// (`inclusive`) or `< t` (the count of four values is where they end only because they are
/// sorted). Kept scalar: 64-bit compares do not vectorize on baseline x86-64 (they cost more
/// emulated), and compiled for AVX2 (the compares as one vector and a horizontal sum) both
/// joins ran slower: the sum lengthens the chain each step waits on (Q4 20%; the WINDOW
/// JOIN's sweep, eight at a time, 12%).
#[inline]
pub(super) fn advance(rs: &[i64], mut j: usize, t: i64, inclusive: bool) -> usize {
    let before = |r: i64| if inclusive { r <= t } else { r < t };
    while let Some(w) = rs.get(j..j + 4) {
        let k = before(w[0]) as usize + before(w[1]) as usize + before(w[2]) as usize + before(w[3]) as usize;
        j += k;
        if k < 4 {
            return j;
        }
    }
    while j < rs.len() && before(rs[j]) {
        j += 1;
    }
    j
}

/// `found(i, step(cursor, left[i]))` for every row `i` of the sorted times `left`, in four
/// quarters stepped in turn, the cursors held in locals (Q4 at 1M rows: two halves took
/// 10-15% less time than one cursor, four quarters 3-7% less than two; four cursors in an
/// array were no faster than one). The first quarter's cursor is `first`; a later one's is
/// `place(t)` for its first time `t`: a cursor from which `step` at `t` gives what one
/// cursor stepped from `first` over every row up to `t` gives (both callers place the cursor
/// one step at `t` leaves, which a second step at `t` keeps).
#[inline(always)]
pub(super) fn quarters<C: Copy, R>(
    left: &[i64],
    first: C,
    place: impl Fn(i64) -> C,
    step: impl Fn(&mut C, i64) -> R,
    mut found: impl FnMut(usize, R),
) {
    let q = left.len() / 4;
    let (a, rest) = left.split_at(q);
    let (b, rest) = rest.split_at(q);
    let (c, d) = rest.split_at(q);
    let start = |s: &[i64]| s.first().map_or(first, |&t| place(t));
    // Fewer than four rows: the last quarter holds them all, from `first`.
    let jd = if q == 0 { first } else { start(d) };
    let (mut ja, mut jb, mut jc, mut jd) = (first, start(b), start(c), jd);
    for (i, (((&ta, &tb), &tc), &td)) in a.iter().zip(b).zip(c).zip(d).enumerate() {
        let (ha, hb) = (step(&mut ja, ta), step(&mut jb, tb));
        let (hc, hd) = (step(&mut jc, tc), step(&mut jd, td));
        found(i, ha);
        found(q + i, hb);
        found(2 * q + i, hc);
        found(3 * q + i, hd);
    }
    // The last quarter is up to three rows longer.
    for (i, &t) in d.iter().enumerate().skip(q) {
        found(3 * q + i, step(&mut jd, t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::rng::XorShift;

    /// A cursor from any `j` stops where a bisection of the rest stops, for times at the ends
    /// of i64, ties, and fewer than four values left.
    #[test]
    fn advance_stops_where_a_bisection_does() {
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        let picks = [i64::MIN, -1, 0, 1, i64::MAX];
        for round in 0..400 {
            let n = rng.below(12);
            let mut rs: Vec<i64> = (0..n).map(|_| picks[rng.below(5) as usize]).collect();
            rs.sort_unstable();
            for j in 0..=rs.len() {
                for t in picks {
                    for inclusive in [false, true] {
                        let want = j + rs[j..].partition_point(|&r| if inclusive { r <= t } else { r < t });
                        assert_eq!(advance(&rs, j, t, inclusive), want, "round {round}: {rs:?} from {j}, {t}");
                    }
                }
            }
        }
    }

    /// The quarters find, row by row, what one cursor stepped over every row finds, for
    /// lengths around the quarters' cuts and times with long ties.
    #[test]
    fn quarters_find_what_one_cursor_finds() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        for round in 0..500 {
            let sorted = |rng: &mut XorShift, n: usize| {
                let mut v: Vec<i64> = (0..n).map(|_| rng.below(40) as i64 - 20).collect();
                v.sort_unstable();
                v
            };
            let (nl, nr) = (rng.below(30) as usize, rng.below(30) as usize);
            let (left, rs) = (sorted(&mut rng, nl), sorted(&mut rng, nr));
            let inclusive = round % 2 == 0;
            let step = |j: &mut usize, t: i64| {
                *j = advance(&rs, *j, t, inclusive);
                *j
            };
            let place = |t: i64| rs.partition_point(|&r| if inclusive { r <= t } else { r < t });
            let mut got = vec![usize::MAX; left.len()];
            quarters(&left, 0, place, step, |i, j| got[i] = j);
            let mut j = 0;
            let want: Vec<usize> = left.iter().map(|&t| step(&mut j, t)).collect();
            assert_eq!(got, want, "round {round}: {left:?} in {rs:?}");
            assert!(want.iter().zip(&left).all(|(&j, &t)| j == place(t)), "round {round}: a cursor is the bisection");
        }
    }
}
