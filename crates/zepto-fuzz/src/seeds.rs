//! Seed inputs: valid (and a few nearly valid) examples of every format, built with the
//! encoders the database itself uses, so mutations start from the shapes that reach deep.

use std::sync::Arc;
use zepto_durable::changes;
use zepto_durable::checkpoint::{self, table_file};
use zepto_sql::Engine;
use zepto_storage::{Change, Column, ColumnDef, DataType, Schema};
use zepto_wal::format::segment_name;
use zepto_wal::{MemStorage, Storage, SyncMode, Wal};

/// The LSN of the checkpoint the manifest target reads.
pub const CHECKPOINT_LSN: u64 = 7;

const SAMPLE: &str = "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, s VARCHAR, b BOOLEAN) PARTITION BY sym;
INSERT INTO t VALUES ('2024-01-02 09:30:00', 'A', 1.5, 10, 'x', true), ('2024-01-02 09:30:01', 'B', NULL, -3, '', false),
 ('2024-01-02 09:30:02', 'A', 2.25, NULL, 'y,z', NULL), (NULL, NULL, -0.0, 9223372036854775807, NULL, true)";

/// A fresh engine holding table `t` (partitioned by symbol) with four rows, NULLs included.
pub fn sample_engine() -> Engine {
    let e = Engine::new();
    e.execute(SAMPLE).expect("the sample table is created");
    e
}

/// The sample table's rows as one batch, in schema order.
fn sample_batch() -> (Vec<ColumnDef>, Vec<Column>) {
    let t = sample_engine().catalog().snapshot("t").expect("the sample table exists");
    let defs = t.schema().columns.clone();
    let cols: Vec<Column> = (0..defs.len())
        .map(|i| {
            let parts: Vec<Column> = t.partitions().iter().map(|p| p.columns()[i].as_ref().clone()).collect();
            Column::concat(&parts.iter().collect::<Vec<_>>())
        })
        .collect();
    (defs, cols)
}

/// The sample batch as an Arrow IPC stream (what `/write?format=arrow` takes).
fn arrow_stream() -> Vec<u8> {
    let (defs, cols) = sample_batch();
    let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
    let refs: Vec<&Column> = cols.iter().collect();
    let rows = cols.first().map_or(0, Column::len);
    let mut w = zepto_io::ipc::IpcResultWriter::new(&names, &refs, rows).expect("the batch encodes");
    let mut out = Vec::new();
    while let Some(chunk) = w.next_chunk().expect("the batch encodes") {
        out.extend_from_slice(&chunk);
    }
    out
}

