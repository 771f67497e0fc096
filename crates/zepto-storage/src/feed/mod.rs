//! The change feed: every committed write, in commit order, for subscribers (`GET /subscribe`
//! in zepto-server). A write's appended rows are kept as their columns, its deletes and
//! updates as counts.
//!
//! Every event stands at a [`Pos`]: the log sequence number (LSN) of the write's record in
//! the write-ahead log, and its place among that record's events. Positions outlive the
//! process: a subscriber that resumes from one after a restart is served from the log
//! ([`cursor`]). An in-memory database numbers its writes itself, and its positions mean
//! nothing after a restart. [`ChangeFeed::epoch`] (the *timeline*) tells positions of
//! different histories apart: a durable database keeps it across restarts while no
//! published event can have been lost (zepto-durable), an in-memory one takes a new one each
//! run.
//!
//! Every write path goes through [`crate::Catalog::log`]; it hands the changes to the feed,
//! which keeps them (a copy of each appended batch) only while it is *capturing*: while a
//! subscriber is attached, and for [`RETAIN_AFTER`] after the last one left, so that a client
//! that reconnects soon resumes where it was without reading the log. A database nobody
//! subscribes to copies nothing.
//!
//! The events live in one ring bounded by bytes ([`ChangeFeed::with_limit`]), numbered in the
//! order they were published by a sequence (`seq`) that only grows: publishing never waits
//! for a subscriber, and a subscriber that falls further behind than the ring holds finds its
//! next event gone ([`Read::Gone`]) and is told so, rather than slowing the writers or the
//! others. The ring also knows the newest LSN whose event it does not hold (not captured,
//! or dropped to bound it): a resume from a position at or after it is served from the ring
//! alone ([`ChangeFeed::seek`]).
//!
//! Order: one table's writes are logged and published under its lock, so its events are in
//! position order in the ring; writes to different tables may be published in another order
//! than their LSNs. A subscriber reads one table.

pub mod cursor;

use crate::Column;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the feed keeps capturing after its last subscriber left.
pub const RETAIN_AFTER: Duration = Duration::from_secs(60);

/// The ring's default bound on the appended data it holds.
pub const DEFAULT_LIMIT_BYTES: usize = 64 << 20;

/// What one committed write did to one table.
#[derive(Debug)]
pub enum FeedChange {
    /// Rows appended: one column per schema column.
    Append(Vec<Column>),
    /// Rows deleted (how many).
    Delete(usize),
    /// Rows updated in place (how many).
    Update(usize),
    /// The table dropped.
    Drop,
}

/// Where an event stands in the log: its write's record (`lsn`), and its place among that
/// record's events, from 1 (`k`); the record's last event has `k` [`Pos::LAST`]. Positions
/// order as the log does; a position with `k` [`Pos::LAST`] is after its whole record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// The record's log sequence number.
    pub lsn: u64,
    /// The event's place in its record ([`Pos::LAST`] for the last one).
    pub k: u32,
}

impl Pos {
    /// `k` of a record's last event.
    pub const LAST: u32 = u32::MAX;

    /// After the whole record `lsn`.
    pub fn after_record(lsn: u64) -> Pos {
        Pos { lsn, k: Pos::LAST }
    }

    /// The positions of a record's `n` events: 1, 2, ... and [`Pos::LAST`] for the last.
    pub fn of_record(lsn: u64, n: usize) -> impl Iterator<Item = Pos> {
        (1..=n).map(move |i| Pos { lsn, k: if i == n { Pos::LAST } else { i as u32 } })
    }

    /// The position as an event id on `timeline`: `TIMELINE-LSN`, or `TIMELINE-LSN.K` for an
    /// event before its record's last.
    pub fn id(&self, timeline: u64) -> String {
        match self.k {
            Pos::LAST => format!("{timeline}-{}", self.lsn),
            k => format!("{timeline}-{}.{k}", self.lsn),
        }
    }

    /// An event id (`TIMELINE-LSN[.K]`) as its timeline and position; `None` if it is not one.
    pub fn parse_id(id: &str) -> Option<(u64, Pos)> {
        let (t, rest) = id.trim().split_once('-')?;
        let (lsn, k) = match rest.split_once('.') {
            Some((l, k)) => (l, k.parse::<u32>().ok().filter(|k| *k > 0 && *k < Pos::LAST)?),
            None => (rest, Pos::LAST),
        };
        let lsn: u64 = lsn.parse().ok()?;
        // Record 0 does not exist: only "after nothing" (`T-0`) names it.
        (lsn > 0 || k == Pos::LAST).then_some((t.parse().ok()?, Pos { lsn, k }))
    }
}

