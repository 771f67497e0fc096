//! The column's own tests: builders, takes, patches, concatenations and gathers against
//! simple references on random columns.

use super::gather::{pack_bits, pack_found};
use super::*;

#[test]
fn a_value_of_another_type_is_refused_not_written_as_null() {
    let mut b = ColumnBuilder::new(DataType::Float64, 2);
    b.push_value(&Value::Float64(1.5)).expect("same type");
    let err = b.push_value(&Value::Int64(2)).expect_err("BIGINT into DOUBLE");
    assert!(err.to_string().contains("BIGINT"), "{err}");
    assert!(b.push_str("x").is_err());
    b.push_value(&Value::Null).expect("NULL fits any type");
    let c = b.finish();
    assert_eq!(c.len(), 2, "the refused values pushed nothing");
    assert_eq!((c.get(0), c.get(1)), (Value::Float64(1.5), Value::Null));
    assert!(Column::repeat(&Value::Bool(true), DataType::Int32, 3).is_err());
}

/// A random column of `n` rows of `dt`, about a fifth of them NULL.
fn random_column(rng: &mut crate::rng::XorShift, dt: DataType, n: usize) -> Column {
    let mut b = ColumnBuilder::new(dt, n);
    for _ in 0..n {
        let x = rng.below(1000) as i64;
        let v = match dt {
            _ if rng.below(5) == 0 => Value::Null,
            DataType::Float64 => Value::Float64(x as f64 / 8.0),
            DataType::Timestamp => Value::Timestamp(x),
            DataType::Symbol | DataType::Varchar => Value::Str(format!("s{}", x % 30)),
            _ => Value::Int64(x),
        };
        b.push_value(&v).expect("a value of the column's type");
    }
    b.finish()
}

/// `patch` reads as setting the rows one by one and appending the rest: in place (one
/// type, one dictionary lineage) or not (VARCHAR, another dictionary, an untyped column).
#[test]
fn patch_sets_rows_then_appends() {
    let mut rng = crate::rng::XorShift::new(0x9A7C);
    let types = [DataType::Int64, DataType::Float64, DataType::Timestamp, DataType::Symbol, DataType::Varchar];
    for case in 0..200 {
        let dt = types[case % types.len()];
        let (n, m) = (1 + rng.index(40), 1 + rng.index(20));
        let all = random_column(&mut rng, dt, n + m);
        let mut col = all.slice(0, n);
        let src = match case % 7 {
            // Another dictionary (a builder of its own), or an untyped NULL column.
            0 => random_column(&mut rng, dt, m),
            1 => Column::nulls(DataType::Null, m),
            _ => all.slice(n, m),
        };
        let set = rng.index(m.min(n) + 1);
        let mut at: Vec<u32> = (0..n as u32).collect();
        (0..n).for_each(|i| at.swap(i, rng.index(n)));
        at.truncate(set);
        let mut want: Vec<Value> = (0..n).map(|i| col.get(i)).collect();
        for (k, &r) in at.iter().enumerate() {
            want[r as usize] = src.get(k);
        }
        want.extend((set..m).map(|k| src.get(k)));
        col.patch(&at, &src);
        let got: Vec<Value> = (0..col.len()).map(|i| col.get(i)).collect();
        assert_eq!(got, want, "case {case}: {dt:?}, rows {at:?} of {n}, {m} from");
        assert_eq!(col.data_type(), dt, "case {case}");
    }
}

/// A copy with room holds the same values (NULLs too) and takes `extra` rows without
/// moving its buffer.
#[test]
fn a_copy_with_room_grows_in_place() {
    let mut b = ColumnBuilder::new(DataType::Int64, 3);
    for v in [Value::Int64(4), Value::Null, Value::Int64(6)] {
        b.push_value(&v).expect("push");
    }
    let c = b.finish();
    let mut copy = c.copy_with_room(100);
    assert_eq!((0..3).map(|i| copy.get(i)).collect::<Vec<_>>(), (0..3).map(|i| c.get(i)).collect::<Vec<_>>());
    let ColumnData::Int64(v) = copy.data_mut() else { panic!("an Int64 column") };
    let at = v.as_ptr();
    v.extend(std::iter::repeat_n(1, 100));
    assert_eq!(at, v.as_ptr(), "the room was there");
    let s = Column::from_data(ColumnData::Varchar(["ab", "cde", ""].into_iter().collect()));
    let mut copy = s.copy_with_room(100);
    let ColumnData::Varchar(v) = copy.data_mut() else { panic!("a VARCHAR column") };
    let at = v.bytes().as_ptr();
    (0..100).for_each(|_| v.push("xy"));
    assert_eq!((at, v.len(), v.get(1)), (v.bytes().as_ptr(), 103, "cde"), "the room was there");
}

