//! The FIX door in process, over loopback TCP, as tasks of its runtime and busy-polling on
//! threads of their own (`--fix-busy-poll`): two sessions at once store their quotes, an idle
//! session still gets its Heartbeat on time (the spinning read leaves the timers running),
//! and stopping the door ends connected sessions instead of waiting for them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zepto_fix::encode::Value as V;
use zepto_fix::parse::parse;
use zepto_fix::server::FixDoor;
use zepto_fix::session::SessionConfig;
use zepto_fix::Encoder;
use zepto_storage::Catalog;

const NOW: i64 = 1_704_187_800_000_000_000;

/// A counterparty `who` → ZEPTO.
struct Client {
    stream: TcpStream,
    enc: Encoder,
    buf: Vec<u8>,
    seq: u64,
}

impl Client {
    /// Connected and logged on with a heartbeat of `hb` seconds.
    fn logon(door: &FixDoor, who: &str, hb: u64) -> Client {
        let stream = TcpStream::connect(door.addr().expect("an acceptor")).expect("connects");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut c = Client { stream, enc: Encoder::new("FIX.4.4", who, "ZEPTO"), buf: Vec::new(), seq: 1 };
        let mut out = Vec::new();
        c.enc.logon(&mut out, 1, NOW, hb, false);
        c.stream.write_all(&out).expect("logon");
        assert!(c.recv().starts_with("A#"), "a Logon back");
        c
    }

    fn send(&mut self, t: &str, fields: &[(u32, V<'_>)]) {
        self.seq += 1;
        let mut out = Vec::new();
        self.enc.message(&mut out, t, self.seq, NOW, false, fields);
        self.stream.write_all(&out).expect("send");
    }

    fn quote(&mut self, sym: &str, px: &str) {
        let f = [
            (268, V::Bytes(b"1")),
            (279, V::Bytes(b"0")),
            (269, V::Bytes(b"0")),
            (55, V::Bytes(sym.as_bytes())),
            (270, V::Bytes(px.as_bytes())),
            (271, V::Bytes(b"100")),
        ];
        self.send("X", &f);
    }

    /// The next message's type, sequence number and TestReqID (112), if any.
    fn recv(&mut self) -> String {
        loop {
            if let Ok(m) = parse(&self.buf) {
                let id = m.get(112).map(|v| String::from_utf8_lossy(v).into_owned()).unwrap_or_default();
                let s = format!("{}#{} {id}", m.msg_type(), m.header.seq);
                let n = m.len();
                self.buf.drain(..n);
                return s;
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk).expect("the door answers");
            assert!(n > 0, "the door closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Everything sent so far is stored: the Heartbeat answering a TestRequest goes out only
    /// after the rows before it are.
    fn sync(&mut self, id: &str) {
        self.send("1", &[(112, V::Bytes(id.as_bytes()))]);
        let hb = self.recv();
        assert!(hb.starts_with("0#") && hb.ends_with(id), "{hb}");
    }
}

/// Every stored quote's price, ascending.
fn prices(c: &Catalog) -> Vec<f64> {
    let t = c.snapshot("quotes").expect("quotes");
    let at = t.schema().index_of("price").expect("a price column");
    let mut out: Vec<f64> = Vec::new();
    for p in t.partitions() {
        for i in 0..p.len() {
            match p.columns()[at].get(i) {
                zepto_storage::Value::Float64(v) => out.push(v),
                v => panic!("price {v:?}"),
            }
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

/// Threads of this process named `name`.
fn threads_named(name: &str) -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok()).filter(|c| c.trim() == name).count()
}

fn run(busy_poll: bool) {
    let catalog = Arc::new(Catalog::new());
    let cfg = SessionConfig { busy_poll, ..SessionConfig::default() };
    let door = FixDoor::start(Some("127.0.0.1:0"), None, catalog.clone(), cfg).expect("an acceptor");
    let mut a = Client::logon(&door, "FEEDA", 1);
    let mut b = Client::logon(&door, "FEEDB", 30);
    for i in 0..50 {
        a.quote("EURUSD", &format!("1.{i:02}"));
        b.quote("USDJPY", &format!("150.{i:02}"));
    }
    a.sync("A1");
    b.sync("B1");
    // Busy-polling, sessions get threads of their own, at most one fewer than the cores (at
    // least one); the rest run as tasks.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let own = if busy_poll { 2.min(cores.saturating_sub(1).max(1)) } else { 0 };
    assert_eq!(threads_named("zepto-fix-busy"), own);
    let price = |base: &str, i: i32| format!("{base}.{i:02}").parse::<f64>().expect("price");
    let want: Vec<f64> = (0..50).map(|i| price("1", i)).chain((0..50).map(|i| price("150", i))).collect();
    assert_eq!(prices(&catalog), want);
    // Idle for a heartbeat interval: the door sends its Heartbeat (no TestReqID) on time.
    let t = Instant::now();
    let hb = a.recv();
    assert!(hb.starts_with("0#") && hb.ends_with(' '), "a Heartbeat: {hb}");
    assert!(t.elapsed() < Duration::from_secs(3), "the Heartbeat took {:?}", t.elapsed());
    // Stopping the door ends both sessions, though neither side logged out.
    let t = Instant::now();
    door.stop();
    assert!(t.elapsed() < Duration::from_secs(8), "stopping took {:?}", t.elapsed());
    let mut rest = Vec::new();
    assert!(b.stream.read_to_end(&mut rest).is_ok(), "the connection is closed");
}

/// Both ways, one after the other (the busy-polling threads are counted in this process).
#[test]
fn sessions_run_as_tasks_or_busy_polling_on_threads_of_their_own() {
    run(false);
    run(true);
    assert_eq!(threads_named("zepto-fix-busy"), 0, "stopping the door ended them");
}
