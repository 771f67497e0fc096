//! Query results on the wire: JSON, JSONL, CSV and the Arrow IPC stream, produced a chunk at a
//! time so a large result is streamed, never rendered whole. The encoder walks the result's
//! batches as the query made them (one per partition, say) and never concatenates them: text
//! is rendered a few thousand rows at a time, Arrow converted a window of at most 65,536 rows
//! at a time.
//!
//! JSON is SPEC §2's `{"columns":[{"name":..,"type":..}],"data":[[..]],"rows":N,
//! "elapsed_us":F}`; JSONL is one object per row; CSV has a header row. Values are rendered
//! by `zepto_io::format` (timestamps ISO-8601 UTC with 9 digits, NULL as `null` or empty).

use crate::error::ApiError;
use crate::exec_json::ExecShape;
use crate::row_text::{Dialect, RowText};
use std::sync::Arc;
use zepto_io::format::{csv_cell, csv_escape, json_cell, json_escape};
use zepto_io::ipc::{IpcCodec, IpcResultWriter};
use zepto_sql::exec::Batch;
use zepto_sql::QueryResult;
use zepto_storage::{Column, ColumnData, DataType};

/// How a query result is written on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON document: columns, data rows, row count, elapsed time.
    Json,
    /// One JSON object per row (newline-delimited JSON).
    Jsonl,
    /// CSV with a header row.
    Csv,
    /// An Arrow IPC stream, its buffers compressed with the codec if one was asked for.
    Arrow(Option<IpcCodec>),
    /// QuestDB's `/exec` JSON (`query`, `columns`, `timestamp`, `dataset`, `count`), shaped by
    /// the request's [`ExecShape`].
    QuestDb,
    /// QuestDB's `/exp` CSV: names and text quoted, NULL and NaN empty.
    QuestDbCsv,
}

/// The first codec we have in an Accept part's `codecs="..."` parameter.
fn accept_codec(part: &str) -> Option<IpcCodec> {
    let list = part.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("codecs").then(|| v.trim().trim_matches('"').to_string())
    })?;
    list.split(',').find_map(IpcCodec::from_name)
}

impl Format {
    /// The format a `format=` parameter names (any case; `ndjson`, `ipc` and other aliases
    /// accepted); `None` if unknown.
    pub fn from_name(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Some(Format::Json),
            "jsonl" | "ndjson" | "jsonlines" => Some(Format::Jsonl),
            "csv" => Some(Format::Csv),
            "arrow" | "arrows" | "ipc" => Some(Format::Arrow(None)),
            _ => None,
        }
    }

    /// The format an `Accept` header asks for, if it names one we make. Arrow's may list
    /// buffer codecs in order of preference (`application/vnd.apache.arrow.stream;
    /// codecs="zstd, lz4"`): the first we have is used.
    pub fn from_accept(accept: &str) -> Option<Format> {
        let mut parts = accept.split(',');
        std::iter::from_fn(|| {
            // A quoted codec list holds commas: join a part with the ones that close its quote.
            let mut part = parts.next()?.to_string();
            while part.matches('"').count() % 2 == 1 {
                let Some(next) = parts.next() else { break };
                part.push(',');
                part.push_str(next);
            }
            Some(part)
        })
        .find_map(|part| match part.split(';').next().unwrap_or("").trim() {
            "application/vnd.apache.arrow.stream" => Some(Format::Arrow(accept_codec(&part))),
            "text/csv" => Some(Format::Csv),
            "application/x-ndjson" | "application/jsonl" | "application/jsonlines" => Some(Format::Jsonl),
            "application/json" => Some(Format::Json),
            _ => None,
        })
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Jsonl => "application/x-ndjson",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Arrow(_) => "application/vnd.apache.arrow.stream",
            Format::QuestDb => "application/json; charset=utf-8",
            Format::QuestDbCsv => "text/csv; charset=utf-8",
        }
    }
}

/// Rows rendered per text chunk.
const TEXT_CHUNK_ROWS: usize = 4096;

enum Stage {
    Head,
    Rows,
    Tail,
    Done,
}