/// One event of the feed.
#[derive(Debug)]
pub struct FeedEvent {
    /// Its number in the ring: one more than the event published before it (0 for an event
    /// read back from the log, which the ring never held).
    pub seq: u64,
    /// Where it stands in the log.
    pub pos: Pos,
    /// The table it changed (as the catalog names it).
    pub table: String,
    /// What it did.
    pub change: FeedChange,
}

impl FeedEvent {
    fn bytes(&self) -> usize {
        match &self.change {
            FeedChange::Append(cols) => cols.iter().map(Column::data_bytes).sum::<usize>() + 64,
            _ => 64,
        }
    }
}

/// What a subscriber reads after its last event.
#[derive(Debug)]
pub enum Read {
    /// The events after it (possibly none yet).
    Events(Vec<Arc<FeedEvent>>),
    /// Events after it are gone from the ring: the oldest held is `oldest` (its first missing
    /// event was dropped to bound the ring, or belongs to a capture that ended).
    Gone {
        /// The oldest event the ring still holds (`next` when it holds none).
        oldest: u64,
    },
}

type Waker = Arc<dyn Fn() + Send + Sync>;

struct Ring {
    events: VecDeque<Arc<FeedEvent>>,
    bytes: usize,
    /// The number the next event gets.
    next: u64,
    /// The newest LSN with an event the ring does not hold (uncaptured, or dropped).
    lost_through: u64,
    wakers: Vec<(u64, Waker)>,
    next_waker: u64,
    last_left: Option<Instant>,
}

impl Ring {
    /// Whether writes are kept: someone is attached, or the last left less than
    /// [`RETAIN_AFTER`] ago.
    fn capturing(&self) -> bool {
        !self.wakers.is_empty() || self.last_left.is_some_and(|t| t.elapsed() < RETAIN_AFTER)
    }
}

/// The feed of a catalog (see the module docs).
pub struct ChangeFeed {
    ring: Mutex<Ring>,
    limit: AtomicUsize,
    /// The timeline positions belong to.
    epoch: AtomicU64,
    /// The newest LSN logged (its record may still be applying).
    last_lsn: AtomicU64,
}

impl Default for ChangeFeed {
    fn default() -> Self {
        ChangeFeed::with_limit(DEFAULT_LIMIT_BYTES)
    }
}

impl std::fmt::Debug for ChangeFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeFeed").field("limit", &self.limit()).field("epoch", &self.epoch()).finish()
    }
}

