//! Changes to a table other than appends: rows deleted or updated by selection, `DEDUP UPSERT
//! KEYS`, secondary indexes and added columns.

use super::{new_lineage, ColumnDef, Table};
use crate::column::{Column, ColumnData};
use crate::error::StorageError;
use crate::index::IndexDef;
use crate::types::DataType;
use std::sync::Arc;

impl Table {
    /// Check a row selection: known partition slots, each listed once, positions ascending and
    /// inside the partition. Returns the number of rows selected.
    pub fn check_selection(&self, sel: &[(u32, Vec<u32>)]) -> Result<usize, StorageError> {
        let mut seen = vec![false; self.parts.len()];
        let mut n = 0;
        for (slot, rows) in sel {
            let p = self
                .parts
                .get(*slot as usize)
                .ok_or_else(|| StorageError::Invalid(format!("table '{}' has no partition slot {slot}", self.name)))?;
            if std::mem::replace(&mut seen[*slot as usize], true) {
                return Err(StorageError::Invalid(format!("partition slot {slot} is selected twice")));
            }
            let ascending = rows.windows(2).all(|w| w[0] < w[1]);
            if !ascending || rows.last().is_some_and(|&r| r as usize >= p.len()) {
                return Err(StorageError::Invalid(format!("bad row positions for partition slot {slot}")));
            }
            n += rows.len();
        }
        Ok(n)
    }

    /// Remove the selected rows (see [`Table::check_selection`]). Partitions left empty stay,
    /// so slots keep their meaning. Returns the rows removed.
    pub fn delete_rows(&mut self, sel: &[(u32, Vec<u32>)]) -> Result<usize, StorageError> {
        let n = self.check_selection(sel)?;
        let had_pack = self.has_pack();
        for (slot, rows) in sel {
            if rows.is_empty() {
                continue;
            }
            self.parts.make_mut(*slot as usize).remove_rows(rows);
        }
        self.rows -= n;
        self.mutations += 1;
        self.repack_after_removal(had_pack, n);
        Ok(n)
    }

    /// Replace values in place: `values[k]` holds the new values of column `columns[k]` for the
    /// selected rows, in selection order. The partition key and the designated timestamp
    /// cannot be set this way (their changes move rows). Checked whole before anything changes.
    pub fn update_rows(
        &mut self,
        sel: &[(u32, Vec<u32>)],
        columns: &[usize],
        values: Vec<Column>,
    ) -> Result<usize, StorageError> {
        let n = self.check_selection(sel)?;
        if columns.len() != values.len() {
            return Err(StorageError::Invalid("UPDATE: one value column per column set".into()));
        }
        for (k, (&c, v)) in columns.iter().zip(&values).enumerate() {
            let def = self
                .schema
                .columns
                .get(c)
                .ok_or_else(|| StorageError::Invalid(format!("table '{}' has no column {c}", self.name)))?;
            if columns[..k].contains(&c) || Some(c) == self.key_col || Some(c) == self.ts_col {
                return Err(StorageError::Invalid(format!("column '{}' cannot be updated in place", def.name)));
            }
            let dt = v.data_type();
            let ok = dt == def.data_type || dt == DataType::Null || (def.data_type.is_string() && dt.is_string());
            if v.len() != n || !ok {
                return Err(StorageError::Invalid(format!("new values for column '{}' do not fit it", def.name)));
            }
        }
        // The values as the table stores them (symbols in the table dictionary).
        let mut full: Vec<Column> = self.schema.columns.iter().map(|d| Column::nulls(d.data_type, 0)).collect();
        for (&c, v) in columns.iter().zip(values) {
            full[c] = v;
        }
        let full = self.normalize(full);
        let rewrites_vectors = columns.iter().any(|&c| matches!(self.schema.columns[c].data_type, DataType::Vector(_)));
        let mut offset = 0usize;
        for (slot, rows) in sel {
            if rows.is_empty() {
                continue;
            }
            let p = self.parts.make_mut(*slot as usize);
            let len = p.len();
            let cols = p.own_mut();
            // Old rows keep their index; row rows[j] takes value len + j of the concatenation.
            let mut perm: Vec<u32> = (0..len as u32).collect();
            for (j, &r) in rows.iter().enumerate() {
                perm[r as usize] = (len + j) as u32;
            }
            for &c in columns {
                let new = full[c].slice(offset, rows.len());
                let merged = Column::concat(&[&cols[c], &new]).take(&perm);
                cols[c] = Arc::new(merged);
            }
            // Rows stay in place: only an index over a rewritten vector column no longer
            // matches it (an UPDATE of other columns, such as an access count, keeps graphs).
            if rewrites_vectors {
                p.lineage = new_lineage();
            }
            offset += rows.len();
        }
        self.mutations += 1;
        Ok(n)
    }

