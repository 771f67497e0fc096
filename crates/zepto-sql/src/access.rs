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
    pub catalog: Arc<zepto_storage::Catalog>,
    pub access: TableAccess,
    /// The statement's time, nanoseconds since the epoch.
    pub now: i64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableAccess {
    /// Lower-cased names; `None` means every table.
    allowed: Option<Arc<HashSet<String>>>,
}

impl TableAccess {
    pub fn all() -> TableAccess {
        TableAccess { allowed: None }
    }

    pub fn only<I: IntoIterator<Item = S>, S: AsRef<str>>(names: I) -> TableAccess {
        let set = names.into_iter().map(|n| n.as_ref().to_ascii_lowercase()).collect();
        TableAccess { allowed: Some(Arc::new(set)) }
    }

    pub fn is_all(&self) -> bool {
        self.allowed.is_none()
    }

    pub fn allows(&self, table: &str) -> bool {
        match &self.allowed {
            None => true,
            Some(set) => set.contains(&table.to_ascii_lowercase()),
        }
    }

    pub fn check(&self, table: &str, pos: Option<Pos>) -> Result<()> {
        if self.allows(table) {
            return Ok(());
        }
        let at = pos.map(|p| format!(" at line {}, column {}", p.line, p.column)).unwrap_or_default();
        Err(SqlError::PermissionDenied(format!("no grant for table '{table}'{at}")))
    }
}