#[test]
fn builder_take_concat() {
    let mut b = ColumnBuilder::new(DataType::Int64, 4);
    b.push_value(&Value::Int64(1)).expect("push");
    b.push_null();
    b.push_value(&Value::Int64(3)).expect("push");
    let c = b.finish();
    assert_eq!(c.len(), 3);
    assert_eq!(c.null_count(), 1);
    let t = c.take_opt(&[2, NULL_INDEX, 0]);
    assert_eq!(t.get(0), Value::Int64(3));
    assert_eq!(t.get(1), Value::Null);
    assert_eq!(t.get(2), Value::Int64(1));
    let cc = Column::concat(&[&c, &t]);
    assert_eq!(cc.len(), 6);
    assert_eq!(cc.null_count(), 2);
}

#[test]
fn symbols_remap_across_dicts() {
    let mut a = ColumnBuilder::new(DataType::Symbol, 2);
    a.push_str("x").expect("push");
    a.push_str("y").expect("push");
    let mut b = ColumnBuilder::new(DataType::Symbol, 2);
    b.push_str("y").expect("push");
    b.push_str("z").expect("push");
    let c = Column::concat(&[&a.finish(), &b.finish()]);
    let got: Vec<_> = (0..4).map(|i| c.get(i)).collect();
    assert_eq!(got, ["x", "y", "y", "z"].map(|s| Value::Str(s.into())));
}

/// `concat_spans` against the reference: slices concatenated, compared value by value, for
/// every type, random NULLs, random (also empty and unaligned) spans and an untyped NULL
/// span; symbols from two dictionaries translated into a third.
/// Runs of valid values go into the columns that store them as they are, after a NULL as
/// well; a run of another width is refused and changes nothing.
#[test]
fn extend_valid_takes_each_width_into_its_columns() {
    let mut d = ColumnBuilder::new(DataType::Date, 4);
    d.push_null();
    d.extend_valid(ValidRun::I32(&[19_724, -1])).expect("days into a DATE column");
    let d = d.finish();
    assert_eq!((d.len(), d.get(0), d.get(2)), (3, Value::Null, Value::Date(-1)));
    let mut f = ColumnBuilder::new(DataType::Float32, 2);
    f.extend_valid(ValidRun::F32(&[1.5, -0.0])).expect("reals into a REAL column");
    assert!(f.extend_valid(ValidRun::F64(&[2.0])).is_err(), "a double run into a REAL column");
    let f = f.finish();
    assert_eq!((f.len(), f.get(1)), (2, Value::Float32(-0.0)));
    assert_eq!(ValidRun::Codes(&[1, 2, 3]).len(), 3);
    assert!(ValidRun::F64(&[]).is_empty());
}

