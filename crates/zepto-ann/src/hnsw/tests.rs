//! The graph against exact search on every metric, under concurrent adds and searches, across
//! growth, and on degenerate inputs (no node, one node, many equal vectors).

use super::store::Shape;
use super::{Hnsw, Tuning};
use crate::kernel::{InnerProduct, Kernel, SquaredL2};
use std::sync::atomic::{AtomicBool, Ordering};

const TUNING: Tuning = Tuning { m: 16, ef_construction: 128 };

/// Deterministic pseudo-random values in [-0.5, 0.5) (xorshift).
pub(crate) fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

/// A hit as (key, distance).
fn pair(key: u64, dist: f32) -> (u64, f32) {
    (key, dist)
}

fn build<K: Kernel<Elem = f32>>(data: &[f32], dim: usize, threads: usize) -> Hnsw<K> {
    let g = Hnsw::<K>::new(dim, TUNING);
    g.add(data.len() / dim, threads, |i, _: &mut (), out| {
        out.extend_from_slice(&data[i * dim..(i + 1) * dim]);
        i as u64
    })
    .expect("built");
    g
}

/// The exact top `k` keys by `K`'s distance.
fn exact<K: Kernel<Elem = f32>>(data: &[f32], dim: usize, q: &[f32], k: usize) -> Vec<u64> {
    let mut d: Vec<(f32, u64)> = data.chunks(dim).enumerate().map(|(i, v)| (K::distance(q, v), i as u64)).collect();
    d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    d.into_iter().take(k).map(|(_, i)| i).collect()
}

/// Mean recall@10 of `queries` against exact search, checking each answer's order and keys.
fn recall<K: Kernel<Elem = f32>>(g: &Hnsw<K>, data: &[f32], dim: usize, queries: &[f32]) -> f64 {
    let mut total = 0.0;
    for q in queries.chunks(dim) {
        let found = g.search(q, 10, 64, None, pair);
        assert_eq!(found.len(), 10);
        assert!(found.windows(2).all(|w| w[0].1 <= w[1].1), "nearest first: {found:?}");
        for (key, dist) in &found {
            let v = &data[*key as usize * dim..(*key as usize + 1) * dim];
            assert_eq!(*dist, K::distance(q, v), "the distance of key {key}");
        }
        let truth = exact::<K>(data, dim, q, 10);
        total += found.iter().filter(|(k, _)| truth.contains(k)).count() as f64 / 10.0;
    }
    total / (queries.len() / dim) as f64
}

#[test]
fn l2_and_inner_product_graphs_find_the_exact_neighbours() {
    let (dim, rows) = (24, 5000);
    let data = values(rows * dim, 11);
    let queries = values(40 * dim, 12);
    let l2 = recall(&build::<SquaredL2>(&data, dim, 2), &data, dim, &queries);
    assert!(l2 >= 0.95, "L2 recall@10 {l2}");
    let ip = recall(&build::<InnerProduct>(&data, dim, 2), &data, dim, &queries);
    assert!(ip >= 0.9, "inner-product recall@10 {ip}");
}

#[test]
fn every_node_finds_itself_after_appends_one_at_a_time_across_growth() {
    let (dim, rows) = (8, 2500);
    let data = values(rows * dim, 5);
    let g = Hnsw::<SquaredL2>::new(dim, TUNING);
    for i in 0..rows {
        g.add(1, 1, |_, _: &mut (), out| {
            out.extend_from_slice(&data[i * dim..(i + 1) * dim]);
            1000 + i as u64
        })
        .expect("appended");
    }
    assert_eq!(g.len(), rows);
    let found =
        (0..rows).filter(|&i| g.search(&data[i * dim..(i + 1) * dim], 1, 32, None, pair)[0].0 == 1000 + i as u64);
    let share = found.count() as f64 / rows as f64;
    assert!(share >= 0.99, "{share} of the nodes found themselves");
}

