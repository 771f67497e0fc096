//! Set-returning functions in the select list, as PostgreSQL runs them (its `ProjectSet`):
//! `unnest(a)`, `generate_subscripts(a, dim)` and `information_schema._pg_expandarray(a)`.
//! Each input row gives as many rows as its longest call; a shorter call's columns are NULL
//! past its end, and a row whose calls all give nothing gives no row. Drivers call them over
//! the catalogs' arrays (SQLAlchemy's index and key reflection, pgjdbc's `getPrimaryKeys`).
//!
//! A call's outputs follow the input's columns: one for `unnest` and `generate_subscripts`,
//! two (`x`, the item, and `n`, its subscript) for `_pg_expandarray`, whose composite result
//! a query reads as `(call).x` or, through an alias, `(t.alias).n`.

use crate::expr::BExpr;
use zepto_storage::DataType;

/// Which set-returning function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrfFunc {
    /// `unnest(a)`: the items.
    Unnest,
    /// `generate_subscripts(a, dim [, reverse])`: the subscripts 1..=n of dimension 1 (a
    /// higher dimension gives none), descending when `reverse`.
    Subscripts,
    /// `_pg_expandarray(a)`: `(x, n)`, each item and its subscript.
    ExpandArray,
}

impl SrfFunc {
    /// The function a call's (unqualified, any case) name is, if a set-returning one.
    pub fn by_name(name: &str) -> Option<SrfFunc> {
        let lower = name.to_ascii_lowercase();
        let bare = lower.strip_prefix("information_schema.").unwrap_or(&lower);
        match bare {
            "unnest" => Some(SrfFunc::Unnest),
            "generate_subscripts" => Some(SrfFunc::Subscripts),
            "_pg_expandarray" => Some(SrfFunc::ExpandArray),
            _ => None,
        }
    }

    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            SrfFunc::Unnest => "unnest",
            SrfFunc::Subscripts => "generate_subscripts",
            SrfFunc::ExpandArray => "_pg_expandarray",
        }
    }

    /// How many arguments it takes (least, most).
    pub fn arity(self) -> (usize, usize) {
        match self {
            SrfFunc::Unnest | SrfFunc::ExpandArray => (1, 1),
            SrfFunc::Subscripts => (2, 3),
        }
    }

    /// The names of a composite result's fields (empty for a plain value).
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            SrfFunc::ExpandArray => &["x", "n"],
            SrfFunc::Unnest | SrfFunc::Subscripts => &[],
        }
    }
}

/// A bound set-returning call.
#[derive(Debug, Clone, PartialEq)]
pub struct SrfCall {
    /// The function.
    pub func: SrfFunc,
    /// Its arguments over the node's input; the first is the array.
    pub args: Vec<BExpr>,
    /// The array's item type.
    pub item: DataType,
}

impl SrfCall {
    /// The types of the call's output columns.
    pub fn output_types(&self) -> Vec<DataType> {
        match self.func {
            SrfFunc::Unnest => vec![self.item],
            SrfFunc::Subscripts => vec![DataType::Int32],
            SrfFunc::ExpandArray => vec![self.item, DataType::Int32],
        }
    }

    /// What EXPLAIN prints for it.
    pub fn describe(&self) -> String {
        format!("{}({})", self.func.name(), self.item)
    }
}
