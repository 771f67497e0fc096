//! Replay: every record of every segment, in LSN order.
//!
//! Two kinds of damage, told apart as RocksDB's WAL recovery modes tell them:
//! - **A torn tail**: the last record of the last segment cut short by a crash (the file ends
//!   inside it, or only zero bytes follow). It was never acknowledged under `--sync always`, so
//!   it is cut off (the file truncated there) and reported as such.
//! - **Corruption**: a complete record whose checksum fails (even the very last one: it may
//!   have been acknowledged), a bad header, a gap in LSNs, damage with valid records after it.
//!   [`RecoveryMode::Strict`] refuses to start, naming the file and offset.
//!   [`RecoveryMode::PointInTime`] (the default) replays up to the damage, keeps the damaged
//!   segment aside (a `.damaged` copy) and later segments too (renamed `.dropped`; never
//!   deleted), cuts the log there, and reports exactly what was dropped.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::format::{decode, parse_segment_name, Decoded, FRAME_LEN, HEADER_LEN, MAGIC, VERSION};
use crate::storage::Storage;
use crate::{Lsn, WalError};

/// What replay does on corruption (a torn tail is never corruption).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Refuse to start: the operator decides.
    Strict,
    /// Recover to the last record before the damage; keep the damaged files aside; report.
    #[default]
    PointInTime,
}

impl RecoveryMode {
    /// `strict` or `point-in-time`.
    pub fn parse(s: &str) -> Option<RecoveryMode> {
        match s {
            "strict" => Some(RecoveryMode::Strict),
            "point-in-time" | "point_in_time" => Some(RecoveryMode::PointInTime),
            _ => None,
        }
    }
}

/// Rows in one record's payload, `None` if it does not decode.
pub type RowsOf = fn(&[u8]) -> Option<u64>;

/// How to replay.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// What to do on corruption.
    pub mode: RecoveryMode,
    /// Records up to this LSN are already in a checkpoint: they are not applied (segments
    /// wholly before it are not even read), and the log must reach back to `after + 1`
    /// (0: no checkpoint, replay everything).
    pub after: Lsn,
    /// Rows in a record's payload (the caller's format), to report the rows corruption drops.
    pub rows_of: Option<RowsOf>,
}

/// Corruption that point-in-time recovery cut off.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Corruption {
    /// The damaged segment.
    pub file: String,
    /// Where in it the damage starts.
    pub offset: u64,
    /// What is wrong there.
    pub reason: String,
    /// Records dropped: the damaged one and every intact one after it.
    pub records_dropped: u64,
    /// Rows in the intact dropped records (the damaged record's rows cannot be known).
    pub intact_rows_dropped: u64,
    /// Bytes of log dropped.
    pub bytes_dropped: u64,
    /// Where the dropped log was kept for inspection.
    pub kept: Vec<String>,
}

/// What replay did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
    /// Records applied (those after the checkpoint).
    pub records: u64,
    /// The last LSN in the log or the checkpoint (0 when both are empty).
    pub last_lsn: Lsn,
    /// A torn last write that was cut off: file and offset.
    pub torn: Option<(String, u64)>,
    /// Corruption cut off by point-in-time recovery.
    pub corruption: Option<Corruption>,
}

impl ReplayReport {
    /// Where the writer continues.
    pub fn next_lsn(&self) -> Lsn {
        self.last_lsn + 1
    }
}

/// Is the damage at `pos` (the last segment's `buf`, decoded as `d`) a write the crash cut
/// short? The file ends inside the frame and no checksum proves it complete, or nothing but
/// zero bytes follow (space the file system extended but never wrote).
fn is_torn(buf: &[u8], pos: usize, d: &Decoded<'_>) -> bool {
    let rest = buf.get(pos..).unwrap_or_default();
    if rest.iter().all(|&b| b == 0) {
        return true;
    }
    // A complete record whose length field was damaged also looks cut short: it is one if
    // taking the rest of the file as its payload makes its checksum right.
    *d == Decoded::Truncated && !crate::format::complete_with_bad_length(rest)
}

