//! The members of a constant `IN` list, hashed: `x IN (c1, ..., cN)` with many constants is a
//! lookup per row instead of N comparisons per row (a million-item list over 10k rows was 10^10
//! comparisons). The binder builds one when every item is a constant of the value's type
//! ([`InSet::build`]); the executor probes it ([`crate::eval`]).
//!
//! Keys follow SQL's `=` for the type: integers, dates, times and booleans as `i64`; HUGEINT as
//! `i128`; floats by the bits of their `f64` value with `-0.0` read as `0.0` and every NaN as
//! one NaN (in SQL's order NaN `=` NaN, [`crate::eval::sql_order`]); text by its bytes. A NULL item is not a member: it makes
//! a row that matches nothing NULL instead of false, as `x = NULL` would.
//!
//! Text members live in one buffer (`TextSet`): a million-item list is then one allocation
//! to make and to free, not a million (they were a fifth of binding and dropping such a list).

use hashbrown::HashTable;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashSet;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;
use zepto_storage::{DataType, Value};

type Fast = foldhash::fast::FixedState;

/// A list shorter than this is compared item by item: a handful of comparisons beat a hash.
pub const HASH_FROM: usize = 8;

/// The hashed members of one list, shared by every copy of the expression.
#[derive(Clone)]
pub struct InSet(Arc<Members>);

#[derive(PartialEq)]
struct Members {
    /// The value's type; every member is of it.
    ty: DataType,
    keys: Keys,
    /// Some item was NULL.
    has_null: bool,
}

#[derive(PartialEq)]
enum Keys {
    Int(HashSet<i64, Fast>),
    Wide(HashSet<i128, Fast>),
    Float(HashSet<u64, Fast>),
    Text(TextSet),
}

/// Distinct strings, their bytes one after another in `bytes` and the table holding where each
/// starts and ends there. Offsets are `u32`: a set past 4 GiB of text is not built
/// ([`TextSet::insert`] says so) and the list stays a list.
struct TextSet {
    bytes: String,
    table: HashTable<(u32, u32)>,
}

impl TextSet {
    fn with_capacity(n: usize) -> TextSet {
        TextSet { bytes: String::new(), table: HashTable::with_capacity(n) }
    }

    fn contains(&self, s: &str) -> bool {
        self.table.find(Fast::default().hash_one(s), |&at| span(&self.bytes, at) == s).is_some()
    }

    /// Adds `s`; false when the buffer would pass `u32::MAX` bytes.
    fn insert(&mut self, s: &str) -> bool {
        let hash = Fast::default().hash_one(s);
        let (bytes, table) = (&mut self.bytes, &mut self.table);
        if table.find(hash, |&at| span(bytes, at) == s).is_some() {
            return true;
        }
        let (Ok(from), Ok(to)) = (u32::try_from(bytes.len()), u32::try_from(bytes.len() + s.len())) else {
            return false;
        };
        bytes.push_str(s);
        table.insert_unique(hash, (from, to), |&at| Fast::default().hash_one(span(bytes, at)));
        true
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.table.iter().map(|&at| span(&self.bytes, at))
    }
}

/// The text of a member: its span of the set's buffer.
fn span(bytes: &str, (from, to): (u32, u32)) -> &str {
    &bytes[from as usize..to as usize]
}

impl PartialEq for TextSet {
    fn eq(&self, other: &TextSet) -> bool {
        self.len() == other.len() && self.iter().all(|s| other.contains(s))
    }
}

/// The bits that name a float under SQL's `=`: -0.0 as 0.0, every NaN as one NaN. Equal
/// keys are equal values, so hash tables key floats by them (GROUP BY, joins, IN lists).
#[inline]
pub fn float_key(v: f64) -> u64 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        0x7FF8_0000_0000_0000
    } else {
        v.to_bits()
    }
}

