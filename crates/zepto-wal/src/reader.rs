//! Replay: every record of every segment, in LSN order.
//!
//! A damaged record at the very end of the last segment is a write the crash cut short: it was
//! never acknowledged under `--sync always`, so it is cut off (the file truncated there) and
//! reported. Damage anywhere else (a bad header, a gap in LSNs, a bad checksum with valid
//! records after it) stops replay with the file and offset, unless the caller asks to repair:
//! then the log is cut at the damage, later segments removed, and the cut reported.

use crate::format::{decode, parse_segment_name, Decoded, FRAME_LEN, HEADER_LEN, MAGIC, VERSION};
use crate::storage::Storage;
use crate::{Lsn, WalError};

#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// Cut the log at mid-log corruption instead of refusing to start.
    pub repair: bool,
    /// Records up to this LSN are already in a checkpoint: they are not applied (segments
    /// wholly before it are not even read), and the log must reach back to `after + 1`
    /// (0: no checkpoint, replay everything).
    pub after: Lsn,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
    /// Records applied (those after the checkpoint).
    pub records: u64,
    /// The last LSN in the log or the checkpoint (0 when both are empty).
    pub last_lsn: Lsn,
    /// A torn last write that was cut off: file and offset.
    pub torn: Option<(String, u64)>,
    /// Corruption cut off on request: file, offset and what was wrong.
    pub repaired: Option<(String, u64, String)>,
}

impl ReplayReport {
    /// Where the writer continues.
    pub fn next_lsn(&self) -> Lsn {
        self.last_lsn + 1
    }
}

/// Does a valid record with an LSN at or after `expect` start anywhere after `from`? (Tells a
/// torn tail from damage in the middle; only positions whose LSN field is plausible pay for a
/// checksum.)
fn valid_record_after(buf: &[u8], from: usize, expect: Lsn) -> bool {
    (from + 1..buf.len().saturating_sub(FRAME_LEN - 1)).any(|p| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[p + 8..p + 16]);
        let lsn = u64::from_le_bytes(b);
        lsn >= expect && lsn < expect.saturating_add(1 << 20) && matches!(decode(buf, p), Decoded::Record { .. })
    })
}

/// Replay into `apply`, in order.
pub fn replay(
    storage: &dyn Storage,
    opts: ReplayOptions,
    mut apply: impl FnMut(Lsn, &[u8]),
) -> Result<ReplayReport, WalError> {
    let mut segments: Vec<(Lsn, String)> =
        storage.list()?.into_iter().filter_map(|n| parse_segment_name(&n).map(|l| (l, n))).collect();
    segments.sort();
    let mut report = ReplayReport { last_lsn: opts.after, ..ReplayReport::default() };
    let mut expect: Option<Lsn> = None;
    let count = segments.len();
    if let Some((first, name)) = segments.first() {
        if *first > opts.after + 1 {
            return Err(WalError::Corrupt {
                file: name.clone(),
                offset: 0,
                reason: format!(
                    "the log starts at LSN {first} but the checkpoint ends at LSN {}: records are missing",
                    opts.after
                ),
            });
        }
    }
    for (k, (first, name)) in segments.iter().enumerate() {
        let last_segment = k + 1 == count;
        if let Some((next, _)) = segments.get(k + 1) {
            if *next <= opts.after + 1 && expect.is_none_or(|e| e == *first) {
                // Wholly inside the checkpoint (left by a checkpoint that could not delete it).
                expect = Some(*next);
                continue;
            }
        }
        let buf = storage.read(name)?;
        let corrupt =
            |offset: usize, reason: String| WalError::Corrupt { file: name.clone(), offset: offset as u64, reason };
        // Header.
        let header_ok = buf.len() >= HEADER_LEN
            && buf[..8] == MAGIC
            && buf[8..12] == VERSION.to_le_bytes()
            && buf[12..20] == first.to_le_bytes();
        if !header_ok {
            if last_segment && buf.len() < HEADER_LEN && MAGIC.starts_with(&buf[..buf.len().min(8)]) {
                // The crash cut the header of a brand-new segment.
                storage.truncate(name, 0)?;
                storage.remove(name)?;
                report.torn = Some((name.clone(), 0));
                break;
            }
            let e = corrupt(0, "bad segment header (magic, version or first LSN)".into());
            return cut(storage, opts, &segments[k..], 0, e, &mut report);
        }
        if let Some(e) = expect {
            if *first != e {
                let e = corrupt(0, format!("segment starts at LSN {first}, expected {e}"));
                return cut(storage, opts, &segments[k..], 0, e, &mut report);
            }
        }
        let mut pos = HEADER_LEN;
        loop {
            let want = expect.unwrap_or(*first);
            match decode(&buf, pos) {
                Decoded::End => break,
                Decoded::Record { lsn, payload, next } => {
                    if lsn != want {
                        let e = corrupt(pos, format!("record has LSN {lsn}, expected {want}"));
                        return cut(storage, opts, &segments[k..], pos, e, &mut report);
                    }
                    if lsn > opts.after {
                        apply(lsn, payload);
                        report.records += 1;
                    }
                    report.last_lsn = report.last_lsn.max(lsn);
                    expect = Some(lsn + 1);
                    pos = next;
                }
                d @ (Decoded::Truncated | Decoded::BadChecksum) => {
                    let torn = last_segment && !valid_record_after(&buf, pos, want);
                    if torn {
                        storage.truncate(name, pos as u64)?;
                        report.torn = Some((name.clone(), pos as u64));
                        return Ok(report);
                    }
                    let what = if d == Decoded::Truncated { "record cut short" } else { "checksum mismatch" };
                    let e = corrupt(pos, format!("{what} with records after it"));
                    return cut(storage, opts, &segments[k..], pos, e, &mut report);
                }
            }
        }
        if expect.is_none() {
            expect = Some(*first);
        }
    }
    Ok(report)
}

