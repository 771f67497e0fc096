//! The write path's panic policy (`zepto_storage::logged`): a panic while a logged change is
//! applied stops the process, and the restart recovers the change, whole, from the WAL, with
//! every acknowledged row. The panicking writer runs in a child process (this test binary run
//! again) so the abort can be observed; an in-memory catalog, with no log to recover from,
//! lets the panic unwind instead.

use std::path::Path;
use std::sync::Arc;
use zepto_durable::{Durable, Options};
use zepto_storage::{Catalog, Change, Column, ColumnData, ColumnDef, DataType, Schema, Table, TableOptions};
use zepto_wal::{DirStorage, SyncMode};

const CHILD: &str = "ZEPTO_PANIC_POLICY_CHILD_DIR";
const TEST: &str = "panic_policy::a_panic_while_applying_a_logged_change_aborts_and_recovery_has_it";

fn schema() -> Schema {
    Schema {
        columns: vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "x".into(), data_type: DataType::Int64 },
        ],
    }
}

fn batch(ts: &[i64]) -> Vec<Column> {
    vec![
        Column::from_data(ColumnData::Timestamp(ts.to_vec().into())),
        Column::from_data(ColumnData::Int64(ts.iter().map(|t| t * 10).collect())),
    ]
}

fn open(dir: &Path, catalog: &Catalog) -> Arc<Durable> {
    let s = |sub: &str| -> Arc<dyn zepto_wal::Storage> {
        Arc::new(DirStorage::open(&dir.join(sub)).expect("storage directory"))
    };
    let opts = Options { checkpoint_bytes: 0, sync: SyncMode::Always, ..Options::default() };
    Durable::open(s("wal"), s("checkpoints"), s("history"), catalog, opts, |_| {}).expect("open").0
}

/// The child: acknowledged rows, then a change that is logged and panics while applied.
fn child(dir: &Path) {
    let catalog = Catalog::new();
    let _durable = open(dir, &catalog);
    catalog.create(Table::new("t", schema(), &TableOptions::default()).expect("table"), false).expect("create");
    catalog.append("t", batch(&[1, 2, 3])).expect("acknowledged");
    let logged_rows = batch(&[4, 5]);
    let _ = catalog.modify("t", |t| {
        let logged = catalog.log(&[Change::Append { table: t.name(), columns: &logged_rows }])?;
        logged.apply(|| -> Result<(), zepto_storage::StorageError> { panic!("injected fault after the WAL write") })
    });
    eprintln!("the process survived a panic after logging");
}

#[test]
fn a_panic_while_applying_a_logged_change_aborts_and_recovery_has_it() {
    if let Some(dir) = std::env::var_os(CHILD) {
        child(Path::new(&dir));
        return;
    }
    let dir = std::env::temp_dir().join(format!("zepto-panic-policy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, &dir)
        .output()
        .expect("run the child");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child must not finish: {stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "SIGABRT expected: {stderr}");
    }
    assert!(stderr.contains("FATAL: a panic while applying a logged change"), "{stderr}");
    assert!(!stderr.contains("survived"), "{stderr}");

    // The restart replays the log: the acknowledged rows and the logged change, whole.
    let catalog = Catalog::new();
    let _durable = open(&dir, &catalog);
    let t = catalog.snapshot("t").expect("table t recovered");
    let mut ts: Vec<i64> =
        t.partitions().iter().flat_map(|p| p.columns()[0].as_i64_slice().unwrap_or(&[]).to_vec()).collect();
    ts.sort();
    assert_eq!(ts, vec![1, 2, 3, 4, 5]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn in_memory_a_panic_while_applying_unwinds_to_the_caller() {
    let catalog = Catalog::new();
    catalog.create(Table::new("t", schema(), &TableOptions::default()).expect("table"), false).expect("create");
    let rows = batch(&[1]);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        catalog.modify("t", |t| {
            let logged = catalog.log(&[Change::Append { table: t.name(), columns: &rows }])?;
            logged.apply(|| -> Result<(), zepto_storage::StorageError> { panic!("injected") })
        })
    }));
    assert!(r.is_err(), "the panic reaches the caller");
    // An error from applying is returned as it is.
    let e = catalog
        .modify("t", |t| {
            let logged = catalog.log(&[Change::Append { table: t.name(), columns: &rows }])?;
            logged.apply(|| Err::<(), _>(zepto_storage::StorageError::Invalid("refused".into())))
        })
        .expect_err("the error comes back");
    assert!(e.to_string().contains("refused"));
}
