//! What the two ANN benchmark binaries (`ann_graph`, `ann_sql`) share: reading the vector
//! files `bench/ann.py` writes, and latency percentiles.

/// A raw little-endian f32 file (NumPy's `tofile`).
pub fn read_f32(path: &str) -> Result<Vec<f32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// The `p` quantile (0..=1) of ascending `sorted`, 0 when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted.get(((sorted.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0.0)
}
