//! Items taken in stretches of neighbours, each stretch's results joined by the thread that
//! made them ([`try_map_stretches`]).
//!
//! Why: a partition-wise GROUP BY makes one small result per partition (a few hundred bars),
//! and whoever reads the answer pays per batch (pyarrow's import, a chunk in Polars). Items
//! taken one at a time from one counter land on the threads alternately, so a thread's
//! results are joined only within fixed runs of items cut beforehand: a few runs per core,
//! each a batch, and the last run a thread takes decides when the section ends. Here every
//! thread owns a share of the items (equal weights, in order) and takes it from the front;
//! once its share is done it takes from the back of the share with the most left. Every take
//! of a thread then neighbours its last one but for a few switches, so the answer is about one
//! batch per thread, and the section ends within one item of balanced.
//!
//! A share's state is one atomic word (the next item from the front, the end of what is left
//! at the back): a take is one compare-exchange, and the front and the back never pass each
//! other, so each item is taken once.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One share of the items: `front` (high half) up to `back` (low half) still to take.
struct Share(AtomicU64);

impl Share {
    fn new(front: usize, back: usize) -> Share {
        Share(AtomicU64::new(((front as u64) << 32) | back as u64))
    }

    /// Items left.
    fn left(&self) -> usize {
        let (f, b) = split(self.0.load(Ordering::Relaxed));
        b.saturating_sub(f)
    }

    /// The next item from the front (`FRONT`) or the back, if any is left.
    fn take<const FRONT: bool>(&self) -> Option<usize> {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            let (f, b) = split(cur);
            if f >= b {
                return None;
            }
            let (next, item) = if FRONT { (((f + 1) << 32) | b, f) } else { ((f << 32) | (b - 1), b - 1) };
            match self.0.compare_exchange_weak(cur, next as u64, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(item),
                Err(seen) => cur = seen,
            }
        }
    }
}

/// A share's word as (front, back).
fn split(w: u64) -> (usize, usize) {
    ((w >> 32) as usize, (w & u64::from(u32::MAX)) as usize)
}

/// The first item of each of `k` shares of `items` by `weight` (in order, about equal
/// weights; a share may be empty), and `items.len()` last. Share j starts at the item before
/// which the weight comes nearest j/k of the total.
fn cuts<T>(items: &[T], weight: impl Fn(&T) -> usize, k: usize) -> Vec<usize> {
    let total = items.iter().map(&weight).sum::<usize>().max(1) as i128;
    let k128 = k as i128;
    let mut out = vec![0];
    let mut seen = 0i128;
    for (i, x) in items.iter().enumerate() {
        let w = weight(x) as i128;
        let j = out.len() as i128;
        if out.len() < k && i > out[out.len() - 1] {
            // Scaled by k: how far the weight before item i falls short of the share's start,
            // and how far past it the weight through item i would go.
            let (short, past) = (total * j - seen * k128, (seen + w) * k128 - total * j);
            if short <= 0 || past > short {
                out.push(i);
            }
        }
        seen += w;
    }
    while out.len() < k {
        out.push(items.len());
    }
    out.push(items.len());
    out
}

/// One thread's stretches so far: each as its first item and its joined results.
struct Stretches<R, S> {
    done: Vec<(usize, Vec<S>)>,
    /// The current stretch: its items' results in the order taken, its lowest and highest item.
    open: Vec<R>,
    span: Option<(usize, usize)>,
    /// Whether the current stretch is taken from the back (its results in falling item order).
    falling: bool,
}

impl<R, S> Stretches<R, S> {
    fn new() -> Self {
        Stretches { done: Vec::new(), open: Vec::new(), span: None, falling: false }
    }

    /// Item `i`'s result, taken from the front (`falling` false) or the back.
    fn push(&mut self, i: usize, r: R, falling: bool, join: &impl Fn(Vec<R>) -> Vec<S>) {
        let adjacent = match self.span {
            Some((lo, hi)) => falling == self.falling && if falling { i + 1 == lo } else { i == hi + 1 },
            None => false,
        };
        if !adjacent {
            self.close(join);
            self.falling = falling;
        }
        self.open.push(r);
        self.span = Some(self.span.filter(|_| adjacent).map_or((i, i), |(lo, hi)| (lo.min(i), hi.max(i))));
    }

    /// The current stretch joined into `done`.
    fn close(&mut self, join: &impl Fn(Vec<R>) -> Vec<S>) {
        let Some((lo, _)) = self.span.take() else { return };
        let mut rs = std::mem::take(&mut self.open);
        if self.falling {
            rs.reverse();
        }
        self.done.push((lo, join(rs)));
    }
}

