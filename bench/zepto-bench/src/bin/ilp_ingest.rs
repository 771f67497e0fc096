//! In-process timings of line-protocol ingest on the wide DevOps shape (`bench/questdb.py`'s
//! `cpu` measurement: 10 tags, 10 integer fields, one line per host every 10 s), without a
//! socket: how long the tokenizer takes alone, and whole `/write` batches (tokenize, type,
//! append) into an in-memory engine, best of `repeat` runs (a new engine each).
//! `ilp_ingest [hosts] [hours] [batch] [repeat] [clients] [write]`; defaults 400, 2, 10000,
//! 3, 1 (with more clients, each writes every `clients`-th body on a thread of its own); a
//! sixth argument `write` times the writes alone (for a profile of them).

use std::time::Instant;
use zepto_server::auth::Principal;
use zepto_server::encode::{Encoder, Format};
use zepto_server::exec_json::ExecShape;
use zepto_server::ingest::{ilp, write, IngestFormat, WriteRequest};

/// The server's allocator and settings (`zeptodb`'s main), so allocation costs are its own.
#[global_allocator]
static ALLOC: zepto_storage::mem::CountingAlloc = zepto_storage::mem::CountingAlloc;

const FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];
const REGIONS: [&str; 9] = [
    "us-east-1",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "sa-east-1",
];

/// A small deterministic generator (xorshift), so runs see the same bytes.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The line prefix (`cpu,<10 tags> `) of every host.
fn prefixes(rng: &mut Rng, hosts: usize) -> Vec<String> {
    (0..hosts)
        .map(|h| {
            let region = REGIONS[rng.below(9) as usize];
            format!(
                "cpu,hostname=host_{h},region={region},datacenter={region}{},rack={},os=Ubuntu16.{},arch=x{},team=T{},service={},service_version={},service_environment=env{} ",
                ["a", "b", "c"][rng.below(3) as usize],
                rng.below(100),
                rng.below(3),
                [64, 86][rng.below(2) as usize],
                rng.below(4),
                rng.below(20),
                rng.below(2),
                rng.below(3),
            )
        })
        .collect()
}

/// The data set as ILP bodies of `batch` lines, time-major as TSBS writes it.
fn generate(hosts: usize, hours: usize, batch: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let pre = prefixes(&mut rng, hosts);
    let mut values = vec![50i64; hosts * FIELDS.len()];
    let (mut bodies, mut body, mut lines) = (Vec::new(), Vec::new(), 0);
    let t0: i64 = 1_451_606_400_000_000_000;
    for step in 0..hours * 360 {
        let ts = t0 + step as i64 * 10_000_000_000;
        for (h, p) in pre.iter().enumerate() {
            body.extend_from_slice(p.as_bytes());
            for (k, f) in FIELDS.iter().enumerate() {
                let v = &mut values[h * FIELDS.len() + k];
                *v = (*v + rng.below(11) as i64 - 5).clamp(0, 100);
                let sep = if k == 0 { "" } else { "," };
                body.extend_from_slice(format!("{sep}{f}={v}i").as_bytes());
            }
            body.extend_from_slice(format!(" {ts}\n").as_bytes());
            lines += 1;
            if lines == batch {
                bodies.push(std::mem::take(&mut body));
                lines = 0;
            }
        }
    }
    if !body.is_empty() {
        bodies.push(body);
    }
    bodies
}

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn main() {
    zepto_storage::mem::retain_freed_memory();
    zepto_storage::mem::tune_arenas();
    let (hosts, hours, batch) = (arg(1, 400), arg(2, 2), arg(3, 10_000));
    let bodies = generate(hosts, hours, batch);
    let rows = hosts * hours * 360;
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    println!("{rows} lines, {:.1} MB, {} bodies of {batch} lines", bytes as f64 / 1e6, bodies.len());
    let repeat = arg(4, 3).max(1);
    let best = |f: &dyn Fn()| {
        (0..repeat)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let write_only = std::env::args().nth(6).as_deref() == Some("write");
    let tokenize = best(&|| {
        for b in bodies.iter().filter(|_| !write_only) {
            ilp::check_text(b, ilp::Precision::NANOS).expect("every line parses");
        }
    });
    let who = Principal::anonymous_admin();
    let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: ilp::Precision::NANOS, now_ns: 0 };
    let clients = arg(5, 1).max(1);
    let whole = best(&|| {
        let engine = zepto_sql::Engine::new();
        // As `bench/questdb.py` sends them: client k writes bodies k, k + clients, ...
        // independently, so the clients drift apart and rows arrive out of time order.
        std::thread::scope(|s| {
            for k in 0..clients {
                let (engine, who, req, bodies) = (&engine, &who, &req, &bodies);
                s.spawn(move || {
                    for b in bodies.iter().skip(k).step_by(clients) {
                        write(engine, who, req, b).expect("the batch is stored");
                    }
                });
            }
        });
    });
    let mb = bytes as f64 / 1e6;
    let write_what = format!("write ({clients} cl.)");
    let timed = [("tokenize only", tokenize), (write_what.as_str(), whole)];
    for (what, s) in timed.into_iter().filter(|(what, _)| !write_only || what.starts_with("write")) {
        println!("{what:<18} {s:>8.3} s  {:>12.0} lines/s  {:>7.1} MB/s", rows as f64 / s, mb / s);
    }
    if write_only {
        return;
    }
    let engine = zepto_sql::Engine::new();
    for b in &bodies {
        write(&engine, &who, &req, b).expect("the batch is stored");
    }
    encode_answers(&engine, best);
}

/// The high-value filter of `bench/questdb.py` (every column of the rows with `usage_user >
/// 90`): the query alone, then its answer encoded as our JSON and as QuestDB's `/exec` JSON.
fn encode_answers(engine: &zepto_sql::Engine, best: impl Fn(&dyn Fn()) -> f64) {
    let sql = "SELECT * FROM cpu WHERE usage_user > 90";
    let r = engine.execute(sql).expect("the query runs");
    let query = best(&|| {
        engine.execute(sql).expect("the query runs");
    });
    let encode = |format: Format| {
        let mut e = Encoder::new(format, &r, 0.0).expect("an encoder");
        if format == Format::QuestDb {
            e = e.with_exec(ExecShape { query: sql.into(), ..ExecShape::default() });
        }
        let mut out = Vec::new();
        while e.next_chunk(&mut out).expect("a chunk") {}
        out.len()
    };
    let bytes = encode(Format::Json);
    let (json, exec) = (best(&|| _ = encode(Format::Json)), best(&|| _ = encode(Format::QuestDb)));
    let rows = r.batch().rows;
    println!("{sql}: {rows} rows, {:.1} MB of JSON", bytes as f64 / 1e6);
    for (what, s) in [("query", query), ("encode JSON", json), ("encode /exec JSON", exec)] {
        println!("{what:<18} {:>8.1} ms  {:>7.1} MB/s", s * 1e3, bytes as f64 / 1e6 / s);
    }
}