/// Writes one query result in one format, a chunk at a time ([`Encoder::next_chunk`]), so a large
/// result is streamed, never rendered whole.
pub struct Encoder {
    format: Format,
    names: Vec<String>,
    types: Vec<DataType>,
    /// The result's batches that have rows, in order (none for an empty result).
    chunks: Vec<Batch>,
    /// The batch holding the next row to write (rows are written in order).
    chunk: usize,
    /// The row number of each chunk's first row, over the whole result.
    starts: Vec<usize>,
    /// One past the last row to write.
    end_row: usize,
    /// The first row to write.
    first_row: usize,
    next_row: usize,
    elapsed_us: f64,
    stage: Stage,
    ipc: Option<IpcResultWriter>,
    /// Stop after the row that takes the rows written past this many bytes.
    byte_cap: usize,
    /// Bytes of rows written so far.
    written: usize,
    /// Bytes a row took in the last chunk, to size the next one (a guess before the first).
    row_bytes: usize,
    /// The `/exec` request's shape ([`Format::QuestDb`]).
    exec: Option<ExecShape>,
    /// Rows of the whole result (what `count=true` reports).
    total_rows: usize,
    /// A statement's status (`INSERT 3`) when it has no rows.
    status: Option<String>,
    /// The column that is its table's designated timestamp, if one is.
    timestamp: Option<usize>,
}

/// A DDL/DML status (`INSERT 3`) as a one-row, one-column result.
fn status_columns(status: &str) -> (Vec<String>, Vec<DataType>, Vec<Batch>) {
    let col = Column::from_data(ColumnData::Varchar([status].into_iter().collect()));
    (vec!["status".into()], vec![DataType::Varchar], vec![Batch { columns: vec![Arc::new(col)], rows: 1 }])
}

impl Encoder {
    /// An encoder of `r` (a statement without rows becomes a one-row `status` column); `elapsed_us`
    /// is the run time reported in JSON, in microseconds.
    pub fn new(format: Format, r: &QueryResult, elapsed_us: f64) -> Result<Encoder, ApiError> {
        let (names, types, chunks) = match &r.status {
            Some(s) if r.fields.is_empty() => status_columns(s),
            _ => (
                r.fields.iter().map(|f| f.name.clone()).collect(),
                r.fields.iter().map(|f| f.data_type).collect(),
                r.chunks().to_vec(),
            ),
        };
        let ipc = match format {
            Format::Arrow(codec) => {
                let parts = chunks.iter().map(|b| (b.columns.clone(), b.rows)).collect();
                let w = IpcResultWriter::chunked(&names, parts, codec);
                Some(w.map_err(|e| ApiError::internal(e.to_string()))?)
            }
            _ => None,
        };
        let rows = chunks.iter().map(|b| b.rows).sum();
        let chunks: Vec<Batch> = chunks.into_iter().filter(|b| b.rows > 0).collect();
        let starts = chunks
            .iter()
            .scan(0, |at, b| {
                let start = *at;
                *at += b.rows;
                Some(start)
            })
            .collect();
        Ok(Encoder {
            row_bytes: 12 * names.len(),
            format,
            names,
            types,
            chunks,
            chunk: 0,
            starts,
            end_row: rows,
            first_row: 0,
            next_row: 0,
            elapsed_us,
            stage: Stage::Head,
            ipc,
            byte_cap: usize::MAX,
            written: 0,
            exec: None,
            total_rows: rows,
            status: r.status.clone().filter(|_| r.fields.is_empty()),
            timestamp: r.fields.iter().position(|f| f.designated_ts),
        })
    }

    /// The encoder writing QuestDB's `/exec` answer shaped as `exec` asks (its rows `lo..hi`).
    pub fn with_exec(mut self, exec: ExecShape) -> Encoder {
        self.first_row = exec.lo.min(self.end_row);
        self.next_row = self.first_row;
        self.end_row = exec.hi.map_or(self.end_row, |hi| hi.min(self.end_row)).max(self.first_row);
        self.exec = Some(exec);
        self
    }

    /// A JSON encoder of rows `offset .. offset + limit` of `r` (clamped to its rows, and
    /// ending with the row that takes the rows past `byte_cap` bytes): one page of a kept result.
    pub fn page(
        r: &QueryResult,
        elapsed_us: f64,
        offset: usize,
        limit: usize,
        byte_cap: usize,
    ) -> Result<Encoder, ApiError> {
        let mut e = Encoder::new(Format::Json, r, elapsed_us)?;
        e.first_row = offset.min(e.end_row);
        e.next_row = e.first_row;
        e.end_row = e.first_row.saturating_add(limit).min(e.end_row);
        e.byte_cap = byte_cap;
        Ok(e)
    }

    /// Rows this encoder writes.
    pub fn rows(&self) -> usize {
        self.end_row - self.first_row
    }