    /// `DEDUP UPSERT KEYS` as schema positions, ascending; empty when appends keep every row.
    pub fn dedup_keys(&self) -> &[usize] {
        &self.dedup
    }

    /// The schema positions of dedup key columns `keys` (empty: none), checked: known
    /// columns, each once, of comparable types, holding the designated timestamp and the
    /// partition key (a row then collides only inside its own partition and timestamp).
    pub fn check_dedup(&self, keys: &[String]) -> Result<Vec<usize>, StorageError> {
        let bad = |m: String| StorageError::Invalid(format!("DEDUP UPSERT KEYS on table '{}': {m}", self.name));
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            let i = self
                .schema
                .index_of(k)
                .ok_or_else(|| StorageError::ColumnNotFound { table: self.name.clone(), column: k.clone() })?;
            if out.contains(&i) {
                return Err(bad(format!("column '{k}' is named twice")));
            }
            if matches!(self.schema.columns[i].data_type, DataType::Vector(_)) {
                return Err(bad(format!("column '{k}' is a vector, which cannot be a key")));
            }
            out.push(i);
        }
        if out.is_empty() {
            return Ok(out);
        }
        let name = |i: usize| self.schema.columns[i].name.clone();
        match self.ts_col {
            None => return Err(bad("the table has no designated timestamp (name one with TIMESTAMP(col))".into())),
            Some(t) if !out.contains(&t) => {
                return Err(bad(format!("the keys must include the designated timestamp '{}'", name(t))))
            }
            Some(_) => {}
        }
        if let Some(k) = self.key_col.filter(|k| !out.contains(k)) {
            return Err(bad(format!(
                "the keys must include the partition key '{}' (rows are deduplicated within their partition)",
                name(k)
            )));
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Set (with `[]` clear) the dedup keys, checked as [`Table::check_dedup`]. Rows already
    /// stored stay as they are; later appends replace rows with equal keys.
    pub fn set_dedup(&mut self, keys: &[String]) -> Result<(), StorageError> {
        self.dedup = self.check_dedup(keys)?;
        Ok(())
    }

    /// Whether [`Table::add_column`] would accept `def`.
    pub fn check_new_column(&self, def: &ColumnDef) -> Result<(), StorageError> {
        if self.schema.index_of(&def.name).is_some() {
            return Err(StorageError::ColumnExists(def.name.clone()));
        }
        if !def.data_type.is_storable() {
            return Err(StorageError::Invalid(format!("column '{}' cannot have type {}", def.name, def.data_type)));
        }
        Ok(())
    }

    /// The table's secondary indexes.
    pub fn indexes(&self) -> &[IndexDef] {
        &self.indexes
    }

    /// Whether [`Table::add_index`] would accept `def`: its column exists and no index of this
    /// table has its name (the catalog checks the other tables).
    pub fn check_new_index(&self, def: &IndexDef) -> Result<(), StorageError> {
        if self.schema.index_of(def.column()).is_none() {
            return Err(StorageError::ColumnNotFound { table: self.name.clone(), column: def.column().to_string() });
        }
        if self.indexes.iter().any(|i| i.name().eq_ignore_ascii_case(def.name())) {
            return Err(StorageError::Invalid(format!("index '{}' already exists", def.name())));
        }
        Ok(())
    }

    /// Record an index (checked as [`Table::check_new_index`]). Rows are untouched: the index's
    /// structure is built by the engine from them.
    pub fn add_index(&mut self, def: IndexDef) -> Result<(), StorageError> {
        self.check_new_index(&def)?;
        self.indexes.push(def);
        Ok(())
    }

    /// Forget index `name`; false if the table has none of that name.
    pub fn drop_index(&mut self, name: &str) -> bool {
        let before = self.indexes.len();
        self.indexes.retain(|i| !i.name().eq_ignore_ascii_case(name));
        self.indexes.len() != before
    }

    /// Add a column at the end of the schema; existing rows read NULL. May make it the partition
    /// key or designated timestamp of a table that has none yet.
    pub fn add_column(&mut self, def: ColumnDef) -> Result<(), StorageError> {
        self.check_new_column(&def)?;
        self.fold();
        let dt = def.data_type;
        let dict = self.dict.clone();
        for p in self.parts.all_mut() {
            let p = Arc::make_mut(p);
            let mut c = Column::nulls(dt, p.len());
            if let ColumnData::Symbol { dict: d, .. } = c.data_mut() {
                *d = dict.clone();
            }
            p.own_mut().push(Arc::new(c));
        }
        self.schema.columns.push(def);
        self.mutations += 1;
        if self.key_col.is_none() && dt == DataType::Symbol && self.rows == 0 {
            self.key_col = Some(self.schema.len() - 1);
        }
        if self.ts_col.is_none() && dt == DataType::Timestamp {
            // Old rows hold NULL timestamps: order by it is trivially kept (all equal so far).
            self.ts_col = Some(self.schema.len() - 1);
        }
        Ok(())
    }
}
