//! Writing a result as an Arrow IPC stream, a record batch at a time: either one set of
//! columns, or the result's chunks as the query made them, never concatenated whole.
//!
//! Chunks are written in order, in record batches of at most [`BATCH_ROWS`] rows: a large
//! chunk is read a window at a time, and small neighbours are joined (a result of many small
//! partitions would otherwise be many tiny messages). The Arrow arrays share the chunks'
//! memory ([`crate::export`]): only a join copies, besides the stream writer's own copy into
//! each message, so an answer costs the result plus one message, however large it is.
//!
//! SYMBOL columns carry their dictionary. The chunks of one table hold versions of one
//! dictionary (a partition keeps the version it last appended with); a dictionary only grows,
//! so the largest version of each lineage serves every chunk coded against it: it is
//! converted once and every batch shares that array, which the stream writer sends once.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::arrow::to_arrow;
use crate::chunks::{join, of_one_type, Chunk};
use crate::export::Exporter;
use crate::IoError;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch, RecordBatchOptions};
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_ipc::CompressionType;
use arrow_schema::{Field, Schema, SchemaRef};
use std::collections::VecDeque;
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, Dict};

/// Rows per record batch of a written stream.
pub const BATCH_ROWS: usize = 1 << 16;

/// A chunk of at least this many rows is a record batch of its own, sharing its memory;
/// smaller neighbours are joined (a copy) up to [`BATCH_ROWS`], as a batch per few rows costs
/// a message header per column.
const OWN_BATCH_ROWS: usize = 4096;

/// Buffer compression of a written stream (the IPC format's own: each buffer of a record
/// batch compressed on its own, so readers decode batch by batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpcCodec {
    /// LZ4 frames: fast to write and read, about half the bytes of typical market data.
    Lz4,
    /// Zstandard (arrow-ipc's default level): fewer bytes than LZ4 for more CPU.
    Zstd,
}

impl IpcCodec {
    /// The codec named `s` (`lz4`, `lz4_frame`, `zstd`; any case).
    pub fn from_name(s: &str) -> Option<IpcCodec> {
        match s.trim().to_ascii_lowercase().as_str() {
            "lz4" | "lz4_frame" => Some(IpcCodec::Lz4),
            "zstd" => Some(IpcCodec::Zstd),
            _ => None,
        }
    }

    pub(crate) fn compression(self) -> CompressionType {
        match self {
            IpcCodec::Lz4 => CompressionType::LZ4_FRAME,
            IpcCodec::Zstd => CompressionType::ZSTD,
        }
    }
}

fn bad(e: impl std::fmt::Display) -> IoError {
    IoError::Invalid(format!("bad Arrow IPC stream: {e}"))
}

/// The chunks still to write: the front one from row `offset` on.
struct Pending {
    chunks: VecDeque<Chunk>,
    offset: usize,
    /// Per dictionary lineage, the Arrow values of its largest version among the chunks.
    dicts: Vec<(u64, ArrayRef)>,
    /// The front chunk's columns as Arrow arrays sharing their memory, while it is written a
    /// window at a time.
    front: Option<Vec<ArrayRef>>,
    exporter: Exporter,
}

/// Writes a result as an IPC stream, a piece at a time: [`IpcResultWriter::next_chunk`] returns
/// the bytes of the next record batch (the first piece also carries the schema), and `None`
/// after the end-of-stream marker.
pub struct IpcResultWriter {
    names: Vec<String>,
    schema: SchemaRef,
    /// The batch being written and the rows of it written so far.
    current: RecordBatch,
    offset: usize,
    rest: Pending,
    writer: Option<StreamWriter<Vec<u8>>>,
}

impl IpcResultWriter {
    /// A writer of the columns `cols` (named `names`, `rows` rows each).
    pub fn new(names: &[String], cols: &[&Column], rows: usize) -> Result<IpcResultWriter, IoError> {
        IpcResultWriter::compressed(names, cols, rows, None)
    }

    /// [`IpcResultWriter::new`] with each integer column and SYMBOL key as narrow as its
    /// values allow ([`crate::narrow`]): for bytes read back with the columns' own schema.
    pub fn narrow(names: &[String], cols: &[&Column], rows: usize) -> Result<IpcResultWriter, IoError> {
        let batch = batch_of(names, cols, rows, crate::narrow::to_arrow_narrow)?;
        IpcResultWriter::start(names, batch, Pending::new(VecDeque::new(), Vec::new()), None)
    }

    /// [`IpcResultWriter::new`] with the record batches' buffers compressed by `codec`.
    pub fn compressed(
        names: &[String],
        cols: &[&Column],
        rows: usize,
        codec: Option<IpcCodec>,
    ) -> Result<IpcResultWriter, IoError> {
        let batch = record_batch(names, cols, rows)?;
        let rest = Pending::new(VecDeque::new(), Vec::new());
        IpcResultWriter::start(names, batch, rest, codec)
    }

