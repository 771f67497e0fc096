//! The write path's panic policy: once a change is in the write-ahead log, it is applied to
//! memory or the process stops.
//!
//! Every write validates, logs, then applies (`Catalog::log` returns a [`Logged`] token). After
//! the log has a change, memory must follow it: a panic or an error while applying would leave
//! the table half-changed, or unchanged while the log says otherwise, and every later read and
//! checkpoint would be wrong. So applying runs under [`Logged::apply`]: a panic that unwinds
//! through it, or an error it returns, aborts the process (one line on stderr says what), and
//! the restart recovers from the log, where the change is whole. The change was never
//! acknowledged (its caller got no answer), so nothing acknowledged is lost. Reads and queries
//! keep the ordinary policy: a panic there is caught and answered as an internal error.
//!
//! An in-memory database has no log to recover from: there, [`Logged::apply`] returns an
//! error as it is and a panic unwinds as any other (aborting would lose every table).

use std::fmt::Display;

/// A change the log holds (or, in memory, would hold): apply it with [`Logged::apply`].
#[must_use = "a logged change must be applied under Logged::apply"]
pub struct Logged {
    durable: bool,
    /// What the change feed publishes once the change applied.
    feed: Option<Published>,
    /// What the materialized views of the changed tables do once it applied.
    views: Vec<crate::view::ViewWork>,
}

/// A logged write's events for the change feed: its changes (kept only while the feed
/// captures) and how many there are.
pub(crate) struct Published {
    pub feed: std::sync::Arc<crate::feed::ChangeFeed>,
    pub lsn: u64,
    pub changes: Vec<(String, crate::feed::FeedChange)>,
    pub count: usize,
}

impl Logged {
    /// A change written to a durable log.
    pub(crate) fn durable() -> Logged {
        Logged { durable: true, feed: None, views: Vec::new() }
    }

    /// A change with no log behind it (an in-memory database).
    pub(crate) fn in_memory() -> Logged {
        Logged { durable: false, feed: None, views: Vec::new() }
    }

    /// The same change, publishing `p` to the change feed once applied.
    pub(crate) fn publishing(self, p: Option<Published>) -> Logged {
        Logged { feed: p, ..self }
    }

    /// The same change, doing `views`' work once applied (before the feed publishes it, so a
    /// subscriber told of a change finds it in the views).
    pub(crate) fn with_views(self, views: Vec<crate::view::ViewWork>) -> Logged {
        Logged { views, ..self }
    }

    /// Apply the logged change: `f`'s result, except that when the change is durable an error
    /// or a panic from `f` stops the process (see the module docs).
    pub fn apply<T, E: Display>(self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let guard = AbortOnUnwind { armed: self.durable };
        let r = f();
        drop(guard);
        match r {
            Err(e) if self.durable => abort(&format!("applying a logged change failed: {e}")),
            Ok(v) => {
                self.views.into_iter().for_each(crate::view::ViewWork::run);
                if let Some(p) = self.feed {
                    p.feed.publish(p.lsn, p.changes, p.count);
                }
                Ok(v)
            }
            r => r,
        }
    }
}

/// Aborts the process if dropped while a panic unwinds and `armed`.
struct AbortOnUnwind {
    armed: bool,
}

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if self.armed && std::thread::panicking() {
            abort("a panic while applying a logged change");
        }
    }
}

fn abort(what: &str) -> ! {
    eprintln!("FATAL: {what}; memory may no longer match the write-ahead log, so the process stops here. Restart it: recovery replays the log, where the change is whole.");
    std::process::abort()
}