/// Corruption: refuse, or (repair) truncate the damaged segment at `offset` and drop the rest.
fn cut(
    storage: &dyn Storage,
    opts: ReplayOptions,
    from: &[(Lsn, String)],
    offset: usize,
    e: WalError,
    report: &mut ReplayReport,
) -> Result<ReplayReport, WalError> {
    if !opts.repair {
        return Err(e);
    }
    let (file, reason) = match &e {
        WalError::Corrupt { file, reason, .. } => (file.clone(), reason.clone()),
        other => (String::new(), other.to_string()),
    };
    if let Some((_, name)) = from.first() {
        if offset <= HEADER_LEN {
            storage.remove(name)?;
        } else {
            storage.truncate(name, offset as u64)?;
        }
    }
    for (_, name) in from.iter().skip(1) {
        storage.remove(name)?;
    }
    report.repaired = Some((file, offset as u64, reason));
    Ok(report.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;
    use crate::writer::{SyncMode, Wal};
    use std::sync::Arc;

    fn payload(i: u64) -> Vec<u8> {
        // Varying sizes, including empty records.
        (0..(i * 7 % 53)).map(|k| (i as u8).wrapping_add(k as u8)).collect()
    }

    type Records = Vec<(Lsn, Vec<u8>)>;

    fn read_all(st: &MemStorage, opts: ReplayOptions) -> Result<(Records, ReplayReport), WalError> {
        let mut out = Vec::new();
        let r = replay(st, opts, |l, p| out.push((l, p.to_vec())))?;
        Ok((out, r))
    }

    #[test]
    fn round_trip_across_segments_and_restarts() {
        let st = MemStorage::new();
        {
            let wal = Wal::open_with(Arc::new(st.clone()), SyncMode::Always, 1, 256).expect("open");
            for i in 1..=100 {
                assert_eq!(wal.append(&payload(i)).expect("append"), i);
            }
        }
        assert!(st.list().expect("list").len() > 3, "small segments rotate");
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("replays");
        assert_eq!(rep.records, 100);
        assert!(rep.torn.is_none());
        for (i, (l, p)) in recs.iter().enumerate() {
            assert_eq!((*l, p.clone()), (i as u64 + 1, payload(i as u64 + 1)));
        }
        // Continue after a restart, twice (the second restart before any append).
        drop(Wal::open_with(Arc::new(st.clone()), SyncMode::Always, rep.next_lsn(), 256).expect("open"));
        let wal = Wal::open_with(Arc::new(st.clone()), SyncMode::Always, rep.next_lsn(), 256).expect("reopen");
        assert_eq!(wal.append(b"more").expect("append"), 101);
        drop(wal);
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("replays");
        assert_eq!((rep.records, recs[100].1.as_slice()), (101, &b"more"[..]));
    }

    #[test]
    fn a_crash_keeps_every_acknowledged_record() {
        // Random appends, a crash keeping a random part of the unsynced bytes, replay: with
        // `always`, everything acknowledged is back, in order, and nothing else is invented.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..200 {
            let st = MemStorage::new();
            let wal = Wal::open_with(Arc::new(st.clone()), SyncMode::Always, 1, 300).expect("open");
            let n = rnd() % 40;
            for i in 1..=n {
                wal.append(&payload(i)).expect("append");
            }
            // A write that was in flight at the crash: written, never synced, not acknowledged.
            let _ = st.append(&st.list().expect("list").pop().expect("a segment"), &[0xAB; 7][..(rnd() % 8) as usize]);
            let crashed = st.crash(|_, unsynced| (rnd() as usize) % (unsynced + 1));
            std::mem::forget(wal); // no clean close: that would sync
            let (recs, rep) =
                read_all(&crashed, ReplayOptions::default()).unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert_eq!(rep.records, n, "round {round}");
            assert!(recs.iter().enumerate().all(|(i, (l, p))| *l == i as u64 + 1 && *p == payload(*l)));
            // And the log continues cleanly after the recovery.
            let wal = Wal::open_with(Arc::new(crashed.clone()), SyncMode::Always, rep.next_lsn(), 300).expect("reopen");
            wal.append(b"after").expect("append");
            drop(wal);
            let (_, rep2) = read_all(&crashed, ReplayOptions::default()).expect("replays again");
            assert_eq!((rep2.records, rep2.torn.clone()), (n + 1, None), "round {round}");
        }
    }

    #[test]
    fn damage_in_the_middle_is_refused_or_cut_on_request() {
        let st = MemStorage::new();
        {
            let wal = Wal::open_with(Arc::new(st.clone()), SyncMode::Always, 1, 1 << 20).expect("open");
            for i in 1..=10 {
                wal.append(&payload(i + 20)).expect("append");
            }
        }
        let name = st.list().expect("list")[0].clone();
        let clean = st.read(&name).expect("read");
        // Byte offset of record 4.
        let mut pos = HEADER_LEN;
        for _ in 0..3 {
            let Decoded::Record { next, .. } = decode(&clean, pos) else { panic!("record") };
            pos = next;
        }
        st.corrupt(&name, pos + FRAME_LEN + 1);
        let e = read_all(&st, ReplayOptions::default()).expect_err("corrupt");
        assert_eq!(
            e,
            WalError::Corrupt {
                file: name.clone(),
                offset: pos as u64,
                reason: "checksum mismatch with records after it".into()
            }
        );
        let (recs, rep) = read_all(&st, ReplayOptions { repair: true, after: 0 }).expect("repairs");
        assert_eq!(recs.len(), 3);
        assert_eq!(rep.repaired.as_ref().map(|r| r.1), Some(pos as u64));
        let (_, rep) = read_all(&st, ReplayOptions::default()).expect("clean after the cut");
        assert_eq!(rep.records, 3);
    }

    #[test]
    fn failures_poison_the_log() {
        let st = MemStorage::new();
        let wal = Wal::open(Arc::new(st.clone()), SyncMode::Always, 1).expect("open");
        wal.append(b"one").expect("append");
        st.fail_sync_after(0);
        assert!(matches!(wal.append(b"two"), Err(WalError::Poisoned(_))));
        assert!(matches!(wal.append(b"three"), Err(WalError::Poisoned(_))), "stays poisoned");
        let st = MemStorage::new();
        let wal = Wal::open(Arc::new(st.clone()), SyncMode::None, 1).expect("open");
        st.short_write_next(5);
        assert!(wal.append(b"a record longer than five bytes").is_err());
        assert!(matches!(wal.append(b"x"), Err(WalError::Poisoned(_))));
    }

    #[test]
    fn group_commit_from_many_threads() {
        let st = MemStorage::new();
        let wal = Arc::new(Wal::open_with(Arc::new(st.clone()), SyncMode::Always, 1, 4096).expect("open"));
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let w = wal.clone();
                std::thread::spawn(move || {
                    (0..500).map(|i| w.append(&[t as u8, (i % 251) as u8]).expect("append")).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut lsns: Vec<Lsn> = handles.into_iter().flat_map(|h| h.join().expect("thread")).collect();
        lsns.sort_unstable();
        assert_eq!(lsns, (1..=2000).collect::<Vec<_>>());
        assert_eq!(wal.durable_lsn(), 2000);
        drop(wal);
        let (recs, _) = read_all(&st, ReplayOptions::default()).expect("replays");
        assert_eq!(recs.len(), 2000);
    }

    #[test]
    fn interval_mode_syncs_in_the_background() {
        let st = MemStorage::new();
        let wal =
            Wal::open(Arc::new(st.clone()), SyncMode::Interval(std::time::Duration::from_millis(20)), 1).expect("open");
        wal.append(b"x").expect("append");
        let t0 = std::time::Instant::now();
        while wal.durable_lsn() < 1 {
            assert!(t0.elapsed() < std::time::Duration::from_secs(5), "the flusher never synced");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(SyncMode::parse("interval=50"), Some(SyncMode::Interval(std::time::Duration::from_millis(50))));
        assert_eq!(SyncMode::parse("interval=0"), None);
        assert_eq!(SyncMode::parse("sometimes"), None);
    }

    #[test]
    fn on_disk() {
        let dir = std::env::temp_dir().join(format!("zepto-wal-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let st = Arc::new(crate::storage::DirStorage::open(&dir).expect("dir"));
        {
            let wal = Wal::open_with(st.clone(), SyncMode::Always, 1, 200).expect("open");
            for i in 1..=50 {
                wal.append(&payload(i)).expect("append");
            }
        }
        // A torn write at the end of the newest segment, as a crash mid-write leaves it.
        let last = st.list().expect("list").pop().expect("segment");
        st.append(&last, &[1, 2, 3]).expect("append garbage");
        let mut n = 0;
        let rep = replay(st.as_ref(), ReplayOptions::default(), |l, p| {
            n += 1;
            assert_eq!(p, payload(l).as_slice());
        })
        .expect("replays");
        assert_eq!((n, rep.last_lsn), (50, 50));
        assert_eq!(rep.torn.as_ref().map(|t| t.0.as_str()), Some(last.as_str()));
        let wal = Wal::open_with(st.clone(), SyncMode::Always, rep.next_lsn(), 200).expect("reopen");
        wal.append(b"51").expect("append");
        drop(wal);
        let rep = replay(st.as_ref(), ReplayOptions::default(), |_, _| {}).expect("replays");
        assert_eq!((rep.records, rep.torn), (51, None));
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
