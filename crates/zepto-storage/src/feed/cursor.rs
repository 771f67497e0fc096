//! A subscriber's place in the feed: where it resumes, and where its next events come from.
//!
//! A cursor reads one table's events after a position. While the ring holds every event
//! after it ([`ChangeFeed::seek`]), it reads the ring; before that (a resume from a position
//! the ring never held: an earlier run, a time nobody subscribed, a subscriber cut off as too
//! slow) it reads the records after it back from the write-ahead log
//! ([`crate::ChangeLog::read_since`]), a page at a time, until the ring holds the rest. An
//! in-memory database has no log: a position the ring does not hold is gone.
//!
//! Reading the ring, events before the cursor's start are skipped by position (a write still
//! in flight when a subscriber started, or one read from the log already), and a subscriber
//! the ring dropped events of while it lagged is told so ([`CursorError::Behind`]).

use super::{ChangeFeed, FeedEvent, Pos, Read};
use crate::Catalog;
use std::sync::Arc;

/// Bytes of log records read back per page.
const PAGE_BYTES: usize = 32 << 20;

/// What the log gave back ([`crate::ChangeLog::read_since`]).
#[derive(Debug)]
pub enum LogRead {
    /// One table's events in the records after the position asked for, through LSN
    /// `through` (every record up to it was read).
    Events {
        /// The events, in log order.
        events: Vec<FeedEvent>,
        /// The last LSN read.
        through: u64,
    },
    /// The log no longer holds the next record: its oldest is `oldest`.
    Gone {
        /// The first LSN the log holds.
        oldest: u64,
    },
}

/// Why a cursor cannot start or go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorError {
    /// The id is not an event id.
    BadId(String),
    /// The events after the position are held neither by the ring nor by the log (or it is
    /// of another timeline).
    Gone(String),
    /// A subscriber reading the ring fell behind it: what it had not read was dropped.
    Behind(String),
}

impl std::fmt::Display for CursorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CursorError::BadId(m) | CursorError::Gone(m) | CursorError::Behind(m) => f.write_str(m),
        }
    }
}

/// One subscriber's place (see the module docs). Attach the subscriber to the feed
/// ([`ChangeFeed::subscribe`]) before making its cursor, so that the ring captures every
/// write the cursor does not count as before its start.
#[derive(Debug)]
pub struct Cursor {
    table: String,
    /// Events at or before it are not the subscriber's.
    after: Pos,
    /// The ring's number read after, once the ring holds what follows `after`.
    seq: Option<u64>,
    /// Hand over the ring's events at or before `after` too ([`Cursor::answering_now`]).
    again: bool,
}

impl Cursor {
    /// A cursor over `table`'s events from now.
    pub fn now(catalog: &Catalog, table: &str) -> Cursor {
        let (seq, after) = catalog.feed().now();
        Cursor { table: table.to_string(), after, seq: Some(seq), again: false }
    }

    /// A cursor over `table`'s events after event `id` (`TIMELINE-LSN[.K]`, as events' ids
    /// are written): [`CursorError::Gone`] unless the ring or the log holds what follows it
    /// (the log is only listed here; its records are read by [`Cursor::read`]).
    pub fn after_id(catalog: &Catalog, table: &str, id: &str) -> Result<Cursor, CursorError> {
        let bad = || CursorError::BadId(format!("'{id}' is not an event id (TIMELINE-LSN, as events' ids are)"));
        let (timeline, pos) = Pos::parse_id(id).ok_or_else(bad)?;
        let now = catalog.feed().epoch();
        if timeline != now {
            return Err(CursorError::Gone(format!(
                "event {id} is of another history of the database (an earlier run of an in-memory database, a crash under a relaxed --sync, a restore; this one's ids start with {now}-): subscribe again from now"
            )));
        }
        Cursor::after(catalog, table, pos)
    }

    /// A cursor over `table`'s events after the whole record `lsn` of this database's log.
    pub fn after_lsn(catalog: &Catalog, table: &str, lsn: u64) -> Result<Cursor, CursorError> {
        Cursor::after(catalog, table, Pos::after_record(lsn))
    }

    fn after(catalog: &Catalog, table: &str, pos: Pos) -> Result<Cursor, CursorError> {
        let feed = catalog.feed();
        let last = feed.last_lsn();
        if pos.lsn > last {
            return Err(CursorError::Gone(format!(
                "LSN {} is after the newest this database has logged ({last}): subscribe again from now",
                pos.lsn
            )));
        }
        let c = Cursor { table: table.to_string(), after: pos, seq: feed.seek(pos), again: false };
        if c.seq.is_none() {
            // Checked now, cheaply (the log's segments are listed, not read): a position the
            // log no longer holds fails the start.
            let log = c.log(catalog)?;
            match log.oldest_held().map_err(|e| c.gone(format!("could not be read back from the log ({e})")))? {
                Some(oldest) if oldest > c.start() + 1 && c.start() < last => {
                    return Err(c.gone(format!(
                        "are no longer in the log (a checkpoint removed them; the oldest held is {oldest})"
                    )))
                }
                _ => {}
            }
        }
        Ok(c)
    }

