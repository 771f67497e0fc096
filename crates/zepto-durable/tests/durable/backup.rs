//! Online backups and restores on real directories: a restored database holds exactly what the
//! original had when the backup cut it (memory and history alike), whatever was written after;
//! a backup killed part-way leaves the previous one whole; a later backup into the same
//! directory copies only the history files it lacks; a backup place takes one database's
//! backups; a restore refuses a damaged backup and a directory that is not empty.

use crate::common;

use common::{batch, dump, schema, DAY};
use std::path::Path;
use std::sync::Arc;
use zepto_durable::backup::restore;
use zepto_durable::{Durable, Options};
use zepto_storage::{Catalog, Table, TableOptions};
use zepto_wal::{DirStorage, SyncMode};

fn open(dir: &Path, cat: &Catalog) -> Arc<Durable> {
    let s = |sub: &str| -> Arc<dyn zepto_wal::Storage> { Arc::new(DirStorage::open(&dir.join(sub)).expect("dir")) };
    let opts = Options { checkpoint_bytes: 0, sync: SyncMode::Always, ..Options::default() };
    Durable::open(s("wal"), s("checkpoint"), s("history"), cat, opts, |_| {}).expect("open").0
}

fn tmp(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("zepto-backup-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn restored(backup: &Path, name: &str) -> Vec<String> {
    let dir = tmp(name);
    restore(backup, &dir).expect("restore");
    let cat = Catalog::new();
    let _d = open(&dir, &cat);
    let rows = dump(&cat);
    let _ = std::fs::remove_dir_all(&dir);
    rows
}

#[test]
fn a_restore_holds_what_the_backup_cut_and_backups_are_incremental() {
    let (src, dest) = (tmp("src"), tmp("dest"));
    let live = Catalog::new();
    let d = open(&src, &live);
    let t = Table::new("t", schema(), &TableOptions::default()).expect("table");
    live.create(t, false).expect("create");
    live.append("t", batch(0, 500, 1)).expect("append");
    live.append("t", batch(3, 500, 2)).expect("append");
    d.tier(&live, "t", 2 * DAY).expect("tier the first days to history");
    let first = d.backup(&live, &dest).expect("backup");
    assert!(first.history_files > 0 && first.history_copied == first.history_files, "{first}");
    let at_first = dump(&live);
    // Written after the backup: not in it.
    live.append("t", batch(5, 300, 3)).expect("append");
    assert_eq!(restored(&dest, "r1"), at_first);

    // A later backup copies no history file again, and holds the later rows.
    let second = d.backup(&live, &dest).expect("backup");
    assert_eq!((second.history_copied, second.history_files), (0, first.history_files), "{second}");
    assert!(second.lsn > first.lsn);
    let at_second = dump(&live);
    assert_eq!(restored(&dest, "r2"), at_second);

    // A backup killed part-way (table files of a later LSN, no manifest) leaves the last one.
    let ck = dest.join("checkpoint");
    std::fs::write(ck.join(format!("{:020}-00000.arrow", second.lsn + 50)), b"torn").expect("write");
    std::fs::write(ck.join(format!("{:020}.manifest.tmp", second.lsn + 50)), b"zeptodb-checkpoint 1\n").expect("write");
    assert_eq!(restored(&dest, "r3"), at_second);

    // The restored directory logs on from the backup's LSN: a write there survives a restart.
    let dir = tmp("r4");
    restore(&dest, &dir).expect("restore");
    {
        let cat = Catalog::new();
        let _d = open(&dir, &cat);
        cat.append("t", batch(9, 10, 4)).expect("append after restore");
    }
    let cat = Catalog::new();
    let _d = open(&dir, &cat);
    assert_eq!(dump(&cat).len(), at_second.len() + 10);
    for p in [&src, &dest, &dir] {
        let _ = std::fs::remove_dir_all(p);
    }
}

#[test]
fn a_restore_refuses_a_damaged_backup_and_a_directory_in_use() {
    let (src, dest) = (tmp("src2"), tmp("dest2"));
    let live = Catalog::new();
    let d = open(&src, &live);
    live.create(Table::new("t", schema(), &TableOptions::default()).expect("table"), false).expect("create");
    live.append("t", batch(0, 100, 1)).expect("append");
    let b = d.backup(&live, &dest).expect("backup");
    let into = tmp("into2");
    std::fs::create_dir_all(&into).expect("dir");
    std::fs::write(into.join("something"), b"x").expect("write");
    let e = restore(&dest, &into).expect_err("not empty");
    assert!(e.to_string().contains("is not empty"), "{e}");
    // One flipped byte in a table file: refused whole, nothing laid out.
    let file = dest.join("checkpoint").join(format!("{:020}-00000.arrow", b.lsn));
    let mut bytes = std::fs::read(&file).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&file, bytes).expect("write");
    let fresh = tmp("fresh2");
    assert!(restore(&dest, &fresh).is_err());
    assert!(
        !fresh.join("checkpoint").exists()
            || std::fs::read_dir(fresh.join("checkpoint")).expect("dir").next().is_none()
    );
    for p in [&src, &dest, &into, &fresh] {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// The table files in a checkpoint directory, sorted.
fn table_files(ck: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(ck)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".arrow"))
        .collect();
    names.sort();
    names
}

