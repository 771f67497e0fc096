//! Writing a result as an Arrow IPC stream, a record batch at a time: either one set of
//! columns, or the result's chunks as the query made them, never concatenated whole.
//!
//! Chunks are written in order. Small neighbours are joined into batches of up to
//! [`BATCH_ROWS`] rows (a result of many small partitions would otherwise be many tiny
//! messages); a large chunk is sliced. Each chunk is converted to Arrow when it is reached, so
//! the writer holds one chunk's Arrow copy at a time. SYMBOL columns coded against one
//! dictionary share one Arrow dictionary array, sent once.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::ipc::{record_batch, IpcCodec, BATCH_ROWS};
use crate::IoError;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch, RecordBatchOptions};
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_schema::SchemaRef;
use std::collections::VecDeque;
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, DataType, Dict};

fn bad(e: impl std::fmt::Display) -> IoError {
    IoError::Invalid(format!("bad Arrow IPC stream: {e}"))
}

/// One chunk of a result: its columns and rows.
type Chunk = (Vec<Arc<Column>>, usize);

/// Writes a result as an IPC stream, a piece at a time: [`IpcResultWriter::next_chunk`] returns
/// the bytes of the next record batch (the first piece also carries the schema), and `None`
/// after the end-of-stream marker.
pub struct IpcResultWriter {
    names: Vec<String>,
    schema: SchemaRef,
    /// The batch being written and the rows of it written so far.
    current: RecordBatch,
    offset: usize,
    /// Chunks not yet converted, in order.
    rest: VecDeque<Chunk>,
    /// The Arrow values of each dictionary met, shared by the batches coded against it.
    dicts: Vec<(Arc<Dict>, ArrayRef)>,
    writer: Option<StreamWriter<Vec<u8>>>,
}

impl IpcResultWriter {
    /// A writer of the columns `cols` (named `names`, `rows` rows each).
    pub fn new(names: &[String], cols: &[&Column], rows: usize) -> Result<IpcResultWriter, IoError> {
        IpcResultWriter::compressed(names, cols, rows, None)
    }

    /// [`IpcResultWriter::new`] with the record batches' buffers compressed by `codec`.
    pub fn compressed(
        names: &[String],
        cols: &[&Column],
        rows: usize,
        codec: Option<IpcCodec>,
    ) -> Result<IpcResultWriter, IoError> {
        let batch = record_batch(names, cols, rows)?;
        IpcResultWriter::start(names, batch, VecDeque::new(), codec)
    }

    /// A writer of a result's `chunks` (columns named `names`; each chunk's columns of one
    /// length, its `rows`), compressed by `codec` if given. Chunks whose columns differ in
    /// type from the first's (an all-NULL column of no type) are joined into one batch first.
    pub fn chunked(names: &[String], chunks: Vec<Chunk>, codec: Option<IpcCodec>) -> Result<IpcResultWriter, IoError> {
        // A result without rows still has its columns' types: its first (empty) chunk.
        let empty = chunks.first().cloned().unwrap_or_default();
        let mut rest: VecDeque<Chunk> = chunks.into_iter().filter(|c| c.1 > 0).collect();
        if !uniform(&rest) {
            rest = VecDeque::from([join(rest.make_contiguous())]);
        }
        if rest.is_empty() {
            rest.push_back(empty);
        }
        let mut dicts = Vec::new();
        let first = next_batch(names, &mut rest, &mut dicts, None)?;
        let first = first.unwrap_or_else(|| RecordBatch::new_empty(Arc::new(arrow_schema::Schema::empty())));
        let mut w = IpcResultWriter::start(names, first, rest, codec)?;
        w.dicts = dicts;
        Ok(w)
    }

