//! The table's own tests: appends, partitions and their order, against row-by-row appends.

use super::*;
use crate::column::ColumnBuilder;
use crate::value::Value;

/// The chunked checks against the row-by-row ones: every length around the chunk, a
/// single step back (or unknown code) at every position near the chunks' edges.
#[test]
fn chunked_checks_match_row_by_row() {
    for n in [0, 1, 2, 255, 256, 257, 511, 512, 513, 1000] {
        let sorted: Vec<i64> = (0..n as i64).map(|i| i / 3).collect();
        assert!(never_steps_back(&sorted), "{n} rows");
        let slots: Vec<u32> = (0..8).map(|c| if c == 5 { NO_SLOT } else { c }).collect();
        let codes: Vec<u32> = (0..n as u32).map(|i| i % 5).collect();
        assert!(all_known(&slots, &codes), "{n} codes");
        for at in [1, 2, 254, 255, 256, 257, 258, 511, 512, 513].into_iter().filter(|&at| at < n) {
            let mut v = sorted.clone();
            v[at] = v[at - 1] - 1;
            assert_eq!(never_steps_back(&v), v.windows(2).all(|w| w[0] <= w[1]), "{n} rows, back at {at}");
            assert!(!never_steps_back(&v), "{n} rows, back at {at}");
            let mut c = codes.clone();
            c[at] = if at % 2 == 0 { 5 } else { 9 };
            assert!(!all_known(&slots, &c), "{n} codes, unknown at {at}");
        }
    }
}

fn schema() -> Schema {
    Schema {
        columns: vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "sym".into(), data_type: DataType::Symbol },
            ColumnDef { name: "px".into(), data_type: DataType::Float64 },
        ],
    }
}

fn batch(rows: &[(i64, Option<&str>, f64)]) -> Vec<Column> {
    let mut b: Vec<ColumnBuilder> = [DataType::Timestamp, DataType::Varchar, DataType::Float64]
        .iter()
        .map(|&t| ColumnBuilder::new(t, rows.len()))
        .collect();
    for (t, s, p) in rows {
        b[0].push_value(&Value::Timestamp(*t)).expect("push");
        match s {
            Some(s) => b[1].push_str(s).expect("push"),
            None => b[1].push_null(),
        }
        b[2].push_value(&Value::Float64(*p)).expect("push");
    }
    b.into_iter().map(ColumnBuilder::finish).collect()
}

/// Appends to partitions a reader still holds (a snapshot taken after every batch): the
/// first copies a column with room and shares it, later ones write in place past the
/// reader's rows until the room runs out (then a copy with twice the room). Every snapshot
/// keeps the rows it had, and the table ends as appends without readers leave it.
#[test]
fn appends_under_readers_write_in_place_past_their_rows() {
    use super::defer::tests::contents;
    let new = || Table::new("t", schema(), &TableOptions::default()).expect("a table");
    let (mut t, mut plain) = (new(), new());
    let keys = ["a", "b", "c"];
    let mut snaps = Vec::new();
    let (mut in_place, mut copied) = (0, 0);
    let mut before: Vec<*const i64> = Vec::new();
    for k in 0..20i64 {
        let rows: Vec<(i64, Option<&str>, f64)> =
            (0..30).map(|i| (k * 100 + i, Some(keys[i as usize % 3]), (k * 100 + i) as f64 / 4.0)).collect();
        t.append(batch(&rows)).expect("append");
        plain.append(batch(&rows)).expect("append");
        let now: Vec<*const i64> = t.partitions().iter().map(|p| p.i64_values(0).expect("times").as_ptr()).collect();
        if k >= 2 {
            let same = now.iter().zip(&before).filter(|(a, b)| a == b).count();
            in_place += same;
            copied += now.len() - same;
        }
        before = now;
        snaps.push((t.clone(), contents(&t)));
    }
    for (k, (snap, had)) in snaps.iter().enumerate() {
        assert_eq!(&contents(snap), had, "snapshot {k}");
    }
    assert_eq!(contents(&t), contents(&plain));
    assert!(in_place >= 3 * 12 && copied <= 3 * 6, "{in_place} appends in place, {copied} copied");
}

