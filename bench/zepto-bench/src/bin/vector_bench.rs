//! `vector_bench [--rows N] [--dim D] [--iters K]`: the `FLOAT[n]` distance kernels and an
//! exact nearest-neighbour scan, in process.
//!
//! 1. Each kernel (dot, squared L2, cosine) over every row of an `N × D` buffer against one
//!    query, scalar (the portable 8-lane loop) beside the dispatched one (AVX2 + FMA when the
//!    CPU has it): nanoseconds per row and GB/s of vector data read.
//! 2. `SELECT id FROM v ORDER BY array_cosine_distance(v, [...]) LIMIT 10` through the engine
//!    over a table of N rows, median and best of K runs.
//!
//! Defaults: 100,000 rows of 384 dimensions (a sentence-embedding size), 20 runs.

use std::hint::black_box;
use std::time::Instant;
use zepto_sql::Engine;
use zepto_storage::vector::{self, scalar};
use zepto_storage::{Column, ColumnData, Value};

struct Args {
    rows: usize,
    dim: usize,
    iters: usize,
}

fn args() -> Result<Args, String> {
    let mut a = Args { rows: 100_000, dim: 384, iters: 20 };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v: usize = it.next().and_then(|v| v.parse().ok()).ok_or(format!("{k} needs a number"))?;
        match k.as_str() {
            "--rows" => a.rows = v,
            "--dim" => a.dim = v,
            "--iters" => a.iters = v.max(1),
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    Ok(a)
}

/// Deterministic pseudo-random elements in [-1, 1).
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Median and best of `k` timed runs of `f`, in milliseconds.
fn time(k: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let mut t: Vec<f64> = (0..k)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], t[0])
}

fn kernels(a: &Args, flat: &[f32], q: &[f32]) {
    type K = fn(&[f32], &[f32]) -> f64;
    let cases: [(&str, K, K); 3] = [
        ("dot", |x, y| scalar::dot(x, y) as f64, vector::dot),
        ("l2_squared", |x, y| scalar::l2_squared(x, y) as f64, vector::l2_squared),
        (
            "cosine",
            |x, y| {
                let (ab, aa, bb) = scalar::cosine_parts(x, y);
                ab as f64 / ((aa as f64) * (bb as f64)).sqrt()
            },
            vector::cosine_similarity,
        ),
    ];
    let gb = (flat.len() * 4) as f64 / 1e9;
    for (name, slow, fast) in cases {
        for (which, f) in [("scalar", slow), (vector::kernel_name(), fast)] {
            let (med, _) = time(a.iters, || {
                let s: f64 = flat.chunks_exact(a.dim).map(|r| f(black_box(r), q)).sum();
                black_box(s);
            });
            println!(
                "kernel {name:<10} {which:<8} {:>7.2} ms  {:>6.1} ns/row  {:>5.1} GB/s",
                med,
                med * 1e6 / a.rows as f64,
                gb / (med / 1e3)
            );
        }
    }
}

fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("vector_bench: {e}");
            std::process::exit(2);
        }
    };
    let flat = data(a.rows * a.dim, 42);
    let q = data(a.dim, 7);
    println!(
        "{} rows x {} dims ({:.0} MB), kernels: {}",
        a.rows,
        a.dim,
        (flat.len() * 4) as f64 / 1e6,
        vector::kernel_name()
    );
    kernels(&a, &flat, &q);
    let e = Engine::new();
    let ddl = format!("CREATE TABLE v (id BIGINT, v FLOAT[{}])", a.dim);
    let ids = Column::from_data(ColumnData::Int64((0..a.rows as i64).collect()));
    let vecs = Column::from_data(ColumnData::Vector { dim: a.dim as u16, values: flat.into() });
    if let Err(err) = e
        .execute(&ddl)
        .map_err(|x| x.to_string())
        .and_then(|_| e.catalog().append("v", vec![ids, vecs]).map_err(|x| x.to_string()))
    {
        eprintln!("vector_bench: loading: {err}");
        std::process::exit(1);
    }
    let lit = Value::Vector(q).to_string();
    let sql = format!("SELECT id FROM v ORDER BY array_cosine_distance(v, {lit}::FLOAT[{}]) LIMIT 10", a.dim);
    let (med, best) = time(a.iters, || {
        black_box(e.execute(&sql).map(|r| r.row_count()).unwrap_or(0));
    });
    println!("exact top-10 by array_cosine_distance over {} rows: median {med:.2} ms, best {best:.2} ms", a.rows);
}