    /// A writer of a result's `chunks` (columns named `names`; each chunk's columns of one
    /// length, its `rows`), compressed by `codec` if given. An untyped all-NULL column takes
    /// the type the other chunks give it; chunks whose types still differ are joined first.
    pub fn chunked(names: &[String], chunks: Vec<Chunk>, codec: Option<IpcCodec>) -> Result<IpcResultWriter, IoError> {
        let chunks = of_one_type(chunks);
        let dicts = largest_dicts(&chunks).map_err(IoError::Invalid)?;
        let mut rest = Pending::new(chunks, dicts);
        let first = rest.next_batch(names, None)?;
        let first = first.unwrap_or_else(|| RecordBatch::new_empty(Arc::new(arrow_schema::Schema::empty())));
        IpcResultWriter::start(names, first, rest, codec)
    }

    /// The writer of `first`, then `rest`, in `first`'s schema.
    fn start(
        names: &[String],
        first: RecordBatch,
        rest: Pending,
        codec: Option<IpcCodec>,
    ) -> Result<IpcResultWriter, IoError> {
        let schema = first.schema();
        let opts = IpcWriteOptions::default().try_with_compression(codec.map(IpcCodec::compression)).map_err(bad)?;
        let writer = StreamWriter::try_new_with_options(Vec::new(), &schema, opts).map_err(bad)?;
        Ok(IpcResultWriter { names: names.to_vec(), schema, current: first, offset: 0, rest, writer: Some(writer) })
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
                // Room for the message up front: grown by doubling, it was copied again and again.
                let bytes: usize =
                    piece.columns().iter().filter_map(|a| a.to_data().get_slice_memory_size().ok()).sum();
                w.get_mut().reserve(bytes + 4096);
                w.write(&piece).map_err(bad)?;
                return Ok(Some(std::mem::take(w.get_mut())));
            }
            match self.rest.next_batch(&self.names, Some(&self.schema))? {
                Some(b) => (self.current, self.offset) = (b, 0),
                None => break,
            }
        }
        let mut w = self.writer.take().ok_or_else(|| bad("writer already finished"))?;
        w.finish().map_err(bad)?;
        Ok(Some(w.into_inner().map_err(bad)?))
    }
}

impl Pending {
    fn new(chunks: VecDeque<Chunk>, dicts: Vec<(u64, ArrayRef)>) -> Pending {
        Pending { chunks, offset: 0, dicts, front: None, exporter: Exporter::default() }
    }

    /// The next rows as one record batch (in `schema` if given): a window of at most
    /// [`BATCH_ROWS`] rows of the front chunk, the whole front chunk when it has at least
    /// [`OWN_BATCH_ROWS`], or smaller chunks joined up to [`BATCH_ROWS`]. The
    /// arrays share the chunks' memory (only a join of several chunks copies), so the stream
    /// writer's copy into the message is the only one.
    fn next_batch(&mut self, names: &[String], schema: Option<&SchemaRef>) -> Result<Option<RecordBatch>, IoError> {
        let Some((cols, total)) = self.chunks.front().cloned() else { return Ok(None) };
        let (arrays, rows) = if self.offset > 0 || total > BATCH_ROWS || total >= OWN_BATCH_ROWS {
            let whole = match self.front.take() {
                Some(arrays) => arrays,
                None => self.share(&cols, total)?,
            };
            let len = BATCH_ROWS.min(total - self.offset);
            let window = whole.iter().map(|a| a.slice(self.offset, len)).collect();
            self.offset += len;
            if self.offset >= total {
                self.chunks.pop_front();
                self.offset = 0;
            } else {
                self.front = Some(whole);
            }
            (window, len)
        } else {
            let mut group = Vec::new();
            let mut rows = 0;
            let joins =
                |c: &&Chunk, first: bool, rows: usize| first || (c.1 < OWN_BATCH_ROWS && rows + c.1 <= BATCH_ROWS);
            while let Some(next) = self.chunks.front().filter(|c| joins(c, group.is_empty(), rows)) {
                rows += next.1;
                group.extend(self.chunks.pop_front());
            }
            let (cols, rows) = if group.len() == 1 { group.swap_remove(0) } else { join(&group) };
            (self.share(&cols, rows)?, rows)
        };
        let schema = match schema {
            Some(s) => s.clone(),
            None => {
                let fields = names.iter().zip(&arrays).map(|(n, a)| Field::new(n.clone(), a.data_type().clone(), true));
                Arc::new(Schema::new(fields.collect::<Vec<_>>()))
            }
        };
        let opts = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(schema, arrays, &opts).map(Some).map_err(bad)
    }

    /// `cols` (`rows` rows each) as Arrow arrays sharing their memory, each SYMBOL column with
    /// its lineage's largest dictionary.
    fn share(&mut self, cols: &[Arc<Column>], rows: usize) -> Result<Vec<ArrayRef>, IoError> {
        cols.iter()
            .map(|c| {
                let a = self.exporter.column(c, rows).map_err(IoError::Invalid)?;
                Ok(self.shared_dict(&a, c))
            })
            .collect()
    }

