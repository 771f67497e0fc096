//! The `rows` events of identical subscriptions, made once per change.
//!
//! Subscribers of the same query text, under the same key and in the same format (JSON or
//! Arrow) over a table get the same `rows` event for each append: the query over the batch and
//! its encoding depend on nothing else. A [`Group`] holds those subscribers' recent events by
//! their feed number; the first subscriber to reach a change makes its event (on the blocking
//! pool) while the others of the group wait for it, then every one sends the same text.
//! 1,000 subscribers of a tickerplant-style filter cost the server one evaluation per append,
//! not 1,000.
//!
//! A view's subscribers are grouped too ([`ViewGroup`]), though an event there is the
//! difference from the answer a subscriber last got. The first to reach a change runs the
//! query over the view and makes the difference from its last answer; every subscriber that
//! last got that same answer (those in step) gets the same event, and one that got another
//! (it started or resumed later, or lagged) makes its own difference to the shared answer,
//! without running the query again. Either way all of them then hold the same answer, so a
//! late joiner is in step from its second change on.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use zepto_sql::subscription::ViewAnswer;
use zepto_storage::feed::Pos;

/// A `rows` event's JSON values (the new rows, and the rows a view no longer has), `None`
/// when there is nothing to send, or why it could not be made.
pub type Rows = Result<Option<(String, Option<String>)>, String>;

/// Events a group keeps, for its subscribers a few changes behind the first.
const KEPT: usize = 16;

/// The groups of subscribers now streaming (see the module docs).
#[derive(Default)]
pub struct SharedEvents {
    groups: Mutex<HashMap<Key, Weak<Group>>>,
    views: Mutex<HashMap<Key, Weak<ViewGroup>>>,
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
    /// Recent events by position, oldest first.
    kept: tokio::sync::Mutex<VecDeque<(Pos, Arc<Rows>)>>,
}

/// A view's subscribers whose queries, keys and formats are the same (see the module docs).
#[derive(Default)]
pub struct ViewGroup {
    /// Recent changes' answers, oldest first.
    kept: tokio::sync::Mutex<VecDeque<ViewEvent>>,
}

/// One change's answer over a view, and the event that moves a subscriber to it from `prev`.
struct ViewEvent {
    seq: Pos,
    prev: Option<ViewAnswer>,
    next: ViewAnswer,
    event: Arc<Rows>,
}

impl SharedEvents {
    /// The group of table subscribers of `sql` under key `who` in the format `arrow` says
    /// (one is made for the first); it lasts while a subscriber holds it.
    pub fn group(&self, sql: &str, who: &str, arrow: bool) -> Arc<Group> {
        member(&self.groups, Key { sql: sql.to_string(), who: who.to_string(), arrow })
    }

    /// [`SharedEvents::group`] for subscribers over a materialized view.
    pub fn view_group(&self, sql: &str, who: &str, arrow: bool) -> Arc<ViewGroup> {
        member(&self.views, Key { sql: sql.to_string(), who: who.to_string(), arrow })
    }
}

/// The live group of `key` in `groups`, made if none.
fn member<G: Default>(groups: &Mutex<HashMap<Key, Weak<G>>>, key: Key) -> Arc<G> {
    let mut groups = groups.lock().unwrap_or_else(PoisonError::into_inner);
    groups.retain(|_, g| g.strong_count() > 0);
    if let Some(g) = groups.get(&key).and_then(Weak::upgrade) {
        return g;
    }
    let g = Arc::new(G::default());
    groups.insert(key, Arc::downgrade(&g));
    g
}

impl ViewGroup {
    /// The event of the feed change at `seq` for a subscriber whose last answer is `last`, and the
    /// answer it moves to (`None` when the query failed). `now` runs the query over the view;
    /// `diff` makes the subscriber's event to an answer and moves it there; `skip` moves it
    /// there when it takes the shared event. The others of the group wait while the first
    /// runs the query.
    pub async fn event<N, NF, D, DF>(
        &self,
        seq: Pos,
        last: Option<ViewAnswer>,
        now: N,
        diff: D,
        skip: impl FnOnce(&ViewAnswer),
    ) -> Arc<Rows>
    where
        N: FnOnce() -> NF,
        NF: Future<Output = Result<ViewAnswer, String>>,
        D: FnOnce(ViewAnswer) -> DF,
        DF: Future<Output = Rows>,
    {
        let mut kept = self.kept.lock().await;
        if let Some(e) = kept.iter().find(|e| e.seq == seq) {
            if ViewAnswer::same(e.prev.as_ref(), last.as_ref()) {
                skip(&e.next);
                return e.event.clone();
            }
            let next = e.next.clone();
            drop(kept);
            return Arc::new(diff(next).await);
        }
        let next = match now().await {
            Ok(a) => a,
            Err(e) => return Arc::new(Err(e)),
        };
        let event = Arc::new(diff(next.clone()).await);
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back(ViewEvent { seq, prev: last, next, event: event.clone() });
        event
    }
}