/// Tables `cold` and `hot`, `rows` rows each.
fn cold_and_hot(live: &Catalog, rows: usize) {
    for name in ["cold", "hot"] {
        live.create(Table::new(name, schema(), &TableOptions::default()).expect("table"), false).expect("create");
        live.append(name, batch(0, rows, 1)).expect("append");
    }
}

#[test]
fn unchanged_tables_keep_their_files_in_later_backups_checkpoints_and_restarts() {
    let (src, dest) = (tmp("src3"), tmp("dest3"));
    let live = Catalog::new();
    let d = open(&src, &live);
    cold_and_hot(&live, 400);
    let first = d.backup(&live, &dest).expect("backup");
    assert_eq!((first.tables, first.tables_kept), (2, 0), "{first}");

    // Only `hot` changes: `cold`'s file of the first backup is named again, not rewritten.
    live.append("hot", batch(1, 200, 2)).expect("append");
    let second = d.backup(&live, &dest).expect("backup");
    assert_eq!(second.tables_kept, 1, "{second}");
    assert!(second.bytes < first.bytes, "only one table written: {second} after {first}");
    let ck = dest.join("checkpoint");
    let held = table_files(&ck);
    assert_eq!(held.len(), 2, "the first backup's other file is gone: {held:?}");
    assert!(held.iter().any(|n| n.starts_with(&format!("{:020}-", first.lsn))), "{held:?}");
    assert_eq!(restored(&dest, "r5"), dump(&live));

    // A failed write into the table moves its stamp on too: written again, never stale.
    assert!(live.append("cold", vec![]).is_err());
    live.append("hot", batch(2, 50, 3)).expect("append");
    let third = d.backup(&live, &dest).expect("backup");
    assert_eq!(third.tables_kept, 0, "{third}");
    assert_eq!(restored(&dest, "r6"), dump(&live));

    // The data directory's own checkpoints keep unchanged tables' files the same way, and
    // recovery reads a checkpoint naming an older checkpoint's file.
    let c1 = d.checkpoint(&live).expect("checkpoint").expect("written");
    assert_eq!(c1.kept, 0);
    live.append("hot", batch(3, 10, 4)).expect("append");
    // The server's maintenance (retention, tiering) finding nothing to do changes no stamp.
    d.maintain(&live, 30 * DAY).expect("maintenance");
    let c2 = d.checkpoint(&live).expect("checkpoint").expect("written");
    assert_eq!((c2.kept, c2.tables), (1, 2));
    assert_eq!(c2.written_bytes() + c2.kept_bytes, c2.bytes);
    let files = table_files(&src.join("checkpoint"));
    assert!(files.iter().any(|n| n.starts_with(&format!("{:020}-", c1.lsn))), "{files:?}");
    let want = dump(&live);
    drop(d);
    let cat = Catalog::new();
    let d = open(&src, &cat);
    assert_eq!(dump(&cat), want);
    // A restart keeps what is unchanged: `cold`, loaded from the checkpoint, keeps its file;
    // `hot`, changed since the restart, is written.
    cat.append("hot", batch(4, 10, 5)).expect("append");
    let c3 = d.checkpoint(&cat).expect("checkpoint").expect("written");
    assert_eq!((c3.kept, c3.tables), (1, 2));
    let b = d.backup(&cat, &dest).expect("backup after the restart");
    assert_eq!(b.tables_kept, 1, "{b}");
    assert_eq!(restored(&dest, "r7"), dump(&cat));
    drop(d);
    let cat2 = Catalog::new();
    let _d = open(&src, &cat2);
    assert_eq!(dump(&cat2), dump(&cat));
    for p in [&src, &dest] {
        let _ = std::fs::remove_dir_all(p);
    }
}

