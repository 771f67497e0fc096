//! A result's chunks (its batches as the query made them: one per partition, say) made ready
//! to write as one typed stream or file, without concatenating them: chunks without rows are
//! dropped, an untyped all-NULL column takes the type the other chunks give it, and only
//! chunks whose types still differ are joined into one.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use std::collections::VecDeque;
use std::sync::Arc;
use zepto_storage::{Column, DataType};

/// One chunk of a result: its columns (each `rows` long) and rows.
pub type Chunk = (Vec<Arc<Column>>, usize);

/// `chunks` with rows, all of one set of column types. A result without rows keeps its first
/// (empty) chunk, which still has the columns' types.
pub(crate) fn of_one_type(chunks: Vec<Chunk>) -> VecDeque<Chunk> {
    let empty = chunks.first().cloned().unwrap_or_default();
    let mut chunks: VecDeque<Chunk> = chunks.into_iter().filter(|c| c.1 > 0).collect();
    type_nulls(&mut chunks);
    if !uniform(&chunks) {
        chunks = VecDeque::from([join(chunks.make_contiguous())]);
    }
    if chunks.is_empty() {
        chunks.push_back(empty);
    }
    chunks
}

/// Untyped all-NULL columns (a NULL literal in one branch of a union) take the type the
/// other chunks give that column.
fn type_nulls(chunks: &mut VecDeque<Chunk>) {
    let ncols = chunks.front().map_or(0, |c| c.0.len());
    for j in 0..ncols {
        let typed = chunks.iter().filter_map(|c| c.0.get(j)).map(|c| c.data_type()).find(|t| *t != DataType::Null);
        let Some(t) = typed else { continue };
        for (cols, _) in chunks.iter_mut() {
            if let Some(c) = cols.get_mut(j).filter(|c| c.data_type() == DataType::Null) {
                *c = Arc::new(Column::nulls(t, c.len()));
            }
        }
    }
}

/// Every chunk's columns have the first chunk's types.
fn uniform(chunks: &VecDeque<Chunk>) -> bool {
    let Some((first, _)) = chunks.front() else { return true };
    let types: Vec<DataType> = first.iter().map(|c| c.data_type()).collect();
    chunks
        .iter()
        .all(|(cols, _)| cols.len() == types.len() && cols.iter().zip(&types).all(|(c, t)| c.data_type() == *t))
}

/// Chunks joined into one (columns concatenated; every chunk has the same number of columns).
pub(crate) fn join(chunks: &[Chunk]) -> Chunk {
    let rows = chunks.iter().map(|c| c.1).sum();
    let ncols = chunks.first().map_or(0, |c| c.0.len());
    let cols = (0..ncols)
        .map(|j| {
            let parts: Vec<&Column> = chunks.iter().filter_map(|c| c.0.get(j).map(|c| &**c)).collect();
            Arc::new(Column::concat(&parts))
        })
        .collect();
    (cols, rows)
}