/// A table of one partition keeps every symbol's rows together, sorted by time; it takes
/// no partition key.
#[test]
fn one_partition_holds_every_symbol_in_time_order() {
    let opts = TableOptions { one_partition: true, ..TableOptions::default() };
    let mut t = Table::new("v", schema(), &opts).expect("a table");
    assert_eq!(t.key_col(), None);
    t.append(batch(&[(3, Some("A"), 1.0), (1, Some("B"), 2.0), (2, None, 3.0)])).expect("append");
    assert_eq!(t.partitions().len(), 1);
    assert_eq!(t.row_count(), 3);
    let keyed = TableOptions { partition_key: Some("sym".into()), ..opts };
    assert!(Table::new("v", schema(), &keyed).is_err(), "one partition and a key are refused together");
}

/// A bulk append (partitions filled on helper threads) leaves the same table as the same
/// rows appended in small batches on the caller's thread: partitions, row order (time,
/// ties in arrival order), NULL keys; twice, so the second bulk merges out-of-order rows
/// into existing partitions.
#[test]
fn a_stored_partition_out_of_time_order_or_ragged_is_refused() {
    let ts = |v: &[i64]| Arc::new(Column::from_data(ColumnData::Timestamp(v.to_vec().into())));
    let f = |v: &[f64]| Arc::new(Column::from_data(ColumnData::Float64(v.to_vec().into())));
    let sym = |n: usize| Arc::new(Column::nulls(DataType::Symbol, n));
    let build = |cols: Vec<Arc<Column>>| {
        Table::from_parts("t", schema(), Some(1), Some(0), Arc::new(Dict::default()), vec![(None, cols)])
    };
    assert!(build(vec![ts(&[1, 2, 3]), sym(3), f(&[1.0, 2.0, 3.0])]).is_ok());
    let e = build(vec![ts(&[1, 3, 2]), sym(3), f(&[1.0, 2.0, 3.0])]).expect_err("out of order");
    assert!(e.to_string().contains("timestamp order"), "{e}");
    assert!(build(vec![ts(&[1, 2, 3]), sym(3), f(&[1.0])]).is_err(), "ragged columns");
}

#[test]
fn bulk_append_matches_small_appends() {
    let mut rng = crate::rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
    let mut rnd = move |n: u64| rng.below(n);
    let syms: Vec<String> = (0..37).map(|i| format!("s{i}")).collect();
    let mut rows: Vec<(i64, Option<&str>, f64)> = Vec::new();
    for i in 0..2 * PARALLEL_APPEND_ROWS {
        let k = rnd(40) as usize;
        // Mostly rising times with jitter and duplicates, so some partitions need a merge.
        let ts = (i as i64 / 3) + rnd(50) as i64;
        rows.push((ts, syms.get(k).map(String::as_str), i as f64));
    }
    let (first, second) = rows.split_at(PARALLEL_APPEND_ROWS + 7);
    let mut bulk = Table::new("t", schema(), &TableOptions::default()).expect("table");
    bulk.append(batch(first)).expect("bulk");
    bulk.append(batch(second)).expect("bulk");
    let mut small = Table::new("t", schema(), &TableOptions::default()).expect("table");
    for part in rows.chunks(997) {
        small.append(batch(part)).expect("small");
    }
    assert_eq!(bulk.row_count(), small.row_count());
    let dump = |t: &Table| {
        let mut parts: Vec<Vec<String>> = t
            .partitions()
            .iter()
            .map(|p| {
                (0..p.len())
                    .map(|i| {
                        format!("{:?} {:?} {:?}", p.columns()[0].get(i), p.columns()[1].get(i), p.columns()[2].get(i))
                    })
                    .collect()
            })
            .collect();
        parts.sort();
        parts
    };
    assert_eq!(dump(&bulk), dump(&small));
    assert!(bulk.partitions().iter().all(|p| is_sorted_with_nulls_first(&p.columns()[0])));
}

