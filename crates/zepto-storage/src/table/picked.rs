//! Rows picked from a batch, checked once against its length, and the copy of them.
//!
//! An append over many partitions copies each partition's rows out of the batch by row number
//! ([`super::append_picked_run`]), a few hundred rows a column. Indexing the batch's column
//! row by row checks every row number against the column's length, and that check kept the
//! copy from being vectorized: 10k-row appends over 100 symbols took 7.7-7.9 ms of every
//! million rows in `Table::append`, 7.4-7.6 checked once a span (in process, alternated). A
//! [`Picked`] is checked when it is made, by its largest row, once for all of a batch's
//! columns (every column of a batch has its length), and [`gather`] then reads without a
//! check.

use crate::buf::Buf;

/// Row numbers, every one below `below` (checked by [`Picked::new`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Picked<'a> {
    rows: &'a [u32],
    below: usize,
}

impl<'a> Picked<'a> {
    /// `rows`, each of which must be below `below` (panics otherwise: a caller's bug).
    pub(super) fn new(rows: &'a [u32], below: usize) -> Picked<'a> {
        let max = rows.iter().copied().max();
        assert!(max.is_none_or(|m| (m as usize) < below), "row {max:?} picked from {below} rows");
        Picked { rows, below }
    }

    /// The row numbers.
    pub(super) fn rows(&self) -> &'a [u32] {
        self.rows
    }
}

/// The picked values of `b` pushed onto `a`, in the order picked (`b` holds at least as many
/// values as the rows were checked against).
#[allow(unsafe_code)]
#[inline(always)]
pub(super) fn gather<T: Copy>(a: &mut Buf<T>, b: &[T], p: Picked<'_>) {
    assert!(p.below <= b.len(), "rows below {} picked from {} values", p.below, b.len());
    // SAFETY: every row of `p` is below `p.below` (checked by `Picked::new`, the only way to
    // make one), which is at most `b.len()` (asserted just above).
    match a.owned_mut() {
        Some(v) => v.extend(p.rows.iter().map(|&i| unsafe { *b.get_unchecked(i as usize) })),
        None => gather_shared(a, b, p),
    }
}

/// [`gather`] onto values a reader shares (out of line: the owned case is the hot one).
#[allow(unsafe_code)]
#[inline(never)]
fn gather_shared<T: Copy>(a: &mut Buf<T>, b: &[T], p: Picked<'_>) {
    // SAFETY: as in `gather`, which checked `p.below <= b.len()`.
    a.extend_shared(p.rows.len(), p.rows.iter().map(|&i| unsafe { *b.get_unchecked(i as usize) }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_the_picked_rows_in_order() {
        let b: Vec<i64> = (0..10).map(|i| i * 10).collect();
        let mut a: Buf<i64> = vec![-1].into();
        gather(&mut a, &b, Picked::new(&[9, 0, 3, 3], b.len()));
        assert_eq!(&a[..], [-1, 90, 0, 30, 30]);
        gather(&mut a, &b, Picked::new(&[], 0));
        assert_eq!(a.len(), 5);
    }

    #[test]
    #[should_panic(expected = "picked from 10 rows")]
    fn a_row_past_the_end_is_refused_when_picked() {
        Picked::new(&[2, 10, 1], 10);
    }

    #[test]
    #[should_panic(expected = "picked from 3 values")]
    fn a_column_shorter_than_the_rows_is_refused() {
        let mut a = Buf::new();
        gather(&mut a, &[1u32, 2, 3], Picked::new(&[0, 1], 4));
    }
}
