//! Which tables a session may touch: the per-key table grants of the server. The engine
//! checks every table a statement names (FROM, JOIN, INSERT target, DDL) against it; CTE
//! names are not tables and are not checked.

use crate::error::{Pos, Result, SqlError};
use std::collections::HashSet;
use std::sync::Arc;

/// A catalog as one session sees it, at one statement's time (kept by plans that bind again
/// at run time: a correlated subquery planned again reads the same `now()` as its statement).
#[derive(Debug, Clone)]
pub struct CatalogView {
    /// The database's tables.
    pub catalog: Arc<zepto_storage::Catalog>,
    /// The tables this session may touch.
    pub access: TableAccess,
    /// The statement's time, nanoseconds since the epoch.
    pub now: i64,
}

/// The tables a session may touch (a server key's grants): every table, or a set of names matched
/// ignoring ASCII case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableAccess {
    /// Lower-cased names; `None` means every table.
    allowed: Option<Arc<HashSet<String>>>,
}

impl TableAccess {
    /// Every table (no grants).
    pub fn all() -> TableAccess {
        TableAccess { allowed: None }
    }

    /// Only the tables in `names` (ASCII case-insensitive).
    pub fn only<I: IntoIterator<Item = S>, S: AsRef<str>>(names: I) -> TableAccess {
        let set = names.into_iter().map(|n| n.as_ref().to_ascii_lowercase()).collect();
        TableAccess { allowed: Some(Arc::new(set)) }
    }

    /// True when every table is allowed.
    pub fn is_all(&self) -> bool {
        self.allowed.is_none()
    }

    /// Whether `table` may be touched (ASCII case-insensitive).
    pub fn allows(&self, table: &str) -> bool {
        match &self.allowed {
            None => true,
            Some(set) => set.contains(&table.to_ascii_lowercase()),
        }
    }

    /// `Ok` if `table` may be touched; `PERMISSION_DENIED` (pointing at `pos`, if given) otherwise.
    pub fn check(&self, table: &str, pos: Option<Pos>) -> Result<()> {
        if self.allows(table) {
            return Ok(());
        }
        let at = pos.map(|p| format!(" at line {}, column {}", p.line, p.column)).unwrap_or_default();
        Err(SqlError::PermissionDenied(format!("no grant for table '{table}'{at}")))
    }
}
