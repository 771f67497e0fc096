//! A chunk's values scattered among parts through a cache line of staging per part.
//!
//! A bulk load splits every column among its partitions ([`super::split`]): one row at a time
//! to a hundred buffers, each store to a line the CPU must first read from memory, and the
//! hundred write positions fight over the same L1 sets whenever the buffers sit alike modulo
//! 4 KiB. Staged, a part's values are gathered in a line of its own (all the stagings together
//! stay in L1), and each full line goes out with non-temporal stores: written once, never read.
//! On the benchmark's shape (100 parts, 10M doubles) this took a split from 4.3 to 2.8 ns a
//! row (bench/README, "Loads at 10M rows").
//!
//! Nothing is ever written past a part's capacity: the staged path checks every write first
//! and panics when a part gets more rows than it has room for (a caller's bug,
//! [`super::ColumnSplit`] sizes them exactly); the plain loop grows the part instead.

use super::chunk_order::ChunkOrder;

/// `v`'s values appended to `out` by `slots` (row `i` to part `slots[i]`), each part's
/// capacity meant to hold its rows (module docs).
pub(super) fn scatter_into<T: Copy + 'static>(out: &mut [Vec<T>], v: &[T], slots: &[u32]) {
    debug_assert_eq!(v.len(), slots.len());
    #[cfg(target_arch = "x86_64")]
    if staged::pays::<T>(out.len(), v.len()) {
        return staged::scatter(out, v, slots);
    }
    for (&x, &p) in v.iter().zip(slots) {
        out[p as usize].push(x);
    }
}

