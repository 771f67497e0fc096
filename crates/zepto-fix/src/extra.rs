//! Tags added to the mapping as columns (`--fix-config` "tags"): a desk's feed carries fields
//! the default mapping does not read (QuoteCondition 276, TradingSessionID 336, Account 1,
//! ...). Each named tag becomes a column after the mapping's own, of a chosen type, NULL when
//! the message does not carry it.
//!
//! In market data a tag is read from the MDEntry first, else from the message before the
//! group; in an execution report, from the message. A value that does not parse as the
//! column's type makes the whole message a Reject, as a mapped tag's would: nothing of it is
//! stored. Values are read into a scratch slice per row, so an entry costs no allocation.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::parse::{parse_f64, Field, FixError};
use crate::time::parse_timestamp;
use zepto_storage::{ColumnBuilder, DataType, StorageError, Value};

/// The mapping's tables a tag can be added to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Bids and offers (`quotes`).
    Quotes,
    /// Trades (`trades`).
    Trades,
    /// Execution reports (`executions`).
    Executions,
}

impl Role {
    /// The role a `--fix-config` key names (`quotes`, `trades`, `executions`).
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "quotes" => Some(Role::Quotes),
            "trades" => Some(Role::Trades),
            "executions" => Some(Role::Executions),
            _ => None,
        }
    }
}

/// The column types a tag can be stored as.
pub const TYPES: [DataType; 6] =
    [DataType::Symbol, DataType::Varchar, DataType::Float64, DataType::Int64, DataType::Timestamp, DataType::Bool];

/// One tag added as a column of one of the mapping's tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraTag {
    /// The table it goes to.
    pub role: Role,
    /// The FIX tag number.
    pub tag: u32,
    /// The column's name.
    pub column: String,
    /// The column's type (one of [`TYPES`]): text as SYMBOL or VARCHAR, a number as DOUBLE
    /// or BIGINT, a UTCTimestamp as TIMESTAMP, `Y`/`N` as BOOLEAN.
    pub data_type: DataType,
}

/// A tag's value in one row, checked: text as the byte span of the value in its message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Extra {
    Null,
    Text(usize, usize),
    F64(f64),
    I64(i64),
    Ts(i64),
    Bool(bool),
}

/// The tag numbers and types of one role's added columns, in column order.
pub(crate) type Slots = Vec<(u32, DataType)>;

/// The added columns of `role`, in order.
pub(crate) fn slots(tags: &[ExtraTag], role: Role) -> Slots {
    tags.iter().filter(|t| t.role == role).map(|t| (t.tag, t.data_type)).collect()
}

/// Read field `f` into every slot of `slots` with its tag (`vals` is parallel to `slots`);
/// `raw` is the message `f` borrows from.
pub(crate) fn read(raw: &[u8], f: &Field<'_>, slots: &[(u32, DataType)], vals: &mut [Extra]) -> Result<(), FixError> {
    for ((tag, dt), v) in slots.iter().zip(vals.iter_mut()) {
        if *tag == f.tag {
            *v = value(raw, f, *dt)?;
        }
    }
    Ok(())
}

fn value(raw: &[u8], f: &Field<'_>, dt: DataType) -> Result<Extra, FixError> {
    Ok(match dt {
        DataType::Float64 => Extra::F64(parse_f64(f.value).ok_or(f.bad("not a number"))?),
        DataType::Int64 => {
            let n = std::str::from_utf8(f.value).ok().and_then(|s| s.parse().ok());
            Extra::I64(n.ok_or(f.bad("not an integer"))?)
        }
        DataType::Timestamp => Extra::Ts(parse_timestamp(f.value).ok_or(f.bad("not a UTCTimestamp"))?),
        DataType::Bool => match f.value {
            b"Y" => Extra::Bool(true),
            b"N" => Extra::Bool(false),
            _ => return Err(f.bad("not a Boolean (Y or N)")),
        },
        _ => {
            let s = f.as_str()?;
            let start = (s.as_ptr() as usize).saturating_sub(raw.as_ptr() as usize);
            Extra::Text(start, start + s.len())
        }
    })
}

/// Push one row's added values onto their builders; text spans are of `raw`.
pub(crate) fn push(raw: &[u8], builders: &mut [ColumnBuilder], vals: &[Extra]) -> Result<(), StorageError> {
    for (b, v) in builders.iter_mut().zip(vals) {
        match *v {
            Extra::Null => b.push_null(),
            Extra::Text(s, e) => match raw.get(s..e).and_then(|t| std::str::from_utf8(t).ok()) {
                Some(t) => b.push_str(t)?,
                None => b.push_null(),
            },
            Extra::F64(x) => b.push_value(&Value::Float64(x))?,
            Extra::I64(x) => b.push_value(&Value::Int64(x))?,
            Extra::Ts(x) => b.push_value(&Value::Timestamp(x))?,
            Extra::Bool(x) => b.push_value(&Value::Bool(x))?,
        }
    }
    Ok(())
}