    /// `a` (column `c` in Arrow) with the dictionary values of its lineage's largest version:
    /// the same array for every batch, so the stream writer sends it once.
    fn shared_dict(&self, a: &ArrayRef, c: &Column) -> ArrayRef {
        let (ColumnData::Symbol { dict, .. }, Some(d)) =
            (c.data(), a.as_any().downcast_ref::<DictionaryArray<Int32Type>>())
        else {
            return a.clone();
        };
        let Some((_, values)) = self.dicts.iter().find(|(l, _)| *l == dict.lineage()) else { return a.clone() };
        match DictionaryArray::try_new(d.keys().clone(), values.clone()) {
            Ok(shared) => Arc::new(shared),
            Err(_) => a.clone(),
        }
    }
}

/// The columns `cols` (named `names`, `rows` rows each) as one Arrow record batch (SYMBOL as
/// a dictionary). Without columns it still has `rows` rows (a count over a scan that reads no
/// column).
pub fn record_batch(names: &[String], cols: &[&Column], rows: usize) -> Result<RecordBatch, IoError> {
    batch_of(names, cols, rows, to_arrow)
}

/// [`record_batch`] with each column converted by `to_arrow`.
fn batch_of(
    names: &[String],
    cols: &[&Column],
    rows: usize,
    to_arrow: impl Fn(&Column, usize) -> Result<ArrayRef, String>,
) -> Result<RecordBatch, IoError> {
    let mut fields = Vec::with_capacity(cols.len());
    let mut arrays = Vec::with_capacity(cols.len());
    for (name, c) in names.iter().zip(cols) {
        let a = to_arrow(c, rows).map_err(|e| IoError::Invalid(format!("column '{name}': {e}")))?;
        fields.push(Field::new(name.clone(), a.data_type().clone(), true));
        arrays.push(a);
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, arrays, &opts).map_err(bad)
}

/// Per dictionary lineage among the chunks' SYMBOL columns, its largest version in Arrow (a
/// dictionary only grows: every smaller version is a prefix of it).
fn largest_dicts(chunks: &VecDeque<Chunk>) -> Result<Vec<(u64, ArrayRef)>, String> {
    let mut largest: Vec<&Arc<Dict>> = Vec::new();
    for c in chunks.iter().flat_map(|(cols, _)| cols) {
        if let ColumnData::Symbol { dict, .. } = c.data() {
            match largest.iter_mut().find(|d| d.lineage() == dict.lineage()) {
                Some(d) if d.len() < dict.len() => *d = dict,
                Some(_) => {}
                None => largest.push(dict),
            }
        }
    }
    largest.into_iter().map(|d| Ok((d.lineage(), crate::export::dict_values(d)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::read_ipc_stream_any;
    use zepto_storage::{ColumnBuilder, DataType, Value};

    /// `n` rows: a string with NULLs, a BOOLEAN, a SYMBOL, a DOUBLE.
    fn columns(n: usize) -> Vec<Column> {
        let mut note = ColumnBuilder::new(DataType::Varchar, n);
        let mut flag = ColumnBuilder::new(DataType::Bool, n);
        let mut sym = ColumnBuilder::new(DataType::Symbol, n);
        let mut px = ColumnBuilder::new(DataType::Float64, n);
        for i in 0..n {
            if i % 3 == 0 {
                note.push_null();
            } else {
                note.push_str(&format!("n{i}")).expect("push");
            }
            flag.push_value(&Value::Bool(i % 5 == 0)).expect("push");
            sym.push_str(&format!("s{}", i % 11)).expect("push");
            px.push_value(&Value::Float64(i as f64)).expect("push");
        }
        vec![note.finish(), flag.finish(), sym.finish(), px.finish()]
    }

    /// Windows of a large chunk (shared Arrow arrays sliced) and joins of small chunks read
    /// back as the rows, in order.
    #[test]
    fn windows_and_joins_of_chunks_read_back_in_order() {
        let sizes = [3, 150_001, 7, 65_536, 1, 2];
        let all = columns(sizes.iter().sum());
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut start = 0;
        for n in sizes {
            chunks.push((all.iter().map(|c| Arc::new(c.slice(start, n))).collect(), n));
            start += n;
        }
        let names: Vec<String> = ["note", "flag", "sym", "px"].map(String::from).to_vec();
        let mut w = IpcResultWriter::chunked(&names, chunks, None).expect("writer");
        let mut bytes = Vec::new();
        while let Some(piece) = w.next_chunk().expect("piece") {
            bytes.extend(piece);
        }
        let (_, cols, rows) = read_ipc_stream_any(&bytes).expect("a valid stream");
        assert_eq!(rows, start);
        for i in (0..start).step_by(97).chain([65_535, 65_536, 65_539, 150_003, start - 1]) {
            let note = if i % 3 == 0 { Value::Null } else { Value::Str(format!("n{i}")) };
            assert_eq!(cols[0].get(i), note, "row {i}");
            assert_eq!(cols[1].get(i), Value::Bool(i % 5 == 0), "row {i}");
            assert_eq!(cols[2].get(i), Value::Str(format!("s{}", i % 11)), "row {i}");
            assert_eq!(cols[3].get(i), Value::Float64(i as f64), "row {i}");
        }
    }
}
