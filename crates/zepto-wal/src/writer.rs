//! Appending with group commit.
//!
//! Appenders encode their record into a shared pending buffer under a mutex and get the next
//! LSN. One of them becomes the leader: it takes the whole buffer, writes it (and under
//! `SyncMode::Always` fsyncs it) without holding the lock, then wakes everyone whose record is
//! now written (or durable). Concurrent writers therefore share one write and one fsync.
//!
//! Honest modes: `Always` returns only after fsync; `Interval(d)` returns after the write and a
//! background thread fsyncs every `d`, so a machine crash loses at most the last `d` of
//! acknowledged writes (a process crash loses nothing: the bytes are in the OS); `None` never
//! fsyncs.
//!
//! A failed write or fsync fails every append of its batch and of the pending one. The failure
//! is rolled back: the segment is cut back to its last good length (a rotation's new segment
//! removed), the LSNs are handed out again, and later appends simply try again, so a disk that
//! filled up works again once space is freed, with no restart and no partial record left,
//! whatever the sync mode (a failed write touches only its own bytes; records written before
//! it stay in the page cache for the next fsync). Only a failed fsync while records are
//! written but not yet durable (`Interval`, `None`: the kernel may have dropped their dirty
//! pages), or a roll-back that itself fails, poisons the log: every later append fails until
//! a restart recovers from what is on disk.

use crate::format::{header, parse_segment_name, segment_name, HEADER_LEN, MAX_PAYLOAD};
use crate::pending::Pending;
use crate::storage::Storage;
use crate::{Lsn, WalError};
use std::borrow::Cow;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// When appended records reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Before an append returns (group commit: one fsync for every append waiting).
    Always,
    /// Every so often, by a background flusher: a crash loses at most that much.
    Interval(Duration),
    /// When the operating system writes the pages back: a crash of the machine loses what it
    /// had not written.
    None,
}

impl SyncMode {
    /// `always`, `interval=<ms>`, `none` (the `--sync` flag).
    pub fn parse(s: &str) -> Option<SyncMode> {
        match s {
            "always" => Some(SyncMode::Always),
            "none" => Some(SyncMode::None),
            _ => {
                let ms: u64 = s.strip_prefix("interval=")?.parse().ok()?;
                (ms > 0).then(|| SyncMode::Interval(Duration::from_millis(ms)))
            }
        }
    }
}

struct Inner {
    next_lsn: Lsn,
    segment: String,
    segment_len: usize,
    pending: Pending,
    pending_first: Lsn,
    pending_last: Lsn,
    /// Last LSN handed to storage, and last LSN made durable.
    written: Lsn,
    durable: Lsn,
    leader: bool,
    /// Bumped when a failed batch is rolled back: appenders of an older generation failed.
    generation: u64,
    /// Why the last rolled-back batch failed (what its appenders are told).
    failure: Option<WalError>,
    poisoned: Option<String>,
    closed: bool,
    /// Record bytes written since the log was opened (checkpoint scheduling reads it).
    bytes: u64,
}

struct Shared {
    storage: Arc<dyn Storage>,
    mode: SyncMode,
    segment_bytes: usize,
    inner: Mutex<Inner>,
    cond: Condvar,
}

/// The write-ahead log: appends records with consecutive LSNs to rotating segments.
pub struct Wal {
    shared: Arc<Shared>,
    flusher: Option<std::thread::JoinHandle<()>>,
}