/// Does a valid record with an LSN at or after `expect` start anywhere after `from`? (Tells a
/// torn tail from damage in the middle; only positions whose LSN field is plausible pay for a
/// checksum.)
fn valid_record_after(buf: &[u8], from: usize, expect: Lsn) -> bool {
    (from + 1..buf.len().saturating_sub(FRAME_LEN - 1)).any(|p| {
        let Some(lsn) = buf.get(p + 8..p + 16).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes) else {
            return false;
        };
        lsn >= expect && lsn < expect.saturating_add(1 << 20) && matches!(decode(buf, p), Decoded::Record { .. })
    })
}

/// The log's segments as (first LSN, name), oldest first.
pub(crate) fn segments(storage: &dyn Storage) -> Result<Vec<(Lsn, String)>, WalError> {
    let mut segments: Vec<(Lsn, String)> =
        storage.list()?.into_iter().filter_map(|n| parse_segment_name(&n).map(|l| (l, n))).collect();
    segments.sort();
    Ok(segments)
}

/// Replay into `apply`, in order.
pub fn replay(
    storage: &dyn Storage,
    opts: ReplayOptions,
    mut apply: impl FnMut(Lsn, &[u8]),
) -> Result<ReplayReport, WalError> {
    let segments = segments(storage)?;
    reaches_checkpoint(&segments, opts)?;
    let report = ReplayReport { last_lsn: opts.after, ..ReplayReport::default() };
    let mut r = Replay { storage, opts, report, expect: None };
    for (k, (first, name)) in segments.iter().enumerate() {
        if let Some((next, _)) = segments.get(k + 1) {
            if *next <= opts.after + 1 && r.expect.is_none_or(|e| e == *first) {
                // Wholly inside the checkpoint (left by a checkpoint that could not delete it).
                r.expect = Some(*next);
                continue;
            }
        }
        let seg =
            Segment { first: *first, name, rest: segments.get(k..).unwrap_or_default(), last: k + 1 == segments.len() };
        if r.segment(&seg, &mut apply)? == Flow::Stop {
            break;
        }
        if r.expect.is_none() {
            r.expect = Some(*first);
        }
    }
    Ok(r.report)
}

/// An error unless the log reaches back to the record after the checkpoint.
fn reaches_checkpoint(segments: &[(Lsn, String)], opts: ReplayOptions) -> Result<(), WalError> {
    match segments.first() {
        Some((first, name)) if *first > opts.after + 1 => Err(WalError::Corrupt {
            file: name.clone(),
            offset: 0,
            reason: format!(
                "the log starts at LSN {first} but the checkpoint ends at LSN {}: records are missing",
                opts.after
            ),
        }),
        _ => Ok(()),
    }
}

/// The segment replay is at.
struct Segment<'a> {
    /// Its first LSN, as its name gives it.
    first: Lsn,
    name: &'a str,
    /// The log's segments from this one on (cut off with it on damage).
    rest: &'a [(Lsn, String)],
    /// Whether it is the log's last (whose tail a crash may have torn).
    last: bool,
}

/// Whether replay goes on to the next segment.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    /// The segment's records ended cleanly: on to the next.
    Next,
    /// The log ends here: a torn tail cut off, or damage cut off by point-in-time recovery.
    Stop,
}

/// A replay under way: what it has done, and the LSN the next record must have (`None` until
/// a segment is read or skipped).
struct Replay<'s> {
    storage: &'s dyn Storage,
    opts: ReplayOptions,
    report: ReplayReport,
    expect: Option<Lsn>,
}

