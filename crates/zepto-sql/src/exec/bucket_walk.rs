//! The first row of every time bucket of a sorted time column (`GROUP BY sym, xbar(w, ts)`
//! inside a partition): a few steps per bucket instead of the key evaluated on every row.
//!
//! A bucket's end is found by counting the times below it over a window of rows placed where
//! the previous bucket's length puts it ([`counted_end`]), with no branch on the data. Each
//! step needs the step before it (where a bucket starts is where the last one ended), so one
//! walk waits on a load and a sum per bucket; the rows are cut at bucket starts into
//! [`WALKS`] stretches whose walks take their steps in turn, so that the CPU overlaps them.

/// Walks taken side by side over a long enough column.
const WALKS: usize = 4;

/// Rows below which one walk covers the column.
const MIN_SPLIT_ROWS: usize = 512;

/// The first row of every bucket `w * floor(t / w)` of `v` (sorted, `width > 0`), the first
/// bucket saturating at i64's bottom and the last running to the end of the times, as `xbar`
/// computes them.
#[multiversion::multiversion(targets("x86_64+avx2"))]
pub fn starts(v: &[i64], width: i64) -> Vec<u32> {
    // Every bucket end lies within a width past the last time: when that whole span fits an
    // i64, so does `t - hi` for any time t and bucket end hi, and its sign says `t < hi`.
    let counted = v.last().zip(v.first()).and_then(|(l, f)| l.checked_sub(*f)?.checked_add(width)).is_some();
    let (at, k) = cuts(v, width);
    // A walk's room is a bound on its buckets (`Walk::new`), so the first call always has
    // room; one walk over the whole column (room for a bucket a row) is the fallback.
    walk_all(v, width, counted, &at[..=k]).or_else(|| walk_all(v, width, counted, &[0, v.len()])).unwrap_or_default()
}

/// The walks over the stretches between `cuts`, taken side by side, writing into one buffer
/// (each walk its room's share of it), the gaps between their shares closed at the end. `None`
/// if a walk ran out of room.
#[inline(always)]
fn walk_all(v: &[i64], width: i64, counted: bool, cuts: &[usize]) -> Option<Vec<u32>> {
    let k = cuts.len().saturating_sub(1).min(WALKS);
    let mut walks = [Walk::EMPTY; WALKS];
    let mut total = 0;
    for (w, c) in walks.iter_mut().zip(cuts.windows(2)) {
        *w = Walk::new(v, width, c[0], c[1], total);
        total = w.end;
    }
    let mut buf = vec![0u32; total];
    let mut more = true;
    while more {
        more = false;
        for w in &mut walks[..k] {
            more |= w.step(v, width, counted, &mut buf);
        }
    }
    if walks[..k].iter().any(|w| w.overflow) {
        return None;
    }
    let mut len = 0;
    for w in &walks[..k] {
        buf.copy_within(w.base..w.at, len);
        len += w.at - w.base;
    }
    buf.truncate(len);
    Some(buf)
}

/// Row 0, up to `WALKS - 1` bucket starts spread over `v`, and `v.len()`: the stretches the
/// walks cover, and the position of `v.len()` among them (the entries after it unused). A cut
/// is the first row of the bucket holding the row at its share of `v` (skipped where that
/// bucket starts below i64's bottom, or where it is not past the last cut).
fn cuts(v: &[i64], width: i64) -> ([usize; WALKS + 1], usize) {
    let n = v.len();
    let (mut at, mut k) = ([0; WALKS + 1], 0);
    if n >= MIN_SPLIT_ROWS {
        for j in 1..WALKS {
            let (i, last) = (n * j / WALKS, at[k]);
            let Some(lo) = v[i].div_euclid(width).checked_mul(width) else { continue };
            // Down from row i to its bucket's first row (every time before the last cut is
            // below `lo`): a few rows near i, not a search of the whole column.
            let b = gallop_end(v, last, lo, i - last);
            if b > last && b < n {
                k += 1;
                at[k] = b;
            }
        }
    }
    k += 1;
    at[k] = n;
    (at, k)
}

/// One walk from bucket to bucket over rows `s..until` (`s` and `until` are first rows of
/// buckets, or `until` is the end), writing each bucket's first row into its share
/// `base..end` of the walks' buffer.
#[derive(Clone, Copy)]
struct Walk {
    /// The next bucket's first row.
    s: usize,
    /// Where the walk ends.
    until: usize,
    /// The end of the last bucket, if any.
    prev_hi: Option<i64>,
    /// The last bucket's rows.
    guess: usize,
    /// The walk's share of the buffer, and where its next start goes.
    base: usize,
    end: usize,
    at: usize,
    /// Whether a start found no room (never, as long as the room is a bound).
    overflow: bool,
}

