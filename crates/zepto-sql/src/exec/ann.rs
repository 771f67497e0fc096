//! The candidates of an index-backed TopN ([`crate::plan::SortHow::Ann`]): per partition of
//! the scan, the rows an HNSW graph finds nearest (the filters applied inside the walk: only
//! rows they keep are accepted, so a tenant scope's filter holds here too), plus
//! the rows the graph does not hold yet; or, when the filter keeps few rows or the graph cannot
//! find enough, every row the filter keeps; of those, the exact nearest ([`super::nearest`]).
//! The caller projects and ranks them exactly.

use super::context::ExecContext;
use super::nearest::nearest;
use super::scan::{piece_batch, pieces, Piece};
use super::Batch;
use crate::error::{Result, SqlError};
use crate::plan::physical::ScanShape;
use crate::plan::AnnSearch;
use std::sync::Arc;
use zepto_ann::Registry;
use zepto_storage::Column;

/// A partition whose filter keeps at most this many rows is scanned exactly: computing that
/// many distances costs less than a graph walk that rejects most of the nodes it meets.
pub const EXACT_ROWS: usize = 2048;

/// An unfiltered graph walk costs about what exact distances over this many floats (rows x
/// dimension) cost. A walk under a filter that keeps a share `s` of the rows costs about the
/// unfiltered walk divided by `s` (it meets `1/s` nodes for each one it may return), while the
/// exact scan of the kept rows costs `kept x dim`: a partition is scanned exactly when
/// `kept x dim <= WALK_FLOATS x n / kept`. Measured at 100k x 384 (`bench/ann.py`): a walk
/// took 0.21 ms and exact distances 0.29 ns per float, a 10% walk 2.4 ms against 1.1 ms for
/// the scan; at 1M rows the 10% scan took 12.8 ms, where a walk takes about 2.6 ms.
const WALK_FLOATS: usize = 800_000;

/// The candidate rows of `s` for search `a`, as a batch of the scan's columns.
pub fn candidates(ctx: &ExecContext, s: &ScanShape, a: &AnnSearch) -> Result<Batch> {
    let registry = ctx.run_context().indexes().cloned();
    let mut picks = Vec::new();
    // The query as the index's graphs compare it, prepared at the first graph searched.
    let mut query = None;
    for piece in pieces(s.table, s.range) {
        ctx.check()?;
        let b = piece_batch(&piece, s.columns);
        let keep = s.kept_rows(ctx, &b)?;
        let rows = nearest(&b, a, piece_rows(registry.as_ref(), a, &piece, keep, &mut query)?);
        picks.push((b, rows));
    }
    gather_picks(s, &picks)
}

/// The picked rows of each piece's batch, one piece after another: a single piece picked
/// whole (no graph yet, or a filter that keeps all) is shared, else each column is copied
/// once.
fn gather_picks(s: &ScanShape, picks: &[(Batch, Vec<u32>)]) -> Result<Batch> {
    if let [(b, rows)] = picks {
        if rows.len() == b.rows {
            return Ok(b.clone());
        }
    }
    let n = picks.iter().map(|(_, rows)| rows.len()).sum();
    let cols = s
        .columns
        .iter()
        .enumerate()
        .map(|(j, &c)| {
            let parts: Vec<(&Column, &[u32])> = picks.iter().map(|(b, rows)| (&*b.columns[j], &rows[..])).collect();
            let dt = s.table.schema().columns[c].data_type;
            Column::gather(dt, &parts).map(Arc::new).map_err(SqlError::Internal)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Batch::shared(cols, n))
}

/// The candidate rows of one piece, relative to its start, ascending. `keep`: the rows the
/// filter keeps (relative, ascending), `None` without a filter.
fn piece_rows(
    registry: Option<&Arc<Registry>>,
    a: &AnnSearch,
    piece: &Piece,
    keep: Option<Vec<u32>>,
    query: &mut Option<zepto_ann::Query>,
) -> Result<Vec<u32>> {
    let n = piece.range.len();
    let every = || keep.clone().unwrap_or_else(|| (0..n as u32).collect());
    let kept = keep.as_ref().map_or(n, Vec::len);
    let graph = registry.and_then(|r| r.graph(&a.table, &a.index, piece.part.lineage()));
    let floats = kept.saturating_mul(kept).saturating_mul(a.query.len());
    let exact = kept <= EXACT_ROWS.max(a.k) || (keep.is_some() && floats <= WALK_FLOATS.saturating_mul(n));
    let Some(graph) = graph.filter(|_| !exact) else { return Ok(every()) };
    let start = piece.range.start;
    // Rows of the piece the graph may return: those it holds, within the scan's time range.
    let visible = graph.covered().min(piece.range.end).max(start);
    let passes = keep.as_ref().map(|k| {
        let mut bits = vec![false; n];
        k.iter().for_each(|&r| bits[r as usize] = true);
        bits
    });
    let accept = |key: u64| {
        let Some(r) = (key as usize).checked_sub(start) else { return false };
        r < n && passes.as_ref().is_none_or(|p| p[r])
    };
    let query = query.get_or_insert_with(|| graph.query(&a.query));
    // The walk's whole beam (`ef_search` rows, found anyway), not only its `k` nearest: the
    // graph ranks a cosine index in half precision, and `nearest` re-ranks by exact distances.
    let beam = a.k.max(graph.ef_search());
    let hits = graph.search(query, beam, visible, Some(&accept)).map_err(|e| SqlError::Execution(e.to_string()))?;
    let in_graph = match &keep {
        Some(k) => k.iter().filter(|&&r| start + (r as usize) < visible).count(),
        None => visible - start,
    };
    if hits.len() < a.k.min(in_graph) {
        // The walk could not reach enough rows the filter keeps: look at all of them.
        return Ok(every());
    }
    let mut rows: Vec<u32> = hits.iter().map(|h| (h.key as usize - start) as u32).collect();
    let tail = (visible - start) as u32;
    match &keep {
        Some(k) => rows.extend(k.iter().filter(|&&r| r >= tail)),
        None => rows.extend(tail..n as u32),
    }
    rows.sort_unstable();
    Ok(rows)
}