impl Group {
    /// The event of the feed change at `seq`: kept, or made by `make` (the others of the group wait).
    pub async fn event<F, Fut>(&self, seq: Pos, make: F) -> Arc<Rows>
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
            let at = Pos::after_record(seq);
            let (x, y) = (a.event(at, || make(seq)).await, b.event(at, || make(seq)).await);
            assert!(Arc::ptr_eq(&x, &y), "the second subscriber gets the first's event");
            assert_eq!(x.as_ref().as_ref().ok().cloned().flatten().map(|r| r.0), Some(format!("[{seq}]")));
        }
        assert_eq!(made.load(Ordering::SeqCst), 2, "one evaluation per change");
        drop((a, b, other));
        assert_eq!(live(&shared), 0);
    }

    /// A view's subscribers run the query once per change; those in step get one event, one
    /// that started from an answer of its own (every subscriber at first) gets its own
    /// difference to the same answer, without a query, and is in step from then on.
    #[tokio::test]
    async fn view_subscribers_in_step_share_the_query_and_late_ones_catch_up() {
        use zepto_sql::subscription::Subscription;
        let engine = zepto_sql::Engine::new();
        for q in [
            "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, x BIGINT)",
            "CREATE MATERIALIZED VIEW v AS SELECT sym, sum(x) AS s FROM t GROUP BY sym",
            "INSERT INTO t VALUES ('2024-01-02', 'A', 1)",
        ] {
            engine.execute(q).expect(q);
        }
        let subscribe = || Subscription::new(&engine, "SELECT sym, s FROM v").expect("a view").from_now().expect("now");
        let mut subs = vec![subscribe(), subscribe()];
        let (g, runs) = (ViewGroup::default(), AtomicUsize::new(0));
        async fn event(g: &ViewGroup, seq: u64, sub: &Subscription, runs: &AtomicUsize) -> Arc<Rows> {
            let now = || {
                runs.fetch_add(1, Ordering::SeqCst);
                let a = sub.answer_now().map_err(|e| e.to_string());
                async move { a }
            };
            let diff = |next: ViewAnswer| {
                let rows = sub.advance_to(&next).map(|a| (format!("{:?}", a.rows.batch().columns), None));
                async move { Ok(rows) }
            };
            g.event(Pos::after_record(seq), sub.last_answer(), now, diff, |next| sub.skip_to(next)).await
        }
        for seq in 1..=3 {
            if seq == 3 {
                subs.push(subscribe()); // joins after the second change
            }
            engine.execute(&format!("INSERT INTO t VALUES ('2024-01-02', 'A', {seq}0)")).expect("insert");
            let mut got = Vec::new();
            for sub in &subs {
                got.push(event(&g, seq, sub, &runs).await);
            }
            assert_eq!(runs.load(Ordering::SeqCst) as u64, seq, "one query per change");
            // Each subscribed from its own answer: in step from their second change on.
            assert_eq!(Arc::ptr_eq(&got[0], &got[1]), seq > 1, "subscribers in step get the same event");
            assert_eq!(got[0], got[1]);
            assert!(got[0].as_ref().as_ref().is_ok_and(|r| r
                .as_ref()
                .is_some_and(|r| r.0.contains(&format!("{}", 1 + (1..=seq).sum::<u64>() * 10)))));
            if seq == 3 {
                assert!(!Arc::ptr_eq(&got[0], &got[2]), "the late one's difference is its own");
            }
            let last: Vec<_> = subs.iter().map(Subscription::last_answer).collect();
            assert!(last.iter().all(|l| ViewAnswer::same(l.as_ref(), last[0].as_ref())), "all hold the shared answer");
        }
    }
}