    /// Append the next piece of the body to `out`; `false` once everything was written.
    pub fn next_chunk(&mut self, out: &mut Vec<u8>) -> Result<bool, ApiError> {
        if let Some(w) = self.ipc.as_mut() {
            return match w.next_chunk().map_err(|e| ApiError::internal(e.to_string()))? {
                Some(bytes) => {
                    put(out, bytes);
                    Ok(true)
                }
                None => Ok(false),
            };
        }
        let mut s = String::new();
        match self.stage {
            Stage::Head if matches!(self.format, Format::QuestDb | Format::QuestDbCsv) && self.status.is_some() => {
                // A statement without rows: QuestDB answers {"ddl":"OK"} or {"dml":"OK"}.
                crate::exec_json::status(self.status.as_deref().unwrap_or(""), &mut s);
                self.stage = Stage::Done;
            }
            Stage::Head => {
                self.head(&mut s);
                self.stage = Stage::Rows;
            }
            Stage::Rows => {
                let last = (self.next_row + TEXT_CHUNK_ROWS).min(self.end_row);
                // A little over the last chunk's size per row: one allocation, no regrowth.
                s.reserve((last - self.next_row) * (self.row_bytes + self.row_bytes / 8 + 2));
                let (end, chunk, capped) = self.rows_text(last, &mut s);
                self.chunk = chunk;
                if capped {
                    self.end_row = end; // the page ends with this row
                }
                self.written += s.len();
                self.row_bytes = s.len() / (end - self.next_row).max(1);
                self.next_row = end;
                if end == self.end_row {
                    self.stage = Stage::Tail;
                }
            }
            Stage::Tail => {
                if self.format == Format::Json {
                    s.push_str(&format!("],\"rows\":{},\"elapsed_us\":{:.1}}}\n", self.rows(), self.elapsed_us));
                }
                if self.format == Format::QuestDb {
                    self.questdb_tail(&mut s);
                }
                self.stage = Stage::Done;
            }
            Stage::Done => return Ok(false),
        }
        put(out, s.into_bytes());
        Ok(true)
    }

    fn head(&self, s: &mut String) {
        match self.format {
            Format::Json => {
                s.push_str("{\"columns\":[");
                for (j, (n, t)) in self.names.iter().zip(&self.types).enumerate() {
                    if j > 0 {
                        s.push(',');
                    }
                    s.push_str("{\"name\":");
                    json_escape(n, s);
                    s.push_str(",\"type\":\"");
                    s.push_str(&t.sql_name());
                    s.push_str("\"}");
                }
                s.push_str("],\"data\":[");
            }
            Format::Csv => {
                for (j, n) in self.names.iter().enumerate() {
                    if j > 0 {
                        s.push(',');
                    }
                    csv_escape(n, s);
                }
                s.push('\n');
            }
            Format::QuestDb => crate::exec_json::head(self.exec.as_ref(), &self.names, &self.types, self.timestamp, s),
            Format::QuestDbCsv => crate::exec_json::csv_head(&self.names, s),
            Format::Jsonl | Format::Arrow(_) => {}
        }
    }

    fn questdb_tail(&self, s: &mut String) {
        // QuestDB counts the rows up to the last it sends (none when the window starts past
        // the end), or every row with count=true.
        let count = match &self.exec {
            Some(e) if e.count => self.total_rows,
            _ if self.first_row >= self.total_rows => 0,
            _ => self.end_row,
        };
        s.push_str(&format!("],\"count\":{count}"));
        if self.exec.as_ref().is_some_and(|e| e.timings) {
            let ns = (self.elapsed_us * 1e3) as u64;
            s.push_str(&format!(",\"timings\":{{\"authentication\":0,\"compiler\":0,\"execute\":{ns},\"count\":0}}"));
        }
        s.push_str("}\n");
    }