impl Replay<'_> {
    /// Segment `seg`: its header checked, then its records.
    fn segment(&mut self, seg: &Segment<'_>, apply: &mut impl FnMut(Lsn, &[u8])) -> Result<Flow, WalError> {
        let (first, name) = (seg.first, seg.name);
        let buf = self.storage.read(name)?;
        // Header. A later format is refused before anything is judged damaged.
        if let Some(version) = newer_version(&buf) {
            return Err(WalError::NewerFormat { file: name.to_string(), version });
        }
        let header_ok = buf.len() >= HEADER_LEN
            && buf.get(..8) == Some(&MAGIC[..])
            && buf.get(8..12) == Some(&VERSION.to_le_bytes()[..])
            && buf.get(12..20) == Some(&first.to_le_bytes()[..]);
        if !header_ok {
            let start = buf.get(..buf.len().min(8)).unwrap_or_default();
            if seg.last && buf.len() < HEADER_LEN && MAGIC.starts_with(start) {
                // The crash cut the header of a brand-new segment.
                self.storage.truncate(name, 0)?;
                self.storage.remove(name)?;
                self.report.torn = Some((name.to_string(), 0));
                return Ok(Flow::Stop);
            }
            return self.cut(seg, 0, "bad segment header (magic, version or first LSN)".into());
        }
        if let Some(e) = self.expect {
            if first != e {
                return self.cut(seg, 0, format!("segment starts at LSN {first}, expected {e}"));
            }
        }
        self.records(seg, &buf, apply)
    }

    /// The records of segment `seg` (its bytes `buf`), applied in order until its end, a torn
    /// tail (cut off) or damage.
    fn records(&mut self, seg: &Segment<'_>, buf: &[u8], apply: &mut impl FnMut(Lsn, &[u8])) -> Result<Flow, WalError> {
        let mut pos = HEADER_LEN;
        loop {
            let want = self.expect.unwrap_or(seg.first);
            match decode(buf, pos) {
                Decoded::End => return Ok(Flow::Next),
                Decoded::Record { lsn, payload, next } => {
                    if lsn != want {
                        return self.cut(seg, pos, format!("record has LSN {lsn}, expected {want}"));
                    }
                    if lsn > self.opts.after {
                        apply(lsn, payload);
                        self.report.records += 1;
                    }
                    self.report.last_lsn = self.report.last_lsn.max(lsn);
                    self.expect = Some(lsn + 1);
                    pos = next;
                }
                d @ (Decoded::Truncated | Decoded::BadChecksum) => {
                    let torn = seg.last && is_torn(buf, pos, &d) && !valid_record_after(buf, pos, want);
                    if torn {
                        self.storage.truncate(seg.name, pos as u64)?;
                        self.report.torn = Some((seg.name.to_string(), pos as u64));
                        return Ok(Flow::Stop);
                    }
                    let what = match (d == Decoded::Truncated, valid_record_after(buf, pos, want)) {
                        (true, true) => "record cut short with records after it",
                        (true, false) => "complete record with a damaged length",
                        (false, true) => "checksum mismatch with records after it",
                        (false, false) => "checksum mismatch in a complete record",
                    };
                    return self.cut(seg, pos, what.to_string());
                }
            }
        }
    }

    /// Damage at `offset` of segment `seg`, for `reason`: refused, or cut off there ([`cut`])
    /// and replay stopped.
    fn cut(&mut self, seg: &Segment<'_>, offset: usize, reason: String) -> Result<Flow, WalError> {
        let e = WalError::Corrupt { file: seg.name.to_string(), offset: offset as u64, reason };
        cut(self.storage, self.opts, seg.rest, offset, e, &mut self.report)?;
        Ok(Flow::Stop)
    }
}

/// The format version of a segment that starts with the magic and a version above this
/// build's [`VERSION`].
fn newer_version(buf: &[u8]) -> Option<u32> {
    let version = u32::from_le_bytes(buf.get(8..12)?.try_into().ok()?);
    (buf.get(..8) == Some(&MAGIC[..]) && version > VERSION).then_some(version)
}

/// Corruption at `offset` of the first of `from`: refuse ([`RecoveryMode::Strict`]), or keep
/// the damaged log aside, cut it there, and note what was dropped in `report`.
fn cut(
    storage: &dyn Storage,
    opts: ReplayOptions,
    from: &[(Lsn, String)],
    offset: usize,
    e: WalError,
    report: &mut ReplayReport,
) -> Result<(), WalError> {
    if opts.mode == RecoveryMode::Strict {
        return Err(e);
    }
    let (file, reason) = match &e {
        WalError::Corrupt { file, reason, .. } => (file.clone(), reason.clone()),
        other => (String::new(), other.to_string()),
    };
    let mut c = Corruption { file, offset: offset as u64, reason, ..Corruption::default() };
    if let Some((_, name)) = from.first() {
        let buf = storage.read(name)?;
        let tail = buf.get(offset..).unwrap_or_default();
        count_dropped(tail, true, opts, &mut c);
        let kept = aside(storage, name, "damaged")?;
        storage.append(&kept, &buf)?;
        storage.sync(&kept)?;
        c.kept.push(kept);
        if offset <= HEADER_LEN {
            storage.remove(name)?;
        } else {
            storage.truncate(name, offset as u64)?;
        }
    }
    for (_, name) in from.iter().skip(1) {
        let buf = storage.read(name)?;
        count_dropped(buf.get(HEADER_LEN..).unwrap_or_default(), false, opts, &mut c);
        let kept = aside(storage, name, "dropped")?;
        storage.rename(name, &kept)?;
        c.kept.push(kept);
    }
    report.corruption = Some(c);
    Ok(())
}

