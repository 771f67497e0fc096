//! A load whose rows arrive already grouped by partition key.
//!
//! A bulk load appended as one batch holds every column whole, then splits each among the
//! partitions: each row's bytes are written twice, and page-faulted twice. A loader that reads
//! the key column first ([`super::KeyGroups`]) can split every other column as it decodes it,
//! and hands over one group of rows per key. Each group then goes to its partition whole (an
//! empty partition takes the group's buffers as they are, `append_rows`), on every core.
//!
//! The result is what appending the groups one after another gives ([`Table::append`] of each
//! in turn, as the write-ahead log replays them): the same partitions, rows and symbol codes
//! (strings are interned in order of first row, group by group).

use super::{Table, PARALLEL_APPEND_ROWS};
use crate::column::{Column, ColumnData};
use crate::dict::Dict;
use crate::error::StorageError;
use crate::types::DataType;
use std::sync::Arc;

impl Table {
    /// Check every group as [`Table::validate`] checks a batch; the rows of all of them.
    pub fn validate_groups(&self, groups: &[Vec<Column>]) -> Result<usize, StorageError> {
        groups.iter().try_fold(0usize, |n, g| Ok(n + self.validate(g)?))
    }

    /// Append `groups` as appending each in turn would (module docs), checked whole first:
    /// nothing changes when one is refused. Groups holding one partition key each, as
    /// [`super::KeyGroups`] makes them, go to their partitions whole; otherwise each group is
    /// appended as a batch. Returns the rows appended.
    pub fn append_groups(&mut self, groups: Vec<Vec<Column>>) -> Result<usize, StorageError> {
        let n = self.validate_groups(&groups)?;
        self.fold();
        let groups: Vec<Vec<Column>> =
            groups.into_iter().filter(|g| g.first().is_some_and(|c| !c.is_empty())).collect();
        let Some(k) = self.key_col.filter(|&k| one_key_each(&groups, k)) else {
            for g in groups {
                let rows = g.first().map_or(0, Column::len);
                self.append_checked(g, rows);
            }
            return Ok(n);
        };
        let groups = self.normalize_groups(groups, k);
        let mut slots = Vec::with_capacity(groups.len());
        for g in &groups {
            slots.push(self.slot_of_key(group_key(&g[k])));
        }
        self.fill_targets(&slots, groups, n >= PARALLEL_APPEND_ROWS);
        self.after_append(n);
        Ok(n)
    }

    /// [`Table::normalize`] of every group in turn. When each SYMBOL column codes against one
    /// dictionary in every group (as split columns do), the codes are mapped in place through
    /// one map per column, interning strings in the order the groups in turn would. Column
    /// `key` holds one key per group ([`one_key_each`]): its codes are mapped once per group.
    fn normalize_groups(&mut self, mut groups: Vec<Vec<Column>>, key: usize) -> Vec<Vec<Column>> {
        let defs = self.schema.columns.clone();
        let symbols: Vec<usize> = (0..defs.len()).filter(|&c| defs[c].data_type == DataType::Symbol).collect();
        let lineage = self.dict.lineage();
        let shared: Option<Vec<Arc<Dict>>> =
            symbols.iter().map(|&c| shared_dict(&groups, c).filter(|d| d.lineage() != lineage)).collect();
        let Some(sources) = shared else {
            return groups.into_iter().map(|g| self.normalize(g)).collect();
        };
        let mut grown = (*self.dict).clone();
        let mut maps: Vec<Vec<u32>> = sources.iter().map(|d| vec![u32::MAX; d.len()]).collect();
        for g in groups.iter_mut() {
            for ((&c, src), map) in symbols.iter().zip(&sources).zip(maps.iter_mut()) {
                if c == key {
                    recode_one_key(&mut g[c], src, map, &mut grown);
                } else {
                    recode(&mut g[c], src, map, &mut grown);
                }
            }
        }
        if grown.len() != self.dict.len() {
            self.dict = Arc::new(grown);
        }
        for g in groups.iter_mut() {
            for (col, def) in g.iter_mut().zip(&defs) {
                match col.data_mut() {
                    ColumnData::Symbol { dict, .. } if def.data_type == DataType::Symbol => *dict = self.dict.clone(),
                    _ => {
                        let c = std::mem::replace(col, Column::nulls(DataType::Null, 0));
                        *col = self.normalize_column(c, def.data_type);
                    }
                }
            }
        }
        groups
    }
}

