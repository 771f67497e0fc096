//! A bulk load's rows ordered by group a chunk at a time, once for all its columns.
//!
//! A load splits every column among a few hundred partitions or fewer ([`super::KeyGroups`]).
//! Scattering a row at a time, each part's write position is a cursor to load, bump and test
//! for every row. Here each chunk of [`ORDER_CHUNK_ROWS`] rows is counting-sorted by group
//! once, when the key column is read: the chunk's rows in group order, and where each group's
//! run starts. Every column then writes each group's run to its part in one go, gathered
//! from the chunk's values (in cache) ([`super::scatter::scatter_ordered`]). The order is
//! stable: a group's rows keep file order.
//!
//! Only for few groups ([`MAX_ORDER_GROUPS`]): with more, a chunk holds a few rows per group
//! and the runs, each to a part of its own, cost more than the row-by-row scatter.

use std::ops::Range;

/// Rows per ordered chunk: the Parquet reader's batch (`zepto_io`), so that each batch of a
/// column is one chunk. Its rows fit in a `u16`.
pub const ORDER_CHUNK_ROWS: usize = 1 << 14;

/// The most groups a load is ordered for: a chunk then holds 64 rows a group on average.
pub const MAX_ORDER_GROUPS: usize = ORDER_CHUNK_ROWS / 64;

/// One chunk's rows ordered by group.
#[derive(Debug)]
pub struct ChunkOrder {
    /// The chunk's rows ordered by group (file order within a group).
    rows: Vec<u16>,
    /// Group `g`'s run is `rows[starts[g]..starts[g + 1]]`.
    starts: Vec<u32>,
}

impl ChunkOrder {
    /// The order of rows whose groups are `groups` (each below `ngroups`).
    fn of(groups: &[u32], ngroups: usize) -> ChunkOrder {
        assert!(groups.len() <= ORDER_CHUNK_ROWS, "a chunk of at most {ORDER_CHUNK_ROWS} rows");
        let mut starts = vec![0u32; ngroups + 1];
        for &g in groups {
            starts[g as usize + 1] += 1;
        }
        for g in 0..ngroups {
            starts[g + 1] += starts[g];
        }
        let mut next: Vec<u32> = starts[..ngroups].to_vec();
        let mut rows = vec![0u16; groups.len()];
        for (i, &g) in groups.iter().enumerate() {
            let at = &mut next[g as usize];
            rows[*at as usize] = i as u16;
            *at += 1;
        }
        ChunkOrder { rows, starts }
    }

    /// The chunk's rows ordered by group (a permutation of the rows).
    pub(super) fn rows(&self) -> &[u16] {
        &self.rows
    }

    /// Where each group's run starts among the ordered rows, and (last) the rows' count.
    pub(super) fn starts(&self) -> &[u32] {
        &self.starts
    }
}

/// Every chunk of a load ordered by group (module docs).
#[derive(Debug)]
pub(super) struct ChunkOrders {
    chunks: Vec<ChunkOrder>,
    rows: usize,
}

impl ChunkOrders {
    /// The orders of the chunks of `groups` (row `i` in group `groups[i]`, below `ngroups`),
    /// made on every core; `None` for more groups than pays ([`MAX_ORDER_GROUPS`]).
    pub(super) fn of(groups: &[u32], ngroups: usize) -> Option<ChunkOrders> {
        if ngroups > MAX_ORDER_GROUPS || groups.len() < ORDER_CHUNK_ROWS {
            return None;
        }
        let chunks: Vec<&[u32]> = groups.chunks(ORDER_CHUNK_ROWS).collect();
        let threads = crate::par::threads().max(1);
        let runs: Vec<&[&[u32]]> = chunks.chunks(chunks.len().div_ceil(threads)).collect();
        let ordered = crate::par::map(&runs, |run| run.iter().map(|c| ChunkOrder::of(c, ngroups)).collect::<Vec<_>>());
        Some(ChunkOrders { chunks: ordered.into_iter().flatten().collect(), rows: groups.len() })
    }

    /// Where the chunk holding row `at` ends.
    pub(super) fn chunk_end(&self, at: usize) -> usize {
        ((at / ORDER_CHUNK_ROWS + 1) * ORDER_CHUNK_ROWS).min(self.rows)
    }

    /// The order of rows `rows`, when they are one whole chunk.
    pub(super) fn chunk(&self, rows: Range<usize>) -> Option<&ChunkOrder> {
        if !rows.start.is_multiple_of(ORDER_CHUNK_ROWS) || rows.end != (rows.start + ORDER_CHUNK_ROWS).min(self.rows) {
            return None;
        }
        self.chunks.get(rows.start / ORDER_CHUNK_ROWS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::XorShift;

    #[test]
    fn rows_order_each_chunk_by_group_stably() {
        let mut r = XorShift::new(0x2545_f491_4f6c_dd1d);
        for ngroups in [1usize, 3, 100, MAX_ORDER_GROUPS] {
            let n = ORDER_CHUNK_ROWS * 2 + r.below(ORDER_CHUNK_ROWS as u64) as usize;
            let groups: Vec<u32> = (0..n).map(|_| r.below(ngroups as u64) as u32).collect();
            let orders = ChunkOrders::of(&groups, ngroups).expect("few groups");
            for start in (0..n).step_by(ORDER_CHUNK_ROWS) {
                let rows = start..(start + ORDER_CHUNK_ROWS).min(n);
                let o = orders.chunk(rows.clone()).expect("a whole chunk");
                // The rows in order: sorted by group, file order within one.
                let in_order: Vec<usize> = o.rows().iter().map(|&i| rows.start + i as usize).collect();
                let mut want: Vec<usize> = rows.clone().collect();
                want.sort_by_key(|&i| groups[i]);
                assert_eq!(in_order, want, "{ngroups} groups, chunk at {start}");
                for g in 0..ngroups {
                    let run = o.starts()[g] as usize..o.starts()[g + 1] as usize;
                    assert!(in_order[run].iter().all(|&i| groups[i] as usize == g));
                }
                assert_eq!(*o.starts().last().expect("a count") as usize, rows.len());
            }
            assert!(orders.chunk(1..ORDER_CHUNK_ROWS + 1).is_none() && orders.chunk(0..5).is_none());
        }
        assert!(ChunkOrders::of(&[0; ORDER_CHUNK_ROWS], MAX_ORDER_GROUPS + 1).is_none());
    }
}
