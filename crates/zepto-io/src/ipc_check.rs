//! Bounds checks on Arrow IPC input before arrow-ipc's reader sees it.
//!
//! arrow-ipc trusts the offsets inside a message: a buffer that claims bytes past its message's
//! body, or a file block that points past the file, makes it panic (slicing) rather than
//! return an error. Ingest bodies come from clients, and checkpoint files from a disk that may
//! be damaged, so both are walked here first. Only what the reader would panic on is refused;
//! anything else (a cut-short stream, a bad flatbuffer, a wrong schema) is left to the reader,
//! which reports it as an error.
//!
//! The reader still has assertions no outside check can cheaply rule out (a fixed-width buffer
//! whose length is no multiple of its type's width, found by fuzzing): [`guard`] runs a decode
//! that only reads its input and turns such a panic into an error, as the last line.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::IoError;
use arrow_ipc::{root_as_footer, root_as_message, Message, RecordBatch};

/// What precedes a message's length in the current framing.
const CONTINUATION_MARKER: [u8; 4] = [0xff; 4];

fn bad(what: &str, at: usize, why: String) -> IoError {
    IoError::Invalid(format!("bad Arrow IPC {what}: message at byte {at}: {why}"))
}

fn le_i32(data: &[u8], at: usize) -> Option<i32> {
    data.get(at..at + 4).and_then(|b| b.try_into().ok()).map(i32::from_le_bytes)
}

/// A record batch's node and buffer ranges against a body of `body_len` bytes (buffers start
/// at multiples of 8, as the format requires; the reader assumes it for typed views).
fn check_batch(b: &RecordBatch<'_>, body_len: usize) -> Result<(), String> {
    if b.length() < 0 {
        return Err(format!("a record batch of {} rows", b.length()));
    }
    if b.compression().is_some() {
        // A compressed buffer states its own decoded size, which nothing here bounds.
        return Err("compressed record batches (LZ4/ZSTD buffers) are not taken: send the stream \
                    uncompressed, or the whole body with Content-Encoding: gzip"
            .into());
    }
    for n in b.nodes().iter().flatten() {
        if n.length() < 0 || n.null_count() < 0 || n.null_count() > n.length() {
            return Err(format!("a field of {} values with {} nulls", n.length(), n.null_count()));
        }
    }
    for (k, buf) in b.buffers().iter().flatten().enumerate() {
        let end = usize::try_from(buf.offset())
            .ok()
            .zip(usize::try_from(buf.length()).ok())
            .and_then(|(o, l)| o.checked_add(l));
        if buf.offset() % 8 != 0 && buf.length() != 0 {
            return Err(format!("buffer {k} at offset {}, not a multiple of 8", buf.offset()));
        }
        if end.is_none_or(|e| e > body_len) {
            return Err(format!(
                "buffer {k} at offset {} of {} bytes is outside its {body_len}-byte body",
                buf.offset(),
                buf.length()
            ));
        }
    }
    for c in b.variadicBufferCounts().iter().flatten() {
        if c < 0 {
            return Err(format!("a variadic buffer count of {c}"));
        }
    }
    Ok(())
}

/// A parsed message against the `body_len` bytes that follow it.
fn check_message(m: &Message<'_>, body_len: usize) -> Result<(), String> {
    if let Some(b) = m.header_as_record_batch() {
        check_batch(&b, body_len)?;
    }
    if let Some(b) = m.header_as_dictionary_batch().and_then(|d| d.data()) {
        check_batch(&b, body_len)?;
    }
    Ok(())
}

/// Check an IPC stream (the framing of the streaming format). Stops, accepting, where the
/// reader would stop with an error of its own.
pub fn check_stream(data: &[u8]) -> Result<(), IoError> {
    let mut pos = 0usize;
    loop {
        let at = pos;
        let Some(mut len) = le_i32(data, pos) else { return Ok(()) };
        pos += 4;
        if len.to_le_bytes() == CONTINUATION_MARKER {
            let Some(l) = le_i32(data, pos) else { return Ok(()) };
            len = l;
            pos += 4;
        }
        let Ok(len) = usize::try_from(len) else { return Ok(()) };
        if len == 0 {
            return Ok(());
        }
        let Some(meta) = pos.checked_add(len).and_then(|end| data.get(pos..end)) else { return Ok(()) };
        let Ok(m) = root_as_message(meta) else { return Ok(()) };
        pos += len;
        let Ok(body_len) = usize::try_from(m.bodyLength()) else { return Ok(()) };
        if pos.checked_add(body_len).is_none_or(|end| end > data.len()) {
            return Ok(());
        }
        check_message(&m, body_len).map_err(|why| bad("stream", at, why))?;
        pos += body_len;
    }
}