impl Walk {
    const EMPTY: Walk = Walk { s: 0, until: 0, prev_hi: None, guess: 1, base: 0, end: 0, at: 0, overflow: false };

    fn new(v: &[i64], width: i64, s: usize, until: usize, base: usize) -> Walk {
        debug_assert!(s <= until);
        // Room for the buckets the times span (at most one a row): times from t0 to t1 touch
        // at most (t1 - t0) / width + 2 buckets, and every bucket has a row.
        let span = |l: i64| (i128::from(l) - i128::from(v[s])) / i128::from(width) + 2;
        let room = v.get(s..until).and_then(<[i64]>::last).map_or(0, |&l| span(l).min((until - s) as i128) as usize);
        Walk { s, until, prev_hi: None, guess: 1, base, end: base + room, at: base, overflow: false }
    }

    /// One bucket more; false once the walk is over.
    #[inline(always)]
    fn step(&mut self, v: &[i64], width: i64, counted: bool, buf: &mut [u32]) -> bool {
        let s = self.s;
        if s >= self.until {
            return false;
        }
        debug_assert!(self.at < self.end, "a walk's room is a bound on its buckets");
        if self.at >= self.end {
            self.overflow = true;
            self.s = self.until;
            return false;
        }
        // In the buffer: the shares of all walks end at or before its length (`walk_all`).
        buf[self.at] = s as u32;
        self.at += 1;
        // The end of the bucket holding v[s] (none: the last bucket runs to the end of the
        // times), without a division when it follows the previous one (dense data).
        let Some(hi) = crate::eval::bucket_end(v[s], width, self.prev_hi) else {
            self.s = self.until;
            return false;
        };
        debug_assert!(v[s] < hi);
        self.prev_hi = Some(hi);
        let e = if counted {
            counted_end(v, s, hi, self.guess)
        } else {
            gallop_end(v, s + 1, hi, self.guess.saturating_sub(1))
        };
        debug_assert!(e <= self.until, "a bucket ends at or before the next walk's first row");
        self.guess = e - s;
        self.s = e;
        true
    }
}

/// The end of the bucket that starts at row `s` and ends before the first time at or past
/// `hi` (`t - hi` cannot overflow for any time of `v`), the previous bucket having had `guess`
/// rows: [`window_end`] over 32 rows when buckets are short and 64 when they are longer, the
/// window centred where `guess` puts the end (from the bucket's second row when that is
/// nearer). A bucket's length varies by about its square root: two Poisson counts of about
/// 100 differ by more than 32 one time in 50, two of 250 one time in seven, and the end is then
/// galloped to from the window's side. Bars of 26 rows on average have a previous bucket over
/// 32 rows one time in ten (those take the 64-row window). Long buckets once read 128 rows
/// (fewer gallops), twice the lines: at 10M rows, where bars run 250 rows on average and the
/// walk reads the times from memory, Q3b's median took 0.30, 0.34 and 1.45 ms less with 64
/// rows than with 128 (three alternated runs of 6.0 to 8.9 ms).
#[inline(always)]
fn counted_end(v: &[i64], s: usize, hi: i64, guess: usize) -> usize {
    if guess <= 32 {
        window_end::<32>(v, s, hi, guess)
    } else {
        window_end::<64>(v, s, hi, guess)
    }
}

/// [`counted_end`] over a window of `W` rows: the rows below `hi` counted with no branch on
/// the data (the times are sorted, so the count is where the bucket ends); only when the end
/// is outside the window, a gallop from its side. Galloping alone takes a few data-dependent
/// branches a bucket, mispredicted about as often as not, and several cold lines.
#[inline(always)]
fn window_end<const W: usize>(v: &[i64], s: usize, hi: i64, guess: usize) -> usize {
    let lo = (s + guess).saturating_sub(W / 2).max(s + 1);
    let Some(w) = v.get(lo..lo + W) else { return gallop_end(v, s + 1, hi, guess.saturating_sub(1)) };
    let mut below = [0u64; 4];
    for chunk in w.chunks_exact(4) {
        for k in 0..4 {
            below[k] += (chunk[k].wrapping_sub(hi) as u64) >> 63;
        }
    }
    match below.iter().sum::<u64>() as usize {
        // The end is at or before `lo`: gallop down from it.
        0 => gallop_end(v, s + 1, hi, lo - (s + 1)),
        // Every row of the window is below `hi`: gallop up from its end.
        c if c == W => gallop_end(v, lo + W, hi, 0),
        c => lo + c,
    }
}