/// Default segment size before rotation.
pub const SEGMENT_BYTES: usize = 64 << 20;

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Wal {
    /// Start logging at `next_lsn` (one past the last record replay returned, 1 for a new log)
    /// in a fresh segment.
    pub fn open(storage: Arc<dyn Storage>, mode: SyncMode, next_lsn: Lsn) -> Result<Wal, WalError> {
        Wal::open_with(storage, mode, next_lsn, SEGMENT_BYTES)
    }

    /// [`Wal::open`] whose timed flusher (`SyncMode::Interval`) calls `on_start` first, on its
    /// own thread (the server pins it to the log's cores there).
    pub fn open_flusher(
        storage: Arc<dyn Storage>,
        mode: SyncMode,
        next_lsn: Lsn,
        on_start: fn(),
    ) -> Result<Wal, WalError> {
        Wal::open_inner(storage, mode, next_lsn, SEGMENT_BYTES, on_start)
    }

    /// [`Wal::open`] with segments of `segment_bytes` (tests rotate small ones).
    pub fn open_with(
        storage: Arc<dyn Storage>,
        mode: SyncMode,
        next_lsn: Lsn,
        segment_bytes: usize,
    ) -> Result<Wal, WalError> {
        Wal::open_inner(storage, mode, next_lsn, segment_bytes, || {})
    }

    fn open_inner(
        storage: Arc<dyn Storage>,
        mode: SyncMode,
        next_lsn: Lsn,
        segment_bytes: usize,
        on_start: fn(),
    ) -> Result<Wal, WalError> {
        assert!(next_lsn >= 1, "LSNs start at 1");
        let name = segment_name(next_lsn);
        if storage.list()?.contains(&name) {
            // Left by a run that crashed before its first record: it holds nothing to keep.
            storage.truncate(&name, 0)?;
        }
        storage.append(&name, &header(next_lsn))?;
        storage.sync(&name)?;
        let inner = Inner {
            next_lsn,
            segment: name,
            segment_len: HEADER_LEN,
            pending: Pending::default(),
            pending_first: next_lsn,
            pending_last: next_lsn - 1,
            written: next_lsn - 1,
            durable: next_lsn - 1,
            leader: false,
            generation: 0,
            failure: None,
            poisoned: None,
            closed: false,
            bytes: 0,
        };
        let shared = Arc::new(Shared { storage, mode, segment_bytes, inner: Mutex::new(inner), cond: Condvar::new() });
        let flusher = match mode {
            SyncMode::Interval(every) => {
                let s = shared.clone();
                Some(
                    std::thread::Builder::new()
                        .name("zepto-wal-sync".into())
                        .spawn(move || {
                            on_start();
                            flush_loop(&s, every)
                        })
                        .map_err(WalError::from)?,
                )
            }
            _ => None,
        };
        Ok(Wal { shared, flusher })
    }

    /// Log one record; returns its LSN once it is written (and durable under `Always`).
    pub fn append(&self, payload: &[u8]) -> Result<Lsn, WalError> {
        self.append_record(Cow::Borrowed(payload))
    }

    /// [`Wal::append`] of a payload handed over: a large one is written from where it is,
    /// without a copy into the shared buffer.
    pub fn append_owned(&self, payload: Vec<u8>) -> Result<Lsn, WalError> {
        self.append_record(Cow::Owned(payload))
    }

    fn append_record(&self, payload: Cow<'_, [u8]>) -> Result<Lsn, WalError> {
        if payload.len() > MAX_PAYLOAD {
            return Err(WalError::TooLarge(payload.len()));
        }
        let s = &self.shared;
        let mut g = s.lock();
        if let Some(p) = &g.poisoned {
            return Err(WalError::Poisoned(p.clone()));
        }
        let lsn = g.next_lsn;
        g.next_lsn += 1;
        if g.pending.is_empty() {
            g.pending_first = lsn;
        }
        g.pending.push(lsn, payload);
        g.pending_last = lsn;
        let generation = g.generation;
        let sync = s.mode == SyncMode::Always;
        loop {
            if let Some(p) = &g.poisoned {
                return Err(WalError::Poisoned(p.clone()));
            }
            if g.generation != generation {
                // This record's batch failed and was rolled back.
                return Err(g.failure.clone().unwrap_or_else(|| WalError::WriteFailed("rolled back".into())));
            }
            if (sync && g.durable >= lsn) || (!sync && g.written >= lsn) {
                return Ok(lsn);
            }
            if g.leader {
                g = s.cond.wait(g).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            g = lead(s, g, sync);
        }
    }

    /// Last LSN known durable.
    pub fn durable_lsn(&self) -> Lsn {
        self.shared.lock().durable
    }

    /// Fsync whatever is written (any mode); returns the durable LSN.
    pub fn sync(&self) -> Result<Lsn, WalError> {
        sync_now(&self.shared)
    }

    /// Record bytes written since the log was opened.
    pub fn bytes_written(&self) -> u64 {
        self.shared.lock().bytes
    }

    /// End the current segment: everything logged so far is made durable and later records go
    /// to a new segment. Returns the last LSN logged (0 if none). A checkpoint calls this while
    /// no change is between its log and its apply, so the returned LSN is exactly what the
    /// checkpoint holds, and every older segment can go once the checkpoint is durable.
    pub fn rotate(&self) -> Result<Lsn, WalError> {
        let s = &self.shared;
        let mut g = s.lock();
        loop {
            if let Some(p) = &g.poisoned {
                return Err(WalError::Poisoned(p.clone()));
            }
            if g.leader {
                g = s.cond.wait(g).unwrap_or_else(|e| e.into_inner());
            } else if !g.pending.is_empty() {
                g = lead(s, g, true);
            } else {
                break;
            }
        }
        let last = g.next_lsn - 1;
        if g.segment_len == HEADER_LEN {
            // Nothing in the current segment yet: it already starts after `last`.
            if g.durable < g.written {
                let seg = g.segment.clone();
                if let Err(e) = s.storage.sync(&seg) {
                    g.poisoned = Some(e.to_string());
                    return Err(WalError::Poisoned(e.to_string()));
                }
                g.durable = g.written;
            }
            return Ok(last);
        }
        // The lock is held across the I/O: appenders wait for one fsync and one small write.
        let seg = segment_name(g.next_lsn);
        let r = (|| -> std::io::Result<()> {
            s.storage.sync(&g.segment)?;
            s.storage.append(&seg, &header(g.next_lsn))?;
            s.storage.sync(&seg)
        })();
        match r {
            Ok(()) => {
                g.durable = g.written;
                g.segment = seg;
                g.segment_len = HEADER_LEN;
                Ok(last)
            }
            Err(e) => {
                // Nothing is pending (the loop above wrote it): only the new segment to undo.
                let first = g.next_lsn;
                // Counted as an fsync's failure: the steps include two.
                let f = Failure { error: e, in_sync: true };
                roll_back(s, &mut g, &f, (first, Some(seg.as_str())));
                s.cond.notify_all();
                Err(match &g.poisoned {
                    Some(p) => WalError::Poisoned(p.clone()),
                    None => g.failure.clone().unwrap_or_else(|| WalError::WriteFailed(f.error.to_string())),
                })
            }
        }
    }

    /// Delete the segments holding only records up to `lsn` (they are in a durable checkpoint).
    /// Returns how many were deleted. The current segment is never deleted.
    pub fn remove_through(&self, lsn: Lsn) -> Result<usize, WalError> {
        let current = self.shared.lock().segment.clone();
        let mut segs: Vec<(Lsn, String)> =
            self.shared.storage.list()?.into_iter().filter_map(|n| parse_segment_name(&n).map(|l| (l, n))).collect();
        segs.sort();
        // The newest segment starting at or before lsn + 1: everything before it is <= lsn.
        let Some(keep_from) = segs.iter().filter(|(first, _)| *first <= lsn + 1).map(|(first, _)| *first).max() else {
            return Ok(0);
        };
        let mut n = 0;
        for (first, name) in &segs {
            if *first < keep_from && *name != current {
                self.shared.storage.remove(name)?;
                n += 1;
            }
        }
        Ok(n)
    }
}

/// Write (and maybe fsync) the pending batch as the leader; returns the re-taken lock.
fn lead<'a>(s: &'a Shared, mut g: MutexGuard<'a, Inner>, sync: bool) -> MutexGuard<'a, Inner> {
    g.leader = true;
    let batch = std::mem::take(&mut g.pending);
    let (first, last) = (g.pending_first, g.pending_last);
    let rotate = g.segment_len > HEADER_LEN && g.segment_len + batch.len() > s.segment_bytes;
    let old = g.segment.clone();
    drop(g);
    let seg = if rotate { segment_name(first) } else { old.clone() };
    // Which step failed matters to the roll-back: a failed fsync may have lost earlier
    // written records, a failed write only its own bytes.
    let synced = |e| Failure { error: e, in_sync: true };
    let written = |e| Failure { error: e, in_sync: false };
    let r = (|| -> Result<(), Failure> {
        if rotate {
            s.storage.sync(&old).map_err(synced)?;
            s.storage.append(&seg, &header(first)).map_err(written)?;
        }
        for piece in batch.pieces() {
            s.storage.append(&seg, piece).map_err(written)?;
        }
        if sync || rotate {
            s.storage.sync(&seg).map_err(synced)?;
        }
        Ok(())
    })();
    let mut g = s.lock();
    g.leader = false;
    match r {
        Ok(()) => {
            if rotate {
                g.segment = seg;
                g.segment_len = HEADER_LEN + batch.len();
            } else {
                g.segment_len += batch.len();
            }
            g.written = last;
            g.bytes += batch.len() as u64;
            if sync || rotate {
                g.durable = last;
            }
        }
        Err(e) => roll_back(s, &mut g, &e, (first, rotate.then_some(seg.as_str()))),
    }
    s.cond.notify_all();
    g
}

/// A failed step of a leader's batch.
struct Failure {
    error: std::io::Error,
    /// An fsync failed (else a write): the kernel may have dropped earlier written pages.
    in_sync: bool,
}

/// A batch starting at LSN `first` failed (`new_segment`: the segment a rotation was
/// starting). Cut the log back to its state before the batch and hand its LSNs out again, or
/// poison the log when that cannot be done safely (see the module docs).
fn roll_back(s: &Shared, g: &mut Inner, f: &Failure, (first, new_segment): (Lsn, Option<&str>)) {
    let e = &f.error;
    // Records written but not yet durable survive a failed write (ENOSPC leaves other dirty
    // pages alone), but maybe not a failed fsync.
    let undurable = f.in_sync && g.durable < g.written;
    let undo = || -> std::io::Result<()> {
        match new_segment {
            Some(seg) => {
                if s.storage.list()?.iter().any(|n| n == seg) {
                    s.storage.remove(seg)?;
                }
                Ok(())
            }
            None => s.storage.truncate(&g.segment, g.segment_len as u64),
        }
    };
    if undurable {
        g.poisoned = Some(e.to_string());
        return;
    }
    if let Err(e2) = undo() {
        g.poisoned = Some(format!("{e}; cutting the failed write back also failed: {e2}"));
        return;
    }
    g.failure = Some(if matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded) {
        WalError::NoSpace(e.to_string())
    } else {
        WalError::WriteFailed(e.to_string())
    });
    g.generation += 1;
    g.pending = Pending::default();
    g.next_lsn = first;
    g.pending_first = first;
    g.pending_last = first - 1;
}