#[test]
fn concat_spans_matches_slices() {
    let mut rng = crate::rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
    let mut rnd = move |n: u64| rng.below(n);
    let value = |dt: DataType, r: u64| match dt {
        DataType::Bool => Value::Bool(r.is_multiple_of(2)),
        DataType::Int32 => Value::Int32(r as i32 - 50),
        DataType::Int64 => Value::Int64(r as i64 * 1_000_003),
        DataType::Float32 => Value::Float32(r as f32 / 3.0),
        DataType::Float64 => Value::Float64(r as f64 / 7.0),
        DataType::Timestamp => Value::Timestamp(r as i64),
        DataType::Date => Value::Date(r as i32),
        DataType::Interval => Value::Interval(r as i64),
        _ => Value::Str(format!("s{}", r % 13).repeat(1 + (r % 3) as usize)),
    };
    let types = [
        DataType::Bool,
        DataType::Int32,
        DataType::Int64,
        DataType::Float32,
        DataType::Float64,
        DataType::Timestamp,
        DataType::Date,
        DataType::Interval,
        DataType::Varchar,
        DataType::Symbol,
    ];
    for dt in types {
        for _round in 0..20 {
            let cols: Vec<Column> = (0..3)
                .map(|_| {
                    let n = rnd(40) as usize;
                    let mut b = ColumnBuilder::new(dt, n);
                    for _ in 0..n {
                        let r = rnd(100);
                        if r < 15 {
                            b.push_null();
                        } else {
                            b.push_value(&value(dt, r)).expect("push");
                        }
                    }
                    b.finish()
                })
                .chain(std::iter::once(Column::nulls(DataType::Null, 5)))
                .collect();
            let mut target = Dict::default();
            target.intern("unrelated");
            let remaps: Vec<Option<Vec<u32>>> = cols
                .iter()
                .map(|c| match &c.data {
                    ColumnData::Symbol { dict, .. } => Some(dict.iter().map(|s| target.intern(s)).collect()),
                    _ => None,
                })
                .collect();
            let target = Arc::new(target);
            let spans: Vec<Span> = (0..6)
                .map(|_| {
                    let k = rnd(cols.len() as u64) as usize;
                    let a = rnd(cols[k].len() as u64 + 1) as usize;
                    let b = a + rnd((cols[k].len() - a) as u64 + 1) as usize;
                    Span { col: &cols[k], rows: a..b, remap: remaps[k].as_deref() }
                })
                .collect();
            let got = Column::concat_spans(dt, Some(&target), &spans).expect("spans of the right type");
            let want: Vec<Value> = spans.iter().flat_map(|s| s.rows.clone().map(move |i| s.col.get(i))).collect();
            assert_eq!(got.len(), want.len());
            assert_eq!(got.data_type(), dt);
            for (i, w) in want.iter().enumerate() {
                assert_eq!(&got.get(i), w, "{dt} row {i}");
            }
            if let ColumnData::Symbol { dict, .. } = &got.data {
                assert!(Arc::ptr_eq(dict, &target));
            }
        }
    }
    let ints = Column::from_data(ColumnData::Int64(vec![1, 2].into()));
    let bad = [Span { col: &ints, rows: 0..1, remap: None }];
    assert!(Column::concat_spans(DataType::Float64, None, &bad).is_err());
    let out_of_range = [Span { col: &ints, rows: 1..3, remap: None }];
    assert!(Column::concat_spans(DataType::Int64, None, &out_of_range).is_err());
}

/// The found-row bits with AVX2 (where the CPU has it) are the portable ones, every length
/// around a byte; a NULL-free source gives its values where an index found one and NULL
/// elsewhere; an index past the source (not NULL_INDEX) is an error naming the first.
#[test]
fn gather_marks_rows_that_found_none_and_refuses_wrong_indices() {
    let mut rng = crate::rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
    let src = Column::from_data(ColumnData::Float64((0..50).map(f64::from).collect()));
    for n in 0..80 {
        let idx: Vec<u32> = (0..n).map(|_| if rng.below(3) == 0 { NULL_INDEX } else { rng.below(50) as u32 }).collect();
        assert_eq!(pack_found(&idx), pack_bits(&idx, |i| i != NULL_INDEX), "{idx:?}");
        let got = Column::gather(DataType::Float64, &[(&src, &idx)]).expect("indices in range");
        for (k, &i) in idx.iter().enumerate() {
            let want = if i == NULL_INDEX { Value::Null } else { Value::Float64(f64::from(i)) };
            assert_eq!(got.get(k), want, "row {k} of {idx:?}");
        }
    }
    let wrong = [1, NULL_INDEX, 52, 3, 70];
    let err = Column::gather(DataType::Float64, &[(&src, &wrong)]).expect_err("row 52 of 50");
    assert_eq!(err, "row 52 out of a column of 50 rows");
}