    /// The writer of `first`, then `rest`, in `first`'s schema.
    fn start(
        names: &[String],
        first: RecordBatch,
        rest: VecDeque<Chunk>,
        codec: Option<IpcCodec>,
    ) -> Result<IpcResultWriter, IoError> {
        let schema = first.schema();
        let opts = IpcWriteOptions::default().try_with_compression(codec.map(IpcCodec::compression)).map_err(bad)?;
        let writer = StreamWriter::try_new_with_options(Vec::new(), &schema, opts).map_err(bad)?;
        Ok(IpcResultWriter {
            names: names.to_vec(),
            schema,
            current: first,
            offset: 0,
            rest,
            dicts: Vec::new(),
            writer: Some(writer),
        })
    }

    /// The next piece of the stream, or `None` when it is complete.
    pub fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, IoError> {
        if self.writer.is_none() {
            return Ok(None);
        }
        loop {
            let n = self.current.num_rows();
            if self.offset < n {
                let len = BATCH_ROWS.min(n - self.offset);
                let piece = self.current.slice(self.offset, len);
                self.offset += len;
                let w = self.writer.as_mut().ok_or_else(|| bad("writer already finished"))?;
                w.write(&piece).map_err(bad)?;
                return Ok(Some(std::mem::take(w.get_mut())));
            }
            match next_batch(&self.names, &mut self.rest, &mut self.dicts, Some(&self.schema))? {
                Some(b) => (self.current, self.offset) = (b, 0),
                None => break,
            }
        }
        let mut w = self.writer.take().ok_or_else(|| bad("writer already finished"))?;
        w.finish().map_err(bad)?;
        Ok(Some(w.into_inner().map_err(bad)?))
    }
}

/// The front chunks of `rest` as one record batch (in `schema` if given): the front chunk,
/// with the small ones after it joined while the rows stay within [`BATCH_ROWS`].
fn next_batch(
    names: &[String],
    rest: &mut VecDeque<Chunk>,
    dicts: &mut Vec<(Arc<Dict>, ArrayRef)>,
    schema: Option<&SchemaRef>,
) -> Result<Option<RecordBatch>, IoError> {
    let Some(first) = rest.pop_front() else { return Ok(None) };
    let mut group = vec![first];
    let mut rows = group.iter().map(|c| c.1).sum::<usize>();
    while let Some(next) = rest.front().filter(|c| rows + c.1 <= BATCH_ROWS) {
        rows += next.1;
        group.extend(rest.pop_front());
    }
    let (cols, rows) = if group.len() == 1 { group.swap_remove(0) } else { join(&group) };
    let refs: Vec<&Column> = cols.iter().map(|c| &**c).collect();
    let batch = record_batch(names, &refs, rows)?;
    let schema = schema.cloned().unwrap_or_else(|| batch.schema());
    let arrays = batch.columns().iter().zip(&cols).map(|(a, c)| shared_dict(dicts, a, c)).collect::<Vec<_>>();
    let opts = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, arrays, &opts).map(Some).map_err(bad)
}

/// `a` (column `c` in Arrow), its dictionary values replaced by the ones sent before for the
/// same dictionary: the stream writer sends a dictionary again when it differs from the last
/// one sent, which sharing the array makes a pointer comparison instead of a value by value one.
fn shared_dict(dicts: &mut Vec<(Arc<Dict>, ArrayRef)>, a: &ArrayRef, c: &Column) -> ArrayRef {
    let (ColumnData::Symbol { dict, .. }, Some(d)) =
        (c.data(), a.as_any().downcast_ref::<DictionaryArray<Int32Type>>())
    else {
        return a.clone();
    };
    let Some(values) = dicts.iter().find(|(k, _)| Arc::ptr_eq(k, dict)).map(|(_, v)| v.clone()) else {
        dicts.push((dict.clone(), d.values().clone()));
        return a.clone();
    };
    match DictionaryArray::try_new(d.keys().clone(), values) {
        Ok(shared) => Arc::new(shared),
        Err(_) => a.clone(),
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
fn join(chunks: &[Chunk]) -> Chunk {
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
