//! `bit_and(x)`, `bit_or(x)`, `bit_xor(x)` ([`BitOp`]): each group's non-NULL integers folded
//! bitwise, typed as the input (INTEGER or BIGINT, DuckDB's types); NULL for a group without
//! one. An INTEGER is folded sign-extended, which gives its own bits back. State: the fold so
//! far and whether the group had a value.

use super::kernels::{at, int_values, running_frames};
use super::{Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use crate::expr::functions::BitOp;
use zepto_storage::{Bitmap, Column, ColumnData, DataType};

pub struct BitFold {
    op: BitOp,
    ty: DataType,
    acc: Vec<i64>,
    seen: Vec<bool>,
}

impl BitFold {
    /// The fold `op`, answering type `ty`.
    pub fn new(op: BitOp, ty: DataType) -> BitFold {
        BitFold { op, ty, acc: Vec::new(), seen: Vec::new() }
    }

    fn grow(&mut self, ngroups: usize) {
        if self.acc.len() < ngroups {
            self.acc.resize(ngroups, 0);
            self.seen.resize(ngroups, false);
        }
    }

    fn fold(&mut self, g: usize, x: i64) {
        let a = &mut self.acc[g];
        *a = if self.seen[g] { self.op.apply(*a, x) } else { x };
        self.seen[g] = true;
    }
}

fn not_integer(c: &Column) -> SqlError {
    SqlError::Internal(format!("a bitwise fold of {}", c.data_type()))
}

impl Accumulator for BitFold {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let x = input.arg()?;
        let v = int_values(x).ok_or_else(|| not_integer(x))?;
        self.grow(ngroups);
        for (i, &g) in rows.ids().iter().enumerate() {
            if x.is_valid(i) {
                self.fold(g as usize, v[i]);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        let ids: Vec<u32> = (0..self.acc.len() as u32).collect();
        let s = self.state_of(&ids);
        (self.acc, self.seen) = (Vec::new(), Vec::new());
        s
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        Ok(vec![
            Column::from_data(ColumnData::Int64(at(&self.acc, ids).into())),
            Column::from_data(ColumnData::Bool(at(&self.seen, ids).into())),
        ])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let bad = || SqlError::Internal("bitwise fold state is (BIGINT, BOOLEAN)".into());
        let [acc, seen] = state else { return Err(bad()) };
        let (ColumnData::Int64(acc), ColumnData::Bool(seen)) = (acc.data(), seen.data()) else { return Err(bad()) };
        self.grow(ngroups);
        for (i, &g) in ids.iter().enumerate() {
            if seen[i] {
                self.fold(g as usize, acc[i]);
            }
        }
        Ok(())
    }

    /// Frames that share their start and only grow (a running frame) a value at a time; any
    /// other frame over its rows.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let x = input.arg()?;
        let v = int_values(x).ok_or_else(|| not_integer(x))?;
        let op = self.op;
        let add = |s: &mut Option<i64>, r: usize| {
            if x.is_valid(r) {
                *s = Some(s.map_or(v[r], |a| op.apply(a, v[r])));
            }
            Ok(())
        };
        let whole = |rows: std::ops::Range<usize>| {
            let mut s = None;
            for r in rows {
                add(&mut s, r)?;
            }
            Ok(s)
        };
        let folds = running_frames(fs, fe, || None, add, |&s| s, whole)?;
        let mut out = BitFold::new(self.op, self.ty);
        out.grow(folds.len());
        for (k, f) in folds.into_iter().enumerate() {
            if let Some(f) = f {
                out.fold(k, f);
            }
        }
        out.finish()
    }

    fn finish(&mut self) -> Result<Column> {
        let valid = Some(Bitmap::from_bools(std::mem::take(&mut self.seen)));
        let acc = std::mem::take(&mut self.acc);
        let data = match self.ty {
            // Sign-extended INTEGER bits folded stay within INTEGER.
            DataType::Int32 => ColumnData::Int32(acc.iter().map(|&a| a as i32).collect()),
            _ => ColumnData::Int64(acc.into()),
        };
        Ok(Column::new(data, valid))
    }
}
