//! One node's share of a table: the rows whose routing key hashes to a partition it owns.
//!
//! A row's Kafka partition is what Kafka's default partitioner gives its *routing key*: the
//! value of its table's partition key, or the empty string when it has none (a NULL key, or a
//! table without a partition key). Producers key records that way ([`routing_key`]), so a
//! node that owns partition `p` holds every row whose routing key hashes to `p`, and answers
//! for exactly those: rows it applied before a rebalance took `p` away stay in its tables but
//! out of its answers.

use crate::eval::partitioner::kafka_partition;
use crate::plan::ScanRange;
use zepto_storage::Table;

/// The key a row is produced to Kafka with: its partition key's value, or `""` without one.
pub fn routing_key(key: Option<&str>) -> &str {
    key.unwrap_or("")
}

/// The routing key of every row of `columns` (rows shaped for `table`, one column per
/// column of its schema): the partition key's text, `""` where it is NULL or the table has none.
pub fn routing_keys(table: &Table, columns: &[zepto_storage::Column]) -> Vec<String> {
    let rows = columns.first().map_or(0, zepto_storage::Column::len);
    match table.key_col().and_then(|k| columns.get(k)) {
        Some(c) => (0..rows)
            .map(|i| match c.get(i) {
                zepto_storage::Value::Str(s) => s,
                _ => routing_key(None).to_string(),
            })
            .collect(),
        None => vec![routing_key(None).to_string(); rows],
    }
}

/// The partitions one node answers for: what it restricts its scans to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    count: i32,
    owned: Vec<bool>,
}

impl Scope {
    /// Partitions `owned` of `count` (others out of range are ignored).
    pub fn new(count: i32, owned: &[i32]) -> Scope {
        let mut bits = vec![false; usize::try_from(count).unwrap_or(0)];
        for &p in owned {
            if let Some(b) = usize::try_from(p).ok().and_then(|p| bits.get_mut(p)) {
                *b = true;
            }
        }
        Scope { count, owned: bits }
    }

    /// Whether rows with routing key `key` are this scope's.
    pub fn owns(&self, key: &str) -> bool {
        let p = kafka_partition(key.as_bytes(), i64::from(self.count));
        usize::try_from(p).ok().and_then(|p| self.owned.get(p)).copied().unwrap_or(false)
    }

    /// `range` over `table` cut to this scope's rows: the keys it reads that hash to an owned
    /// partition, and the NULL-key partition when `""` does (never under a key list: `sym =
    /// 'X'` keeps no NULL key). The keys come from the table's in-memory partitions and, when
    /// it has history, its dictionary (history keys may have no partition in memory).
    pub fn restrict(&self, table: &Table, range: &ScanRange) -> ScanRange {
        let keys: Vec<String> = match (&range.keys, table.key_col()) {
            (_, None) => Vec::new(),
            (Some(ks), Some(_)) => ks.iter().filter(|k| self.owns(k)).cloned().collect(),
            (None, Some(_)) if table.history().files.is_empty() => table
                .partitions()
                .iter()
                .filter_map(|p| p.key())
                .map(|c| table.dict().get(c))
                .filter(|k| self.owns(k))
                .map(str::to_string)
                .collect(),
            (None, Some(_)) => table.dict().iter().filter(|k| self.owns(k)).map(str::to_string).collect(),
        };
        let null_key = range.keys.is_none() && self.owns(routing_key(None));
        ScanRange { keys: Some(keys), null_key, ..range.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_split_keys_between_owners() {
        let (a, b) = (Scope::new(4, &[0, 2]), Scope::new(4, &[1, 3]));
        for k in ["", "AAPL", "MSFT", "x", "S17"] {
            assert!(a.owns(k) != b.owns(k), "{k} owned by exactly one");
        }
    }
}
