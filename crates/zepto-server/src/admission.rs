//! Admission control shared by every door that runs statements: HTTP (`/query`, `/exec`,
//! `/api/ai`), the PostgreSQL wire door and Flight SQL.
//!
//! Why one: `--max-queries` bounds the statements running at once so that a flood of heavy
//! ones queues instead of piling up threads, and the quick lane keeps a point lookup from
//! waiting behind them. Each door with its own threads (before, the PostgreSQL and Flight SQL
//! doors ran statements on their runtimes' blocking pools, uncounted and at ingest's CPU
//! priority) would make the bound per door and let one door's heavy statements take the CPU
//! every other door's short ones need. Here a statement waits (without holding a thread) for
//! a slot, at most `--queue-timeout`, then runs on the slot's lane's threads
//! ([`crate::pool::QueryPool`], below ingest's priority).

use crate::pool::{QueryPool, QUERY_NICE, QUICK_NICE};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use zepto_sql::interrupt::{QueryControl, RunContext};

/// Which slots a statement runs under, and so which threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The quick lane (`--max-queries` does not count it): statements whose scans read at
    /// most [`crate::sql::QUICK_ROWS`] rows.
    Quick,
    /// The query slots every other statement shares.
    General,
}

/// Why a statement did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Every query slot stayed busy for the whole `--queue-timeout`.
    Busy {
        /// How long it waited.
        waited: Duration,
        /// `--max-queries`.
        slots: usize,
    },
    /// The server is stopping (its threads are gone).
    Stopping,
    /// The job's thread ended without an answer (it panicked; the panic was caught).
    Lost,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Busy { waited, slots } => write!(
                f,
                "every query slot stayed busy for {:.1} s (admission control: {slots} statements at once, \
                 --queue-timeout); retry later",
                waited.as_secs_f64()
            ),
            Refused::Stopping => f.write_str("the server is shutting down"),
            Refused::Lost => f.write_str("the statement's thread ended without an answer"),
        }
    }
}

/// The query slots, the quick lane's, and the threads of each.
pub struct Admission {
    slots: usize,
    queue_timeout: Duration,
    general: Arc<Semaphore>,
    quick: Arc<Semaphore>,
    general_pool: QueryPool,
    quick_pool: QueryPool,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Admission {{ slots: {}, busy: {}, queue_timeout: {:?} }}",
            self.slots,
            self.busy(),
            self.queue_timeout
        )
    }
}

/// A slot held: the statement runs under it, on its lane's threads.
pub struct Slot {
    permit: OwnedSemaphorePermit,
    lane: Lane,
}

impl Slot {
    /// The lane it belongs to.
    pub fn lane(&self) -> Lane {
        self.lane
    }
}

impl Admission {
    /// `slots` query slots (`--max-queries`, [`crate::config::Config::query_slots`]) and
    /// `quick` of the quick lane, each with a thread; a statement waits at most
    /// `queue_timeout` for one.
    pub fn new(slots: usize, quick: usize, queue_timeout: Duration) -> std::io::Result<Admission> {
        Ok(Admission {
            slots,
            queue_timeout,
            general: Arc::new(Semaphore::new(slots)),
            quick: Arc::new(Semaphore::new(quick)),
            general_pool: QueryPool::new(slots, QUERY_NICE)?,
            quick_pool: QueryPool::new(quick, QUICK_NICE)?,
        })
    }

    /// Query slots (`--max-queries`).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Query slots held now (the quick lane's are not counted).
    pub fn busy(&self) -> usize {
        self.slots.saturating_sub(self.general.available_permits())
    }

