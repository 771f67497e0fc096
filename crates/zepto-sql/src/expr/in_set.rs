//! The members of a constant `IN` list, hashed: `x IN (c1, ..., cN)` with many constants is a
//! lookup per row instead of N comparisons per row (a million-item list over 10k rows was 10^10
//! comparisons). The binder builds one when every item is a constant of the value's type
//! ([`InSet::build`]); the executor probes it ([`crate::eval`]).
//!
//! Keys follow SQL's `=` for the type: integers, dates, times and booleans as `i64`; HUGEINT as
//! `i128`; floats by the bits of their `f64` value with `-0.0` read as `0.0` and NaN never a
//! member (NaN `=` anything is false); text by its bytes. A NULL item is not a member: it makes
//! a row that matches nothing NULL instead of false, as `x = NULL` would.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashSet;
use std::fmt;
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
    Text(HashSet<Box<str>, Fast>),
}

/// The key of a float: `-0.0` as `0.0`; `None` for NaN, which equals nothing.
#[inline]
pub fn float_key(x: f64) -> Option<u64> {
    if x.is_nan() {
        None
    } else {
        Some((x + 0.0).to_bits())
    }
}

impl InSet {
    /// The set of `values`, all of type `ty` (text of either string type for a string `ty`) or
    /// NULL; `None` when `ty` has no hashed form (vectors, the NULL type) or a value is of
    /// another type, for the caller to keep the list as it is.
    pub fn build<'a>(ty: DataType, values: impl IntoIterator<Item = &'a Value>) -> Option<InSet> {
        let mut keys = match ty {
            DataType::Bool
            | DataType::Int32
            | DataType::Int64
            | DataType::Date
            | DataType::Timestamp
            | DataType::Interval => Keys::Int(HashSet::default()),
            DataType::Int128 => Keys::Wide(HashSet::default()),
            DataType::Float32 | DataType::Float64 => Keys::Float(HashSet::default()),
            DataType::Varchar | DataType::Symbol => Keys::Text(HashSet::default()),
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
            keys.insert(v);
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

    /// Whether float `x` is in (never NaN).
    #[inline]
    pub fn has_float(&self, x: f64) -> bool {
        match (&self.0.keys, float_key(x)) {
            (Keys::Float(s), Some(k)) => s.contains(&k),
            _ => false,
        }
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
        set.into_iter().flatten().map(|s| &**s)
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
    /// Add `v`, already checked to be of the set's type.
    fn insert(&mut self, v: &Value) {
        match (self, v) {
            (Keys::Int(s), &Value::Bool(b)) => _ = s.insert(i64::from(b)),
            (Keys::Int(s), &(Value::Int32(k) | Value::Date(k))) => _ = s.insert(i64::from(k)),
            (Keys::Int(s), &(Value::Int64(k) | Value::Timestamp(k) | Value::Interval(k))) => _ = s.insert(k),
            (Keys::Wide(s), &Value::Int128(k)) => _ = s.insert(k),
            (Keys::Float(s), &Value::Float32(x)) => _ = float_key(f64::from(x)).map(|k| s.insert(k)),
            (Keys::Float(s), &Value::Float64(x)) => _ = float_key(x).map(|k| s.insert(k)),
            (Keys::Text(s), Value::Str(t)) => _ = s.insert(t.as_str().into()),
            (_, v) => debug_assert!(false, "{v:?} is not of the set's type"),
        }
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
        assert!(!s.has_float(f64::NAN) && !s.has_float(2.0));
        assert_eq!(s.len(), 2);
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
    fn crosses_the_wire() {
        let values: Vec<Value> = (0..100).map(Value::Timestamp).chain([Value::Null]).collect();
        let s = InSet::build(DataType::Timestamp, &values).expect("set");
        let bytes = postcard::to_allocvec(&s).expect("encode");
        let back: InSet = postcard::from_bytes(&bytes).expect("decode");
        assert_eq!(back, s);
        assert!(back.has_null() && back.has_int(99) && !back.has_int(100));
    }
}