/// A partition's lineage survives appends in time order (row i stays row i, so an index
/// keyed by position stays valid) and changes with anything that moves, removes or
/// rewrites rows.
#[test]
fn a_partition_keeps_its_lineage_only_while_rows_keep_their_positions() {
    let mut t = Table::new("t", schema(), &TableOptions::default()).expect("table");
    t.append(batch(&[(10, Some("a"), 1.0), (20, Some("a"), 2.0)])).expect("append");
    let code = t.dict().code("a").expect("a interned");
    let lineage = |t: &Table| t.partition_for_code(code).expect("partition a").lineage();
    let first = lineage(&t);
    let snapshot = t.clone();
    t.append(batch(&[(20, Some("a"), 3.0), (30, Some("a"), 4.0)])).expect("in order");
    assert_eq!(lineage(&t), first, "appended at the end in time order");
    assert_eq!(lineage(&snapshot), first, "the reader's older version shares it");
    t.append(batch(&[(15, Some("a"), 5.0)])).expect("out of order");
    let merged = lineage(&t);
    assert_ne!(merged, first, "a merge moved rows");
    let slot = t.partitions().iter().position(|p| p.key() == Some(code)).expect("slot") as u32;
    t.delete_rows(&[(slot, vec![0])]).expect("delete");
    let deleted = lineage(&t);
    assert_ne!(deleted, merged, "a delete moved rows");
    t.update_rows(&[(slot, vec![1])], &[2], vec![Column::from_data(ColumnData::Float64(vec![9.0].into()))])
        .expect("update");
    assert_eq!(lineage(&t), deleted, "an update of a scalar column moves nothing");
    t.add_column(ColumnDef { name: "v".into(), data_type: DataType::Vector(2) }).expect("a vector column");
    let v = Column::from_data(ColumnData::Vector { dim: 2, values: vec![1.0, 2.0].into() });
    t.update_rows(&[(slot, vec![1])], &[3], vec![v]).expect("update a vector");
    let updated = lineage(&t);
    assert_ne!(updated, deleted, "an update rewrote a vector");
    assert_eq!(t.remove_before(16), 1);
    assert_ne!(lineage(&t), updated, "dropping old rows moved the rest");
}

#[test]
fn partitions_by_symbol_and_keeps_time_order() {
    let mut t = Table::new("t", schema(), &TableOptions::default()).expect("table");
    assert_eq!((t.key_col, t.ts_col), (Some(1), Some(0)));
    t.append(batch(&[(10, Some("a"), 1.0), (5, Some("b"), 2.0), (20, Some("a"), 3.0), (1, None, 0.5)]))
        .expect("append");
    t.append(batch(&[(15, Some("a"), 4.0), (2, Some("a"), 5.0)])).expect("append");
    assert_eq!(t.row_count(), 6);
    let code = t.dict().code("a").expect("a interned");
    let p = t.partition_for_code(code).expect("partition a");
    assert_eq!(p.columns()[0].as_i64_slice(), Some(&[2, 10, 15, 20][..]));
    assert_eq!(p.columns()[2].get(0), Value::Float64(5.0));
    assert_eq!(p.ts_range(0, 10, 15), 1..3);
    assert_eq!(t.null_key_partition().map(|p| p.len()), Some(1));
}

