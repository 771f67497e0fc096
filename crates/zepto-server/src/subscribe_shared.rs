//! The `rows` events of identical table subscriptions, made once per change.
//!
//! Subscribers of the same query text, under the same key and in the same format (JSON or
//! Arrow) over a table get the same `rows` event for each append: the query over the batch and
//! its encoding depend on nothing else. A [`Group`] holds those subscribers' recent events by
//! their feed number; the first subscriber to reach a change makes its event (on the blocking
//! pool) while the others of the group wait for it, then every one sends the same text.
//! 1,000 subscribers of a tickerplant-style filter cost the server one evaluation per append,
//! not 1,000.
//!
//! A view's subscriber is not grouped: its event is the difference from the answer it last
//! got, which a resumed subscriber does not share with the others.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// A `rows` event's JSON values (the new rows, and the rows a view no longer has), `None`
/// when there is nothing to send, or why it could not be made.
pub type Rows = Result<Option<(String, Option<String>)>, String>;

/// Events a group keeps, for its subscribers a few changes behind the first.
const KEPT: usize = 16;

/// The groups of subscribers now streaming (see the module docs).
#[derive(Default)]
pub struct SharedEvents {
    groups: Mutex<HashMap<Key, Weak<Group>>>,
}

#[derive(Debug, Hash, PartialEq, Eq)]
struct Key {
    sql: String,
    /// The key's name: it decides the grants and tenant every batch is queried with.
    who: String,
    arrow: bool,
}

/// Subscribers whose events are the same (see the module docs).
#[derive(Default)]
pub struct Group {
    /// Recent events by feed number, oldest first.
    kept: tokio::sync::Mutex<VecDeque<(u64, Arc<Rows>)>>,
}

impl SharedEvents {
    /// The group of subscribers of `sql` under key `who` in the format `arrow` says (one is
    /// made for the first); it lasts while a subscriber holds it.
    pub fn group(&self, sql: &str, who: &str, arrow: bool) -> Arc<Group> {
        let mut groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        groups.retain(|_, g| g.strong_count() > 0);
        let key = Key { sql: sql.to_string(), who: who.to_string(), arrow };
        if let Some(g) = groups.get(&key).and_then(Weak::upgrade) {
            return g;
        }
        let g = Arc::new(Group::default());
        groups.insert(key, Arc::downgrade(&g));
        g
    }
}

impl Group {
    /// The event of feed change `seq`: kept, or made by `make` (the others of the group wait).
    pub async fn event<F, Fut>(&self, seq: u64, make: F) -> Arc<Rows>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Rows>,
    {
        let mut kept = self.kept.lock().await;
        if let Some((_, e)) = kept.iter().find(|(s, _)| *s == seq) {
            return e.clone();
        }
        let e = Arc::new(make().await);
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back((seq, e.clone()));
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Groups with a subscriber now.
    fn live(shared: &SharedEvents) -> usize {
        shared.groups.lock().unwrap_or_else(PoisonError::into_inner).values().filter(|g| g.strong_count() > 0).count()
    }

    /// Identical subscriptions share a group and each change's event is made once; another
    /// key, query or format is another group; a group ends with its last subscriber.
    #[tokio::test]
    async fn identical_subscribers_make_each_event_once() {
        let shared = SharedEvents::default();
        let (a, b) = (shared.group("SELECT x FROM t", "k", false), shared.group("SELECT x FROM t", "k", false));
        assert!(Arc::ptr_eq(&a, &b));
        let other = [
            shared.group("SELECT x FROM t", "other", false),
            shared.group("SELECT x FROM t", "k", true),
            shared.group("SELECT y FROM t", "k", false),
        ];
        assert!(other.iter().all(|o| !Arc::ptr_eq(o, &a)));
        assert_eq!(live(&shared), 4);
        let made = AtomicUsize::new(0);
        let make = |n: u64| {
            made.fetch_add(1, Ordering::SeqCst);
            async move { Ok(Some((format!("[{n}]"), None))) }
        };
        for seq in [7, 8] {
            let (x, y) = (a.event(seq, || make(seq)).await, b.event(seq, || make(seq)).await);
            assert!(Arc::ptr_eq(&x, &y), "the second subscriber gets the first's event");
            assert_eq!(x.as_ref().as_ref().ok().cloned().flatten().map(|r| r.0), Some(format!("[{seq}]")));
        }
        assert_eq!(made.load(Ordering::SeqCst), 2, "one evaluation per change");
        drop((a, b, other));
        assert_eq!(live(&shared), 0);
    }
}