fn sync_now(s: &Shared) -> Result<Lsn, WalError> {
    let g = s.lock();
    if let Some(p) = &g.poisoned {
        return Err(WalError::Poisoned(p.clone()));
    }
    let (seg, written) = (g.segment.clone(), g.written);
    drop(g);
    let r = s.storage.sync(&seg);
    let mut g = s.lock();
    match r {
        Ok(()) => {
            // Only LSNs written before the sync started are covered; a rotation since then
            // synced the older segment itself.
            g.durable = g.durable.max(written);
            Ok(g.durable)
        }
        Err(e) => {
            g.poisoned = Some(e.to_string());
            s.cond.notify_all();
            Err(WalError::Poisoned(e.to_string()))
        }
    }
}

fn flush_loop(s: &Shared, every: Duration) {
    loop {
        // Sleep a whole interval (the condvar also wakes on every group commit: ignore those).
        let deadline = std::time::Instant::now() + every;
        let mut g = s.lock();
        loop {
            if g.closed || g.poisoned.is_some() {
                return;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                break;
            }
            g = s.cond.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        let idle = g.durable == g.written;
        drop(g);
        if !idle && sync_now(s).is_err() {
            return;
        }
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.cond.notify_all();
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
        // A clean close makes everything written durable, whatever the mode.
        let _ = sync_now(&self.shared);
    }
}