/// `f` over `items` on up to one thread per core (as [`super::try_map`]), each thread taking
/// neighbouring items (module docs: its share by `weight` from the front, then others' from
/// their back) and `join`ing the results of each stretch of neighbours it ran, in item order,
/// on its own thread. `enter` makes each thread's context for `f` and `join`, on that thread.
/// The results of all stretches come back in item order. After an error no thread takes
/// another item, and one of the errors is returned.
pub fn try_map_stretches<T: Sync, R: Send, S: Send, E: Send, C>(
    items: &[T],
    weight: impl Fn(&T) -> usize,
    enter: impl Fn() -> C + Sync,
    f: impl Fn(&C, &T) -> Result<R, E> + Sync,
    join: impl Fn(&C, Vec<R>) -> Vec<S> + Sync,
) -> Result<Vec<S>, E> {
    if u32::try_from(items.len()).is_err() {
        // A share packs item positions in 32 bits: this many items run on the calling thread.
        let c = enter();
        let rs = items.iter().map(|x| f(&c, x)).collect::<Result<Vec<R>, E>>()?;
        return Ok(join(&c, rs));
    }
    let k = super::threads().min(items.len()).max(1);
    let bounds = cuts(items, weight, k);
    let shares: Vec<Share> = bounds.windows(2).map(|w| Share::new(w[0], w[1])).collect();
    let failed = AtomicBool::new(false);
    let worker = |&w: &usize| -> Result<Vec<(usize, Vec<S>)>, E> {
        let c = enter();
        let join = |rs: Vec<R>| join(&c, rs);
        let mut mine = Stretches::new();
        let run = |i: usize, falling: bool, mine: &mut Stretches<R, S>| -> Result<(), E> {
            let r = f(&c, &items[i]).inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
            mine.push(i, r, falling, &join);
            Ok(())
        };
        while let Some(i) = shares[w].take::<true>().filter(|_| !failed.load(Ordering::Relaxed)) {
            run(i, false, &mut mine)?;
        }
        // Then the back of whichever share has the most left, until none has any.
        while !failed.load(Ordering::Relaxed) {
            let Some(s) = shares.iter().max_by_key(|s| s.left()).filter(|s| s.left() > 0) else { break };
            let Some(i) = s.take::<false>() else { continue };
            run(i, true, &mut mine)?;
        }
        mine.close(&join);
        Ok(mine.done)
    };
    let workers: Vec<usize> = (0..k).collect();
    let mut all: Vec<(usize, Vec<S>)> =
        if k == 1 { worker(&0)? } else { super::try_map(&workers, worker)?.into_iter().flatten().collect() };
    all.sort_unstable_by_key(|(first, _)| *first);
    Ok(all.into_iter().flat_map(|(_, rs)| rs).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_the_items_in_order_by_weight() {
        let w = |&x: &usize| x;
        assert_eq!(cuts(&[1usize, 1, 1, 1], w, 2), vec![0, 2, 4]);
        assert_eq!(cuts(&[10usize, 1, 1, 1], w, 2), vec![0, 1, 4]);
        assert_eq!(cuts(&[1usize, 1, 1, 10], w, 2), vec![0, 3, 4]);
        assert_eq!(cuts(&[5usize], w, 1), vec![0, 1]);
        assert_eq!(cuts(&[0usize, 0], w, 2), vec![0, 2, 2]);
        for n in 1..60usize {
            let items: Vec<usize> = (0..n).map(|i| (i * 7919) % 13).collect();
            for k in 1..=n.min(5) {
                let c = cuts(&items, w, k);
                assert_eq!(c.len(), k + 1, "{n} items, {k} shares");
                assert!(c.windows(2).all(|p| p[0] <= p[1]) && c[0] == 0 && c[k] == n, "{c:?}");
            }
        }
    }

    #[test]
    fn a_share_hands_each_item_out_once_from_both_ends() {
        let s = Share::new(3, 9);
        let mut got = vec![s.take::<true>(), s.take::<false>(), s.take::<true>(), s.take::<false>()];
        assert_eq!(s.left(), 2);
        got.extend([s.take::<false>(), s.take::<true>(), s.take::<true>(), s.take::<false>()]);
        assert_eq!(got, vec![Some(3), Some(8), Some(4), Some(7), Some(6), Some(5), None, None]);
    }

    /// Every item once, results in item order, each join over neighbours in order; uneven
    /// items, so that the threads steal from each other's shares.
    #[test]
    fn every_item_once_in_order_joined_over_neighbours() {
        for n in [0usize, 1, 2, 3, 17, 100, 257] {
            let items: Vec<u64> = (0..n as u64).collect();
            let f = |_: &(), &i: &u64| -> Result<Vec<u64>, ()> {
                let spin = if i % 5 == 0 { 20_000 } else { 200 };
                Ok(vec![(0..spin).fold(i, |a, b| std::hint::black_box(a | (b & i)))])
            };
            // A join checks its parts are neighbours in order, and makes one part of them.
            let join = |_: &(), parts: Vec<Vec<u64>>| {
                let flat: Vec<u64> = parts.into_iter().flatten().collect();
                assert!(flat.windows(2).all(|w| w[1] == w[0] + 1), "a stretch of neighbours: {flat:?}");
                vec![flat]
            };
            let out = try_map_stretches(&items, |_| 1, || (), f, join).expect("no item fails");
            let flat: Vec<u64> = out.iter().flatten().copied().collect();
            assert_eq!(flat, items, "{n} items");
            // Two threads: each one's share from the front, and the first done takes the
            // other's from its back (no third thread interleaves with it there).
            if super::super::threads() <= 2 {
                assert!(out.len() <= 3, "{} stretches of {n}", out.len());
            }
        }
    }

    #[test]
    fn an_error_stops_the_section_and_comes_back() {
        let items: Vec<u64> = (0..500).collect();
        let f = |_: &(), &i: &u64| {
            if i == 40 {
                Err(i)
            } else {
                Ok(i)
            }
        };
        let out = try_map_stretches(&items, |_| 1, || (), f, |_, rs| rs);
        assert_eq!(out, Err(40));
    }
}
