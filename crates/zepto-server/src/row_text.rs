//! Rows of a result as JSON arrays (our JSON and QuestDB's `/exec` JSON), each column's way of
//! writing its cells decided once per run of rows instead of once per cell.
//!
//! A wide answer is mostly symbols, integers and timestamps, and writing them cell by cell
//! (a match on the column's data, a dictionary lookup and an escape loop per symbol, the
//! calendar per timestamp) cost several times the query. Here an integer column writes
//! through `itoa`, a symbol's escaped text is made once per code and copied after, and a
//! timestamp's date is made once per day. Cells of every other type go through the per-cell
//! writers ([`json_cell`], [`crate::exec_json::cell`]), and the text is the same byte for
//! byte (a test compares them).

use zepto_io::format::{json_cell, json_escape};
use zepto_storage::time::{infinite_text, push_timestamp, NS_PER_DAY, NS_PER_HOUR, NS_PER_MIN, NS_PER_SEC};
use zepto_storage::{Bitmap, Column, ColumnData};

/// Which JSON a row is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Our own: timestamps to the nanosecond.
    Ours,
    /// QuestDB's `/exec`: timestamps to the microsecond, dates at midnight, NaN as `null`.
    QuestDb,
}

/// The writers of one run of rows' columns.
pub struct RowText<'c> {
    cols: Vec<ColText<'c>>,
}

/// How one column's cells are written.
struct ColText<'c> {
    valid: Option<&'c Bitmap>,
    how: How<'c>,
}