    /// A query slot, waited for at most `--queue-timeout`.
    pub async fn admit(&self) -> Result<Slot, Refused> {
        let wait = self.queue_timeout;
        match tokio::time::timeout(wait, self.general.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Slot { permit, lane: Lane::General }),
            Ok(Err(_)) => Err(Refused::Stopping),
            Err(_) => Err(Refused::Busy { waited: wait, slots: self.slots }),
        }
    }

    /// A slot for a statement: a quick one takes the quick lane's, or a query slot if one
    /// frees first; any other waits for a query slot ([`Admission::admit`]).
    pub async fn admit_for(&self, quick: bool) -> Result<Slot, Refused> {
        if !quick {
            return self.admit().await;
        }
        tokio::select! {
            biased;
            p = self.quick.clone().acquire_owned() => {
                Ok(Slot { permit: p.map_err(|_| Refused::Stopping)?, lane: Lane::Quick })
            }
            s = self.admit() => s,
        }
    }

    /// Run `job` under `slot` on its lane's threads; the slot is given back when the job ends.
    /// [`Refused::Stopping`] if the threads are gone.
    pub fn spawn(&self, slot: Slot, job: impl FnOnce() + Send + 'static) -> Result<(), Refused> {
        let permit = slot.permit;
        let spawned = self.pool(slot.lane).spawn(move || {
            let _permit = permit;
            job()
        });
        spawned.then_some(()).ok_or(Refused::Stopping)
    }

    /// Run `job` on `slot`'s lane's threads while the caller keeps the slot (to run more
    /// under it after). [`Refused::Stopping`] if the threads are gone.
    pub(crate) fn spawn_held(&self, slot: &Slot, job: impl FnOnce() + Send + 'static) -> Result<(), Refused> {
        self.pool(slot.lane).spawn(job).then_some(()).ok_or(Refused::Stopping)
    }

    fn pool(&self, lane: Lane) -> &QueryPool {
        match lane {
            Lane::Quick => &self.quick_pool,
            Lane::General => &self.general_pool,
        }
    }

    /// Run `job` under `slot` and wait (without holding a thread) for its answer. The slot
    /// is given back before the answer is sent, so a caller that goes on to its next
    /// statement finds it free. A job that panics answers [`Refused::Lost`].
    pub async fn run_in<T: Send + 'static>(
        &self,
        slot: Slot,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Refused> {
        let (tx, rx) = oneshot::channel();
        let Slot { permit, lane } = slot;
        if !self.pool(lane).spawn(move || {
            let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            drop(permit);
            let _ = tx.send(answer);
        }) {
            return Err(Refused::Stopping);
        }
        rx.await.map_err(|_| Refused::Lost)?.map_err(|_| Refused::Lost)
    }

    /// Wait for a slot ([`Admission::admit_for`]), then run `job` on it and wait for its answer.
    pub async fn run<T: Send + 'static>(
        &self,
        quick: bool,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Refused> {
        let slot = self.admit_for(quick).await?;
        self.run_in(slot, job).await
    }

    /// [`Admission::run`] of a statement under `ctl` (the job gets its run context): when the
    /// caller stops waiting (its future is dropped: the client left or gave up), the statement
    /// is cancelled, whether it still waits for a slot or runs, so it gives its slot back at
    /// its next check.
    pub async fn run_controlled<T: Send + 'static>(
        &self,
        ctl: &Arc<QueryControl>,
        quick: bool,
        job: impl FnOnce(&RunContext) -> T + Send + 'static,
    ) -> Result<T, Refused> {
        let armed = CancelOnDrop::new(ctl.clone());
        let c = ctl.clone();
        let r = self.run(quick, move || job(&RunContext::new(Some(c)))).await;
        armed.disarm();
        r
    }
}

/// Cancels a statement's control when dropped armed: its caller's future was dropped while
/// the statement waited or ran. [`CancelOnDrop::disarm`] once the answer is in.
pub struct CancelOnDrop(Option<Arc<QueryControl>>);

impl CancelOnDrop {
    /// Armed for `ctl`.
    pub fn new(ctl: Arc<QueryControl>) -> CancelOnDrop {
        CancelOnDrop(Some(ctl))
    }

    /// Done: dropping it no longer cancels.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A caller that stops waiting cancels the statement (here while it runs: the job sees its
    /// control cancelled); one that waits to the end leaves it alone.
    #[tokio::test]
    async fn a_caller_that_leaves_cancels_the_statement() {
        let a = Arc::new(admission(1, 2, 30_000));
        let ctl = QueryControl::new(None, None);
        let (started_tx, started) = oneshot::channel();
        let (c, gate) = (ctl.clone(), a.clone());
        let waiting = tokio::spawn(async move {
            gate.run_controlled(&c, false, move |run| {
                let _ = started_tx.send(());
                while run.check().is_ok() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .await
        });
        started.await.expect("the job started");
        waiting.abort();
        let _ = waiting.await;
        assert!(ctl.is_cancelled(), "the statement of a caller that left is cancelled");
        assert_eq!(a.run(false, || 5).await, Ok(5), "and its slot comes back");
        let kept = QueryControl::new(None, None);
        assert_eq!(a.run_controlled(&kept, false, |_| 6).await, Ok(6));
        assert!(!kept.is_cancelled());
    }

    fn admission(slots: usize, quick: usize, wait_ms: u64) -> Admission {
        Admission::new(slots, quick, Duration::from_millis(wait_ms)).expect("threads")
    }

    /// A statement waits for a held slot, is refused once the queue timeout passes, and runs
    /// once the slot is free; a quick one takes the quick lane meanwhile.
    #[tokio::test]
    async fn slots_bound_statements_and_quick_ones_pass() {
        let a = admission(1, 2, 50);
        let held = a.admit().await.expect("the one slot");
        assert_eq!(a.busy(), 1);
        assert_eq!(a.run(false, || 1).await, Err(Refused::Busy { waited: Duration::from_millis(50), slots: 1 }));
        assert_eq!(a.run(true, || 2).await, Ok(2), "the quick lane does not wait for query slots");
        drop(held);
        assert_eq!(a.busy(), 0);
        assert_eq!(a.run(false, || 3).await, Ok(3));
        let slot = a.admit_for(true).await.expect("a slot");
        assert_eq!(slot.lane(), Lane::Quick);
    }

    /// A job that panics gives its slot back and answers `Lost`; the threads go on.
    #[tokio::test]
    async fn a_panicking_job_gives_its_slot_back() {
        let a = admission(1, 2, 1000);
        let r: Result<(), Refused> = a.run(false, || panic!("a statement's bug")).await;
        assert_eq!(r, Err(Refused::Lost));
        assert_eq!(a.busy(), 0, "the slot is back before the answer");
        assert_eq!(a.run(false, || 4).await, Ok(4));
    }
}
