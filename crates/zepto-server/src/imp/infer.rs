//! Column types of a CSV file that creates a table, as QuestDB's `/imp` guesses them: from the
//! first [`SAMPLE_ROWS`] data rows, a column takes the first of INT, LONG, DOUBLE, BOOLEAN,
//! DATE and TIMESTAMP that every non-empty value of the sample reads as, else VARCHAR.
//!
//! QuestDB's guesses, checked against QuestDB 9.3: `-7` INT, `3000000000` LONG, `1.5e3`
//! DOUBLE, `true`/`TRUE` BOOLEAN (not `t`, `1` or `yes`), `2024-01-02` DATE, and timestamps
//! in its own layouts: `2024-01-02T09:30:00.000000Z` TIMESTAMP, `2024-01-02 09:30:00` and
//! `2024-01-02T09:30:00.000Z` DATE (QuestDB's DATE holds milliseconds; ours holds days, so
//! those are TIMESTAMP here). Other layouts (`...T09:30:00Z`, no zone) stay text, as there.
//! A column with no value in the sample, or of one character, is QuestDB's CHAR: VARCHAR
//! here, as DDL's `char` is.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use zepto_io::csv::Field;
use zepto_storage::{time, DataType};

/// Rows read to guess the types (QuestDB's `text.analysis.max.lines`).
pub const SAMPLE_ROWS: usize = 1000;

/// The types each column could still be, most specific first.
const CANDIDATES: [DataType; 6] =
    [DataType::Int32, DataType::Int64, DataType::Float64, DataType::Bool, DataType::Date, DataType::Timestamp];

/// The guessed type of each of `width` columns, from the first [`SAMPLE_ROWS`] rows `recs`.
pub fn infer(recs: &[&[Field]], width: usize) -> Vec<DataType> {
    // Per column: which candidates are still possible, and whether any value was seen.
    let mut alive = vec![[true; CANDIDATES.len()]; width];
    let mut seen = vec![false; width];
    for rec in recs.iter().take(SAMPLE_ROWS) {
        for ((f, ok), seen) in rec.iter().zip(alive.iter_mut()).zip(seen.iter_mut()) {
            if f.text.is_empty() && !f.quoted {
                continue;
            }
            *seen = true;
            for (still, dt) in ok.iter_mut().zip(CANDIDATES) {
                *still = *still && reads_as(f, dt);
            }
        }
    }
    alive
        .iter()
        .zip(&seen)
        .map(|(ok, &seen)| {
            let first = ok.iter().zip(CANDIDATES).find(|(still, _)| **still).map(|(_, dt)| dt);
            if seen {
                first.unwrap_or(DataType::Varchar)
            } else {
                DataType::Varchar
            }
        })
        .collect()
}

/// Whether every non-empty value of column `k` in the sample reads as a timestamp in any
/// layout our parser takes (for the column `timestamp=` names, which must be one).
pub fn all_timestamps(recs: &[&[Field]], k: usize) -> bool {
    recs.iter().take(SAMPLE_ROWS).filter_map(|rec| rec.get(k)).all(|f| {
        (f.text.is_empty() && !f.quoted)
            || time::parse_timestamp(f.text.trim()).is_some_and(|ns| !time::is_infinite(ns))
    })
}

/// Whether field `f` reads as a value of `dt` in QuestDB's guess.
fn reads_as(f: &Field, dt: DataType) -> bool {
    let t = f.text.as_ref();
    match dt {
        DataType::Int32 => t.parse::<i32>().is_ok(),
        DataType::Int64 => t.parse::<i64>().is_ok(),
        // Digits, a point, an exponent: not `inf` or `NaN`, which Rust's parser also takes.
        DataType::Float64 => {
            t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
                && t.parse::<f64>().is_ok()
        }
        DataType::Bool => t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false"),
        DataType::Date => t.len() == 10 && time::parse_date(t).is_some(),
        DataType::Timestamp => questdb_timestamp(t) && time::parse_timestamp(t).is_some(),
        _ => false,
    }
}

/// QuestDB's own timestamp layouts: `yyyy-MM-ddTHH:mm:ss.SSSUUUZ`, `yyyy-MM-ddTHH:mm:ss.SSSZ`
/// and `yyyy-MM-dd HH:mm:ss`.
fn questdb_timestamp(t: &str) -> bool {
    let b = t.as_bytes();
    let sep = b.get(10).copied();
    match b.len() {
        27 => sep == Some(b'T') && b.get(19) == Some(&b'.') && b.get(26) == Some(&b'Z'),
        24 => sep == Some(b'T') && b.get(19) == Some(&b'.') && b.get(23) == Some(&b'Z'),
        19 => sep == Some(b' '),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(csv: &str) -> Vec<DataType> {
        let recs = zepto_io::csv::parse_records(csv, b',').expect("csv");
        let rows: Vec<&[Field]> = recs.iter().collect();
        infer(&rows, recs.get(0).len())
    }

    #[test]
    fn guesses_as_questdb_does() {
        let got = types(
            "-7,3000000000,1.5e3,TRUE,2024-01-13,2024-01-03T00:00:00.000000Z,2024-01-03 10:00:00,2024-01-03T00:00:00Z,ab,\n\
             8,1,2,false,2024-01-14,2024-01-03T00:00:01.000000Z,2024-01-03T10:00:00.123Z,x,cd,\n",
        );
        use DataType::*;
        assert_eq!(got, vec![Int32, Int64, Float64, Bool, Date, Timestamp, Timestamp, Varchar, Varchar, Varchar]);
        // One value that does not read makes the column text; empty cells do not count.
        assert_eq!(types("1,nan\n,1.5\nabc,2\n"), vec![Varchar, Varchar]);
        assert_eq!(types("1\n\n2\n"), vec![Int32]);
        let recs = zepto_io::csv::parse_records("2024-01-03T00:00:00Z\n\n2024-01-03 10:00\n", b',').expect("csv");
        let rows: Vec<&[Field]> = recs.iter().collect();
        assert!(all_timestamps(&rows, 0));
    }
}