/// A batch whose symbols the table already holds keeps the table's dictionary version, so
/// the partitions' SYMBOL columns keep pointing at it (a new version is swapped into every
/// column a batch touches: with 4,000 series, 40k reference counts per batch); a new
/// symbol makes a new version that covers it.
#[test]
fn known_symbols_keep_the_dictionary_version() {
    let mut t = Table::new("t", schema(), &TableOptions::default()).expect("table");
    t.append(batch(&[(1, Some("a"), 1.0), (2, Some("b"), 2.0)])).expect("append");
    let before = t.dict().clone();
    t.append(batch(&[(3, Some("b"), 3.0), (4, Some("a"), 4.0), (5, None, 5.0)])).expect("append");
    assert!(Arc::ptr_eq(&before, t.dict()), "known symbols made a new dictionary version");
    t.append(batch(&[(6, Some("c"), 6.0)])).expect("append");
    assert!(!Arc::ptr_eq(&before, t.dict()));
    let code = t.dict().code("c").expect("c interned");
    let p = t.partition_for_code(code).expect("partition c");
    assert_eq!(p.columns()[1].get(0), Value::Str("c".into()));
    assert_eq!(t.row_count(), 6);
}

/// Late rows (behind a partition's last timestamp, NULL timestamps among them) are sorted
/// in: every partition holds its rows as a stable sort of their arrival by (NULL first,
/// time), with their other columns (NULLs, text) moved with them.
#[test]
fn late_rows_land_as_a_stable_sort_of_their_arrival() {
    let schema = Schema {
        columns: vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "sym".into(), data_type: DataType::Symbol },
            ColumnDef { name: "seq".into(), data_type: DataType::Int64 },
            ColumnDef { name: "note".into(), data_type: DataType::Varchar },
        ],
    };
    let mut t = Table::new("t", schema, &TableOptions::default()).expect("table");
    let mut r = crate::rng::XorShift::new(0x2545_f491_4f6c_dd1d);
    let syms = ["a", "b", "c"];
    let mut arrived: Vec<(Option<i64>, &str, i64, Option<String>)> = Vec::new();
    for round in 0..60i64 {
        let n = 1 + r.below(30) as usize;
        let mut b: Vec<ColumnBuilder> = [DataType::Timestamp, DataType::Varchar, DataType::Int64, DataType::Varchar]
            .iter()
            .map(|&dt| ColumnBuilder::new(dt, n))
            .collect();
        for _ in 0..n {
            let ts = (r.below(20) != 0).then(|| round * 10 - r.below(40) as i64);
            let (sym, seq) = (syms[r.below(3) as usize], arrived.len() as i64);
            let note = (r.below(4) != 0).then(|| format!("n{seq}"));
            match ts {
                Some(v) => b[0].push_value(&Value::Timestamp(v)).expect("ts"),
                None => b[0].push_null(),
            }
            b[1].push_str(sym).expect("sym");
            b[2].push_value(&Value::Int64(seq)).expect("seq");
            match &note {
                Some(s) => b[3].push_str(s).expect("note"),
                None => b[3].push_null(),
            }
            arrived.push((ts, sym, seq, note));
        }
        t.append(b.into_iter().map(ColumnBuilder::finish).collect()).expect("append");
    }
    for sym in syms {
        let mut want: Vec<_> = arrived.iter().filter(|row| row.1 == sym).collect();
        want.sort_by_key(|row| (row.0.is_some(), row.0.unwrap_or(0)));
        let p = t.partition_for_code(t.dict().code(sym).expect("interned")).expect("partition");
        let c = p.columns();
        assert_eq!(p.len(), want.len(), "{sym}");
        for (i, (ts, _, seq, note)) in want.into_iter().enumerate() {
            let got_ts = c[0].is_valid(i).then(|| c[0].as_i64_slice().expect("ts")[i]);
            assert_eq!((got_ts, c[2].get(i)), (*ts, Value::Int64(*seq)), "{sym} row {i}");
            let want_note = note.as_ref().map_or(Value::Null, |s| Value::Str(s.clone()));
            assert_eq!(c[3].get(i), want_note, "{sym} row {i}");
        }
    }
}