/// A name beside `name` for a kept copy that overwrites nothing.
fn aside(storage: &dyn Storage, name: &str, what: &str) -> Result<String, WalError> {
    let names = storage.list()?;
    let mut k = 0;
    loop {
        let candidate = if k == 0 { format!("{name}.{what}") } else { format!("{name}.{what}.{k}") };
        if !names.contains(&candidate) {
            return Ok(candidate);
        }
        k += 1;
    }
}

/// Add the records and bytes of `log` (the damaged part of a segment when `damaged`: its first
/// record counts as one, then intact records are found past it) to `c`.
fn count_dropped(log: &[u8], damaged: bool, opts: ReplayOptions, c: &mut Corruption) {
    c.bytes_dropped += log.len() as u64;
    let mut pos = 0;
    if damaged && !log.is_empty() {
        c.records_dropped += 1;
        // Resynchronise on the next frame that decodes (its checksum vouches for it).
        match (1..log.len()).find(|&p| matches!(decode(log, p), Decoded::Record { .. })) {
            Some(p) => pos = p,
            None => return,
        }
    }
    while let Decoded::Record { payload, next, .. } = decode(log, pos) {
        c.records_dropped += 1;
        c.intact_rows_dropped += opts.rows_of.and_then(|f| f(payload)).unwrap_or(0);
        pos = next;
    }
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
        let damaged = st.read(&name).expect("read");
        let strict = ReplayOptions { mode: RecoveryMode::Strict, ..ReplayOptions::default() };
        let e = read_all(&st, strict).expect_err("corrupt");
        assert_eq!(
            e,
            WalError::Corrupt {
                file: name.clone(),
                offset: pos as u64,
                reason: "checksum mismatch with records after it".into()
            }
        );
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("point in time");
        assert_eq!(recs.len(), 3);
        let c = rep.corruption.clone().expect("reported");
        assert_eq!((c.offset, c.records_dropped, c.bytes_dropped), (pos as u64, 7, (clean.len() - pos) as u64));
        assert_eq!(c.kept, vec![format!("{name}.damaged")]);
        assert_eq!(st.read(&c.kept[0]).expect("kept"), damaged, "the damaged segment is kept whole");
        let (_, rep) = read_all(&st, ReplayOptions::default()).expect("clean after the cut");
        assert_eq!((rep.records, rep.corruption), (3, None));
    }

    /// A segment missing from the middle of the log: the next one's header starts past the LSN
    /// replay expects, and that is the damage reported (at its offset 0), not its first record.
    #[test]
    fn a_missing_segment_is_reported_at_the_next_ones_header() {
        let st = MemStorage::new();
        {
            let wal = Wal::open_with(Arc::new(st.clone()), SyncMode::Always, 1, 256).expect("open");
            for i in 1..=40 {
                wal.append(&payload(i)).expect("append");
            }
        }
        let segs = segments(&st).expect("segments");
        assert!(segs.len() > 3, "small segments rotate");
        let ((expected, gone), (first, after)) = (segs[1].clone(), segs[2].clone());
        st.remove(&gone).expect("remove");
        let strict = ReplayOptions { mode: RecoveryMode::Strict, ..ReplayOptions::default() };
        let reason = format!("segment starts at LSN {first}, expected {expected}");
        let e = read_all(&st, strict).expect_err("a gap");
        assert_eq!(e, WalError::Corrupt { file: after.clone(), offset: 0, reason: reason.clone() });
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("point in time");
        assert_eq!(recs.len() as u64, expected - 1);
        let c = rep.corruption.expect("reported");
        assert_eq!((c.file, c.offset, c.reason), (after, 0, reason));
    }

    /// One byte flipped in the last, complete record is corruption (it may have been
    /// acknowledged), whatever byte it is; a tail cut short or never written is a torn write.
    #[test]
    fn the_last_record_damaged_is_corruption_not_a_torn_write() {
        let st = MemStorage::new();
        {
            let wal = Wal::open_with(Arc::new(st.clone()), SyncMode::Always, 1, 1 << 20).expect("open");
            for i in 1..=3 {
                wal.append(&payload(i + 30)).expect("append");
            }
        }
        let name = st.list().expect("list")[0].clone();
        let clean = st.read(&name).expect("read");
        let mut last = HEADER_LEN;
        while let Decoded::Record { next, .. } = decode(&clean, last) {
            if next == clean.len() {
                break;
            }
            last = next;
        }
        for at in last..clean.len() {
            let st = MemStorage::new();
            st.append(&name, &clean).expect("write");
            st.corrupt(&name, at);
            let strict = ReplayOptions { mode: RecoveryMode::Strict, ..ReplayOptions::default() };
            assert!(read_all(&st, strict).is_err(), "byte {at}: strict refuses");
            let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("point in time");
            assert_eq!((recs.len(), rep.torn.clone()), (2, None), "byte {at}");
            assert_eq!(rep.corruption.map(|c| c.records_dropped), Some(1), "byte {at}");
        }
        // Cut short, or zeros where the last record should be: torn, never acknowledged.
        for tail in [&clean[..clean.len() - 3], &[clean[..last].to_vec(), vec![0; clean.len() - last]].concat()[..]] {
            let st = MemStorage::new();
            st.append(&name, tail).expect("write");
            let strict = ReplayOptions { mode: RecoveryMode::Strict, ..ReplayOptions::default() };
            let (recs, rep) = read_all(&st, strict).expect("a torn tail is not corruption");
            assert_eq!((recs.len(), rep.torn.map(|t| t.1)), (2, Some(last as u64)));
        }
    }

    /// A segment of a later format (a newer ZeptoDB wrote it) is refused in every recovery
    /// mode and left whole: point-in-time recovery must not take it for damage and cut it.
    #[test]
    fn a_newer_format_is_refused_and_the_log_left_alone() {
        let st = MemStorage::new();
        let wal = Wal::open(Arc::new(st.clone()), SyncMode::None, 1).expect("open");
        wal.append(b"one").expect("append");
        wal.append(b"two").expect("append");
        drop(wal);
        let name = st.list().expect("list").remove(0);
        let mut bytes = st.read(&name).expect("read");
        bytes[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
        st.truncate(&name, 0).expect("truncate");
        st.append(&name, &bytes).expect("write");
        for mode in [RecoveryMode::PointInTime, RecoveryMode::Strict] {
            let e = read_all(&st, ReplayOptions { mode, ..ReplayOptions::default() }).expect_err("refused");
            assert!(matches!(&e, WalError::NewerFormat { version, .. } if *version == VERSION + 1), "{e}");
            assert!(e.to_string().contains("written by a newer ZeptoDB"), "{e}");
        }
        assert_eq!(st.list().expect("list"), vec![name.clone()], "nothing moved aside");
        assert_eq!(st.read(&name).expect("read"), bytes, "nothing cut");
    }

    /// A payload handed over by value and large enough to be written from its own vector
    /// frames exactly as a copied one, and a write that fails inside it is cut back whole.
    #[test]
    fn large_owned_payloads_round_trip_and_roll_back() {
        let big = |b: u8| vec![b; 3 << 20];
        let st = MemStorage::new();
        let wal = Wal::open(Arc::new(st.clone()), SyncMode::None, 1).expect("open");
        wal.append(b"small").expect("append");
        assert_eq!(wal.append_owned(big(1)).expect("append"), 2);
        st.short_write_next(1 << 20);
        assert!(wal.append_owned(big(2)).is_err(), "a short write inside the payload fails it");
        assert_eq!(wal.append_owned(big(3)).expect("works again"), 3);
        wal.append_owned(b"owned but small".to_vec()).expect("append");
        drop(wal);
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("replays");
        let want = vec![(1, b"small".to_vec()), (2, big(1)), (3, big(3)), (4, b"owned but small".to_vec())];
        assert_eq!(recs, want);
        assert_eq!((rep.torn, rep.corruption), (None, None));
    }

    #[test]
    fn failed_writes_roll_back_and_failed_syncs_of_undurable_records_poison() {
        // Always: every earlier record is durable, so a failed fsync is rolled back and later
        // appends try again (reusing the LSNs: no gap in the log).
        let st = MemStorage::new();
        let wal = Wal::open(Arc::new(st.clone()), SyncMode::Always, 1).expect("open");
        wal.append(b"one").expect("append");
        st.fail_sync_after(0);
        assert!(matches!(wal.append(b"two"), Err(WalError::WriteFailed(_))));
        assert!(matches!(wal.append(b"three"), Err(WalError::WriteFailed(_))), "still failing");
        st.fail_sync_after(usize::MAX);
        assert_eq!(wal.append(b"four").expect("works again"), 2);
        drop(wal);
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("replays");
        assert_eq!(recs, vec![(1, b"one".to_vec()), (2, b"four".to_vec())]);
        assert_eq!((rep.torn, rep.corruption), (None, None));
        // None, a failed write (a full disk): only its own bytes are cut back; the record
        // written before it, not yet synced, stays, and later appends work with no restart.
        let st = MemStorage::new();
        let wal = Wal::open(Arc::new(st.clone()), SyncMode::None, 1).expect("open");
        wal.append(b"unsynced").expect("append");
        st.short_write_next(5);
        assert!(wal.append(b"a record longer than five bytes").is_err());
        assert_eq!(wal.append(b"x").expect("a failed write does not poison"), 2);
        st.set_disk_full(true);
        assert!(matches!(wal.append(b"full"), Err(WalError::NoSpace(_))));
        st.set_disk_full(false);
        assert_eq!(wal.append(b"y").expect("space again"), 3);
        drop(wal);
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("replays");
        assert_eq!(recs, vec![(1, b"unsynced".to_vec()), (2, b"x".to_vec()), (3, b"y".to_vec())]);
        assert_eq!((rep.torn, rep.corruption), (None, None));
        // None, a failed fsync while a record is written but not durable: the kernel may have
        // dropped it, so the log is poisoned.
        let st = MemStorage::new();
        let wal = Wal::open(Arc::new(st.clone()), SyncMode::None, 1).expect("open");
        wal.append(b"unsynced").expect("append");
        st.fail_sync_after(0);
        assert!(wal.sync().is_err());
        assert!(matches!(wal.append(b"x"), Err(WalError::Poisoned(_))));
    }

    /// A full disk: the batch fails with NoSpace, half-written bytes are cut away, and once
    /// space is freed appends work again with no restart; nothing partial is ever replayed.
    #[test]
    fn a_full_disk_refuses_then_recovers_without_a_restart() {
        let st = MemStorage::new();
        let wal = Arc::new(Wal::open_with(Arc::new(st.clone()), SyncMode::Always, 1, 256).expect("open"));
        for i in 1..=3 {
            wal.append(&payload(i)).expect("append");
        }
        st.set_disk_full(true);
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let w = wal.clone();
                std::thread::spawn(move || (0..20).map(|i| w.append(&payload(100 + t * 20 + i))).collect::<Vec<_>>())
            })
            .collect();
        for h in handles {
            for r in h.join().expect("thread") {
                assert!(matches!(r, Err(WalError::NoSpace(_))), "{r:?}");
            }
        }
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("nothing partial on disk");
        assert_eq!((recs.len(), rep.torn.clone(), rep.corruption.clone()), (3, None, None));
        // Rotation on a full disk fails the same way.
        assert!(matches!(wal.rotate(), Ok(3) | Err(WalError::NoSpace(_))));
        st.set_disk_full(false);
        for i in 4..=30 {
            assert_eq!(wal.append(&payload(i)).expect("space again"), i, "LSNs continue with no gap");
        }
        drop(wal);
        let (recs, rep) = read_all(&st, ReplayOptions::default()).expect("replays");
        assert_eq!((recs.len(), rep.torn, rep.corruption), (30, None, None));
        for (i, (l, p)) in recs.iter().enumerate() {
            assert_eq!((*l, p.clone()), (i as u64 + 1, payload(i as u64 + 1)));
        }
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
