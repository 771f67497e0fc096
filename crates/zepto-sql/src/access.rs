//! Which tables a session may touch, and which of their rows: the per-key table grants and
//! tenant scope of the server.
//!
//! **Grants.** The engine checks every table a statement names (FROM, JOIN, INSERT target,
//! DDL) against them; CTE names are not tables and are not checked.
//!
//! **Tenant scope.** A session whose access has a tenant ([`TableAccess::with_tenant`]) sees
//! every table that has a column named [`TENANT_COLUMN`] (`tenant_id`, ASCII case-insensitive)
//! as if it held only the rows where `tenant_id = '<tenant>'` (a non-string `tenant_id` is
//! compared as `CAST(tenant_id AS VARCHAR)`). Tables without such a column are unaffected
//! (the grants still apply). Why a column and not a list of tables: the agent-memory tables
//! (`ai_memories`, `ai_cache`) and any table made like them carry their tenant in every row,
//! and a scope that follows the column cannot be forgotten when a table is added.
//!
//! How each door honours it:
//! - Reads: the binder puts the filter `tenant_id = '<tenant>'` directly over every scan of
//!   such a table (`plan::binder::tenant`), so every way a table is read — FROM, every JOIN,
//!   subqueries, CTEs, INSERT ... SELECT, COPY (query) TO, EXPLAIN — goes through it, and the
//!   optimizer pushes it into the scan like a WHERE (it selects partitions when `tenant_id` is
//!   the partition key). It is applied before any other predicate is evaluated, so a user's
//!   expression never sees another tenant's row (not even to fail on it).
//! - DELETE and UPDATE choose only the tenant's rows; an UPDATE may not SET `tenant_id`.
//! - INSERT (VALUES or a query) and CREATE TABLE AS store nothing unless every row's
//!   `tenant_id` is the tenant.
//! - DROP TABLE, ALTER TABLE, COPY ... FROM, CREATE INDEX and DROP INDEX of such a table are
//!   refused, as is ALTER TABLE ADD COLUMN `tenant_id` (it would make a table scoped), and
//!   EXPLAIN ANALYZE (its per-node row counts include the rows the scope filters out).
//!
//! Every refusal is `PERMISSION_DENIED`.

use crate::error::{Pos, Result, SqlError};
use std::collections::HashSet;
use std::sync::Arc;
use zepto_storage::Schema;

/// The column that carries a row's tenant (matched ignoring ASCII case).
pub const TENANT_COLUMN: &str = "tenant_id";

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
    /// The session's transaction, whose held rows its reads see.
    pub txn: Option<Arc<crate::txn::Txn>>,
    /// How the session names unaliased select-list entries (a query planned again names its
    /// columns as the first plan did).
    pub names: crate::column_names::ColumnNames,
}

/// The tables a session may touch (a server key's grants: every table, or a set of names
/// matched ignoring ASCII case), and the tenant whose rows it sees (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableAccess {
    /// Lower-cased names; `None` means every table.
    allowed: Option<Arc<HashSet<String>>>,
    /// The tenant whose rows the session sees in tables with a `tenant_id` column.
    tenant: Option<Arc<str>>,
}

impl TableAccess {
    /// Every table (no grants), every row.
    pub fn all() -> TableAccess {
        TableAccess { allowed: None, tenant: None }
    }

    /// Only the tables in `names` (ASCII case-insensitive).
    pub fn only<I: IntoIterator<Item = S>, S: AsRef<str>>(names: I) -> TableAccess {
        let set = names.into_iter().map(|n| n.as_ref().to_ascii_lowercase()).collect();
        TableAccess { allowed: Some(Arc::new(set)), tenant: None }
    }

    /// The same grants, scoped to `tenant`'s rows (see the module docs). The caller checks the
    /// name (the server's keys file takes 1 to 128 bytes, no control characters); the engine
    /// compares it byte for byte.
    pub fn with_tenant(self, tenant: &str) -> TableAccess {
        TableAccess { tenant: Some(Arc::from(tenant)), ..self }
    }

    /// The tenant whose rows the session sees, if it is scoped.
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// True when every table is allowed (no grants; a tenant scope may still apply).
    pub fn is_all(&self) -> bool {
        self.allowed.is_none()
    }

