//! The consumer's shared-history duties (see [`crate::history`]): where a partition starts
//! when it is taken, the partitions whose take-over waits, and sealing the owned ones.

use super::{lock, now_ns, Pending, Worker, RETRY};
use crate::history::{self, SharedHistory};
use crate::offsets;
use crate::ClusterError;
use rdkafka::consumer::Consumer;
use rdkafka::{Offset, TopicPartitionList};
use std::time::Instant;
use zepto_server::cluster::PartitionState;
use zepto_sql::Engine;

/// The last offset partition `p` of `topic` (of `count`) resumes after on this node, whose
/// tables hold it up to `applied` (`None`: from the beginning): with shared history, taken
/// over first when its newest manifest is further.
pub(super) fn start(
    engine: &Engine,
    history: Option<&SharedHistory>,
    topic: &str,
    p: i32,
    count: usize,
    applied: Option<i64>,
) -> Result<Option<i64>, ClusterError> {
    let Some(sh) = history else { return Ok(applied) };
    let count = i32::try_from(count).ok().filter(|&c| c > 0).ok_or_else(|| {
        ClusterError::Kafka("the topic's partition count is not known yet (needed to take shared history)".into())
    })?;
    history::take_over(engine, sh, topic, p, count, applied, now_ns())
}

/// A partition's state when taken, resuming after `from`.
pub(super) fn owned(from: Option<i64>, shared_history: bool) -> PartitionState {
    PartitionState { applied: from, sealed: from.filter(|_| shared_history), ..PartitionState::default() }
}

impl Worker {
    /// Between batches: take the partitions that wait, and seal the owned ones when due.
    pub(super) fn keep_history(&mut self) {
        self.retry_pending();
        let Some(sh) = self.config.shared_history().cloned() else { return };
        if self.last_seal.elapsed() >= sh.seal_every() {
            self.seal_owned(&sh);
            self.last_seal = Instant::now();
        }
    }

    /// Try again to take the partitions that wait (every [`RETRY`]).
    fn retry_pending(&mut self) {
        if lock(&self.pending).is_empty() || self.last_retry.elapsed() < RETRY {
            return;
        }
        self.last_retry = Instant::now();
        let count = self.partition_count();
        let applied = match offsets::applied(&self.engine, &self.topic) {
            Ok(a) => a,
            Err(e) => return self.shared.update(|s| s.last_error = Some(format!("taking partitions: {e}"))),
        };
        let waiting: Vec<i32> = lock(&self.pending).iter().copied().collect();
        for p in waiting {
            let history = self.config.shared_history();
            match start(&self.engine, history, &self.topic, p, count, applied.get(&p).copied()) {
                Ok(from) => self.take(p, from, &self.pending),
                Err(e) => self.shared.update(|s| s.last_error = Some(format!("partition {p}: {e}"))),
            }
        }
    }

    /// Start consuming partition `p` after `from`, which waited.
    fn take(&self, p: i32, from: Option<i64>, pending: &Pending) {
        let mut tpl = TopicPartitionList::new();
        let at = from.map_or(Offset::Beginning, |o| Offset::Offset(o + 1));
        let assigned =
            tpl.add_partition_offset(&self.topic, p, at).and_then(|()| self.consumer.incremental_assign(&tpl));
        match assigned {
            Ok(()) => {
                lock(pending).remove(&p);
                let shared_history = self.config.shared_history().is_some();
                self.shared.update(|s| {
                    s.partitions.insert(p, owned(from, shared_history));
                });
                eprintln!("zeptodb: cluster: partition {p} taken, resuming after offset {from:?}");
            }
            Err(e) => self.shared.update(|s| s.last_error = Some(format!("taking partition {p}: {e}"))),
        }
    }

    /// Seal every owned partition applied past its last seal.
    fn seal_owned(&mut self, sh: &SharedHistory) {
        let count = i32::try_from(self.partition_count()).unwrap_or(0);
        if count == 0 {
            return;
        }
        let owned: Vec<(i32, i64)> =
            self.shared.update(|s| s.partitions.iter().filter_map(|(&p, st)| st.applied.map(|a| (p, a))).collect());
        for (p, at) in owned {
            if self.sealed.get(&p) == Some(&at) {
                continue;
            }
            let node = self.config.node_id().to_string();
            match history::seal(&self.engine, sh, &self.topic, &node, p, count, at, now_ns()) {
                Ok(_) => {
                    self.sealed.insert(p, at);
                    self.shared.update(|s| {
                        if let Some(st) = s.partitions.get_mut(&p) {
                            st.sealed = Some(at);
                        }
                    });
                }
                Err(e) => {
                    eprintln!("zeptodb: cluster: sealing partition {p} at offset {at} failed (tried again later): {e}");
                    self.shared.update(|s| s.last_error = Some(format!("sealing partition {p}: {e}")));
                }
            }
        }
    }
}