    /// Rows from `next_row` up to `last` into `s`, stopping after the row that takes the
    /// answer past `byte_cap`: the row after the last written, the chunk it is in, and
    /// whether the cap stopped it.
    fn rows_text(&self, last: usize, s: &mut String) -> (usize, usize, bool) {
        let (mut end, mut chunk) = (self.next_row, self.chunk);
        // The JSON dialects write a run of rows of one chunk through its columns' writers.
        let mut text: Option<(usize, RowText<'_>)> = None;
        while end < last {
            chunk = self.chunk_of(end, chunk);
            let (cols, i): (&[Arc<Column>], usize) = match (self.chunks.get(chunk), self.starts.get(chunk)) {
                (Some(b), Some(&start)) => (&b.columns, end - start),
                _ => (&[], 0),
            };
            match self.dialect() {
                Some(dialect) => {
                    if end > self.first_row {
                        s.push(',');
                    }
                    if text.as_ref().is_none_or(|(k, _)| *k != chunk) {
                        text = Some((chunk, RowText::new(cols.iter().map(|c| c.as_ref()), dialect)));
                    }
                    if let Some((_, t)) = &mut text {
                        t.row(i, s);
                    }
                }
                None => self.row(cols, i, s),
            }
            end += 1;
            if self.written + s.len() > self.byte_cap {
                return (end, chunk, true);
            }
        }
        (end, chunk, false)
    }

    /// The batch holding row `g` of the result, from batch `from` on (rows are asked for in
    /// order).
    fn chunk_of(&self, g: usize, mut from: usize) -> usize {
        while self.starts.get(from + 1).is_some_and(|&start| start <= g) {
            from += 1;
        }
        from
    }

    /// The JSON dialect of a format whose rows are JSON arrays ([`RowText`]).
    fn dialect(&self) -> Option<Dialect> {
        match self.format {
            Format::Json => Some(Dialect::Ours),
            Format::QuestDb => Some(Dialect::QuestDb),
            _ => None,
        }
    }

    /// Row `i` of `cols` in a format that is not rows of JSON arrays.
    fn row(&self, cols: &[Arc<Column>], i: usize, s: &mut String) {
        match self.format {
            Format::Jsonl => {
                s.push('{');
                for (j, (c, n)) in cols.iter().zip(&self.names).enumerate() {
                    if j > 0 {
                        s.push(',');
                    }
                    json_escape(n, s);
                    s.push(':');
                    json_cell(c, i, s);
                }
                s.push_str("}\n");
            }
            Format::Csv => {
                cells(cols, i, csv_cell, s);
                s.push('\n');
            }
            Format::QuestDbCsv => {
                cells(cols, i, crate::exec_json::csv_cell, s);
                s.push_str("\r\n");
            }
            Format::Json | Format::QuestDb | Format::Arrow(_) => {}
        }
    }
}

/// Row `i` of `cols`, each value written by `cell`, separated by commas.
fn cells(cols: &[Arc<Column>], i: usize, cell: fn(&Column, usize, &mut String), s: &mut String) {
    for (j, c) in cols.iter().enumerate() {
        if j > 0 {
            s.push(',');
        }
        cell(c, i, s);
    }
}

/// `bytes` appended to `out`: moved in when `out` is empty (an IPC message of a large answer is
/// most of a chunk: copying it again cost as much as encoding it).
fn put(out: &mut Vec<u8>, bytes: Vec<u8>) {
    if out.is_empty() {
        *out = bytes;
    } else {
        out.extend_from_slice(&bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_sql::Engine;

    fn render(format: Format, sql: &str) -> String {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, note VARCHAR)").expect("ddl");
        e.execute("INSERT INTO t VALUES ('2024-01-02 09:30:00', 'A', 1.5, 'a,b'), ('1970-01-01 00:00:00.000000001', 'B', NULL, '')").expect("dml");
        let r = e.execute(sql).expect("query");
        let mut enc = Encoder::new(format, &r, 12.0).expect("encoder");
        let mut out = Vec::new();
        while enc.next_chunk(&mut out).expect("chunk") {}
        String::from_utf8(out).expect("utf8")
    }

    fn encode(format: Format, r: &QueryResult) -> Vec<u8> {
        let mut enc = Encoder::new(format, r, 1.0).expect("encoder");
        let mut out = Vec::new();
        while enc.next_chunk(&mut out).expect("chunk") {}
        out
    }

    /// A result of many batches (one per partition, some empty, a symbol column coded against
    /// the table's dictionary) encodes exactly as the same rows in one batch, in every format;
    /// the Arrow stream carries the dictionary once.
    #[test]
    fn batches_encode_as_their_concatenation() {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, note VARCHAR)").expect("ddl");
        e.execute(
            "INSERT INTO t SELECT i, CASE WHEN i % 7 = 6 THEN NULL ELSE 'symbol-value-' || (i % 7) END, i * 0.5, \
             CASE WHEN i % 3 = 0 THEN NULL ELSE 'n' || i END FROM range(70000) AS r(i)",
        )
        .expect("dml");
        // A new symbol later: its partition holds a larger version of the table's dictionary
        // than the older partitions keep.
        e.execute("INSERT INTO t VALUES (80000, 'symbol-value-9', 1e6, 'late')").expect("dml");
        let r = e.execute("SELECT * FROM t WHERE px > 10").expect("query");
        assert!(r.chunks().len() > 2, "one batch per partition: {}", r.chunks().len());
        let one = QueryResult::rows(r.fields.clone(), r.batch());
        for f in [Format::Json, Format::Jsonl, Format::Csv] {
            assert_eq!(encode(f, &r), encode(f, &one), "{f:?}");
        }
        let (arrow, arrow_one) = (encode(Format::Arrow(None), &r), encode(Format::Arrow(None), &one));
        let (defs, cols, rows) = zepto_io::ipc::read_ipc_stream_any(&arrow).expect("a valid stream");
        let (defs1, cols1, rows1) = zepto_io::ipc::read_ipc_stream_any(&arrow_one).expect("a valid stream");
        assert_eq!((defs, rows), (defs1, rows1));
        for (c, c1) in cols.iter().zip(&cols1) {
            assert!((0..rows).all(|i| c.get(i) == c1.get(i)), "a column differs");
        }
        // Pages starting inside later batches hold the same rows as pages of the one batch.
        for (offset, limit) in [(0, 5), (9_000, 20_000), (34_000, 5_000), (60_000, 10)] {
            let page = |r: &QueryResult| {
                let mut enc = Encoder::page(r, 1.0, offset, limit, usize::MAX).expect("page");
                let mut out = Vec::new();
                while enc.next_chunk(&mut out).expect("chunk") {}
                out
            };
            let (many, one) = (page(&r), page(&one));
            assert!(many.len() > 100, "rows in page {offset}: {}", many.len());
            assert_eq!(many, one, "page {offset}+{limit}");
        }
        let dict_value = b"symbol-value-3";
        let times = |b: &[u8]| b.windows(dict_value.len()).filter(|w| w == dict_value).count();
        assert_eq!(times(&arrow), 1, "the dictionary is sent once");
        // A chunk with an untyped NULL column beside typed ones.
        let u = e.execute("SELECT sym, px FROM t WHERE px > 34990 UNION ALL SELECT NULL, 2.5").expect("union");
        let one = QueryResult::rows(u.fields.clone(), u.batch());
        assert_eq!(encode(Format::Csv, &u), encode(Format::Csv, &one));
        let (_, cols, rows) = zepto_io::ipc::read_ipc_stream_any(&encode(Format::Arrow(None), &u)).expect("stream");
        let (_, cols1, rows1) = zepto_io::ipc::read_ipc_stream_any(&encode(Format::Arrow(None), &one)).expect("stream");
        assert_eq!(rows, rows1);
        assert!(cols.iter().zip(&cols1).all(|(c, c1)| (0..rows).all(|i| c.get(i) == c1.get(i))));
        let empty = e.execute("SELECT * FROM t WHERE px < 0").expect("no rows");
        assert_eq!(encode(Format::Csv, &empty), b"ts,sym,px,note\n");
        let (defs, _, rows) = zepto_io::ipc::read_ipc_stream_any(&encode(Format::Arrow(None), &empty)).expect("schema");
        assert_eq!((defs.len(), rows), (4, 0));
    }

    #[test]
    fn text_formats() {
        let q = "SELECT * FROM t ORDER BY ts DESC";
        assert_eq!(
            render(Format::Json, q),
            "{\"columns\":[{\"name\":\"ts\",\"type\":\"TIMESTAMP\"},{\"name\":\"sym\",\"type\":\"SYMBOL\"},\
             {\"name\":\"px\",\"type\":\"DOUBLE\"},{\"name\":\"note\",\"type\":\"VARCHAR\"}],\"data\":[\
             [\"2024-01-02T09:30:00.000000000Z\",\"A\",1.5,\"a,b\"],\
             [\"1970-01-01T00:00:00.000000001Z\",\"B\",null,\"\"]],\"rows\":2,\"elapsed_us\":12.0}\n"
        );
        assert_eq!(
            render(Format::Csv, q),
            "ts,sym,px,note\n2024-01-02T09:30:00.000000000Z,A,1.5,\"a,b\"\n1970-01-01T00:00:00.000000001Z,B,,\"\"\n"
        );
        assert_eq!(
            render(Format::Jsonl, "SELECT sym, px FROM t ORDER BY sym"),
            "{\"sym\":\"A\",\"px\":1.5}\n{\"sym\":\"B\",\"px\":null}\n"
        );
        assert!(render(Format::Json, "INSERT INTO t VALUES (2, 'C', 1, 'x')").contains("[[\"INSERT 1\"]]"));
        assert_eq!(
            Format::from_accept("text/html, application/vnd.apache.arrow.stream;q=0.9"),
            Some(Format::Arrow(None))
        );
        assert_eq!(
            Format::from_accept(r#"application/vnd.apache.arrow.stream; codecs="brotli, zstd, lz4", */*"#),
            Some(Format::Arrow(Some(IpcCodec::Zstd)))
        );
        assert_eq!(
            Format::from_accept("application/vnd.apache.arrow.stream;codecs=lz4"),
            Some(Format::Arrow(Some(IpcCodec::Lz4)))
        );
        assert_eq!(Format::from_accept("*/*"), None);
    }
}