    /// The LSN after which the log is read: the cursor's record, when it is not past all of it.
    fn start(&self) -> u64 {
        if self.after.k == Pos::LAST {
            self.after.lsn
        } else {
            self.after.lsn.saturating_sub(1)
        }
    }

    fn log<'c>(&self, catalog: &'c Catalog) -> Result<&'c Arc<dyn crate::ChangeLog>, CursorError> {
        catalog.change_log().ok_or_else(|| {
            CursorError::Gone(format!(
                "the events after LSN {} are no longer held, and an in-memory database keeps no log to read them from: subscribe again from now",
                self.after.lsn
            ))
        })
    }

    fn gone(&self, what: String) -> CursorError {
        CursorError::Gone(format!("the events after LSN {} {what}: subscribe again from now", self.after.lsn))
    }

    /// The same cursor for a subscriber whose answer to a change is the state *now* (a
    /// view's). The ring's events it counts as seen are handed over again: the log is read up
    /// to the newest record logged, which may not have reached the tables yet; an answer made
    /// then lacks it, and the record's ring event, once it applied, is what brings it. And of
    /// the events read together only the last is handed over (with any drop): its answer says
    /// what the earlier ones' would.
    pub fn answering_now(self) -> Cursor {
        Cursor { again: true, ..self }
    }

    /// Whether its next events come from the ring (cheap to read: no file is read).
    pub fn in_ring(&self) -> bool {
        self.seq.is_some()
    }

    /// The position after which the next event comes: a client that resumes from it misses
    /// and repeats nothing.
    pub fn position(&self) -> Pos {
        self.after
    }

    /// The table's next events, at most `max` from the ring (a page of the log may give more);
    /// none when it has caught up.
    pub fn read(&mut self, catalog: &Catalog, max: usize) -> Result<Vec<Arc<FeedEvent>>, CursorError> {
        let feed = catalog.feed();
        loop {
            let Some(seq) = self.seq else {
                if let Some(s) = feed.seek(self.after) {
                    self.seq = Some(s);
                    continue;
                }
                let events = self.read_log(catalog, feed)?;
                if events.is_empty() {
                    continue;
                }
                return Ok(self.collapsed(events));
            };
            let events = match feed.read(seq, max) {
                Read::Gone { oldest } => {
                    return Err(CursorError::Behind(format!(
                        "this subscriber fell behind what the server keeps for subscribers (its next event was dropped; the oldest held is number {oldest}): resume from its last event id"
                    )))
                }
                Read::Events(e) => e,
            };
            let Some(last) = events.last() else { return Ok(Vec::new()) };
            self.seq = Some(last.seq);
            let full = events.len() == max;
            let mine: Vec<_> = events.into_iter().filter(|e| self.mine(e) || (self.again && self.ours(e))).collect();
            // One table's events are in the ring in log order: its last is where a client
            // handed these resumes.
            if let Some(e) = mine.last() {
                self.after = self.after.max(e.pos);
            }
            if !mine.is_empty() || !full {
                return Ok(self.collapsed(mine));
            }
        }
    }

    fn mine(&self, e: &FeedEvent) -> bool {
        e.pos > self.after && self.ours(e)
    }

    fn ours(&self, e: &FeedEvent) -> bool {
        e.table.eq_ignore_ascii_case(&self.table)
    }

    /// `events` (the table's, in order) as handed over: for a cursor answering now, the last
    /// one and any drop (see [`Cursor::answering_now`]); else all of them.
    fn collapsed(&self, mut events: Vec<Arc<FeedEvent>>) -> Vec<Arc<FeedEvent>> {
        if self.again {
            let last = events.len().saturating_sub(1);
            let mut i = 0;
            events.retain(|e| {
                i += 1;
                i > last || matches!(e.change, super::FeedChange::Drop)
            });
        }
        events
    }

    /// The next page of the table's events from the log (moving the cursor past it).
    fn read_log(&mut self, catalog: &Catalog, feed: &ChangeFeed) -> Result<Vec<Arc<FeedEvent>>, CursorError> {
        let log = self.log(catalog)?;
        let upto = feed.last_lsn();
        match log.read_since(catalog, &self.table, self.start(), upto, PAGE_BYTES) {
            Ok(LogRead::Events { events, through }) => {
                let mine = events.into_iter().filter(|e| self.mine(e)).map(Arc::new).collect();
                self.after = self.after.max(Pos::after_record(through));
                Ok(mine)
            }
            Ok(LogRead::Gone { oldest }) => {
                Err(self
                    .gone(format!("are no longer in the log (a checkpoint removed them; the oldest held is {oldest})")))
            }
            Err(e) => Err(self.gone(format!("could not be read back from the log ({e})"))),
        }
    }
}
