//! Deduplicated appends (`DEDUP UPSERT KEYS`, as QuestDB spells it): a row whose key columns
//! equal those of a stored row replaces it, and of several incoming rows with one key the last
//! wins. A client that retries a batch whose answer it lost therefore applies it once.
//!
//! Only the rows in memory are compared: a row at or before the newest row moved to the
//! Parquet history may duplicate one there. (Refusing such rows instead would lose rows on a
//! cluster, where each owner tiers on its own and a row the publishing node accepted must be
//! applied by its owner.)
//!
//! The keys always hold the designated timestamp and the partition key, so a row can only
//! collide with rows of its own partition and its own timestamp: the stored candidates are a
//! binary search away, and an append in time order (the common case) costs one comparison of
//! its first timestamp with the partition's last. Key values compare as stored: NULL equals
//! NULL, symbols by dictionary code (both sides code against the table's dictionary), floats by
//! their total order.

use super::Partition;
use crate::column::{Column, ColumnData};
use std::cmp::Ordering;

/// What an append does to one partition under deduplication.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Upsert {
    /// Positions of the incoming rows to append (ascending); `None` keeps them all.
    pub keep: Option<Vec<u32>>,
    /// Stored rows that incoming rows replace (ascending, each once).
    pub replaced: Vec<u32>,
}

/// Above this many comparisons a group of equal timestamps is matched by sorting, not pairwise.
const PAIRWISE_LIMIT: usize = 4096;

/// Which incoming rows `new` (one partition's, schema order, symbols in the table dictionary)
/// survive and which stored rows of `p` they replace, for key columns `keys` (schema
/// positions; `ts`, the designated timestamp, among them).
pub(super) fn plan(p: &Partition, new: &[Column], keys: &[usize], ts: usize) -> Upsert {
    debug_assert!(keys.contains(&ts), "the dedup keys hold the designated timestamp");
    let n = new.first().map_or(0, Column::len);
    if n == 0 || appends_after(p, &new[ts], ts) {
        return Upsert::default();
    }
    let new: Vec<&Column> = new.iter().collect();
    let new = new.as_slice();
    // Incoming rows ordered by key, ties in arrival order: the last of each run of equal keys wins.
    let order: Vec<u32> = {
        let mut o: Vec<u32> = (0..n as u32).collect();
        o.sort_by(|&a, &b| cmp_keys(new, a as usize, new, b as usize, keys, ts));
        o
    };
    let mut winners = Vec::with_capacity(n);
    for (k, &row) in order.iter().enumerate() {
        let last = order
            .get(k + 1)
            .is_none_or(|&next| cmp_keys(new, row as usize, new, next as usize, keys, ts) != Ordering::Equal);
        if last {
            winners.push(row);
        }
    }
    let replaced = stored_matches(p, new, &winners, keys, ts);
    let keep = (winners.len() < n).then(|| {
        let mut w = winners;
        w.sort_unstable();
        w
    });
    Upsert { keep, replaced }
}

/// True when every incoming timestamp is valid, strictly increasing and after the stored ones:
/// no incoming row can equal another or a stored one.
fn appends_after(p: &Partition, new_ts: &Column, ts: usize) -> bool {
    let Some(v) = new_ts.as_i64_slice() else { return false };
    if new_ts.null_count() > 0 || !v.windows(2).all(|w| w[0] < w[1]) {
        return false;
    }
    let stored = p.i64_values(ts);
    match (stored.and_then(|s| s.last()), v.first()) {
        (Some(&last), Some(&first)) => last < first,
        _ => true,
    }
}