/// `c`'s codes (into `src`) as codes into `dict`, in place, through `map` (a code of `src` to
/// one of `dict`, `u32::MAX` until first seen: strings are interned in order of first row).
/// NULL rows get code 0. One map across several columns of `src` (the groups of a load)
/// interns as coding them one after another would.
pub(super) fn recode(c: &mut Column, src: &Dict, map: &mut [u32], dict: &mut Dict) {
    // Taken apart, so that the codes change in place beside the validity, not a copy of it.
    let (mut data, valid) = std::mem::replace(c, Column::nulls(DataType::Null, 0)).into_parts();
    if let ColumnData::Symbol { codes, .. } = &mut data {
        for (i, code) in codes.iter_mut().enumerate() {
            if valid.as_ref().is_some_and(|v| !v.get(i)) {
                *code = 0;
                continue;
            }
            let m = &mut map[*code as usize];
            if *m == u32::MAX {
                *m = dict.intern(src.get(*code));
            }
            *code = *m;
        }
    }
    *c = Column::new(data, valid);
}

/// [`recode`] of a column holding one code (or only NULLs): the code mapped once, the
/// column rewritten only when its code changes.
fn recode_one_key(c: &mut Column, src: &Dict, map: &mut [u32], dict: &mut Dict) {
    let Some(code) = group_key(c) else { return recode(c, src, map, dict) };
    let m = &mut map[code as usize];
    if *m == u32::MAX {
        *m = dict.intern(src.get(code));
    }
    if *m != code {
        let to = *m;
        if let ColumnData::Symbol { codes, .. } = c.data_mut() {
            codes.fill(to);
        }
    }
}

/// The dictionary every group's column `c` codes against, if they share one.
fn shared_dict(groups: &[Vec<Column>], c: usize) -> Option<Arc<Dict>> {
    let dict_of = |g: &Vec<Column>| g[c].symbol_dict().cloned();
    let first = dict_of(groups.first()?)?;
    groups.iter().all(|g| dict_of(g).is_some_and(|d| Arc::ptr_eq(&d, &first))).then_some(first)
}

/// A group's key: its key column's first code (`None`: NULL, or no rows).
fn group_key(key: &Column) -> Option<u32> {
    match key.data() {
        ColumnData::Symbol { codes, .. } if key.is_valid(0) => codes.first().copied(),
        _ => None,
    }
}

