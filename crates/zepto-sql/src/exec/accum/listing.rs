//! Aggregates that list a group's values: `string_agg(x, sep [ORDER BY k])` (the non-NULL
//! values as text joined by the separator; NULL for a group without one) and `array_agg(x
//! [ORDER BY k])` (every value, NULLs included, as PostgreSQL's array text `{a,"b c",NULL}`;
//! ZeptoDB has no array column type, and the catalogs' arrays are written the same way).
//!
//! The state is the rows, as for the holistic aggregates: partials do not merge, so the
//! planner keeps them on paths that see whole groups. Rows are read in the order of the
//! call's `ORDER BY` key when it has one (ties, and calls without one, in input order).

use super::{Accumulator, Input, Rows};
use crate::error::Result;
use crate::eval::cmp::value_cmp;
use crate::expr::functions::{AggFunc, AggOrder};
use std::cmp::Ordering;
use zepto_storage::{Column, ColumnData, StrVec};

pub struct Listing {
    func: AggFunc,
    /// The rows seen, part by part: value, separator (string_agg), order key.
    values: Vec<Column>,
    seps: Vec<Column>,
    keys: Vec<Column>,
    ids: Vec<u32>,
    ngroups: usize,
}

impl Listing {
    pub fn new(func: AggFunc) -> Listing {
        debug_assert!(func.ordered());
        Listing { func, values: Vec::new(), seps: Vec::new(), keys: Vec::new(), ids: Vec::new(), ngroups: 0 }
    }

    fn order(&self) -> AggOrder {
        match self.func {
            AggFunc::StringAgg(o) | AggFunc::ArrayAgg(o) => o,
            _ => AggOrder::default(),
        }
    }

    /// Each group's rows, in the order they are listed.
    fn grouped(&self, key: Option<&Column>) -> Vec<Vec<u32>> {
        let mut rows: Vec<u32> = (0..self.ids.len() as u32).collect();
        if let Some(k) = key {
            let cmp = value_cmp(k);
            let o = self.order();
            let by_key = |a: usize, b: usize| match (k.is_valid(a), k.is_valid(b)) {
                (true, true) if o.desc => cmp(b, a),
                (true, true) => cmp(a, b),
                (false, false) => Ordering::Equal,
                (true, false) if o.nulls_first => Ordering::Greater,
                (true, false) => Ordering::Less,
                (false, true) if o.nulls_first => Ordering::Less,
                (false, true) => Ordering::Greater,
            };
            rows.sort_by(|&a, &b| by_key(a as usize, b as usize));
        }
        let mut groups = vec![Vec::new(); self.ngroups];
        for r in rows {
            if let Some(g) = groups.get_mut(self.ids[r as usize] as usize) {
                g.push(r);
            }
        }
        groups
    }
}

fn concat(parts: &[Column]) -> Option<Column> {
    match parts {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(Column::concat(&many.iter().collect::<Vec<_>>())),
    }
}

impl Accumulator for Listing {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        self.values.push(input.arg()?.clone());
        if let Some(sep) = input.args.get(1) {
            self.seps.push((*sep).clone());
        }
        if let Some(k) = input.order {
            self.keys.push(k.clone());
        }
        self.ids.extend_from_slice(&rows.ids());
        self.ngroups = self.ngroups.max(ngroups);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        Err(super::no_partial_state(self.func))
    }

    fn state_of(&self, _: &[u32]) -> Result<Vec<Column>> {
        Err(super::no_partial_state(self.func))
    }

    fn merge(&mut self, _: &[&Column], _: &[u32], _: usize) -> Result<()> {
        Err(super::no_partial_state(self.func))
    }

    fn finish(&mut self) -> Result<Column> {
        let Some(values) = concat(&self.values) else {
            return Ok(Column::nulls(zepto_storage::DataType::Varchar, self.ngroups));
        };
        let key = concat(&self.keys);
        let seps = concat(&self.seps);
        let groups = self.grouped(key.as_ref());
        let array = matches!(self.func, AggFunc::ArrayAgg(_));
        let mut out = StrVec::with_capacity(groups.len(), groups.len() * 16);
        let mut valid = zepto_storage::Bitmap::new_set(groups.len());
        let mut buf = String::new();
        for (g, rows) in groups.iter().enumerate() {
            buf.clear();
            let any = if array {
                array_text(&mut buf, &values, rows)
            } else {
                joined(&mut buf, &values, seps.as_ref(), rows)
            };
            if !any {
                valid.set(g, false);
            }
            out.push(&buf);
        }
        Ok(Column::new(ColumnData::Varchar(out), Some(valid)))
    }
}

/// The non-NULL values of `rows` joined by their separators (each value after the first is
/// preceded by its own row's separator, as in PostgreSQL; `,` without one); whether any was.
fn joined(buf: &mut String, values: &Column, seps: Option<&Column>, rows: &[u32]) -> bool {
    let mut any = false;
    for &r in rows {
        let r = r as usize;
        if !values.is_valid(r) {
            continue;
        }
        if any {
            match seps {
                Some(s) => buf.push_str(s.str_at(r).unwrap_or("")),
                None => buf.push(','),
            }
        }
        push_text(buf, values, r);
        any = true;
    }
    any
}

/// `rows`' values as PostgreSQL's array text; whether the group had a row.
fn array_text(buf: &mut String, values: &Column, rows: &[u32]) -> bool {
    let mut item = String::new();
    buf.push('{');
    for (k, &r) in rows.iter().enumerate() {
        if k > 0 {
            buf.push(',');
        }
        let r = r as usize;
        if !values.is_valid(r) {
            crate::eval::array::push_item(buf, None);
            continue;
        }
        item.clear();
        push_text(&mut item, values, r);
        crate::eval::array::push_item(buf, Some(&item));
    }
    buf.push('}');
    !rows.is_empty()
}

/// Row `r`'s value as text (booleans as PostgreSQL writes them in arrays: t, f).
fn push_text(buf: &mut String, values: &Column, r: usize) {
    match values.str_at(r) {
        Some(s) => buf.push_str(s),
        None => match values.get(r) {
            zepto_storage::Value::Bool(b) => buf.push(if b { 't' } else { 'f' }),
            v => buf.push_str(&v.to_string()),
        },
    }
}
