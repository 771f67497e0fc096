//! A subscriber resumes by position after a restart, even after `kill -9`: the events after any
//! id it saw come back, from the log, exactly as it first got them, then the new ones, on
//! generated streams of appends to two tables, deletes, and records holding both tables'
//! changes. A position a checkpoint removed from the log, one of another timeline, and one an
//! in-memory database no longer holds are refused as gone.

use std::sync::Arc;
use zepto_durable::{Durable, Options};
use zepto_storage::feed::cursor::{Cursor, CursorError};
use zepto_storage::feed::{FeedChange, FeedEvent, Pos, Subscriber};
use zepto_storage::{Catalog, Change, Column, ColumnData, ColumnDef, DataType, Schema, Table, TableOptions};
use zepto_wal::{MemStorage, SyncMode};

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn open(wal: &MemStorage, ck: &MemStorage, cat: &Catalog, sync: SyncMode) -> Arc<Durable> {
    let opts = Options { checkpoint_bytes: 0, sync, ..Options::default() };
    let s = |m: &MemStorage| -> Arc<dyn zepto_wal::Storage> { Arc::new(m.clone()) };
    Durable::open(s(wal), s(ck), s(&MemStorage::new()), cat, opts, |_| {}).map(|(d, _)| d).expect("open")
}

fn create(cat: &Catalog) {
    for name in ["t", "u"] {
        let defs = [("ts", DataType::Timestamp), ("x", DataType::Int64)];
        let schema =
            Schema { columns: defs.iter().map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t }).collect() };
        let opts = TableOptions { timestamp: Some("ts".into()), ..Default::default() };
        cat.create(Table::new(name, schema, &opts).expect("table"), true).expect("create");
    }
}

fn batch(rng: &mut Rng, next: &mut i64) -> Vec<Column> {
    let n = 1 + rng.below(5) as i64;
    let xs: Vec<i64> = (0..n).map(|i| *next + i).collect();
    *next += n;
    vec![Column::from_data(ColumnData::Timestamp(xs.clone().into())), Column::from_data(ColumnData::Int64(xs.into()))]
}

/// One generated write: an append to t or u, a delete of t's first row, or one record
/// appending to both (t first or second, so t's event is its record's first or last).
fn write(cat: &Catalog, rng: &mut Rng, next: &mut i64) {
    match rng.below(6) {
        0 => cat.append("u", batch(rng, next)).map(|_| ()).expect("append u"),
        1 if cat.snapshot("t").expect("t").row_count() > 0 => {
            let sel = vec![(0u32, vec![0u32])];
            cat.modify("t", |t| cat.log(&[Change::Delete { table: "t", rows: &sel }])?.apply(|| t.delete_rows(&sel)))
                .map(|_| ())
                .expect("delete")
        }
        2 | 3 => {
            let (a, b) = (batch(rng, next), batch(rng, next));
            let t_first = rng.below(2) == 0;
            let names = if t_first { ["t", "u"] } else { ["u", "t"] };
            cat.write_many(&names, |tables| {
                let changes: Vec<Change<'_>> = [&a, &b]
                    .iter()
                    .zip(tables.iter())
                    .map(|(cols, t)| Change::Append { table: t.name(), columns: cols })
                    .collect();
                cat.log(&changes)?.apply(|| {
                    tables[0].append(a.clone())?;
                    tables[1].append(b.clone()).map(|_| ())
                })
            })
            .expect("both")
        }
        _ => cat.append("t", batch(rng, next)).map(|_| ()).expect("append t"),
    }
}

/// What a subscriber of t got: each event's id and what it says.
type Got = Vec<(String, String)>;

fn drain(cat: &Catalog, c: &mut Cursor) -> Result<Got, CursorError> {
    let mut got = Vec::new();
    loop {
        let events = c.read(cat, 7)?;
        if events.is_empty() {
            return Ok(got);
        }
        got.extend(summarize(cat, events));
    }
}

fn summarize(cat: &Catalog, events: Vec<Arc<FeedEvent>>) -> Got {
    let timeline = cat.feed().epoch();
    let what = |e: &FeedEvent| match &e.change {
        FeedChange::Append(cols) => format!("append {:?}", cols[1].as_i64_slice()),
        FeedChange::Delete(n) => format!("delete {n}"),
        FeedChange::Update(n) => format!("update {n}"),
        FeedChange::Drop => "drop".into(),
    };
    events.iter().map(|e| (e.pos.id(timeline), what(e))).collect()
}

fn attach(cat: &Catalog) -> Subscriber {
    cat.feed().subscribe(Arc::new(|| {}))
}

