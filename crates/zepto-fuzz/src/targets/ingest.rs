//! Rows from outside: every `/write` format onto an in-memory engine, CSV into a schema, and
//! the COPY formats a PostgreSQL client streams.

use std::sync::OnceLock;
use zepto_io::csv::{read_csv, read_csv_pieces, CsvOptions};
use zepto_io::pgcopy::{CopyOptions, CopyReader};
use zepto_server::auth::Principal;
use zepto_server::ingest::{self, ilp::Precision, IngestFormat, WriteRequest};
use zepto_sql::Engine;
use zepto_storage::{ColumnDef, DataType};

/// The table the CSV, JSON-lines and Arrow formats write to.
pub const TABLE: &str = "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, s VARCHAR, b BOOLEAN)";

fn engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| {
        let e = Engine::new();
        e.execute(TABLE).expect("the fuzz table is created");
        e
    })
}

/// Rows in every table, and how many tables.
fn size(e: &Engine) -> (usize, usize) {
    let c = e.catalog();
    let names = c.table_names();
    let rows = names.iter().filter_map(|n| c.snapshot(n).ok()).map(|t| t.row_count()).sum();
    (rows, names.len())
}

/// `data` as a `/write` body in each format: a batch is applied whole (its rows all counted)
/// or refused with nothing changed, not a row and not a table.
pub fn write(data: &[u8]) {
    let e = engine();
    let who = Principal::anonymous_admin();
    for format in [IngestFormat::Ilp, IngestFormat::Csv, IngestFormat::Jsonl, IngestFormat::Arrow] {
        let req = WriteRequest {
            format,
            table: (format != IngestFormat::Ilp).then(|| "t".to_string()),
            precision: Precision::NANOS,
            now_ns: 1_700_000_000_000_000_000,
        };
        let before = size(e);
        let r = ingest::write(e, &who, &req, data);
        let after = size(e);
        match r {
            Ok(n) => assert_eq!(after.0, before.0 + n, "{format:?} wrote {n} rows"),
            Err(err) => assert_eq!(after, before, "{format:?} refused the batch ({err:?}) yet changed the catalog"),
        }
    }
}

/// Bytes that are not UTF-8 from `bad` on, read as CSV in pieces: refused, as not UTF-8 at
/// that very byte, or for an error of a piece before it.
fn not_text(data: &[u8], bad: usize) {
    let schema = [ColumnDef { name: "s".into(), data_type: DataType::Varchar }];
    let opts = CsvOptions { header: false, delimiter: b',' };
    match read_csv_pieces(data, &schema, &opts, &zepto_io::unchecked, 16) {
        Ok(_) => panic!("bytes that are not UTF-8 were read as CSV"),
        Err(zepto_io::IoError::NotUtf8 { offset }) => assert_eq!(offset, bad, "the first byte that is not UTF-8"),
        Err(_) => {}
    }
}

/// The columns of [`TABLE`].
fn fuzz_schema() -> Vec<ColumnDef> {
    [
        ("ts", DataType::Timestamp),
        ("sym", DataType::Symbol),
        ("px", DataType::Float64),
        ("n", DataType::Int64),
        ("s", DataType::Varchar),
        ("b", DataType::Bool),
    ]
    .iter()
    .map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t })
    .collect()
}

/// `data` as CSV (with and without a header) into the columns of [`TABLE`].
pub fn csv(data: &[u8]) {
    let text = match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(e) => return not_text(data, e.valid_up_to()),
    };
    let schema = fuzz_schema();
    for header in [true, false] {
        let opts = CsvOptions { header, delimiter: b',' };
        let whole = read_csv(text, &schema, &opts);
        if let Ok(cols) = &whole {
            let n = cols.first().map_or(0, |c| c.len());
            assert!(cols.iter().all(|c| c.len() == n), "CSV columns of different lengths");
        }
        // Cut into pieces (as large files are, to read on every core): the same answer.
        let cut = read_csv_pieces(text.as_bytes(), &schema, &opts, &zepto_io::unchecked, 16);
        match (&whole, &cut) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.len(), b.len());
                for (ca, cb) in a.iter().zip(b) {
                    assert_eq!(ca.len(), cb.len(), "a piece-wise read has other rows");
                    // Compared as printed: a NaN read both ways is the same value.
                    let same = (0..ca.len()).all(|i| format!("{:?}", ca.get(i)) == format!("{:?}", cb.get(i)));
                    assert!(same, "a piece-wise read has other values");
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "a piece-wise read fails otherwise"),
            _ => panic!("whole: {whole:?}, in pieces: {cut:?}"),
        }
    }
}

/// `data` as a `COPY FROM STDIN` stream in the text and CSV formats (with a header, other
/// delimiters, another NULL string): read whole and read as it would arrive in 3-byte
/// messages, decoded in 16-byte pieces, the same rows or the same error.
pub fn pgcopy(data: &[u8]) {
    let schema = fuzz_schema();
    let names: Vec<String> = schema.iter().map(|c| c.name.clone()).collect();
    let option_sets: [&[(&str, &str)]; 4] = [
        &[],
        &[("format", "csv")],
        &[("format", "csv"), ("header", "match"), ("null", "NA"), ("force_not_null", "s")],
        &[("delimiter", "|"), ("header", "true"), ("null", "")],
    ];
    for pairs in option_sets {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let opts = CopyOptions::new(&pairs, &names).expect("the fuzz options are valid");
        let read = |message: usize, piece: usize| {
            let mut r = CopyReader::new(opts.clone(), schema.clone()).with_piece_bytes(piece);
            for m in data.chunks(message.max(1)) {
                r.feed(m, &zepto_io::unchecked)?;
            }
            r.finish(&zepto_io::unchecked)
        };
        let whole = read(data.len(), usize::MAX);
        let cut = read(3, 16);
        match (&whole, &cut) {
            (Ok(a), Ok(b)) => {
                let n = a.first().map_or(0, |c| c.len());
                assert!(a.iter().all(|c| c.len() == n), "COPY columns of different lengths");
                let same = a.iter().zip(b).all(|(ca, cb)| {
                    ca.len() == cb.len()
                        && (0..ca.len()).all(|i| format!("{:?}", ca.get(i)) == format!("{:?}", cb.get(i)))
                });
                assert!(same, "a COPY read as it arrives has other rows");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "a COPY read as it arrives fails otherwise"),
            _ => panic!("whole: {whole:?}, as it arrives: {cut:?}"),
        }
    }
}