#[test]
fn rejects_bad_batch_without_change() {
    let mut t = Table::new("t", schema(), &TableOptions::default()).expect("table");
    let mut bad = batch(&[(1, Some("a"), 1.0)]);
    bad.pop();
    assert!(t.append(bad).is_err());
    assert_eq!(t.row_count(), 0);
    assert!(t.partitions().is_empty());
}

/// Large batches into partitions that hold rows (spread a chunk at a time, on the
/// caller's thread), in time order or with late rows, land as the same rows appended in
/// small batches do.
#[test]
fn large_batches_into_filled_partitions_land_as_small_batches_do() {
    let mut r = crate::rng::XorShift::new(0x2545_f491_4f6c_dd1du64);
    let syms = [Some("a"), Some("b"), Some("c"), Some("d"), None];
    let (mut large, mut small) = (
        Table::new("t", schema(), &TableOptions::default()).expect("table"),
        Table::new("t", schema(), &TableOptions::default()).expect("table"),
    );
    let mut ts = 0i64;
    for (round, n) in [10, 40_000, 70_000, 16_385, 100_000].into_iter().enumerate() {
        let rows: Vec<(i64, Option<&str>, f64)> = (0..n)
            .map(|_| {
                ts += 1;
                // Every other round has late rows: merged in, chunk by chunk.
                let late = round % 2 == 0 && r.below(50) == 0;
                (ts - if late { 30_000 } else { 0 }, syms[r.below(syms.len() as u64) as usize], r.below(1000) as f64)
            })
            .collect();
        large.append(batch(&rows)).expect("append");
        rows.chunks(700).for_each(|c| {
            small.append(batch(c)).expect("append");
        });
    }
    assert_same_partitions(&large, &small);
}

#[test]
fn a_batch_spread_over_partitions_lands_as_row_by_row_appends_do() {
    let mut r = crate::rng::XorShift::new(0x5851_f42d_4c95_7f2du64);
    let syms = [Some("a"), Some("b"), Some("c"), Some("d"), None];
    let (mut spread, mut single) = (
        Table::new("t", schema(), &TableOptions::default()).expect("table"),
        Table::new("t", schema(), &TableOptions::default()).expect("table"),
    );
    for round in 0..30 {
        let n = 1 + r.below(40) as usize;
        // Mostly rising timestamps, some late ones: both the in-order copy and the merge.
        let rows: Vec<(i64, Option<&str>, f64)> = (0..n)
            .map(|i| {
                let late = r.below(6) == 0;
                let ts = (round * 100 + i) as i64 - if late { 150 } else { 0 };
                (ts, syms[r.below(syms.len() as u64) as usize], r.below(1000) as f64)
            })
            .collect();
        spread.append(batch(&rows)).expect("append");
        for row in &rows {
            single.append(batch(std::slice::from_ref(row))).expect("append");
        }
    }
    assert_same_partitions(&spread, &single);
}

/// `got` and `want` hold the same rows (times and prices) in each key's partition, in the
/// same order.
fn assert_same_partitions(got: &Table, want: &Table) {
    assert_eq!(got.row_count(), want.row_count());
    let by_key = |t: &Table| {
        let mut parts: Vec<_> =
            t.partitions().iter().map(|p| (p.key.map(|k| t.dict().get(k).to_string()), p.clone())).collect();
        parts.sort_by(|a, b| a.0.cmp(&b.0));
        parts
    };
    let (got, want) = (by_key(got), by_key(want));
    assert_eq!(got.len(), want.len());
    for ((gk, g), (wk, w)) in got.iter().zip(&want) {
        assert_eq!(gk, wk);
        assert_eq!(g.len(), w.len(), "partition {gk:?}");
        for c in [0, 2] {
            let same = (0..g.len()).all(|i| g.columns()[c].get(i) == w.columns()[c].get(i));
            assert!(same, "partition {gk:?}, column {c}");
        }
    }
}
