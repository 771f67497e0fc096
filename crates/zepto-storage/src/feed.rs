//! The change feed: every committed write, in commit order, for subscribers (`GET /subscribe`
//! in zepto-server). A write's appended rows are kept as their columns, its deletes and
//! updates as counts, each event numbered by a sequence that only grows.
//!
//! Every write path goes through [`crate::Catalog::log`]; it hands the changes to the feed,
//! which keeps them (a copy of each appended batch) only while it is *capturing*: while a
//! subscriber is attached, and for [`RETAIN_AFTER`] after the last one left, so that a client
//! that reconnects soon resumes where it was. A database nobody subscribes to copies nothing.
//!
//! The events live in one ring bounded by bytes ([`ChangeFeed::with_limit`]): publishing
//! never waits for a subscriber, and a subscriber that falls further behind than the ring
//! holds finds its next event gone ([`Read::Gone`]) and is told so, rather than slowing the
//! writers or the others.
//!
//! Sequence numbers restart with the process; [`ChangeFeed::epoch`] tells a client that its
//! last number belongs to an earlier one.

use crate::Column;
use std::collections::VecDeque;
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

/// One event of the feed.
#[derive(Debug)]
pub struct FeedEvent {
    /// Its number: one more than the event before it.
    pub seq: u64,
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
    /// The first number of the current unbroken run of captured events.
    run_start: u64,
    wakers: Vec<(u64, Waker)>,
    next_waker: u64,
    last_left: Option<Instant>,
}

/// The feed of a catalog (see the module docs).
pub struct ChangeFeed {
    ring: Mutex<Ring>,
    limit: std::sync::atomic::AtomicUsize,
    epoch: u64,
}

impl Default for ChangeFeed {
    fn default() -> Self {
        ChangeFeed::with_limit(DEFAULT_LIMIT_BYTES)
    }
}

impl std::fmt::Debug for ChangeFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeFeed").field("limit", &self.limit()).field("epoch", &self.epoch).finish()
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
            run_start: 1,
            wakers: Vec::new(),
            next_waker: 0,
            last_left: None,
        };
        ChangeFeed { ring: Mutex::new(ring), limit: limit.into(), epoch }
    }

    /// Bound the ring to `bytes` of appended data from now on.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    fn limit(&self) -> usize {
        self.limit.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This process's feed: sequence numbers from another epoch mean nothing here.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The number of the last event published (0: none yet).
    pub fn head(&self) -> u64 {
        self.ring().next - 1
    }

    /// Whether writes are kept for subscribers now.
    pub fn capturing(&self) -> bool {
        let r = self.ring();
        !r.wakers.is_empty() || r.last_left.is_some_and(|t| t.elapsed() < RETAIN_AFTER)
    }

    /// Publish one write's `count` changes, numbered in order, and wake the subscribers.
    /// Called by the catalog after the write applied. When the feed was not capturing as the
    /// write was logged (`changes` is then empty) or is not now, only the numbers advance.
    pub(crate) fn publish(&self, changes: Vec<(String, FeedChange)>, count: usize) {
        let mut r = self.ring();
        let capturing = !r.wakers.is_empty() || r.last_left.is_some_and(|t| t.elapsed() < RETAIN_AFTER);
        if !capturing || changes.len() != count {
            r.next += count as u64;
            r.run_start = r.next;
            r.events.clear();
            r.bytes = 0;
            return;
        }
        for (table, change) in changes {
            let e = Arc::new(FeedEvent { seq: r.next, table, change });
            r.next += 1;
            r.bytes += e.bytes();
            r.events.push_back(e);
        }
        let limit = self.limit();
        while r.bytes > limit && r.events.len() > 1 {
            if let Some(old) = r.events.pop_front() {
                r.bytes -= old.bytes();
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
    /// longer held (or was never captured).
    pub fn read(&self, after: u64, max: usize) -> Read {
        let r = self.ring();
        let oldest = r.events.front().map_or(r.next, |e| e.seq);
        if after + 1 < r.run_start.max(oldest) {
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
    fn nothing_is_kept_without_a_subscriber_and_numbers_still_advance() {
        let feed = Arc::new(ChangeFeed::default());
        feed.publish(vec![("t".into(), batch(3))], 1);
        assert!(!feed.capturing());
        assert_eq!(feed.head(), 1);
        assert!(matches!(feed.read(0, 10), Read::Gone { .. }), "never captured");
        let woken = Arc::new(AtomicUsize::new(0));
        let w = woken.clone();
        let sub = feed.subscribe(Arc::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        }));
        feed.publish(vec![("t".into(), batch(2)), ("u".into(), FeedChange::Delete(4))], 2);
        assert_eq!(woken.load(Ordering::Relaxed), 1);
        assert_eq!(seqs(feed.read(1, 10)), vec![2, 3]);
        assert_eq!(seqs(feed.read(2, 10)), vec![3]);
        assert_eq!(seqs(feed.read(3, 10)), Vec::<u64>::new());
        drop(sub);
        assert!(feed.capturing(), "kept for a while after the last subscriber left");
        feed.publish(vec![("t".into(), FeedChange::Drop)], 1);
        assert_eq!(seqs(feed.read(3, 10)), vec![4]);
    }

    #[test]
    fn a_subscriber_behind_the_ring_is_told_its_events_are_gone() {
        let feed = Arc::new(ChangeFeed::with_limit(1000));
        let _sub = feed.subscribe(Arc::new(|| {}));
        for _ in 0..10 {
            feed.publish(vec![("t".into(), batch(50))], 1);
        }
        match feed.read(0, 100) {
            Read::Gone { oldest } => assert!(oldest > 1 && oldest <= 10, "{oldest}"),
            Read::Events(_) => panic!("the first events should be gone"),
        }
        assert_eq!(seqs(feed.read(9, 100)), vec![10], "the newest is always held");
    }
}
