//! Time `read_parquet` on a benchmark trades file (see bench/harness/gen_data.py):
//!
//! ```text
//! cargo run --release -p zepto-io --example load_parquet -- /tmp/zb/trades.parquet [OUT.parquet]
//! ```
//!
//! Reads into `(ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)` a few times and prints
//! each load's time; with `OUT`, also writes the columns back (`write_parquet`, on every core) and
//! times it.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use zepto_io::parquet::{read_parquet, write_parquet};
use zepto_storage::{Column, ColumnDef, DataType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let input = args.next().ok_or("usage: load_parquet TRADES.parquet [OUT.parquet]")?;
    let out = args.next();
    let schema: Vec<ColumnDef> = [
        ("ts", DataType::Timestamp),
        ("sym", DataType::Symbol),
        ("price", DataType::Float64),
        ("size", DataType::Int64),
    ]
    .into_iter()
    .map(|(name, data_type)| ColumnDef { name: name.into(), data_type })
    .collect();

    let mut times = Vec::new();
    let mut cols = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        cols = read_parquet(Path::new(&input), &schema)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let rows = cols.first().map_or(0, |c| c.len());
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    let runs: Vec<String> = times.iter().map(|t| format!("{t:.1}")).collect();
    println!("read {rows} rows: best {best:.1} ms (runs: {} ms)", runs.join(", "));

    if let Some(out) = out {
        let names: Vec<String> = schema.iter().map(|c| c.name.clone()).collect();
        let chunk: Vec<Arc<Column>> = cols.into_iter().map(Arc::new).collect();
        let mut times = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            write_parquet(Path::new(&out), &names, vec![(chunk.clone(), rows)])?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let best = times.iter().copied().fold(f64::INFINITY, f64::min);
        println!("wrote {rows} rows to {out}: best {best:.1} ms of 3");
    }
    Ok(())
}
