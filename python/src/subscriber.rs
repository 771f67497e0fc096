//! `Database.subscribe`: a subscription's events in process, read from the catalog's change
//! feed as the HTTP door's `GET /subscribe` reads them (the query's checks and its run over each
//! appended batch are `zepto_sql::subscription`'s). `next` waits, the GIL released, for the
//! next event of the subscription's table at most `timeout` seconds.

use crate::errors::sql_error;
use crate::result::NativeResult;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use zepto_sql::subscription::{Start, Subscription};
use zepto_sql::SqlError;
use zepto_storage::feed::cursor::{Cursor, CursorError};
use zepto_storage::feed::{FeedChange, FeedEvent, Subscriber as Attached};

/// A flag the feed raises after each publish, and the condition to wait for it on.
#[derive(Default)]
struct Wake {
    raised: Mutex<bool>,
    cond: Condvar,
}

/// One subscription (see the module docs).
#[pyclass(frozen, module = "zeptodb._native")]
pub struct NativeSubscriber {
    sub: Subscription,
    wake: Arc<Wake>,
    state: Mutex<Place>,
    _attached: Attached,
}

/// Where a subscriber is: its cursor, the events read but not yet answered, and whether the
/// table was dropped.
struct Place {
    cursor: Cursor,
    read: VecDeque<Arc<FeedEvent>>,
    dropped: bool,
}

impl NativeSubscriber {
    /// Subscribe `sql` through `engine`, after event `from` (`TIMELINE-LSN`) or from now.
    pub fn start(engine: &zepto_sql::Engine, sql: &str, from: Option<&str>) -> Result<NativeSubscriber, SqlError> {
        let sub = Subscription::new(engine, sql)?;
        // A view's subscriber from now is told what changes after its answer now.
        let sub = if from.is_none() { sub.from_now()? } else { sub };
        let feed = engine.catalog().feed().clone();
        let wake = Arc::new(Wake::default());
        let w = wake.clone();
        let attached = feed.subscribe(Arc::new(move || {
            *w.raised.lock().unwrap_or_else(|e| e.into_inner()) = true;
            w.cond.notify_all();
        }));
        let cursor = sub.cursor(from.map_or(Start::Now, Start::Id)).map_err(cursor_error)?;
        let place = Place { cursor, read: VecDeque::new(), dropped: false };
        Ok(NativeSubscriber { sub, wake, state: Mutex::new(place), _attached: attached })
    }

    /// The next event of the table, waiting until `deadline`.
    fn next_event(&self, deadline: Instant) -> Result<Option<Event>, SqlError> {
        let mut place = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let timeline = self.sub.catalog().feed().epoch();
        loop {
            if place.dropped {
                return Ok(Some(Event::End));
            }
            if place.read.is_empty() {
                let Place { cursor, read, .. } = &mut *place;
                read.extend(cursor.read(self.sub.catalog(), 64).map_err(cursor_error)?);
            }
            if place.read.is_empty() {
                if !self.wait(deadline) {
                    return Ok(None);
                }
                continue;
            }
            while let Some(e) = place.read.pop_front() {
                if !self.sub.reads(&e.table) {
                    continue;
                }
                let id = e.pos.id(timeline);
                match &e.change {
                    FeedChange::Delete(_) | FeedChange::Update(_) if self.sub.over_view() => {
                        if let Some(a) = self.sub.answer_change(&e.change)? {
                            return Ok(Some(Event::Rows(id, a)));
                        }
                    }
                    FeedChange::Append(_) => {
                        if let Some(a) = self.sub.answer_change(&e.change)? {
                            return Ok(Some(Event::Rows(id, a)));
                        }
                    }
                    FeedChange::Delete(n) => return Ok(Some(Event::Count("delete", id, *n))),
                    FeedChange::Update(n) => return Ok(Some(Event::Count("update", id, *n))),
                    FeedChange::Drop => {
                        place.dropped = true;
                        return Ok(Some(Event::Count("drop", id, 0)));
                    }
                }
            }
        }
    }

    /// Wait for a publish until `deadline`; false when it passed.
    fn wait(&self, deadline: Instant) -> bool {
        let mut raised = self.wake.raised.lock().unwrap_or_else(|e| e.into_inner());
        while !*raised {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            raised = match self.wake.cond.wait_timeout(raised, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        *raised = false;
        true
    }
}

/// A cursor that cannot start or go on, as the error Python sees: a subscriber behind the
/// feed's ring gets `ResourcesExhausted` (`SLOW_CONSUMER`), one that cannot resume a plan
/// error.
fn cursor_error(e: CursorError) -> SqlError {
    match e {
        CursorError::Behind(m) => SqlError::ResourcesExhausted(format!("SLOW_CONSUMER: {m}")),
        CursorError::BadId(m) | CursorError::Gone(m) => SqlError::plan(m, None),
    }
}

/// What `next_event` found.
enum Event {
    /// Rows of an append that passed the query, or the difference of a view's answer.
    Rows(String, zepto_sql::subscription::Answer),
    /// A delete, update or drop and its row count.
    Count(&'static str, String, usize),
    /// The table was dropped before: nothing more comes.
    End,
}

#[pymethods]
impl NativeSubscriber {
    /// The next event as `(kind, id, payload)`: `("rows", id, result)`, `("delete" | "update",
    /// id, rows)`, `("drop", id, 0)`; `None` when `timeout` seconds pass first; `("end", "",
    /// 0)` after a drop.
    #[pyo3(signature = (timeout))]
    fn next(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<(String, String, Py<PyAny>)>> {
        if !(timeout.is_finite() && timeout >= 0.0) {
            return Err(PyValueError::new_err(format!("timeout must be seconds, not {timeout}")));
        }
        let deadline = Instant::now() + Duration::from_secs_f64(timeout);
        let event = py.detach(|| self.next_event(deadline)).map_err(|e| sql_error(py, e))?;
        Ok(match event {
            None => None,
            Some(Event::End) => Some(("end".into(), String::new(), 0usize.into_pyobject(py)?.into_any().unbind())),
            Some(Event::Rows(id, a)) => {
                let rows = Py::new(py, NativeResult::new(&a.rows).map_err(PyValueError::new_err)?)?.into_any();
                let removed = match &a.removed {
                    Some(r) => Py::new(py, NativeResult::new(r).map_err(PyValueError::new_err)?)?.into_any(),
                    None => py.None(),
                };
                Some(("rows".into(), id, (rows, removed).into_pyobject(py)?.into_any().unbind()))
            }
            Some(Event::Count(kind, id, n)) => Some((kind.into(), id, n.into_pyobject(py)?.into_any().unbind())),
        })
    }

    /// The table the subscription reads.
    #[getter]
    fn table(&self) -> String {
        self.sub.table().to_string()
    }
}