impl ChangeFeed {
    /// A feed whose ring holds at most `limit` bytes of appended data (at least one event).
    pub fn with_limit(limit: usize) -> ChangeFeed {
        let epoch =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_micros() as u64);
        let ring = Ring {
            events: VecDeque::new(),
            bytes: 0,
            next: 1,
            lost_through: 0,
            wakers: Vec::new(),
            next_waker: 0,
            last_left: None,
        };
        ChangeFeed { ring: Mutex::new(ring), limit: limit.into(), epoch: epoch.into(), last_lsn: 0.into() }
    }

    /// Bound the ring to `bytes` of appended data from now on.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Continue a durable database's history: positions are of `timeline`, and the log
    /// already holds records through `lsn` (recovered, never in this ring). Called once, as
    /// the database opens, after recovery (whose replayed writes the feed numbered as an
    /// in-memory database's) and before any logged write.
    pub fn continue_from(&self, timeline: u64, lsn: u64) {
        self.epoch.store(timeline, Ordering::Relaxed);
        self.last_lsn.store(lsn, Ordering::Release);
        let mut r = self.ring();
        r.events.clear();
        r.bytes = 0;
        r.lost_through = lsn;
    }

    /// The newest LSN logged: its record and every earlier one are in the log (though the
    /// newest may still be applying).
    pub fn last_lsn(&self) -> u64 {
        self.last_lsn.load(Ordering::Acquire)
    }

    /// A write was logged as record `lsn` (a durable database's log numbered it).
    pub(crate) fn logged(&self, lsn: u64) {
        self.last_lsn.fetch_max(lsn, Ordering::AcqRel);
    }

    /// Number a write of an in-memory database (it has no log to number it): the next LSN.
    pub(crate) fn number(&self) -> u64 {
        self.last_lsn.fetch_add(1, Ordering::AcqRel) + 1
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The timeline positions belong to: positions of another timeline mean nothing here.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// Where a subscriber from now starts: the ring's number of the last event published (0:
    /// none yet), and the position after every write logged so far (a write still in flight
    /// counts as before it).
    pub fn now(&self) -> (u64, Pos) {
        let seq = self.ring().next - 1;
        (seq, Pos::after_record(self.last_lsn()))
    }

    /// The ring's number to read after to find every event after `after`, if the ring holds
    /// them all (else they are only in the log, or gone).
    pub fn seek(&self, after: Pos) -> Option<u64> {
        let r = self.ring();
        let held = r.lost_through < after.lsn || (r.lost_through == after.lsn && after.k == Pos::LAST);
        held.then(|| r.events.front().map_or(r.next, |e| e.seq) - 1)
    }

    /// Whether writes are kept for subscribers now.
    pub fn capturing(&self) -> bool {
        let r = self.ring();
        r.capturing()
    }

    /// Whether to keep record `lsn`'s changes for subscribers: when nobody needs them, the
    /// ring notes now, as the write decides (before it applies), that it will lack the record,
    /// so that a subscriber resuming meanwhile reads it from the log rather than miss it.
    pub(crate) fn capture(&self, lsn: u64) -> bool {
        let mut r = self.ring();
        let capturing = r.capturing();
        if !capturing {
            r.lost_through = r.lost_through.max(lsn);
        }
        capturing
    }

    /// Publish the `count` changes of record `lsn`, in order, and wake the subscribers.
    /// Called by the catalog after the write applied. When the feed was not capturing as the
    /// write was logged (`changes` is then empty), the ring only notes it lacks them; when it
    /// is not capturing now (nobody is attached), it lets go of everything.
    pub(crate) fn publish(&self, lsn: u64, changes: Vec<(String, FeedChange)>, count: usize) {
        let mut r = self.ring();
        let capturing = r.capturing();
        if !capturing || changes.len() != count {
            r.lost_through = r.lost_through.max(lsn);
            if !capturing {
                let newest = r.events.iter().map(|e| e.pos.lsn).max().unwrap_or(0);
                r.lost_through = r.lost_through.max(newest);
                r.events.clear();
                r.bytes = 0;
            }
            return;
        }
        for ((table, change), pos) in changes.into_iter().zip(Pos::of_record(lsn, count)) {
            let e = Arc::new(FeedEvent { seq: r.next, pos, table, change });
            r.next += 1;
            r.bytes += e.bytes();
            r.events.push_back(e);
        }
        let limit = self.limit();
        while r.bytes > limit && r.events.len() > 1 {
            if let Some(old) = r.events.pop_front() {
                r.bytes -= old.bytes();
                r.lost_through = r.lost_through.max(old.pos.lsn);
            }
        }
        let wakers: Vec<Waker> = r.wakers.iter().map(|(_, w)| w.clone()).collect();
        drop(r);
        for w in wakers {
            w();
        }
    }

    /// Attach a subscriber: `wake` is called after each publish until the returned handle is
    /// dropped. Capturing starts now if it had stopped.
    pub fn subscribe(self: &Arc<Self>, wake: Waker) -> Subscriber {
        let mut r = self.ring();
        let id = r.next_waker;
        r.next_waker += 1;
        r.wakers.push((id, wake));
        Subscriber { feed: self.clone(), id }
    }

    /// The events after number `after`, at most `max`; [`Read::Gone`] when the next one is no
    /// longer held.
    pub fn read(&self, after: u64, max: usize) -> Read {
        let r = self.ring();
        let oldest = r.events.front().map_or(r.next, |e| e.seq);
        if after + 1 < oldest {
            return Read::Gone { oldest };
        }
        let skip = (after + 1).saturating_sub(oldest) as usize;
        Read::Events(r.events.iter().skip(skip).take(max).cloned().collect())
    }
}