impl InSet {
    /// The set of `values`, all of type `ty` (text of either string type for a string `ty`) or
    /// NULL; `None` when `ty` has no hashed form (vectors, the NULL type) or a value is of
    /// another type, for the caller to keep the list as it is.
    pub fn build<'a>(ty: DataType, values: impl IntoIterator<Item = &'a Value>) -> Option<InSet> {
        let values = values.into_iter();
        let (low, high) = values.size_hint();
        let n = high.unwrap_or(low);
        let mut keys = match ty {
            DataType::Bool
            | DataType::Int32
            | DataType::Int64
            | DataType::Date
            | DataType::Timestamp
            | DataType::Interval => Keys::Int(HashSet::with_capacity_and_hasher(n, Fast::default())),
            DataType::Int128 => Keys::Wide(HashSet::with_capacity_and_hasher(n, Fast::default())),
            DataType::Float32 | DataType::Float64 => Keys::Float(HashSet::with_capacity_and_hasher(n, Fast::default())),
            DataType::Varchar | DataType::Symbol => Keys::Text(TextSet::with_capacity(n)),
            DataType::Vector(_) | DataType::Null => return None,
        };
        let mut has_null = false;
        for v in values {
            if *v == Value::Null {
                has_null = true;
                continue;
            }
            if !(v.data_type() == ty || (ty.is_string() && matches!(v, Value::Str(_)))) {
                return None;
            }
            if !keys.insert(v) {
                return None;
            }
        }
        Some(InSet(Arc::new(Members { ty, keys, has_null })))
    }

    /// The value's type.
    pub fn data_type(&self) -> DataType {
        self.0.ty
    }

    /// Some item was NULL.
    pub fn has_null(&self) -> bool {
        self.0.has_null
    }

    /// How many distinct non-NULL members.
    pub fn len(&self) -> usize {
        match &self.0.keys {
            Keys::Int(s) => s.len(),
            Keys::Wide(s) => s.len(),
            Keys::Float(s) => s.len(),
            Keys::Text(s) => s.len(),
        }
    }

    /// No non-NULL member.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether integer key `k` (a BOOLEAN, INTEGER, BIGINT, DATE, TIMESTAMP or INTERVAL) is in.
    #[inline]
    pub fn has_int(&self, k: i64) -> bool {
        matches!(&self.0.keys, Keys::Int(s) if s.contains(&k))
    }

    /// Whether HUGEINT `k` is in.
    #[inline]
    pub fn has_wide(&self, k: i128) -> bool {
        matches!(&self.0.keys, Keys::Wide(s) if s.contains(&k))
    }

    /// Whether float `x` is in.
    #[inline]
    pub fn has_float(&self, x: f64) -> bool {
        matches!(&self.0.keys, Keys::Float(s) if s.contains(&float_key(x)))
    }

    /// Whether text `s` is in.
    #[inline]
    pub fn has_str(&self, s: &str) -> bool {
        matches!(&self.0.keys, Keys::Text(set) if set.contains(s))
    }

    /// The text members (none for a set of another type).
    pub fn strs(&self) -> impl Iterator<Item = &str> + '_ {
        let set = match &self.0.keys {
            Keys::Text(s) => Some(s),
            _ => None,
        };
        set.into_iter().flat_map(TextSet::iter)
    }

    /// The members as values of the set's type, in no particular order (NULL not among them).
    pub fn values(&self) -> Vec<Value> {
        let ty = self.0.ty;
        match &self.0.keys {
            Keys::Int(s) => s.iter().map(|&k| int_value(ty, k)).collect(),
            Keys::Wide(s) => s.iter().map(|&k| Value::Int128(k)).collect(),
            Keys::Float(s) => s
                .iter()
                .map(|&k| match ty {
                    DataType::Float32 => Value::Float32(f64::from_bits(k) as f32),
                    _ => Value::Float64(f64::from_bits(k)),
                })
                .collect(),
            Keys::Text(s) => s.iter().map(|k| Value::Str(k.to_string())).collect(),
        }
    }
}

impl Keys {
    /// Adds `v`, already checked to be of the set's type; false when it cannot be held (text
    /// past [`TextSet`]'s bound).
    fn insert(&mut self, v: &Value) -> bool {
        match (self, v) {
            (Keys::Int(s), &Value::Bool(b)) => _ = s.insert(i64::from(b)),
            (Keys::Int(s), &(Value::Int32(k) | Value::Date(k))) => _ = s.insert(i64::from(k)),
            (Keys::Int(s), &(Value::Int64(k) | Value::Timestamp(k) | Value::Interval(k))) => _ = s.insert(k),
            (Keys::Wide(s), &Value::Int128(k)) => _ = s.insert(k),
            (Keys::Float(s), &Value::Float32(x)) => _ = s.insert(float_key(f64::from(x))),
            (Keys::Float(s), &Value::Float64(x)) => _ = s.insert(float_key(x)),
            (Keys::Text(s), Value::Str(t)) => return s.insert(t),
            (_, v) => debug_assert!(false, "{v:?} is not of the set's type"),
        }
        true
    }
}

