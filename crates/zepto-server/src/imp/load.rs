//! The data rows of an `/imp` file as a table's columns, QuestDB's way: with
//! `atomicity=skipRow` (its default) a row with a value that does not read as its column's
//! type, a designated timestamp left empty, or the wrong number of fields is left out and
//! counted (per column, for values); with `atomicity=abort` the first such row fails the
//! whole import, before anything is stored.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use zepto_io::csv::{parse_field, Field};
use zepto_storage::{Column, ColumnBuilder, ColumnDef, Value};

/// How rows that do not read are handled.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// The first bad row fails the import (`atomicity=abort`), else it is skipped.
    pub abort: bool,
    /// Fields past the header's are dropped (`skipLev=true`), else the row is bad.
    pub skip_extra: bool,
    /// The designated timestamp's column, which may not be empty.
    pub ts_col: Option<usize>,
}

/// The rows read.
#[derive(Debug)]
pub struct Loaded {
    /// One column per table column.
    pub cols: Vec<Column>,
    /// Rows taken.
    pub imported: u64,
    /// Rows left out.
    pub rejected: u64,
    /// Per table column, the values that did not read.
    pub errors: Vec<u64>,
}

/// The first bad row under `atomicity=abort`: its 1-based data row and what was wrong.
#[derive(Debug)]
pub struct Aborted {
    /// The data row, 1-based, the header not counted.
    pub row: usize,
    /// What was wrong with it.
    pub message: String,
}

/// Records `recs` (the header's left out), `width` fields wide, into columns `defs`; column
/// `j` of the table reads field `mapping[j]` (NULL when `None`).
pub fn load(
    recs: &[&[Field]],
    width: usize,
    defs: &[ColumnDef],
    mapping: &[Option<usize>],
    rules: Rules,
) -> Result<Loaded, Aborted> {
    let mut builders: Vec<ColumnBuilder> = defs.iter().map(|d| ColumnBuilder::new(d.data_type, recs.len())).collect();
    let mut errors = vec![0u64; defs.len()];
    let (mut imported, mut rejected) = (0u64, 0u64);
    let mut row: Vec<Value> = Vec::with_capacity(defs.len());
    for (r, rec) in recs.iter().enumerate() {
        row.clear();
        if rec.len() < width || (rec.len() > width && !rules.skip_extra) {
            if rules.abort {
                return Err(Aborted { row: r + 1, message: format!("expected {width} fields, found {}", rec.len()) });
            }
            rejected += 1;
            continue;
        }
        let mut bad: Option<String> = None;
        for (j, (def, source)) in defs.iter().zip(mapping).enumerate() {
            let v = match source.and_then(|k| rec.get(k)) {
                None => Ok(Value::Null),
                Some(f) => parse_field(f, def.data_type),
            };
            let v = match v {
                Ok(Value::Null) if rules.ts_col == Some(j) => Err("the designated timestamp is empty".to_string()),
                v => v,
            };
            match v {
                Ok(v) => row.push(v),
                Err(message) => {
                    if let Some(e) = errors.get_mut(j) {
                        *e += 1;
                    }
                    bad.get_or_insert_with(|| format!("column '{}': {message}", def.name));
                }
            }
        }
        if let Some(message) = bad {
            if rules.abort {
                return Err(Aborted { row: r + 1, message });
            }
            rejected += 1;
            continue;
        }
        for (b, v) in builders.iter_mut().zip(&row) {
            push(b, v);
        }
        imported += 1;
    }
    Ok(Loaded { cols: builders.into_iter().map(ColumnBuilder::finish).collect(), imported, rejected, errors })
}

/// `v` (read as the builder's type by `parse_field`, so it fits) into `b`.
fn push(b: &mut ColumnBuilder, v: &Value) {
    if b.push_value(v).is_err() {
        b.push_null();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::DataType;

    fn defs() -> Vec<ColumnDef> {
        vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "i".into(), data_type: DataType::Int32 },
            ColumnDef { name: "s".into(), data_type: DataType::Varchar },
        ]
    }

    #[test]
    fn skips_or_aborts_on_bad_rows() {
        let csv = "2024-01-02T00:00:00Z,1,a\n2024-01-02T00:00:01Z,x,b\n2024-01-02T00:00:02Z,3\n,4,c\n\
                   2024-01-02T00:00:03Z,5,d,extra\n2024-01-02T00:00:04Z,,\"\"\n";
        let recs = zepto_io::csv::parse_records(csv, b',').expect("csv");
        let recs: Vec<&[Field]> = recs.iter().collect();
        let map = [Some(0), Some(1), Some(2)];
        let rules = Rules { abort: false, skip_extra: false, ts_col: Some(0) };
        let l = load(&recs, 3, &defs(), &map, rules).expect("skipRow");
        assert_eq!((l.imported, l.rejected, l.errors.clone()), (2, 4, vec![1, 1, 0]));
        assert_eq!(l.cols[1].get(1).to_string(), "NULL");
        assert_eq!(l.cols[2].get(1).to_string(), "");
        let l = load(&recs, 3, &defs(), &map, Rules { skip_extra: true, ..rules }).expect("skipLev");
        assert_eq!((l.imported, l.rejected), (3, 3));
        let e = load(&recs, 3, &defs(), &map, Rules { abort: true, ..rules }).expect_err("abort");
        assert_eq!(e.row, 2);
        assert!(e.message.contains("'i'"), "{}", e.message);
    }
}