/// Check an IPC file: its footer's blocks lie inside the file, and each block's message fits
/// its block.
pub fn check_file(data: &[u8]) -> Result<(), IoError> {
    const MAGIC: &[u8] = b"ARROW1";
    if data.len() < 10 + MAGIC.len() || !data.ends_with(MAGIC) {
        return Ok(());
    }
    let tail = data.len() - 10;
    let Some(footer_len) = le_i32(data, tail).and_then(|l| usize::try_from(l).ok()) else { return Ok(()) };
    let Some(footer) = tail.checked_sub(footer_len).and_then(|s| data.get(s..tail)) else { return Ok(()) };
    let Ok(footer) = root_as_footer(footer) else { return Ok(()) };
    let blocks = footer.recordBatches().into_iter().flatten().chain(footer.dictionaries().into_iter().flatten());
    for b in blocks {
        let at = usize::try_from(b.offset()).unwrap_or(usize::MAX);
        let meta = usize::try_from(b.metaDataLength()).ok();
        let body = usize::try_from(b.bodyLength()).ok();
        let (Some(meta), Some(body_len)) = (meta, body) else {
            return Err(bad("file", at, "a block of negative length".into()));
        };
        let block = at.checked_add(meta).and_then(|m| m.checked_add(body_len)).and_then(|end| data.get(at..end));
        let Some(block) = block else {
            return Err(bad("file", at, format!("a block of {meta}+{body_len} bytes past the end of the file")));
        };
        let skip = if block.get(..4) == Some(&CONTINUATION_MARKER[..]) { 8 } else { 4 };
        let Some(m) = block.get(skip..meta).and_then(|fb| root_as_message(fb).ok()) else {
            return Err(bad("file", at, format!("a block whose {meta}-byte message does not parse")));
        };
        check_message(&m, body_len).map_err(|why| bad("file", at, why))?;
    }
    Ok(())
}

/// Record batches from an arrow-ipc reader, each read under [`guard`]: what the caller does
/// with a batch runs outside it, so a panic of ours is never taken for bad input.
pub struct Guarded<I>(pub I);

impl<I: Iterator<Item = Result<arrow_array::RecordBatch, arrow_schema::ArrowError>>> Iterator for Guarded<I> {
    type Item = Result<arrow_array::RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let inner = &mut self.0;
        guard("message", || Ok::<_, IoError>(inner.next()))
            .unwrap_or_else(|e| Some(Err(arrow_schema::ArrowError::IpcError(e.to_string()))))
    }
}

/// Run `decode` (a call into arrow-ipc's reader, which only reads its input), turning a panic
/// of the reader into an error about `what`. Keep it to the reader's own calls.
pub fn guard<T, E: From<IoError>>(what: &str, decode: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("malformed input");
        Err(IoError::Invalid(format!("bad Arrow IPC {what}: the reader refused it: {why}")).into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::{ColumnDef, DataType};

    const PAST_BODY: &[u8] = include_bytes!("../../../fuzz/regressions/ingest/arrow-buffer-past-body");
    const ODD_WIDTH: &[u8] = include_bytes!("../../../fuzz/regressions/ingest/arrow-odd-width");

    fn schema() -> Vec<ColumnDef> {
        ["ts", "sym", "px", "n", "s", "b"]
            .iter()
            .zip([
                DataType::Timestamp,
                DataType::Symbol,
                DataType::Float64,
                DataType::Int64,
                DataType::Varchar,
                DataType::Bool,
            ])
            .map(|(n, t)| ColumnDef { name: n.to_string(), data_type: t })
            .collect()
    }

    #[test]
    fn a_buffer_past_its_body_is_refused_with_its_place() {
        let e = check_stream(PAST_BODY).expect_err("refused");
        assert!(e.to_string().contains("outside its"), "{e}");
        assert!(crate::ipc::read_ipc_stream(PAST_BODY, &schema()).is_err());
        assert_eq!(crate::ipc::count_ipc_rows(PAST_BODY), None);
    }

    #[test]
    fn what_the_reader_asserts_becomes_an_error() {
        let e = crate::ipc::read_ipc_stream(ODD_WIDTH, &schema()).expect_err("refused");
        assert!(e.to_string().contains("the reader refused it"), "{e}");
    }

    #[test]
    fn an_unaligned_buffer_is_refused() {
        let data = include_bytes!("../../../fuzz/regressions/ingest/arrow-unaligned-buffer");
        let e = check_stream(data).expect_err("refused");
        assert!(e.to_string().contains("not a multiple of 8"), "{e}");
    }

    #[test]
    fn valid_streams_pass() {
        let col = zepto_storage::Column::from_data(zepto_storage::ColumnData::Int64(vec![1, 2, 3].into()));
        let mut w = crate::ipc::IpcResultWriter::new(&["n".to_string()], &[&col], 3).expect("writer");
        let mut data = Vec::new();
        while let Some(c) = w.next_chunk().expect("chunk") {
            data.extend_from_slice(&c);
        }
        check_stream(&data).expect("a valid stream passes");
        assert_eq!(crate::ipc::count_ipc_rows(&data), Some(3));
    }
}