/// Integer key `k` as a value of type `ty`.
fn int_value(ty: DataType, k: i64) -> Value {
    match ty {
        DataType::Bool => Value::Bool(k != 0),
        DataType::Int32 => Value::Int32(k as i32),
        DataType::Date => Value::Date(k as i32),
        DataType::Timestamp => Value::Timestamp(k),
        DataType::Interval => Value::Interval(k),
        _ => Value::Int64(k),
    }
}

impl PartialEq for InSet {
    fn eq(&self, other: &InSet) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl fmt::Debug for InSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InSet({} {:?} members{})", self.len(), self.0.ty, if self.has_null() { ", NULL" } else { "" })
    }
}

/// What crosses the wire between nodes: the type, the members and the NULL; the set is hashed
/// again where it lands.
#[derive(Serialize, Deserialize)]
struct Wire {
    ty: DataType,
    values: Vec<Value>,
    has_null: bool,
}

impl Serialize for InSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire { ty: self.0.ty, values: self.values(), has_null: self.0.has_null }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for InSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<InSet, D::Error> {
        let w = Wire::deserialize(d)?;
        let nulls = w.has_null.then_some(Value::Null);
        InSet::build(w.ty, w.values.iter().chain(nulls.as_ref()))
            .ok_or_else(|| serde::de::Error::custom(format!("an IN set of {:?} members", w.ty)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_follow_sql_equality() {
        let s = InSet::build(DataType::Float64, &[Value::Float64(-0.0), Value::Float64(f64::NAN), Value::Float64(1.5)])
            .expect("set");
        assert!(s.has_float(0.0) && s.has_float(-0.0) && s.has_float(1.5));
        assert!(s.has_float(f64::NAN) && s.has_float(-f64::NAN) && !s.has_float(2.0));
        assert_eq!(s.len(), 3);
        let no_nan = InSet::build(DataType::Float64, &[Value::Float64(1.5)]).expect("set");
        assert!(!no_nan.has_float(f64::NAN));
    }

    #[test]
    fn nulls_are_remembered_not_members() {
        let s = InSet::build(DataType::Int64, &[Value::Int64(3), Value::Null]).expect("set");
        assert!(s.has_null() && s.has_int(3) && !s.has_int(0));
        assert_eq!(s.values(), vec![Value::Int64(3)]);
    }

    #[test]
    fn a_value_of_another_type_keeps_the_list() {
        assert!(InSet::build(DataType::Int64, &[Value::Int32(3)]).is_none());
        assert!(InSet::build(DataType::Vector(2), &[Value::Null]).is_none());
        let s = InSet::build(DataType::Symbol, &[Value::Str("a".into())]).expect("set");
        assert!(s.has_str("a") && !s.has_str("b"));
        assert_eq!(s.strs().collect::<Vec<_>>(), vec!["a"]);
    }

    #[test]
    fn text_members_are_found_by_their_bytes() {
        let items: Vec<Value> = (0..5000).map(|i| Value::Str(format!("k{}", i % 3000))).collect();
        let s = InSet::build(DataType::Varchar, &items).expect("set");
        assert_eq!(s.len(), 3000, "duplicates are one member");
        assert!((0..3000).all(|i| s.has_str(&format!("k{i}"))));
        assert!(!s.has_str("k3000") && !s.has_str("k") && !s.has_str("") && !s.has_str("k29999"));
        let mut members: Vec<&str> = s.strs().collect();
        members.sort_unstable();
        let mut want: Vec<String> = (0..3000).map(|i| format!("k{i}")).collect();
        want.sort_unstable();
        assert_eq!(members, want);
        let empty = InSet::build(DataType::Varchar, &[Value::Str(String::new())]).expect("set");
        assert!(empty.has_str("") && !empty.has_str("k0"));
        let reversed: Vec<Value> = items.iter().rev().cloned().collect();
        assert_eq!(InSet::build(DataType::Varchar, &reversed).expect("set"), s, "order does not matter");
        assert_ne!(InSet::build(DataType::Varchar, &items[..2999]).expect("set"), s);
    }

    #[test]
    fn crosses_the_wire() {
        let values: Vec<Value> = (0..100).map(Value::Timestamp).chain([Value::Null]).collect();
        let s = InSet::build(DataType::Timestamp, &values).expect("set");
        let bytes = postcard::to_allocvec(&s).expect("encode");
        let back: InSet = postcard::from_bytes(&bytes).expect("decode");
        assert_eq!(back, s);
        assert!(back.has_null() && back.has_int(99) && !back.has_int(100));
    }
}