/// `v`'s values (one chunk) appended to `out` in `order`: each part takes its run of the
/// chunk's rows ordered by part, gathered from `v` (in cache) and written out in one pass
/// (`chunk_order.rs` says why). Gathering, not putting each value at its place in a scratch
/// and copying each run from there, saves the copy: a 10M-row load of trades and quotes took
/// 3-5 ms less a file (in process, 2026-12-05).
pub(super) fn scatter_ordered<T: Copy>(out: &mut [Vec<T>], v: &[T], order: &ChunkOrder) {
    let (rows, starts) = (order.rows(), order.starts());
    assert_eq!(rows.len(), v.len(), "an order of the chunk's rows");
    assert_eq!(starts.len(), out.len() + 1, "a run per part");
    for (o, run) in out.iter_mut().zip(starts.windows(2)) {
        let run = &rows[run[0] as usize..run[1] as usize];
        o.extend(run.iter().map(|&r| v[r as usize]));
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod staged {
    use std::any::TypeId;
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};

    /// Staging pays once each part gets a few lines of a chunk; past this many parts the
    /// stagings leave L1 and the plain loop is as fast.
    const MAX_PARTS: usize = 1024;

    /// Bytes in a cache line: one staging, one non-temporal flush.
    const LINE: usize = 64;

    /// Whether `T` is a plain 4- or 8-byte number: every byte a value's, aligned to its size, as
    /// the staging's arithmetic assumes.
    fn is_plain_number<T: 'static>() -> bool {
        let t = TypeId::of::<T>();
        [TypeId::of::<i32>(), TypeId::of::<u32>(), TypeId::of::<f32>()].contains(&t)
            || [TypeId::of::<i64>(), TypeId::of::<u64>(), TypeId::of::<f64>()].contains(&t)
    }

    /// One part's staging: a cache line of its own.
    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    struct Line([u8; LINE]);

    /// Whether `rows` values of `T` among `parts` parts go through the staging.
    pub(super) fn pays<T: 'static>(parts: usize, rows: usize) -> bool {
        let size = std::mem::size_of::<T>();
        is_plain_number::<T>() && parts <= MAX_PARTS && rows >= parts * 2 * (LINE / size)
    }

    /// Fences the streamed lines however the scatter ends, a panic included: a streaming
    /// store must be fenced before anyone else touches its memory (a part freed while
    /// unwinding, say).
    struct Fence;

    impl Drop for Fence {
        fn drop(&mut self) {
            // SAFETY: SSE2 is part of x86_64.
            unsafe { _mm_sfence() };
        }
    }

    /// One part's write position: the cache line its next values go to, where in it they
    /// start, and where its buffer's capacity ends (addresses).
    struct Cursor {
        base: usize,
        line: usize,
        /// Bytes of `line` before the part's first new value (not ours to write).
        skip: usize,
        /// Bytes of `line` staged.
        fill: usize,
        end: usize,
    }

    /// [`super::scatter_into`] through a staging line per part (module docs), for the plain
    /// numbers of [`is_plain_number`].
    pub(super) fn scatter<T: Copy + 'static>(out: &mut [Vec<T>], v: &[T], slots: &[u32]) {
        assert!(is_plain_number::<T>(), "staged scatter of a type that is not a plain number");
        let size = std::mem::size_of::<T>();
        let mut cur: Vec<Cursor> = out
            .iter_mut()
            .map(|o| {
                let base = o.as_mut_ptr() as usize;
                let at = base + o.len() * size;
                let line = at / LINE * LINE;
                Cursor { base, line, skip: at - line, fill: at - line, end: base + o.capacity() * size }
            })
            .collect();
        let mut stage = vec![Line([0; LINE]); out.len()];
        let fence = Fence;
        for (x, &p) in v.iter().zip(slots) {
            let (c, st) = (&mut cur[p as usize], &mut stage[p as usize]);
            // SAFETY: `fill` < LINE (a full line is flushed at once below), and a multiple of
            // `T`'s size (its buffer's addresses are: `T` is aligned to its size), so the
            // value lies inside the 64-byte staging, aligned for `T`.
            unsafe { st.0.as_mut_ptr().add(c.fill).cast::<T>().write(*x) };
            c.fill += size;
            if c.fill == LINE {
                flush(out, p as usize, c, st);
            }
        }
        // Orders the streamed lines before the writes below and before any thread that later
        // synchronizes with this one reads them.
        drop(fence);
        for (p, (c, st)) in cur.iter_mut().zip(&stage).enumerate() {
            flush(out, p, c, st);
            let len = (c.line + c.fill - c.base) / size;
            assert!(len <= out[p].capacity(), "a part got more rows than it was sized for");
            // SAFETY: every byte of `base..line + fill` past the old length was written above
            // (whole lines streamed, partial ones copied), inside the capacity (checked).
            unsafe { out[p].set_len(len) };
        }
    }

    /// Write part `p`'s staged bytes `skip..fill` of its current line; a whole line (nothing
    /// to skip) streams past the caches. Moves on to the next line when this one is full.
    fn flush<T>(out: &mut [Vec<T>], p: usize, c: &mut Cursor, st: &Line) {
        if c.fill == c.skip {
            return;
        }
        assert!(c.line + c.fill <= c.end, "a part got more rows than it was sized for");
        // The line's first byte to write, as a pointer into the part's own buffer.
        let dst = out[p].as_mut_ptr().cast::<u8>().wrapping_add(c.line + c.skip - c.base);
        let src = st.0.as_ptr();
        if c.skip == 0 && c.fill == LINE {
            // SAFETY: `dst..dst + 64` lies in the buffer's capacity (asserted) and is 64-byte
            // aligned (`line` is), as the four 16-byte streaming stores need; the staging is
            // 64 readable bytes.
            unsafe {
                for i in 0..LINE / 16 {
                    let x = _mm_loadu_si128(src.add(i * 16).cast::<__m128i>());
                    _mm_stream_si128(dst.add(i * 16).cast::<__m128i>(), x);
                }
            }
        } else {
            // SAFETY: `dst..dst + (fill - skip)` lies in the capacity (asserted), past the
            // part's old length; the staging's bytes `skip..fill` are initialized values.
            unsafe { std::ptr::copy_nonoverlapping(src.add(c.skip), dst, c.fill - c.skip) };
        }
        if c.fill == LINE {
            c.line += LINE;
            (c.skip, c.fill) = (0, 0);
        } else {
            c.skip = c.fill;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::XorShift;

    /// Whatever the parts' lengths, alignments and sizes, the staged scatter appends what a
    /// push per row appends; the spare capacity beyond is untouched.
    #[test]
    fn staged_scatter_equals_a_push_per_row() {
        let mut r = XorShift::new(0x6a09_e667_f3bc_c909);
        for round in 0..200 {
            let parts = 1 + r.below(40) as usize;
            let n = r.below(3_000) as usize;
            let slots: Vec<u32> = (0..n).map(|_| r.below(parts as u64) as u32).collect();
            let v64: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
            let v32: Vec<u32> = v64.iter().map(|&x| (x >> 7) as u32).collect();
            check(&mut r, &v64, &slots, parts, round);
            check(&mut r, &v32, &slots, parts, round);
        }
    }

    fn check<T: Copy + PartialEq + std::fmt::Debug + 'static>(
        r: &mut XorShift,
        v: &[T],
        slots: &[u32],
        parts: usize,
        round: usize,
    ) {
        let mut want: Vec<Vec<T>> = vec![Vec::new(); parts];
        let mut got: Vec<Vec<T>> = Vec::with_capacity(parts);
        for p in 0..parts {
            // Some rows there before, and room for exactly this chunk's rows or a little more.
            let before: Vec<T> = v.iter().take(r.below(20) as usize).copied().collect();
            let rows = slots.iter().filter(|&&s| s as usize == p).count();
            let mut g = Vec::with_capacity(before.len() + rows + r.below(3) as usize);
            g.extend_from_slice(&before);
            want[p].extend_from_slice(&before);
            got.push(g);
        }
        for (&x, &p) in v.iter().zip(slots) {
            want[p as usize].push(x);
        }
        scatter_into(&mut got, v, slots);
        assert_eq!(got, want, "round {round}");
    }

    /// A chunk scattered in its group order appends what a push per row appends, for both
    /// widths and a float's every bit (NaN payloads, -0.0).
    #[test]
    fn ordered_scatter_equals_a_push_per_row() {
        use crate::table::chunk_order::ChunkOrders;
        let mut r = XorShift::new(0x1f83_d9ab_fb41_bd6b);
        let parts = 37;
        let n = crate::table::chunk_order::ORDER_CHUNK_ROWS * 2 + 99;
        let slots: Vec<u32> = (0..n).map(|_| r.below(parts as u64) as u32).collect();
        let orders = ChunkOrders::of(&slots, parts).expect("few parts");
        let bits: Vec<u64> = (0..n).map(|_| r.next_u64()).collect();
        let f: Vec<f64> = bits.iter().map(|&b| f64::from_bits(b)).collect();
        let i: Vec<i32> = bits.iter().map(|&b| b as i32).collect();
        let (mut got_f, mut got_i): (Vec<Vec<f64>>, Vec<Vec<i32>>) = (vec![Vec::new(); parts], vec![Vec::new(); parts]);
        for start in (0..n).step_by(crate::table::chunk_order::ORDER_CHUNK_ROWS) {
            let rows = start..(start + crate::table::chunk_order::ORDER_CHUNK_ROWS).min(n);
            let o = orders.chunk(rows.clone()).expect("a chunk");
            scatter_ordered(&mut got_f, &f[rows.clone()], o);
            scatter_ordered(&mut got_i, &i[rows], o);
        }
        let (mut want_f, mut want_i): (Vec<Vec<u64>>, Vec<Vec<i32>>) =
            (vec![Vec::new(); parts], vec![Vec::new(); parts]);
        for (k, &p) in slots.iter().enumerate() {
            want_f[p as usize].push(bits[k]);
            want_i[p as usize].push(i[k]);
        }
        let got_bits: Vec<Vec<u64>> = got_f.iter().map(|v| v.iter().map(|x| x.to_bits()).collect()).collect();
        assert_eq!((got_bits, got_i), (want_f, want_i));
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    #[should_panic(expected = "more rows than it was sized for")]
    fn a_part_given_more_rows_than_its_room_panics() {
        let n = 4_096;
        let slots: Vec<u32> = (0..n as u32).map(|i| i % 2).collect();
        let v: Vec<u64> = (0..n as u64).collect();
        let mut out: Vec<Vec<u64>> = vec![Vec::with_capacity(n / 2), Vec::with_capacity(n / 2 - 9)];
        scatter_into(&mut out, &v, &slots);
    }
}