/// The first index from `from` whose time reaches `hi` (`v` sorted; every time before `from`
/// is below `hi`), searched from `from + guess` (where the end is expected: neighbouring
/// buckets hold similar numbers of rows): gallop from there in the direction the guess was off
/// (1, 2, 4, ... rows), then bisect the last step. A good guess costs two comparisons.
fn gallop_end(v: &[i64], from: usize, hi: i64, guess: usize) -> usize {
    let n = v.len();
    if from >= n {
        return n;
    }
    let below = |i: usize| v[i] < hi;
    let g = (from + guess).min(n - 1);
    // Narrow to lo..up with v[from..lo] < hi and v[up..] >= hi (up = n: none known).
    let (mut lo, mut up) = (from, n);
    let mut step = 1;
    if below(g) {
        // Gallop up from g until a row reaches hi (or the end).
        lo = g + 1;
        while lo < n {
            let probe = (lo + step - 1).min(n - 1);
            if !below(probe) {
                up = probe;
                break;
            }
            lo = probe + 1;
            step *= 2;
        }
    } else {
        // Gallop down from g until a row below hi (or `from`).
        up = g;
        while up > from {
            let probe = up.saturating_sub(step).max(from);
            if below(probe) {
                lo = probe + 1;
                break;
            }
            up = probe;
            step *= 2;
        }
    }
    lo + v[lo..up].partition_point(|&x| x < hi)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The first row of every run of equal `w * floor(t / w)`: what [`starts`] must find (also
    /// the reference of `partitioned`'s tests, through its key matching).
    pub(in crate::exec) fn reference(v: &[i64], w: i64) -> Vec<u32> {
        let b: Vec<i64> = v.iter().map(|t| t.div_euclid(w).saturating_mul(w)).collect();
        (0..v.len()).filter(|&i| i == 0 || b[i] != b[i - 1]).map(|i| i as u32).collect()
    }

    #[test]
    fn walks_side_by_side_find_what_one_walk_finds() {
        let mut rng = zepto_storage::rng::XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut rnd = |n: u64| rng.below(n);
        let mut split = 0;
        for round in 0..400 {
            let n = MIN_SPLIT_ROWS - 2 + rnd(6000) as usize;
            // Stretches of equal times, dense and sparse rows, jumps over many buckets.
            let mut t = rnd(1_000_000) as i64 - 500_000;
            let v: Vec<i64> = (0..n)
                .map(|_| {
                    t += match rnd(20) {
                        0 => rnd(5_000) as i64,
                        1..=3 => 0,
                        _ => rnd(30) as i64,
                    };
                    t
                })
                .collect();
            let w = [1, 3, 60, 250, 1000, 100_000][round % 6];
            let (at, k) = cuts(&v, w);
            let cut = &at[..=k];
            assert!(cut.windows(2).all(|c| c[0] < c[1]) && cut[0] == 0 && cut[cut.len() - 1] == n, "{cut:?}");
            split += usize::from(cut.len() == WALKS + 1);
            assert_eq!(starts(&v, w), reference(&v, w), "round {round}, width {w}, cuts {cut:?}");
        }
        // Most columns are cut into every walk's stretch (not all: a bucket may span a share).
        assert!(split > 300, "{split} of 400 cut {WALKS} ways");
        // A bucket holding most rows: the cuts inside it fall on its first row (row 0) and are left out.
        let v: Vec<i64> = (0..4000).map(|i| if i < 3000 { 10 } else { i }).collect();
        assert_eq!(starts(&v, 1000), reference(&v, 1000));
        let (at, k) = cuts(&v, 1000);
        assert_eq!(at[..=k], [0, 3000, 4000]);
        // The ends of i64 with cuts: buckets starting below i64::MIN (no cut there), times
        // spanning all of i64 (no counting: galloping across cuts), the top bucket running to
        // the end.
        let low: Vec<i64> = (0..900).map(|i| i64::MIN + i * 37).collect();
        let wide: Vec<i64> = (0..900u64).map(|i| i64::MIN.wrapping_add((i * (u64::MAX / 900)) as i64)).collect();
        let high: Vec<i64> = (0..900).map(|i| i64::MAX - 900 * 37 + i * 37).collect();
        for v in [low, wide, high] {
            for w in [1, 1000, 10_000, 10_000_000_000_000_000] {
                assert_eq!(starts(&v, w), reference(&v, w), "width {w}, cuts {:?}", cuts(&v, w).0);
            }
        }
    }
}