/// The stored rows equal in every key to one of `winners` (incoming rows with distinct keys,
/// in key order: timestamps ascending, NULL first).
fn stored_matches(p: &Partition, new: &[&Column], winners: &[u32], keys: &[usize], ts: usize) -> Vec<u32> {
    let cols = p.columns();
    let old: Vec<&Column> = cols.iter().map(|c| c.as_ref()).collect();
    let old = old.as_slice();
    let mut out = Vec::new();
    let mut k = 0;
    while k < winners.len() {
        // A group: the winners sharing one timestamp (or all NULL ones).
        let first = winners[k] as usize;
        let end = k + winners[k..].iter().take_while(|&&w| same_cell(new[ts], first, new[ts], w as usize)).count();
        let group = &winners[k..end];
        let range = stored_range(p, new[ts], first, ts);
        if group.len().saturating_mul(range.len()) <= PAIRWISE_LIMIT {
            for s in range {
                if group.iter().any(|&w| cmp_keys(old, s, new, w as usize, keys, ts) == Ordering::Equal) {
                    out.push(s as u32);
                }
            }
        } else {
            let mut stored: Vec<u32> = range.map(|s| s as u32).collect();
            stored.sort_by(|&a, &b| cmp_keys(old, a as usize, old, b as usize, keys, ts));
            for &w in group {
                let lo =
                    stored.partition_point(|&s| cmp_keys(old, s as usize, new, w as usize, keys, ts) == Ordering::Less);
                let hits = stored[lo..]
                    .iter()
                    .take_while(|&&s| cmp_keys(old, s as usize, new, w as usize, keys, ts) == Ordering::Equal);
                out.extend(hits);
            }
        }
        k = end;
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The stored rows whose timestamp equals incoming row `row`'s (the NULL prefix for NULL).
fn stored_range(p: &Partition, new_ts: &Column, row: usize, ts: usize) -> std::ops::Range<usize> {
    if !new_ts.is_valid(row) {
        return 0..p.null_prefix(ts);
    }
    let t = new_ts.as_i64_slice().map_or(0, |v| v[row]);
    p.ts_range(ts, t, t)
}

/// Compare row `i` of `a` with row `j` of `b` on the key columns, the timestamp first (so key
/// order is time order).
fn cmp_keys(a: &[&Column], i: usize, b: &[&Column], j: usize, keys: &[usize], ts: usize) -> Ordering {
    std::iter::once(ts)
        .chain(keys.iter().copied().filter(|&k| k != ts))
        .map(|k| cmp_cell(a[k], i, b[k], j))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

fn same_cell(a: &Column, i: usize, b: &Column, j: usize) -> bool {
    cmp_cell(a, i, b, j) == Ordering::Equal
}

/// A total order on one column's cells: NULL first, then values (floats by `total_cmp`,
/// strings by bytes, symbols by code).
fn cmp_cell(a: &Column, i: usize, b: &Column, j: usize) -> Ordering {
    match (a.is_valid(i), b.is_valid(j)) {
        (false, false) => return Ordering::Equal,
        (false, true) => return Ordering::Less,
        (true, false) => return Ordering::Greater,
        (true, true) => {}
    }
    match (a.data(), b.data()) {
        (ColumnData::Bool(x), ColumnData::Bool(y)) => x[i].cmp(&y[j]),
        (ColumnData::Int32(x), ColumnData::Int32(y)) | (ColumnData::Date(x), ColumnData::Date(y)) => x[i].cmp(&y[j]),
        (ColumnData::Int64(x), ColumnData::Int64(y))
        | (ColumnData::Timestamp(x), ColumnData::Timestamp(y))
        | (ColumnData::Interval(x), ColumnData::Interval(y)) => x[i].cmp(&y[j]),
        (ColumnData::Int128(x), ColumnData::Int128(y)) => x[i].cmp(&y[j]),
        (ColumnData::Float32(x), ColumnData::Float32(y)) => x[i].total_cmp(&y[j]),
        (ColumnData::Float64(x), ColumnData::Float64(y)) => x[i].total_cmp(&y[j]),
        (ColumnData::Symbol { codes: x, .. }, ColumnData::Symbol { codes: y, .. }) => x[i].cmp(&y[j]),
        _ => a.str_at(i).cmp(&b.str_at(j)),
    }
}

#[cfg(test)]
mod tests {
    use crate::column::{Column, ColumnBuilder};
    use crate::rng::XorShift;
    use crate::types::DataType;
    use crate::value::Value;
    use crate::{ColumnDef, Schema, Table, TableOptions};

    /// A row: timestamp (NULL possible), symbol (NULL possible), venue key (NULL possible), price.
    type Row = (Option<i64>, Option<String>, Option<i64>, f64);

    fn table(keys: &[&str]) -> Result<Table, crate::StorageError> {
        let def = |n: &str, t| ColumnDef { name: n.into(), data_type: t };
        let schema = Schema {
            columns: vec![
                def("ts", DataType::Timestamp),
                def("sym", DataType::Symbol),
                def("venue", DataType::Int64),
                def("px", DataType::Float64),
            ],
        };
        let opts = TableOptions { dedup_keys: keys.iter().map(|k| k.to_string()).collect(), ..Default::default() };
        Table::new("t", schema, &opts)
    }

    fn batch(rows: &[Row]) -> Vec<Column> {
        let types = [DataType::Timestamp, DataType::Varchar, DataType::Int64, DataType::Float64];
        let mut b: Vec<ColumnBuilder> = types.iter().map(|&t| ColumnBuilder::new(t, rows.len())).collect();
        for (ts, sym, venue, px) in rows {
            let cells = [
                ts.map_or(Value::Null, Value::Timestamp),
                sym.clone().map_or(Value::Null, Value::Str),
                venue.map_or(Value::Null, Value::Int64),
                Value::Float64(*px),
            ];
            for (b, v) in b.iter_mut().zip(&cells) {
                b.push_value(v).expect("push");
            }
        }
        b.into_iter().map(ColumnBuilder::finish).collect()
    }

    /// Every stored row, sorted (the order among rows of one key is not part of the contract).
    fn rows(t: &Table) -> Vec<String> {
        let mut out: Vec<String> = t
            .partitions()
            .iter()
            .flat_map(|p| {
                (0..p.len()).map(move |i| {
                    let cells: Vec<String> = p.columns().iter().map(|c| format!("{:?}", c.get(i))).collect();
                    cells.join("|")
                })
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn keys_must_hold_the_timestamp_and_the_partition_key() {
        let err = |keys: &[&str]| table(keys).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err(&["sym", "venue"]).contains("designated timestamp 'ts'"), "{}", err(&["sym"]));
        assert!(err(&["ts", "sym", "TS"]).contains("named twice"));
        assert!(err(&["ts", "sym", "nope"]).contains("nope"));
        assert!(table(&["sym", "TS"]).is_ok_and(|t| t.dedup_keys() == [0, 1] && t.key_col() == Some(1)));
        // Created with keys that hold no SYMBOL column: one partition.
        assert!(table(&["ts", "venue"]).is_ok_and(|t| t.key_col().is_none() && t.dedup_keys() == [0, 2]));
        // A table partitioned by `sym` before its keys were set.
        let mut t = table(&[]).expect("plain");
        assert!(t.dedup_keys().is_empty() && t.key_col() == Some(1));
        let e = t.set_dedup(&["ts".into(), "venue".into()]).expect_err("no partition key");
        assert!(e.to_string().contains("partition key 'sym'"), "{e}");
    }

    #[test]
    fn a_retried_batch_applies_once_and_the_last_of_equal_keys_wins() {
        let mut t = table(&["ts", "sym"]).expect("table");
        let r = |ts: i64, s: &str, px: f64| (Some(ts), Some(s.to_string()), None, px);
        let b = vec![r(1, "a", 1.0), r(2, "a", 2.0), r(1, "b", 3.0)];
        t.append(batch(&b)).expect("first");
        t.append(batch(&b)).expect("retry");
        assert_eq!(t.row_count(), 3);
        assert_eq!(t.mutations(), 1, "a replacement moves rows");
        t.append(batch(&[r(2, "a", 5.0), r(2, "a", 6.0), r(3, "a", 7.0)])).expect("upsert");
        assert_eq!(t.row_count(), 4);
        let px: Vec<String> = rows(&t);
        assert!(
            px.iter().any(|row| row.contains("Float64(6.0)")) && !px.iter().any(|row| row.contains("Float64(2.0)"))
        );
        assert!(!px.iter().any(|row| row.contains("Float64(5.0)")), "{px:?}");
    }

    /// Random batches (few timestamps and keys, NULLs in every key, batches out of order and
    /// with repeated keys) against a model: each incoming row, in order, removes the rows with
    /// its key and joins. Small batches take the pairwise match, a batch of one timestamp the
    /// sorted one.
    #[test]
    fn random_batches_match_a_row_by_row_model() {
        let mut rng = XorShift::new(7);
        for case in 0..60 {
            let mut t = table(&["ts", "sym", "venue"]).expect("table");
            let mut model: Vec<Row> = Vec::new();
            for _ in 0..6 {
                let n = if case % 10 == 9 { 3000 } else { rng.index(40) };
                let ts_span = if case % 10 == 9 { 1 } else { 8 };
                let b: Vec<Row> = (0..n)
                    .map(|_| {
                        let ts = (rng.index(10) > 0).then(|| rng.below(ts_span) as i64);
                        let sym = (rng.index(10) > 0).then(|| ["a", "b", "c"][rng.index(3)].to_string());
                        let venue = (rng.index(4) > 0).then(|| rng.below(3000) as i64 % 4);
                        (ts, sym, venue, rng.below(1000) as f64)
                    })
                    .collect();
                for row in &b {
                    model.retain(|m| (m.0, &m.1, m.2) != (row.0, &row.1, row.2));
                    model.push(row.clone());
                }
                t.append(batch(&b)).expect("append");
            }
            let mut want = table(&[]).expect("plain");
            want.append(batch(&model)).expect("model");
            assert_eq!(rows(&t), rows(&want), "case {case}");
            assert_eq!(t.row_count(), model.len());
        }
    }
}
