//! What recovery reads back from disk: WAL segments, record payloads, checkpoint table files
//! and checkpoint manifests. Their checksums catch random damage, so the targets aim past them
//! too: a record payload and a table file are decoded raw, and a manifest gets a right checksum.

use crate::seeds;
use zepto_durable::changes;
use zepto_durable::checkpoint::{self, table_file};
use zepto_wal::format::segment_name;
use zepto_wal::{replay, MemStorage, RecoveryMode, ReplayOptions, Storage};

/// Every record of a replay: its LSN and payload.
type Records = Vec<(u64, Vec<u8>)>;

fn replay_all(storage: &MemStorage, mode: RecoveryMode) -> (Result<zepto_wal::ReplayReport, String>, Records) {
    let opts = ReplayOptions { mode, after: 0, rows_of: Some(changes::appended_rows) };
    let mut records = Vec::new();
    let r = replay(storage, opts, |lsn, p| records.push((lsn, p.to_vec()))).map_err(|e| e.to_string());
    (r, records)
}

/// `data` as the log's one segment. Strict recovery either replays it or refuses and leaves it
/// as it was; point-in-time recovery cuts any damage off, after which the log replays clean
/// with the same records.
pub fn wal(data: &[u8]) {
    let name = segment_name(1);
    let storage = MemStorage::new();
    storage.append(&name, data).expect("memory storage appends");
    let (strict, _) = replay_all(&storage, RecoveryMode::Strict);
    if strict.is_err() {
        assert_eq!(storage.read(&name).ok().as_deref(), Some(data), "strict recovery refused but changed the log");
    }
    let (first, records) = replay_all(&storage, RecoveryMode::PointInTime);
    if first.is_ok() {
        let (again, same) = replay_all(&storage, RecoveryMode::PointInTime);
        let again = again.expect("a recovered log replays");
        assert!(again.corruption.is_none() && again.torn.is_none(), "recovery left damage: {again:?}");
        assert_eq!(same, records, "a second replay saw other records");
    }
}

/// `data` as one record's payload, applied to a catalog holding the sample table. Nothing to
/// assert beyond no panic: recovery refuses to start on a record that does not apply, so a
/// half-applied record never serves.
pub fn changes(data: &[u8]) {
    let _ = changes::appended_rows(data);
    let engine = seeds::sample_engine();
    let _ = changes::apply(engine.catalog(), data);
}

/// `data` as a checkpoint's table file; a table read from it writes back and reads the same.
pub fn table_file(data: &[u8]) {
    let Ok(t) = table_file::read_table(data.to_vec()) else { return };
    let out = table_file::write_table(std::sync::Arc::new(t.clone()), Vec::new()).expect("a table read back writes");
    let back = table_file::read_table(out).expect("a written table reads");
    assert_eq!(back.row_count(), t.row_count());
    assert_eq!(back.schema().columns, t.schema().columns);
}

/// `data` as the body of the manifest of a checkpoint whose one table file is whole, with a
/// checksum line that matches: the manifest's own parser, past the checksum.
pub fn manifest(data: &[u8]) {
    let storage = MemStorage::new();
    let table = seeds::sample_engine().catalog().snapshot("t").expect("the sample table exists");
    checkpoint::write(
        &storage,
        seeds::CHECKPOINT_LSN,
        vec![(table, zepto_storage::Stamp::next())],
        &[],
        &checkpoint::Reuse::none(),
    )
    .expect("a checkpoint writes to memory");
    let name = checkpoint::manifest_name(seeds::CHECKPOINT_LSN);
    storage.remove(&name).expect("the manifest is there");
    let mut text = data.to_vec();
    text.extend_from_slice(format!("crc {:08x}\n", crc32fast::hash(data)).as_bytes());
    storage.append(&name, &text).expect("memory storage appends");
    let _ = checkpoint::load(&storage, seeds::CHECKPOINT_LSN, |_, _| {});
}