/// Whether every group's key column (`k`) holds one key (or only NULLs), no two groups the
/// same key.
fn one_key_each(groups: &[Vec<Column>], k: usize) -> bool {
    let Some(dict) = shared_dict(groups, k) else { return false };
    let mut seen = vec![false; dict.len() + 1];
    for g in groups {
        let key = &g[k];
        let ColumnData::Symbol { codes, .. } = key.data() else { return false };
        let first = group_key(key).map_or(dict.len(), |c| c as usize);
        let same = match key.validity() {
            None => codes.iter().all(|&c| c as usize == first),
            Some(_) => (0..codes.len()).all(|i| match key.is_valid(i) {
                true => codes[i] as usize == first,
                false => first == dict.len(),
            }),
        };
        if !same || first > dict.len() || std::mem::replace(&mut seen[first], true) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::ColumnBuilder;
    use crate::rng::XorShift;
    use crate::table::{ColumnDef, KeyGroups, Schema, TableOptions};
    use crate::value::Value;

    const TYPES: [DataType; 5] =
        [DataType::Timestamp, DataType::Symbol, DataType::Int64, DataType::Symbol, DataType::Varchar];

    fn table(dedup: bool) -> Table {
        let columns = ["ts", "k", "v", "venue", "note"]
            .iter()
            .zip(TYPES)
            .map(|(n, t)| ColumnDef { name: n.to_string(), data_type: t })
            .collect();
        let mut t = Table::new("t", Schema { columns }, &TableOptions::default()).expect("table");
        if dedup {
            t.set_dedup(&["ts".to_string(), "k".to_string()]).expect("dedup keys");
        }
        t
    }

    /// `n` rows over `keys` keys (some NULL), times from `t0` in no order, NULLs everywhere.
    fn batch(r: &mut XorShift, n: usize, keys: u64, t0: i64) -> Vec<Column> {
        let mut b: Vec<ColumnBuilder> = TYPES.iter().map(|&t| ColumnBuilder::new(t, n)).collect();
        for _ in 0..n {
            let mut push = |c: usize, v: Value| b[c].push_value(&v).expect("push");
            push(0, Value::Timestamp(t0 + r.below(500) as i64));
            push(1, if r.below(30) == 0 { Value::Null } else { Value::Str(format!("k{}", r.below(keys))) });
            push(2, if r.below(10) == 0 { Value::Null } else { Value::Int64(r.below(1 << 20) as i64) });
            push(
                3,
                if r.below(5) == 0 { Value::Null } else { Value::Str(["X", "Y", "Z"][r.below(3) as usize].into()) },
            );
            push(4, Value::Str(["a", "", "c d"][r.below(3) as usize].into()));
        }
        b.into_iter().map(ColumnBuilder::finish).collect()
    }

    /// `batch`'s rows grouped by its key column, as a grouped load hands them over (the
    /// `venue` column as one the input lacks when `no_venue`).
    fn grouped(batch: &[Column], no_venue: bool) -> Vec<Vec<Column>> {
        let groups = KeyGroups::of(batch[1].clone()).expect("a SYMBOL key");
        let mut out: Vec<Vec<Column>> = groups.sizes().iter().map(|_| Vec::new()).collect();
        for (i, c) in batch.iter().enumerate() {
            let parts = match no_venue && i == 3 {
                true => groups.null_columns(DataType::Symbol),
                false => groups.split(c),
            };
            parts.into_iter().zip(out.iter_mut()).for_each(|(part, g)| g.push(part));
        }
        out
    }

    /// Every partition's rows by key as text, and the dictionary's strings in code order.
    fn contents(t: &Table) -> (Vec<(String, Vec<String>)>, Vec<String>) {
        let dict = (0..t.dict().len() as u32).map(|c| t.dict().get(c).to_string()).collect();
        (crate::table::defer::tests::contents(t), dict)
    }

    /// Groups appended at once leave the table (rows, partitions, symbol codes) that appending
    /// them one by one leaves, into empty and filled tables, deduplicating or not, and so do
    /// groups that are not of one key each.
    #[test]
    fn groups_land_as_appended_one_by_one() {
        let mut r = XorShift::new(17);
        for round in 0..24 {
            let dedup = round % 3 == 2;
            let (mut at_once, mut one_by_one) = (table(dedup), table(dedup));
            if round % 2 == 1 {
                let first = batch(&mut r, 3000, 40, 1000);
                at_once.append(first.clone()).expect("append");
                one_by_one.append(first).expect("append");
            }
            let (n, keys) = (1 + r.below(5000) as usize, 1 + r.below(60));
            let rows = batch(&mut r, n, keys, 0);
            let groups = match round % 4 == 3 {
                // Not one key each: the halves of the batch.
                true => vec![
                    rows.iter().map(|c| c.take(&(0..c.len() as u32 / 2).collect::<Vec<_>>())).collect(),
                    rows.iter().map(|c| c.take(&(c.len() as u32 / 2..c.len() as u32).collect::<Vec<_>>())).collect(),
                ],
                false => grouped(&rows, round % 5 == 4),
            };
            if round % 4 != 3 {
                // Every SYMBOL column shares one dictionary across the groups (a missing one
                // too), so they are coded through one map each, not group by group.
                assert!([1, 3].iter().all(|&c| shared_dict(&groups, c).is_some()), "round {round}");
            }
            let n = at_once.append_groups(groups.clone()).expect("append groups");
            assert_eq!(n, rows[0].len(), "round {round}");
            for g in groups {
                one_by_one.append(g).expect("append");
            }
            assert_eq!(at_once.row_count(), one_by_one.row_count(), "round {round}");
            assert_eq!(contents(&at_once), contents(&one_by_one), "round {round}");
        }
    }

    /// A group that does not fit the table is refused before anything changes.
    #[test]
    fn a_bad_group_changes_nothing() {
        let mut r = XorShift::new(3);
        let mut t = table(false);
        t.append(batch(&mut r, 500, 10, 0)).expect("append");
        let before = contents(&t);
        let mut groups = grouped(&batch(&mut r, 800, 10, 0), false);
        groups.last_mut().expect("groups")[2] = Column::nulls(DataType::Varchar, 1);
        assert!(t.append_groups(groups).is_err());
        assert_eq!(contents(&t), before);
    }
}
