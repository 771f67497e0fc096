//! What the broker says of the cluster, asked every second by a thread with a Kafka client of
//! its own (so that a slow answer never holds up applying records): the high watermark of each
//! partition the node owns (the offset the next record will get: the lag), the topic's
//! partition count, and the group's members with the partitions assigned to each.

use crate::members::{assignment, Member};
use crate::status::Shared;
use crate::{ClusterError, Config};
use rdkafka::consumer::{BaseConsumer, Consumer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the watermarks are asked for.
const EVERY: Duration = Duration::from_secs(1);

/// Start the thread; it ends when `stop` is set.
pub(crate) fn spawn(config: &Config, shared: Shared, stop: Arc<AtomicBool>) -> Result<JoinHandle<()>, ClusterError> {
    let client: BaseConsumer = config.client().create().map_err(|e| ClusterError::Kafka(e.to_string()))?;
    let (topic, group) = (config.topic().to_string(), config.group().to_string());
    std::thread::Builder::new()
        .name("zepto-kafka-watch".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                let owned: Vec<i32> = shared.update(|s| s.partitions.keys().copied().collect());
                for p in owned {
                    if let Ok((low, high)) = client.fetch_watermarks(&topic, p, Duration::from_secs(5)) {
                        shared.update(|s| {
                            if let Some(st) = s.partitions.get_mut(&p) {
                                st.high_watermark = Some(high);
                                // First look since the assignment: replay up to here before
                                // answering for it (nothing to replay when the log is empty).
                                let empty = st.applied.is_none() && low >= high;
                                st.replay_to.get_or_insert(if empty { 0 } else { high });
                            }
                        });
                    }
                }
                if let Ok(md) = client.fetch_metadata(Some(topic.as_str()), Duration::from_secs(5)) {
                    let count = md.topics().iter().map(|t| t.partitions().len()).sum::<usize>();
                    shared.update(|s| s.partition_count = count);
                }
                if let Ok(groups) = client.fetch_group_list(Some(group.as_str()), Duration::from_secs(5)) {
                    let members: Vec<Member> = groups
                        .groups()
                        .iter()
                        .flat_map(|g| g.members())
                        .map(|m| {
                            let (node_id, flight) = crate::node_of(m.client_id());
                            Member {
                                node_id: node_id.to_string(),
                                flight: flight.map(str::to_string),
                                host: m.client_host().trim_start_matches('/').to_string(),
                                partitions: m.assignment().and_then(|a| assignment(a, &topic)).unwrap_or_default(),
                            }
                        })
                        .collect();
                    shared.update(|s| s.members = members);
                }
                // Sleep in small steps so that stopping is quick.
                for _ in 0..10 {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    std::thread::sleep(EVERY / 10);
                }
            }
        })
        .map_err(|e| ClusterError::Config(format!("cannot start the watch thread: {e}")))
}
