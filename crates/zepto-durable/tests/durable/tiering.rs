//! The Parquet history under failure: a workload that appends, checkpoints, tiers rows to
//! history files, sets a TTL and applies retention, with the log, checkpoint and history
//! storages all "dying" after every single storage operation in turn. After each crash the
//! recovered database must hold exactly what was acknowledged (or that plus the one change in
//! flight), counting rows in memory and in history alike, and every history file it names
//! must be there (recovery refuses otherwise).

use crate::common;

use common::{batch, dump, schema, DAY};
use std::sync::Arc;
use zepto_durable::{Durable, Options};
use zepto_storage::{Catalog, Table, TableOptions};
use zepto_wal::{MemStorage, Storage, SyncMode};

fn open(wal: &MemStorage, ck: &MemStorage, hist: &MemStorage, cat: &Catalog) -> Result<Arc<Durable>, String> {
    let opts = Options { checkpoint_bytes: 0, sync: SyncMode::Always, ..Options::default() };
    let s = |m: &MemStorage| -> Arc<dyn zepto_wal::Storage> { Arc::new(m.clone()) };
    Durable::open(s(wal), s(ck), s(hist), cat, opts, |_| {}).map(|(d, _)| d).map_err(|e| e.to_string())
}

type Step = Box<dyn Fn(&Catalog, &Durable) -> Result<(), String>>;

fn steps() -> Vec<Step> {
    let e = |e: zepto_storage::StorageError| e.to_string();
    vec![
        Box::new(move |c, _| {
            c.create(Table::new("t", schema(), &TableOptions::default()).map_err(e)?, false).map(|_| ()).map_err(e)
        }),
        Box::new(move |c, _| c.append("t", batch(0, 40, 1)).map(|_| ()).map_err(e)),
        Box::new(move |c, _| c.append("t", batch(2, 30, 2)).map(|_| ()).map_err(e)),
        Box::new(move |c, d| d.checkpoint(c).map(|_| ()).map_err(|x| x.to_string())),
        Box::new(move |c, d| d.tier(c, "t", DAY).map(|_| ()).map_err(e)),
        Box::new(move |c, _| c.append("t", batch(1, 20, 3)).map(|_| ()).map_err(e)),
        Box::new(move |c, d| d.tier(c, "t", 3 * DAY).map(|_| ()).map_err(e)),
        Box::new(move |c, d| d.checkpoint(c).map(|_| ()).map_err(|x| x.to_string())),
        Box::new(move |c, _| c.append("t", batch(3, 10, 4)).map(|_| ()).map_err(e)),
        Box::new(move |c, _| c.set_ttl("t", Some(2 * DAY)).map_err(e)),
        // "Now" is day 4 + 1 h: rows before day 2 go, with the files of days 0 and 1.
        Box::new(move |c, d| d.retain(c, "t", 4 * DAY + 3_600_000_000_000).map(|_| ()).map_err(e)),
        Box::new(move |c, _| c.append("t", batch(4, 10, 5)).map(|_| ()).map_err(e)),
    ]
}

/// Run the workload until the storages fail; the states recovery may produce.
fn workload(wal: &MemStorage, ck: &MemStorage, hist: &MemStorage, budget: usize) -> (Vec<Vec<String>>, bool) {
    wal.fail_after_ops(Some(budget));
    let live = Catalog::new();
    let Ok(d) = open(wal, ck, hist, &live) else { return (vec![Vec::new()], false) };
    let mut states = vec![dump(&live)];
    for (i, step) in steps().iter().enumerate() {
        match step(&live, &d) {
            Ok(()) => states = vec![dump(&live)],
            Err(_) => {
                // The change in flight may have reached the disk: replay it on a copy of the
                // acknowledged state (memory only, so tiering and checkpoints are no-ops there
                // and the logical content is what matters).
                let model = Catalog::new();
                let (w, c, h) = (MemStorage::new(), MemStorage::new(), MemStorage::new());
                let md = open(&w, &c, &h, &model).expect("model");
                for s in &steps()[..=i] {
                    s(&model, &md).expect("the model accepts every change");
                }
                states.push(dump(&model));
                return (states, false);
            }
        }
    }
    (states, true)
}

