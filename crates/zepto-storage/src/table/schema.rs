//! A table's columns and layout choices: what `CREATE TABLE` says, before any row exists.

use crate::types::DataType;

/// One column of a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    /// Column name as written in CREATE TABLE; unique in its table, ignoring ASCII case.
    pub name: String,
    /// The column's type (a storable one: never NULL or INTERVAL).
    pub data_type: DataType,
}

/// A table's columns, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// The columns; names unique ignoring ASCII case.
    pub columns: Vec<ColumnDef>,
}

/// The partition key a table over `columns` gets when none is chosen: its first SYMBOL
/// column. Whoever routes rows before the table exists (a cluster node producing to Kafka)
/// asks this, so that it agrees with [`Table::new`](super::Table::new).
pub fn default_partition_key(columns: &[ColumnDef]) -> Option<usize> {
    columns.iter().position(|c| c.data_type == DataType::Symbol)
}

impl Schema {
    /// Position of the column `name` (ASCII case-insensitive), or `None`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// True when there are no columns (a table always has at least one).
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }
}

/// Layout choices of a table; `None` fields are derived from the schema by [`Table::new`](super::Table::new).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableOptions {
    /// The partition key column (a SYMBOL column); `None` picks the first SYMBOL column, or
    /// with `dedup_keys` the first SYMBOL column among them (none: one partition).
    pub partition_key: Option<String>,
    /// The designated timestamp column (a TIMESTAMP column); `None` picks the first TIMESTAMP
    /// column.
    pub timestamp: Option<String>,
    /// `DEDUP UPSERT KEYS`: the columns whose values identify a row (empty: no deduplication).
    /// See [`Table::set_dedup`](super::Table::set_dedup).
    pub dedup_keys: Vec<String>,
    /// Every row in one partition, whatever the columns: for tables built whole and read once
    /// (a materialized view's rows at a read), where a partition per symbol would cost more to
    /// make than it saves a filter. `partition_key` must be `None`.
    pub one_partition: bool,
}