/// `gather` against `take_opt` per part then `concat`, for every type, with NULL rows in the
/// sources, NULL_INDEX picks and an untyped NULL part.
#[test]
fn gather_matches_take_opt_then_concat() {
    let mut rng = crate::rng::XorShift::new(0x2545_f491_4f6c_dd1d);
    let mut rnd = move |n: u64| rng.below(n);
    for dt in [
        DataType::Bool,
        DataType::Int32,
        DataType::Int64,
        DataType::Float64,
        DataType::Timestamp,
        DataType::Varchar,
        DataType::Symbol,
    ] {
        // One dictionary lineage for the symbol parts, as one table's partitions have.
        let mut dict = Dict::default();
        for s in ["a", "b", "c", "d"] {
            dict.intern(s);
        }
        let dict = Arc::new(dict);
        for _round in 0..20 {
            let cols: Vec<Column> = (0..3)
                .map(|_| {
                    let n = 1 + rnd(30) as usize;
                    let mut b = ColumnBuilder::new(dt, n);
                    for _ in 0..n {
                        let r = rnd(100);
                        match (r < 15, dt) {
                            (true, _) => b.push_null(),
                            (_, DataType::Bool) => b.push_value(&Value::Bool(r % 2 == 1)).expect("push"),
                            (_, DataType::Int32) => b.push_value(&Value::Int32(r as i32)).expect("push"),
                            (_, DataType::Int64) => b.push_value(&Value::Int64(r as i64 - 40)).expect("push"),
                            (_, DataType::Float64) => b.push_value(&Value::Float64(r as f64 / 3.0)).expect("push"),
                            (_, DataType::Timestamp) => b.push_value(&Value::Timestamp(r as i64 * 1000)).expect("push"),
                            (_, _) => b.push_str(["a", "b", "c", "d"][(r % 4) as usize]).expect("push"),
                        }
                    }
                    let mut c = b.finish();
                    if let ColumnData::Symbol { codes, .. } = &c.data {
                        // Re-code against the shared dictionary.
                        let strs: Vec<Option<String>> = (0..codes.len())
                            .map(|i| c.str_at(i).map(str::to_string).filter(|_| c.is_valid(i)))
                            .collect();
                        let codes = strs.iter().map(|s| s.as_deref().and_then(|s| dict.code(s)).unwrap_or(0)).collect();
                        c.data = ColumnData::Symbol { codes, dict: dict.clone() };
                    }
                    c
                })
                .chain(std::iter::once(Column::nulls(DataType::Null, 4)))
                .collect();
            let idx: Vec<Vec<u32>> = cols
                .iter()
                .map(|c| {
                    (0..rnd(25)).map(|_| if rnd(6) == 0 { NULL_INDEX } else { rnd(c.len() as u64) as u32 }).collect()
                })
                .collect();
            let parts: Vec<(&Column, &[u32])> = cols.iter().zip(&idx).map(|(c, i)| (c, i.as_slice())).collect();
            let got = Column::gather(dt, &parts).expect("parts of the right type");
            let want: Vec<Value> = parts
                .iter()
                .flat_map(|(c, idx)| {
                    idx.iter().map(move |&i| if i == NULL_INDEX { Value::Null } else { c.get(i as usize) })
                })
                .collect();
            assert_eq!(got.len(), want.len());
            for (i, w) in want.iter().enumerate() {
                assert_eq!(&got.get(i), w, "{dt} row {i}");
            }
        }
    }
    let ints = Column::from_data(ColumnData::Int64(vec![1, 2].into()));
    assert!(Column::gather(DataType::Int64, &[(&ints, &[2])]).is_err());
    assert!(Column::gather(DataType::Int64, &[(&ints, &[0, NULL_INDEX, 7])]).is_err());
    assert!(Column::gather(DataType::Float64, &[(&ints, &[0])]).is_err());
    let strs = Column::from_data(ColumnData::Varchar(StrVec::from_iter(["x"])));
    assert!(Column::gather(DataType::Varchar, &[(&strs, &[0, 1])]).is_err());
    let nulls = Column::nulls(DataType::Null, 2);
    assert!(Column::gather(DataType::Int64, &[(&ints, &[1]), (&nulls, &[2])]).is_err());
    let ok = Column::gather(DataType::Int64, &[(&ints, &[1]), (&nulls, &[1, NULL_INDEX])]).expect("in range");
    assert_eq!((ok.get(0), ok.get(1), ok.get(2)), (Value::Int64(2), Value::Null, Value::Null));
}