#[test]
fn a_crash_at_every_step_of_tiering_and_retention_loses_nothing_acknowledged() {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut completed = false;
    let mut crashes = 0;
    for budget in 0..2000 {
        let wal = MemStorage::new();
        let (ck, hist) = (wal.sibling(), wal.sibling());
        let (states, all_ok) = workload(&wal, &ck, &hist, budget);
        for keep_some in [false, true] {
            let mut keep = |_: &str, unsynced: usize| if keep_some { (rnd() as usize) % (unsynced + 1) } else { 0 };
            let (w2, c2, h2) = (wal.crash(&mut keep), ck.crash(&mut keep), hist.crash(&mut keep));
            let rec = Catalog::new();
            open(&w2, &c2, &h2, &rec).unwrap_or_else(|e| panic!("budget {budget}: recovery failed: {e}"));
            let got = dump(&rec);
            assert!(states.contains(&got), "budget {budget}: recovered {got:#?}\nexpected one of {states:#?}");
            crashes += 1;
        }
        if all_ok {
            completed = true;
            break;
        }
    }
    assert!(completed, "the workload never ran to the end: raise the budget limit");
    assert!(crashes > 50, "only {crashes} crash points");
}

#[test]
fn tiered_rows_survive_restarts_through_log_and_checkpoint() {
    let (wal, ck, hist) = (MemStorage::new(), MemStorage::new(), MemStorage::new());
    let live = Catalog::new();
    let d = open(&wal, &ck, &hist, &live).expect("open");
    for s in &steps()[..7] {
        s(&live, &d).expect("step");
    }
    let t = live.snapshot("t").expect("t");
    assert!(t.history().files.len() >= 3, "tiering wrote {} files", t.history().files.len());
    assert!(t.row_count() < 90, "rows left memory");
    let want = dump(&live);
    // Through the log alone.
    let again = Catalog::new();
    open(&wal, &ck, &hist, &again).expect("reopen");
    assert_eq!(dump(&again), want);
    // Through a checkpoint (the log after it is empty).
    let d2 = open(&wal, &ck, &hist, &Catalog::new()).expect("reopen");
    drop(d2);
    let third = Catalog::new();
    let d3 = open(&wal, &ck, &hist, &third).expect("reopen");
    d3.checkpoint(&third).expect("checkpoint");
    let fourth = Catalog::new();
    open(&wal, &ck, &hist, &fourth).expect("reopen");
    assert_eq!(dump(&fourth), want);
    // A history file gone missing refuses the start, naming it.
    let victim = t.history().files[0].path.clone();
    use zepto_wal::Storage;
    hist.remove(&victim).expect("remove");
    let err = open(&wal, &ck, &hist, &Catalog::new()).expect_err("a missing history file must refuse the start");
    assert!(err.contains(&victim), "{err}");
}

/// Tiering while rows before its cut keep arriving: an attempt whose table changed under it
/// (a conflict) is retried, and its files, never logged, go at once. The history then holds
/// exactly the files the table names, as a tool reading the directory would count its rows.
#[test]
fn a_tiering_retried_leaves_no_files_of_its_own_behind() {
    let (wal, ck, hist) = (MemStorage::new(), MemStorage::new(), MemStorage::new());
    let cat = Catalog::new();
    let d = open(&wal, &ck, &hist, &cat).expect("open");
    cat.create(Table::new("t", schema(), &TableOptions::default()).expect("table"), false).expect("create");
    cat.append("t", batch(0, 200, 1)).expect("append");
    let done = std::sync::atomic::AtomicBool::new(false);
    let (mut tierings, mut conflicts) = (0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            for seed in 2..300 {
                cat.append("t", batch(0, 20, seed)).expect("append");
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            tierings += 1;
            if let Err(e) = d.tier(&cat, "t", 2 * DAY) {
                assert!(matches!(e, zepto_storage::StorageError::Conflict(_)), "{e}");
                conflicts += 1;
            }
        }
    });
    let named: std::collections::BTreeSet<String> =
        cat.snapshot("t").expect("t").history().files.iter().map(|f| f.path.clone()).collect();
    let held: std::collections::BTreeSet<String> =
        hist.list().expect("list").into_iter().filter(|n| n.ends_with(".parquet")).collect();
    assert!(!named.is_empty());
    assert_eq!(held, named, "{tierings} tierings, {conflicts} gave up");
}