#[test]
fn searches_run_while_other_threads_add() {
    let (dim, rows, batch) = (16, 6000, 500);
    let data = values(rows * dim, 21);
    let g = Hnsw::<SquaredL2>::new(dim, TUNING);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut searched = 0;
            while !done.load(Ordering::Acquire) || searched == 0 {
                let before = g.len();
                let q = &data[(searched % rows) * dim..][..dim];
                let found = g.search(q, 10, 32, None, pair);
                assert!(found.len() <= 10 && found.len() >= before.min(10), "{} hits with {before} nodes", found.len());
                let mut keys: Vec<u64> = found.iter().map(|h| h.0).collect();
                keys.sort_unstable();
                keys.dedup();
                assert_eq!(keys.len(), found.len(), "no key twice");
                assert!(keys.iter().all(|&k| (k as usize) < rows), "only added keys");
                searched += 1;
            }
        });
        for start in (0..rows).step_by(batch) {
            g.add(batch, 2, |i, _: &mut (), out| {
                out.extend_from_slice(&data[(start + i) * dim..(start + i + 1) * dim]);
                (start + i) as u64
            })
            .expect("a batch");
        }
        done.store(true, Ordering::Release);
    });
    assert_eq!(g.len(), rows);
    let r = recall(&g, &data, dim, &values(30 * dim, 22));
    assert!(r >= 0.95, "recall@10 after concurrent building {r}");
}

#[test]
fn no_node_one_node_and_many_equal_vectors() {
    let g = Hnsw::<SquaredL2>::new(3, TUNING);
    assert!(g.search(&[0.0; 3], 5, 16, None, pair).is_empty(), "an empty graph finds nothing");
    g.add(1, 1, |_, _: &mut (), out| {
        out.extend_from_slice(&[1.0, 2.0, 3.0]);
        42
    })
    .expect("one node");
    assert_eq!(g.search(&[0.0; 3], 5, 16, None, pair), vec![(42, 14.0)]);
    g.add(3000, 2, |i, _: &mut (), out| {
        out.extend_from_slice(if i % 3 == 0 { &[5.0, 5.0, 5.0] } else { &[1.0, 2.0, 3.0] });
        100 + i as u64
    })
    .expect("3000 nodes, 2000 of them equal to the first");
    let found = g.search(&[1.0, 2.0, 3.0], 10, 64, None, pair);
    assert_eq!(found.len(), 10);
    assert!(found.iter().all(|&(k, d)| d == 0.0 && (k == 42 || (k - 100) % 3 != 0)), "{found:?}");
    // A walk from one group of duplicates reaches the other (the filter refuses the first).
    let other = |k: u64| k != 42 && (k - 100).is_multiple_of(3);
    let found = g.search(&[1.0, 2.0, 3.0], 10, 64, Some(&other), pair);
    assert_eq!(found.len(), 10, "{found:?}");
    assert!(found.iter().all(|&(k, d)| d == 29.0 && other(k)), "{found:?}");
}

#[test]
fn levels_follow_the_exponential_law() {
    let g = Hnsw::<SquaredL2>::new(4, TUNING);
    let n = 200_000u64;
    let above: Vec<usize> = (1..=3).map(|l| (0..n).filter(|&k| g.level_of(k) >= l).count()).collect();
    for (l, &count) in above.iter().enumerate() {
        let expect = n as f64 / 16f64.powi(l as i32 + 1);
        let ratio = count as f64 / expect;
        assert!((0.8..1.25).contains(&ratio), "level >= {}: {count} nodes, expected about {expect}", l + 1);
    }
}

#[test]
fn blocks_are_whole_cache_lines_with_aligned_fields() {
    for (dim, elem, m0) in [(1, 2, 4), (3, 4, 32), (384, 2, 32), (385, 2, 32), (1536, 4, 96)] {
        let s = Shape::new(dim, elem, m0);
        assert_eq!(s.block() % 64, 0, "{s:?}");
        assert!(s.key_at() >= dim * elem && s.key_at().is_multiple_of(8), "{s:?}");
        assert!(s.edges_end() <= s.block(), "{s:?}");
    }
}