#[test]
fn a_kept_file_is_read_back_first_and_another_history_is_refused() {
    let (src, dest) = (tmp("src4"), tmp("dest4"));
    let live = Catalog::new();
    let d = open(&src, &live);
    cold_and_hot(&live, 300);
    // A damaged file of a table that does not change is written again, not named forever.
    let c1 = d.checkpoint(&live).expect("checkpoint").expect("written");
    let ck = src.join("checkpoint");
    let cold = ck.join(format!("{:020}-00000.arrow", c1.lsn));
    let mut bytes = std::fs::read(&cold).expect("the cold table's file");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&cold, bytes).expect("damage it");
    live.append("hot", batch(1, 10, 2)).expect("append");
    let c2 = d.checkpoint(&live).expect("checkpoint").expect("written");
    assert_eq!(c2.kept, 0, "the damaged file is not kept");
    assert!(!cold.exists(), "and goes with its checkpoint");

    // A restored copy backing up, unchanged, into the place the original backs up to: the
    // newer backup there names a file of the copy's cut. Refused; the newer backup stays whole.
    d.backup(&live, &dest).expect("backup");
    let clone_dir = tmp("clone4");
    restore(&dest, &clone_dir).expect("restore a copy");
    live.append("hot", batch(2, 10, 3)).expect("append");
    let second = d.backup(&live, &dest).expect("a later backup");
    assert_eq!(second.tables_kept, 1, "{second}");
    let want = dump(&live);
    let clone = Catalog::new();
    let cd = open(&clone_dir, &clone);
    let e = cd.backup(&clone, &dest).expect_err("a restored copy is a database of its own");
    assert!(e.to_string().contains("another database"), "{e}");
    assert_eq!(restored(&dest, "r8"), want);
    // A place written before places had owners: the copy's cut names a file of the newer
    // backup there. Refused too, and the place is not claimed.
    std::fs::remove_file(dest.join("checkpoint").join("backup-of")).expect("an unowned place");
    let e = cd.backup(&clone, &dest).expect_err("the copy's cut is the first backup's LSN");
    assert!(e.to_string().contains("another history"), "{e}");
    assert!(!dest.join("checkpoint").join("backup-of").exists());
    assert_eq!(restored(&dest, "r8b"), want);
    for p in [&src, &dest, &clone_dir] {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// [`batch`] with every `ok` flipped: other rows, Parquet files of the same lengths.
fn flipped(day: i64, n: usize, seed: i64) -> Vec<zepto_storage::Column> {
    let mut cols = batch(day, n, seed);
    let mut ok = zepto_storage::ColumnBuilder::new(zepto_storage::DataType::Bool, n);
    for i in 0..n {
        ok.push_value(&zepto_storage::Value::Bool(i % 2 == 1)).expect("push");
    }
    cols[4] = ok.finish();
    cols
}

#[test]
fn a_table_made_again_never_takes_an_earlier_backups_history_file() {
    let (src, dest, bucket) = (tmp("src5"), tmp("dest5"), tmp("bucket5"));
    let live = Catalog::new();
    let d = open(&src, &live);
    let store = zepto_history::SharedStore::open(&bucket.display().to_string()).expect("a store in a directory");
    let make = |rows: Vec<zepto_storage::Column>| {
        live.create(Table::new("t", schema(), &TableOptions::default()).expect("table"), false).expect("create");
        live.append("t", rows).expect("append");
        d.tier(&live, "t", 2 * DAY).expect("tier");
    };
    make(batch(0, 400, 1));
    d.backup(&live, &dest).expect("backup");
    d.backup_to_store(&live, &store).expect("backup to a store");
    // Made again with other rows: its history's sequence starts over, its files are as long.
    live.drop_table("t", false).expect("drop");
    make(flipped(0, 400, 1));
    let want = dump(&live);
    let into_dir = d.backup(&live, &dest).expect("a later backup");
    let into_store = d.backup_to_store(&live, &store).expect("a later backup to the store");
    assert_eq!(restored(&dest, "r9"), want, "the directory's backup holds the table made again");
    assert_eq!(restored(&bucket, "r10"), want, "the store's backup holds the table made again");
    assert_eq!(into_dir.history_copied, into_dir.history_files, "{into_dir}");
    assert_eq!(into_store.history_copied, into_store.history_files, "{into_store}");
    for p in [&src, &dest, &bucket] {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// Every file under `dir` with its length, sorted.
fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let e = e.expect("entry");
            let meta = e.metadata().expect("metadata");
            if meta.is_dir() {
                todo.push(e.path());
            } else {
                out.push((e.path().strip_prefix(dir).expect("under dir").display().to_string(), meta.len()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_backup_place_takes_the_backups_of_one_database() {
    let (a_dir, b_dir, dest, bucket) = (tmp("srcA"), tmp("srcB"), tmp("dest6"), tmp("bucket6"));
    let (a, b) = (Catalog::new(), Catalog::new());
    let (da, db) = (open(&a_dir, &a), open(&b_dir, &b));
    assert_ne!(da.database_id(), db.database_id());
    let store = zepto_history::SharedStore::open(&bucket.display().to_string()).expect("a store in a directory");
    for (cat, d, seed) in [(&a, &da, 1), (&b, &db, 2)] {
        cat.create(Table::new("t", schema(), &TableOptions::default()).expect("table"), false).expect("create");
        cat.append("t", batch(0, 400, seed)).expect("append");
        d.tier(cat, "t", 2 * DAY).expect("tier");
    }
    da.backup(&a, &dest).expect("A's backup");
    da.backup_to_store(&a, &store).expect("A's backup to a store");
    let want = dump(&a);
    let (held, held_store) = (listing(&dest), listing(&bucket));

    // B's backups into A's places: refused before anything there changes.
    let e = db.backup(&b, &dest).expect_err("another database's place");
    assert!(e.to_string().contains("another database"), "{e}");
    let e = db.backup_to_store(&b, &store).expect_err("another database's store");
    assert!(e.to_string().contains("another database"), "{e}");
    assert_eq!((listing(&dest), listing(&bucket)), (held.clone(), held_store));
    assert_eq!(restored(&dest, "r11"), want);
    assert_eq!(restored(&bucket, "r12"), want);

    // A place written before places had owners, holding a file of the name of one of B's of
    // another size: refused, never copied over.
    std::fs::remove_file(dest.join("checkpoint").join("backup-of")).expect("an unowned place");
    let b_file = b.snapshot("t").expect("t").history().files[0].path.clone();
    let stranger = dest.join("history").join(&b_file);
    std::fs::create_dir_all(stranger.parent().expect("a day directory")).expect("mkdir");
    std::fs::write(&stranger, b"not B's file").expect("write");
    let before = listing(&dest);
    let e = db.backup(&b, &dest).expect_err("a file of the name and another size");
    assert!(e.to_string().contains("another database's backups"), "{e}");
    assert_eq!(listing(&dest), before);
    assert_eq!(std::fs::read(&stranger).expect("read"), b"not B's file");

    // A's own backups go on there, and claim the place again.
    std::fs::remove_file(&stranger).expect("remove");
    da.backup(&a, &dest).expect("A's later backup");
    assert!(dest.join("checkpoint").join("backup-of").exists());
    assert_eq!(restored(&dest, "r13"), want);
    // In its own place, a damaged copy of one of its history files is copied again.
    let a_file = a.snapshot("t").expect("t").history().files[0].path.clone();
    std::fs::write(dest.join("history").join(&a_file), b"torn").expect("damage");
    da.backup(&a, &dest).expect("A's backup copies its file again");
    assert_eq!(restored(&dest, "r14"), want);
    // A data directory is no backup place: its checkpoints stay.
    let held_b = listing(&b_dir.join("checkpoint"));
    let e = da.backup(&a, &b_dir).expect_err("B's data directory");
    assert!(e.to_string().contains("data directory"), "{e}");
    assert_eq!(listing(&b_dir.join("checkpoint")), held_b);
    for p in [&a_dir, &b_dir, &dest, &bucket] {
        let _ = std::fs::remove_dir_all(p);
    }
}