/// A subscriber's attachment to the feed; dropping it detaches.
pub struct Subscriber {
    feed: Arc<ChangeFeed>,
    id: u64,
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let mut r = self.feed.ring();
        r.wakers.retain(|(id, _)| *id != self.id);
        if r.wakers.is_empty() {
            r.last_left = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn batch(n: i64) -> FeedChange {
        FeedChange::Append(vec![Column::from_data(crate::ColumnData::Int64((0..n).collect()))])
    }

    fn seqs(r: Read) -> Vec<u64> {
        match r {
            Read::Events(e) => e.iter().map(|e| e.seq).collect(),
            Read::Gone { oldest } => panic!("gone, oldest {oldest}"),
        }
    }

    #[test]
    fn nothing_is_kept_without_a_subscriber_and_positions_follow_the_log() {
        let feed = Arc::new(ChangeFeed::default());
        feed.publish(feed.number(), vec![("t".into(), batch(3))], 1);
        assert!(!feed.capturing());
        assert_eq!(feed.now(), (0, Pos::after_record(1)));
        assert_eq!(feed.seek(Pos::after_record(0)), None, "record 1 was never captured");
        let woken = Arc::new(AtomicUsize::new(0));
        let w = woken.clone();
        let sub = feed.subscribe(Arc::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        }));
        let (start, from) = feed.now();
        assert_eq!(feed.seek(from), Some(start), "a subscriber from now is served by the ring");
        feed.publish(feed.number(), vec![("t".into(), batch(2)), ("u".into(), FeedChange::Delete(4))], 2);
        assert_eq!(woken.load(Ordering::Relaxed), 1);
        let Read::Events(e) = feed.read(start, 10) else { panic!("held") };
        let pos: Vec<Pos> = e.iter().map(|e| e.pos).collect();
        assert_eq!(pos, vec![Pos { lsn: 2, k: 1 }, Pos::after_record(2)]);
        assert_eq!(seqs(feed.read(1, 10)), vec![2]);
        assert_eq!(seqs(feed.read(2, 10)), Vec::<u64>::new());
        drop(sub);
        assert!(feed.capturing(), "kept for a while after the last subscriber left");
        feed.publish(feed.number(), vec![("t".into(), FeedChange::Drop)], 1);
        assert_eq!(seqs(feed.read(2, 10)), vec![3]);
        assert_eq!(feed.seek(Pos::after_record(1)), Some(0));
    }

    /// A write logged before the first subscriber attached but published after is not in the
    /// ring: the subscriber from now is not told it lost anything (the write is before its
    /// start), a resume from before that write is not served by the ring.
    #[test]
    fn a_write_in_flight_as_a_subscriber_attaches_is_before_its_start() {
        let feed = Arc::new(ChangeFeed::default());
        let in_flight = feed.number();
        let _sub = feed.subscribe(Arc::new(|| {}));
        let (start, from) = feed.now();
        feed.publish(in_flight, Vec::new(), 1);
        feed.publish(feed.number(), vec![("t".into(), batch(1))], 1);
        let Read::Events(e) = feed.read(start, 10) else { panic!("the subscriber is not behind") };
        assert_eq!(e.iter().map(|e| e.pos).collect::<Vec<_>>(), vec![Pos::after_record(2)]);
        assert!(from >= Pos::after_record(in_flight));
        assert_eq!(feed.seek(Pos::after_record(0)), None);
        assert_eq!(feed.seek(Pos::after_record(1)), Some(start));
    }

    /// A write that nobody captured marks the ring as it decides, before it applies: a
    /// subscriber resuming from the newest write meanwhile is sent to the log, not told the
    /// ring holds everything and then never given the write.
    #[test]
    fn a_write_deciding_not_to_capture_is_marked_before_it_applies() {
        let feed = Arc::new(ChangeFeed::default());
        feed.continue_from(5, 10);
        assert_eq!(feed.seek(Pos::after_record(10)), Some(0));
        feed.logged(11);
        assert!(!feed.capture(11), "nobody subscribes");
        let _resumer = feed.subscribe(Arc::new(|| {}));
        assert_eq!(feed.seek(Pos::after_record(10)), None, "record 11 is only in the log");
        feed.publish(11, Vec::new(), 1);
        assert!(feed.capture(12), "captured while someone is attached");
    }

    #[test]
    fn a_subscriber_behind_the_ring_is_told_its_events_are_gone() {
        let feed = Arc::new(ChangeFeed::with_limit(1000));
        let _sub = feed.subscribe(Arc::new(|| {}));
        for _ in 0..10 {
            feed.publish(feed.number(), vec![("t".into(), batch(50))], 1);
        }
        match feed.read(0, 100) {
            Read::Gone { oldest } => assert!(oldest > 1 && oldest <= 10, "{oldest}"),
            Read::Events(_) => panic!("the first events should be gone"),
        }
        assert_eq!(seqs(feed.read(9, 100)), vec![10], "the newest is always held");
        assert_eq!(feed.seek(Pos::after_record(1)), None, "dropped events are only in the log");
        assert!(feed.seek(Pos::after_record(9)).is_some());
    }

    #[test]
    fn event_ids_name_the_timeline_and_the_position() {
        let mid = Pos { lsn: 42, k: 2 };
        assert_eq!(mid.id(7), "7-42.2");
        assert_eq!(Pos::after_record(42).id(7), "7-42");
        assert_eq!(Pos::parse_id("7-42.2"), Some((7, mid)));
        assert_eq!(Pos::parse_id(" 7-42 "), Some((7, Pos::after_record(42))));
        for bad in ["42", "7-", "7-x", "7-42.0", "7-42.", "-42", "7-42.4294967295", "7-0.1"] {
            assert_eq!(Pos::parse_id(bad), None, "{bad}");
        }
        assert!(
            Pos { lsn: 42, k: 1 } < mid && mid < Pos::after_record(42) && Pos::after_record(42) < Pos { lsn: 43, k: 1 }
        );
    }
}