enum How<'c> {
    Int64(&'c [i64]),
    Int32(&'c [i32]),
    Bool(&'c [bool]),
    Symbol(SymbolTexts<'c>),
    Timestamp(Stamps<'c>),
    Cell(&'c Column, fn(&Column, usize, &mut String)),
}

/// Slots of the symbol cache (direct-mapped by code).
const SYMBOL_SLOTS: usize = 256;

/// A symbol column with the escaped text of the codes seen lately.
struct SymbolTexts<'c> {
    col: &'c Column,
    codes: &'c [u32],
    /// Per slot: the code whose text `texts[range]` holds (`u32::MAX`: none).
    slots: Vec<(u32, std::ops::Range<usize>)>,
    texts: String,
}

/// A timestamp column with the text of the day of its last cell.
struct Stamps<'c> {
    v: &'c [i64],
    /// To the microsecond (QuestDB) or the nanosecond.
    micros: bool,
    /// The day `date` is the text of (`YYYY-MM-DDT`), `i64::MIN` when none yet.
    day: i64,
    date: String,
}

impl<'c> RowText<'c> {
    /// The writers of `cols` in `dialect`.
    pub fn new(cols: impl IntoIterator<Item = &'c Column>, dialect: Dialect) -> RowText<'c> {
        RowText { cols: cols.into_iter().map(|c| ColText::new(c, dialect)).collect() }
    }

    /// Row `i` as a JSON array, `[` to `]`.
    pub fn row(&mut self, i: usize, s: &mut String) {
        s.push('[');
        for (j, c) in self.cols.iter_mut().enumerate() {
            if j > 0 {
                s.push(',');
            }
            c.write(i, s);
        }
        s.push(']');
    }
}

impl<'c> ColText<'c> {
    fn new(col: &'c Column, dialect: Dialect) -> ColText<'c> {
        let how = match col.data() {
            ColumnData::Int64(v) => How::Int64(v),
            ColumnData::Int32(v) => How::Int32(v),
            ColumnData::Bool(v) => How::Bool(v),
            ColumnData::Symbol { codes, .. } => How::Symbol(SymbolTexts {
                col,
                codes,
                slots: vec![(u32::MAX, 0..0); SYMBOL_SLOTS],
                texts: String::new(),
            }),
            ColumnData::Timestamp(v) => {
                How::Timestamp(Stamps { v, micros: dialect == Dialect::QuestDb, day: i64::MIN, date: String::new() })
            }
            _ if dialect == Dialect::QuestDb => How::Cell(col, crate::exec_json::cell),
            _ => How::Cell(col, json_cell),
        };
        ColText { valid: col.validity(), how }
    }

    #[inline]
    fn write(&mut self, i: usize, s: &mut String) {
        if self.valid.is_some_and(|v| !v.get(i)) {
            return s.push_str("null");
        }
        match &mut self.how {
            How::Int64(v) => s.push_str(itoa::Buffer::new().format(v.get(i).copied().unwrap_or(0))),
            How::Int32(v) => s.push_str(itoa::Buffer::new().format(v.get(i).copied().unwrap_or(0))),
            How::Bool(v) => s.push_str(if v.get(i).copied().unwrap_or(false) { "true" } else { "false" }),
            How::Symbol(t) => t.write(i, s),
            How::Timestamp(t) => t.write(i, s),
            How::Cell(c, cell) => cell(c, i, s),
        }
    }
}

impl SymbolTexts<'_> {
    fn write(&mut self, i: usize, s: &mut String) {
        let Some(&code) = self.codes.get(i) else { return s.push_str("null") };
        let slot = code as usize % SYMBOL_SLOTS;
        if let Some((c, r)) = self.slots.get(slot) {
            if *c == code {
                return s.push_str(self.texts.get(r.clone()).unwrap_or_default());
            }
        }
        let from = self.texts.len();
        json_escape(self.col.str_at(i).unwrap_or(""), &mut self.texts);
        let r = from..self.texts.len();
        s.push_str(self.texts.get(r.clone()).unwrap_or_default());
        if let Some(e) = self.slots.get_mut(slot) {
            *e = (code, r);
        }
    }
}

impl Stamps<'_> {
    fn write(&mut self, i: usize, s: &mut String) {
        let ns = self.v.get(i).copied().unwrap_or(0);
        if let Some(word) = infinite_text(ns) {
            // Both dialects write the words quoted.
            return json_escape(word, s);
        }
        // To the microsecond: the digits after it are left out (a floor, as days are whole
        // microseconds).
        let (day, rem) = (ns.div_euclid(NS_PER_DAY), ns.rem_euclid(NS_PER_DAY));
        if day != self.day {
            let mut full = String::with_capacity(32);
            push_timestamp(ns, true, &mut full);
            self.date = full.get(..11).unwrap_or_default().to_string(); // YYYY-MM-DDT
            self.day = day;
        }
        let (h, rem) = (rem / NS_PER_HOUR, rem % NS_PER_HOUR);
        let (mi, rem) = (rem / NS_PER_MIN, rem % NS_PER_MIN);
        let (sec, frac) = (rem / NS_PER_SEC, rem % NS_PER_SEC);
        let mut b = *b"00:00:00.000000000";
        for (at, mut v) in [(0..2, h), (3..5, mi), (6..8, sec), (9..18, frac)] {
            for c in b.get_mut(at).into_iter().flatten().rev() {
                *c = b'0' + (v % 10) as u8;
                v /= 10;
            }
        }
        let digits = if self.micros { 15 } else { 18 };
        s.push('"');
        s.push_str(&self.date);
        s.push_str(b.get(..digits).and_then(|t| std::str::from_utf8(t).ok()).unwrap_or_default());
        s.push_str("Z\"");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::{ColumnBuilder, DataType, Value};

    /// Random columns of every type, NULLs, infinite timestamps and symbols that need escapes
    /// among them: every row's text is the per-cell writers' text, in both dialects.
    #[test]
    fn rows_read_as_the_per_cell_writers_write_them() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let types = [
            DataType::Int64,
            DataType::Int32,
            DataType::Bool,
            DataType::Symbol,
            DataType::Timestamp,
            DataType::Float64,
            DataType::Varchar,
            DataType::Date,
        ];
        let words = ["a", "b\"q", "c\\d", "é\n", "", "x"];
        let rows = 3000;
        let cols: Vec<Column> = types
            .iter()
            .map(|&dt| {
                let mut b = ColumnBuilder::new(dt, rows);
                for _ in 0..rows {
                    let r = next();
                    let v = match dt {
                        _ if r % 11 == 0 => Value::Null,
                        DataType::Int64 => Value::Int64(r as i64),
                        DataType::Int32 => Value::Int32(r as i32),
                        DataType::Bool => Value::Bool(r % 2 == 0),
                        DataType::Symbol | DataType::Varchar => Value::Str(words[(r % 6) as usize].into()),
                        DataType::Timestamp => Value::Timestamp(match r % 13 {
                            0 => i64::MAX,
                            1 => i64::MIN,
                            2 => -((r >> 8) as i64 % (NS_PER_DAY * 400)),
                            3 => i64::MIN + 1 + (r % 1000) as i64,
                            _ => (r >> 4) as i64 % (NS_PER_DAY * 30_000),
                        }),
                        DataType::Float64 => Value::Float64(f64::from_bits(r >> 2)),
                        _ => Value::Date((r % 40_000) as i32),
                    };
                    b.push_value(&v).expect("typed");
                }
                b.finish()
            })
            .collect();
        for dialect in [Dialect::Ours, Dialect::QuestDb] {
            let mut text = RowText::new(cols.iter(), dialect);
            let cell = if dialect == Dialect::Ours { json_cell } else { crate::exec_json::cell };
            for i in 0..rows {
                let (mut got, mut want) = (String::new(), String::from("["));
                text.row(i, &mut got);
                for (j, c) in cols.iter().enumerate() {
                    if j > 0 {
                        want.push(',');
                    }
                    cell(c, i, &mut want);
                }
                want.push(']');
                assert_eq!(got, want, "{dialect:?} row {i}");
            }
        }
    }
}