    /// True when every table and every row is allowed: no grants and no tenant.
    pub fn is_unrestricted(&self) -> bool {
        self.allowed.is_none() && self.tenant.is_none()
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

    /// When the session is scoped to a tenant: the tenant and the position of the `tenant_id`
    /// column of a table with `schema`, if it has one. `None` when the table is not scoped
    /// for this session.
    pub fn scope_of<'a>(&'a self, schema: &Schema) -> Option<(&'a str, usize)> {
        let tenant = self.tenant()?;
        Some((tenant, tenant_column(schema)?))
    }

    /// `Ok` unless the session is scoped to a tenant and `schema` (table `table`) has a
    /// `tenant_id` column: then `PERMISSION_DENIED` saying `what` is not allowed.
    pub fn refuse_scoped(&self, table: &str, schema: &Schema, what: &str) -> Result<()> {
        match self.scope_of(schema) {
            None => Ok(()),
            Some((tenant, _)) => Err(SqlError::PermissionDenied(format!(
                "{what} is not allowed on table '{table}' for a session scoped to tenant '{tenant}' (the table has a {TENANT_COLUMN} column)"
            ))),
        }
    }
}

/// The position of the `tenant_id` column in `schema` (ASCII case-insensitive), if any.
pub fn tenant_column(schema: &Schema) -> Option<usize> {
    schema.columns.iter().position(|c| c.name.eq_ignore_ascii_case(TENANT_COLUMN))
}

/// A session scoped to a tenant reads a view only if the view keeps tenants apart: its base
/// table has no `tenant_id`, or the view's `tenant_id` is the table's, a group key passed
/// through (then the scope filters its rows like a table's; a column merely named so, or one
/// a window mixes, is not). Otherwise the view's aggregates mix every tenant's rows.
pub(crate) fn check_scoped_read(
    catalog: &zepto_storage::Catalog,
    access: &TableAccess,
    name: &str,
    view: &Schema,
) -> Result<()> {
    let Some(tenant) = access.tenant() else { return Ok(()) };
    if !catalog.is_view(name) {
        return Ok(());
    }
    if tenant_column(view).is_some() && catalog.view_keeps_tenants_apart(name) {
        return Ok(());
    }
    let Some(def) = catalog.view_defs().into_iter().find(|d| d.name().eq_ignore_ascii_case(name)) else {
        return Ok(());
    };
    let scoped_base = catalog.snapshot(def.base()).is_ok_and(|t| tenant_column(t.schema()).is_some());
    match scoped_base {
        true => Err(SqlError::PermissionDenied(format!(
            "materialized view '{name}' aggregates every tenant's rows of '{}': a session scoped to tenant \
             '{tenant}' cannot read it (a view grouped by tenant_id can be read)",
            def.base()
        ))),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::{ColumnDef, DataType};

    fn schema(names: &[&str]) -> Schema {
        Schema {
            columns: names.iter().map(|n| ColumnDef { name: n.to_string(), data_type: DataType::Symbol }).collect(),
        }
    }

    #[test]
    fn a_tenant_scopes_tables_with_a_tenant_id_column_only() {
        let a = TableAccess::all().with_tenant("acme");
        assert_eq!(a.tenant(), Some("acme"));
        assert!(a.is_all() && !a.is_unrestricted());
        assert!(TableAccess::all().is_unrestricted());
        assert!(!TableAccess::only(["t"]).is_unrestricted());
        assert_eq!(a.scope_of(&schema(&["ts", "Tenant_ID"])), Some(("acme", 1)));
        assert_eq!(a.scope_of(&schema(&["ts", "tenant"])), None);
        assert_eq!(TableAccess::all().scope_of(&schema(&["tenant_id"])), None);
        let err = a.refuse_scoped("m", &schema(&["tenant_id"]), "DROP TABLE").expect_err("refused");
        assert!(matches!(err, SqlError::PermissionDenied(_)), "{err}");
        assert!(a.refuse_scoped("t", &schema(&["x"]), "DROP TABLE").is_ok());
        // Grants and scope combine.
        let g = TableAccess::only(["T"]).with_tenant("b");
        assert!(g.allows("t") && !g.allows("u") && !g.is_all());
    }
}
