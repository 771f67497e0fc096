//! How a session names unaliased select-list entries: by their text (`count(*)`, `sum(px)`, as
//! DuckDB names most columns), or as PostgreSQL does (`count`, `sum`, `?column?`), which the
//! PostgreSQL door asks for. The rule itself is the binder's (`plan::binder::names`); this is
//! the setting, a leaf that sessions and catalog views carry.

/// How a session names unaliased select-list entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColumnNames {
    /// By their text: `count(*)`, `sum(px)`, `(px + 1)`.
    #[default]
    Text,
    /// As PostgreSQL names them: `count`, `sum`, `?column?`.
    Postgres,
}