fn texts(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// SQL: a few queries of each kind (the full golden corpus seeds `make fuzz`).
pub fn sql() -> Vec<Vec<u8>> {
    texts(&[
        "SELECT sym, count(*), avg(px) FROM t WHERE ts >= '2024-01-02' GROUP BY sym ORDER BY sym",
        "SELECT xbar(ts, INTERVAL '1 minute') AS b, first(px), last(px) FROM t GROUP BY b",
        "SELECT * FROM t ASOF JOIN u ON t.sym = u.sym AND t.ts >= u.ts",
        "SELECT n, sum(px) OVER (PARTITION BY sym ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t",
        "SELECT CASE WHEN b THEN s ELSE 'z' END, coalesce(i, -1) FROM t LEFT JOIN u ON t.i = u.id",
        "WITH w AS (SELECT sym, max(n) m FROM t GROUP BY sym) SELECT * FROM w WHERE m IN (SELECT id FROM u)",
        "INSERT INTO t VALUES ('2024-01-03', 'C', 3.5, 1, 'q', true); DELETE FROM t WHERE n < 0",
        "SELECT ts, sym FROM t LATEST ON ts PARTITION BY sym",
        "FROM t SELECT sym, px, ORDER BY ALL DESC",
        "SELECT r.range, t.n FROM range(0, 10, 3) r LEFT JOIN t ON r.range = t.n",
        "SELECT * FROM generate_series(TIMESTAMP '2024-01-02', TIMESTAMP '2024-01-03', INTERVAL '6 hours') g(ts)",
        "SELECT ts < TIMESTAMP 'infinity', xbar(INTERVAL '1 hour', TIMESTAMP '-infinity') FROM t",
        "SELECT * FROM t ASOF LEFT JOIN u USING (sym) WHERE t.ts >= TIMESTAMP '-infinity'",
        "CREATE MATERIALIZED VIEW IF NOT EXISTS v AS (SELECT sym, ts, first(px), count(*) FROM t SAMPLE BY 1m); \
         INSERT INTO t VALUES ('2024-01-03', 'C', 3.5, 1, 'q', true); SELECT * FROM v; REFRESH MATERIALIZED VIEW v FULL; \
         DROP MATERIALIZED VIEW v",
    ])
}

/// CSV in the columns of the ingest table.
pub fn csv() -> Vec<Vec<u8>> {
    texts(&[
        "ts,sym,px,n,s,b\n2024-01-02 09:30:00,A,1.5,3,\"x,y\",true\n,,,,\"\",\n",
        "2024-01-02T09:30:00.123456789Z,B,-1e300,-9223372036854775808,\"a\"\"b\",false\n",
    ])
}

/// `COPY FROM STDIN` streams: PostgreSQL's text format (escapes, `\N`, the end marker) and CSV.
pub fn pgcopy() -> Vec<Vec<u8>> {
    texts(&[
        "2024-01-02 09:30:00\tA\t1.5\t3\ta\\tb\\\\c\\101\\x42\tt\n\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n\\.\n",
        "ts,sym,px,n,s,b\n2024-01-02 09:30:00,A,1.5,3,\"x,\"\"y\"\"\nz\",true\n,,,,\"\",NA\n",
        "ts|sym|px|n|s|b\n2024-01-02|B|-1e300||x\\|y|f\r\n",
    ])
}

/// `/write` bodies: line protocol, CSV, JSON lines and Arrow IPC.
pub fn ingest() -> Vec<Vec<u8>> {
    let mut v = texts(&[
        "cpu,host=a usage=0.5,idle=99i,ok=t,name=\"x y\" 1700000000000000000\nmem free=12u\n",
        "trades,sym=A px=1.5,qty=100i,at=1700000000123456t,n=NaN 1700000000000000001\nq,s=B b=-Infinity\n",
        "ts,sym,px,n,s,b\n2024-01-02 09:30:00,A,1.5,3,\"x,y\",true\n",
        "{\"ts\":\"2024-01-02 09:30:00\",\"sym\":\"A\",\"px\":1.5,\"n\":3,\"s\":\"x\",\"b\":true}\n{\"sym\":null}\n",
    ]);
    v.push(arrow_stream());
    // QuestDB's protocol version 2: binary doubles and a double array (a vector), as its
    // Python client writes them (the array header holds a newline byte).
    let mut v2 = b"emb,doc=a px==\x10".to_vec();
    v2.extend_from_slice(&1.5f64.to_le_bytes());
    v2.extend_from_slice(b",v==\x0e\x0a\x01");
    v2.extend_from_slice(&3u32.to_le_bytes());
    for x in [1.0f64, -2.0, 0.5] {
        v2.extend_from_slice(&x.to_le_bytes());
    }
    v2.extend_from_slice(b" 1700000000000000000n\nemb,doc=b px=NaN,v==\x0e\x0a\x01");
    v2.extend_from_slice(&3u32.to_le_bytes());
    v2.extend_from_slice(&[0u8; 24]);
    v2.push(b'\n');
    v.push(v2);
    v
}

/// One FIX 4.4 message: the standard header around `body` (fields joined by SOH), with its
/// BodyLength and CheckSum.
pub fn fix_message(msg_type: &str, seq: u32, body: &[&str]) -> Vec<u8> {
    let mut inner = format!("35={msg_type}\x0149=FEED\x0156=ZEPTO\x0134={seq}\x0152=20240102-09:30:00.123\x01");
    for f in body {
        inner.push_str(f);
        inner.push('\x01');
    }
    let mut m = format!("8=FIX.4.4\x019={}\x01{inner}", inner.len()).into_bytes();
    let sum = m.iter().fold(0u8, |a, &b| a.wrapping_add(b));
    m.extend_from_slice(format!("10={sum:03}\x01").as_bytes());
    m
}

/// FIX: market data (W, X) and an execution report, alone and in one stream.
pub fn fix() -> Vec<Vec<u8>> {
    let w = fix_message(
        "W",
        2,
        &["55=A", "262=r1", "268=2", "269=0", "270=1.5", "271=100", "273=09:30:00.1", "269=2", "270=1.6", "271=5"],
    );
    let x = fix_message("X", 3, &["268=1", "279=0", "269=1", "55=B", "270=2.5", "271=7", "272=20240102"]);
    let e =
        fix_message("8", 4, &["37=O1", "17=E1", "150=F", "39=2", "55=A", "54=1", "38=10", "32=10", "31=1.5", "14=10"]);
    let stream = [w.clone(), x.clone(), e.clone()].concat();
    vec![w, x, e, stream]
}

/// WAL record payloads: every kind of change the sample table can log.
pub fn changes() -> Vec<Vec<u8>> {
    let (defs, cols) = sample_batch();
    let schema = Schema { columns: defs };
    let extra = ColumnDef { name: "extra".into(), data_type: DataType::Int32 };
    let rows = vec![(0u32, vec![0u32, 1])];
    let keys = ["ts".to_string(), "sym".to_string()];
    let view = sample_view();
    let sets: Vec<Vec<Change<'_>>> = vec![
        vec![Change::CreateTable { name: "t2", schema: &schema, partition_key: Some("sym"), timestamp: Some("ts") }],
        vec![Change::Append { table: "t", columns: &cols }],
        vec![Change::AddColumn { table: "t", def: &extra }, Change::Delete { table: "t", rows: &rows }],
        vec![Change::DropTable { name: "t" }],
        vec![Change::SetDedup { table: "t", keys: &keys }, Change::Append { table: "t", columns: &cols }],
        vec![Change::CreateView { def: &view }, Change::DropView { name: "bars" }],
    ];
    sets.iter().map(|c| changes::encode(c).expect("the changes encode")).collect()
}