#[test]
fn a_subscriber_resumes_from_any_event_after_a_kill() {
    for seed in 1..=4u64 {
        let mut rng = Rng(seed);
        let (wal, ck) = (MemStorage::new(), MemStorage::new());
        let mut next = 0i64;
        let live = Catalog::new();
        let d = open(&wal, &ck, &live, SyncMode::Always);
        create(&live);
        let _a = attach(&live);
        let mut from_start = Cursor::now(&live, "t");
        let mut seen = Vec::new();
        for _ in 0..40 {
            write(&live, &mut rng, &mut next);
            if rng.below(3) == 0 {
                seen.extend(drain(&live, &mut from_start).expect("live"));
            }
        }
        seen.extend(drain(&live, &mut from_start).expect("live"));
        assert!(seen.iter().any(|(id, _)| id.contains('.')), "seed {seed}: an event before its record's last");
        let last_seen = seen.last().and_then(|(id, _)| Pos::parse_id(id)).map(|(_, p)| p);
        assert_eq!(Some(from_start.position()), last_seen, "seed {seed}: a cursor stands at its last event");
        // kill -9: the disks keep what was synced, which under `always` is everything.
        drop((from_start, _a, d));
        let (wal, ck) = (wal.crash(|_, _| 0), ck.crash(|_, _| 0));
        let back = Catalog::new();
        let _d = open(&wal, &ck, &back, SyncMode::Always);
        assert_eq!(back.feed().epoch(), live.feed().epoch(), "seed {seed}: the same timeline");
        let _b = attach(&back);
        let mut after_restart = Cursor::now(&back, "t");
        for _ in 0..20 {
            write(&back, &mut rng, &mut next);
        }
        let all: Got = seen.iter().cloned().chain(drain(&back, &mut after_restart).expect("new")).collect();
        for (i, (id, _)) in seen.iter().enumerate() {
            let mut c = Cursor::after_id(&back, "t", id).expect("resumable");
            assert_eq!(drain(&back, &mut c).expect("resumed"), all[i + 1..], "seed {seed}: after {id}");
        }
        // Caught up from the log while writes go on: the log's page, then the ring's events.
        let mut c = Cursor::after_id(&back, "t", &seen[0].0).expect("resumable");
        let first_page = summarize(&back, c.read(&back, 7).expect("from the log"));
        assert!(!first_page.is_empty() && !c.in_ring(), "seed {seed}: the first page came from the log");
        for _ in 0..10 {
            write(&back, &mut rng, &mut next);
        }
        let newer = drain(&back, &mut after_restart).expect("new");
        let rest = drain(&back, &mut c).expect("then the ring");
        let want: Got = all[1..].iter().cloned().chain(newer).collect();
        assert_eq!(first_page.into_iter().chain(rest).collect::<Got>(), want, "seed {seed}: hand-over");
        assert!(c.in_ring(), "seed {seed}: reading the ring at the end");
        // Writes after a checkpoint only: the log no longer reaches back.
        back.checkpoint().expect("checkpoint");
        write(&back, &mut rng, &mut next);
        back.checkpoint().expect("checkpoint");
        match Cursor::after_id(&back, "t", &seen[0].0) {
            Err(CursorError::Gone(m)) => assert!(m.contains("no longer in the log"), "{m}"),
            other => panic!("seed {seed}: {other:?}"),
        }
    }
}

#[test]
fn positions_of_another_history_are_gone() {
    let (wal, ck) = (MemStorage::new(), MemStorage::new());
    let relaxed = SyncMode::parse("interval=50").expect("mode");
    let live = Catalog::new();
    let d = open(&wal, &ck, &live, relaxed);
    create(&live);
    let _a = attach(&live);
    let mut c = Cursor::now(&live, "t");
    let (mut rng, mut next) = (Rng(9), 0);
    for _ in 0..10 {
        write(&live, &mut rng, &mut next);
    }
    let got = drain(&live, &mut c).expect("live");
    drop((c, _a, d));
    let back = Catalog::new();
    let _d = open(&wal.crash(|_, _| 0), &ck.crash(|_, _| 0), &back, SyncMode::Always);
    assert_ne!(back.feed().epoch(), live.feed().epoch(), "a relaxed run may have lost what it published");
    match Cursor::after_id(&back, "t", &got[0].0) {
        Err(CursorError::Gone(m)) => assert!(m.contains("another history"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(Cursor::after_id(&back, "t", "12-x"), Err(CursorError::BadId(_))));
    // In memory: what the ring never held is gone (there is no log to read).
    let mem = Catalog::new();
    create(&mem);
    write(&mem, &mut rng, &mut next);
    let _m = attach(&mem);
    let id = format!("{}-1", mem.feed().epoch());
    assert!(matches!(Cursor::after_id(&mem, "t", &id), Err(CursorError::Gone(_))));
    let last = format!("{}-{}", mem.feed().epoch(), mem.feed().last_lsn());
    assert!(Cursor::after_id(&mem, "t", &last).is_ok(), "nothing after the newest write is missing");
}