/// A materialized view over the sample table, its query spanning lines and tabs (escaped in
/// a manifest).
fn sample_view() -> zepto_storage::ViewDef {
    zepto_storage::ViewDef::new("bars", "t", "SELECT sym,\tcount(*)\nFROM t GROUP BY sym").expect("a view definition")
}

/// WAL segments: the change records, framed and checksummed by the log writer.
pub fn wal() -> Vec<Vec<u8>> {
    let storage = Arc::new(MemStorage::new());
    let log = Wal::open(storage.clone(), SyncMode::None, 1).expect("a log opens in memory");
    for payload in changes() {
        log.append(&payload).expect("the log appends");
    }
    log.sync().expect("the log syncs");
    vec![storage.read(&segment_name(1)).expect("the segment is there")]
}

/// Checkpoint table files: the sample table, an empty one, and a deduplicating one.
pub fn table_file() -> Vec<Vec<u8>> {
    let e = sample_engine();
    e.execute("CREATE TABLE empty (k INT)").expect("created");
    e.execute(
        "CREATE TABLE d (ts TIMESTAMP, sym SYMBOL, v INT) DEDUP UPSERT KEYS(ts, sym); INSERT INTO d VALUES (1, 'a', 2)",
    )
    .expect("created");
    ["t", "empty", "d"]
        .iter()
        .map(|n| {
            let t = e.catalog().snapshot(n).expect("the table exists");
            table_file::write_table(t, Vec::new()).expect("the table writes")
        })
        .collect()
}

/// Checkpoint manifests: the body of a real one (its checksum line is added by the target).
pub fn manifest() -> Vec<Vec<u8>> {
    let storage = MemStorage::new();
    let t = sample_engine().catalog().snapshot("t").expect("the sample table exists");
    let views = [zepto_storage::ViewCut { def: sample_view(), state: None }];
    checkpoint::write(
        &storage,
        CHECKPOINT_LSN,
        vec![(t, zepto_storage::Stamp::next())],
        &views,
        &checkpoint::Reuse::none(),
    )
    .expect("a checkpoint writes to memory");
    let text = storage.read(&checkpoint::manifest_name(CHECKPOINT_LSN)).expect("the manifest is there");
    let body_end = text.windows(4).rposition(|w| w == b"crc ").unwrap_or(text.len());
    vec![text[..body_end].to_vec()]
}

/// HTTP: URL query strings, then a NUL and a JSON body.
pub fn http() -> Vec<Vec<u8>> {
    texts(&[
        "query=SELECT+1%2C%202&format=csv&keep=1&limit=10",
        "table=t&format=jsonl&precision=us\0{\"sql\":\"SELECT $1, $2\",\"params\":[1,\"x\",null,2.5,true],\"format\":\"arrow\"}",
        "q=%C3%A9&x\0{\"sql\":\"SELECT 1\"}",
    ])
}
