//! Table names with a schema, as BI tools and drivers write them: `t`, `public.t`,
//! `zeptodb.public.t`, each part bare or quoted (`"public"."t"`).
//!
//! Every table of ZeptoDB lives in the schema `public` of its one database ([`DATABASE`]);
//! `public.` (and `zeptodb.public.`) is therefore dropped here and the AST carries the bare
//! name, as before. The system catalogs are the schemas [`SystemSchema`] names: a query may
//! read them (FROM, JOIN: [`crate::ast::TableRef::Table`]'s `system`), a statement that changes a table
//! may not name them, and any other schema is an error at its position.

use super::ast::SystemSchema;
use super::Parser;
use crate::error::{Pos, Result, SqlError};

/// The name of ZeptoDB's one database (`current_database()`; the first part of a three-part
/// name must be it).
pub const DATABASE: &str = "zeptodb";

/// The schema every table lives in.
pub const PUBLIC: &str = "public";

impl Parser<'_> {
    /// A table name a query reads: `(None, name)` for a table of `public`, `(Some(schema),
    /// name)` for a system catalog (its name in lower case).
    pub(super) fn read_table_name(&mut self) -> Result<(Option<SystemSchema>, String)> {
        let pos = self.pos();
        let mut parts = vec![self.ident()?];
        while parts.len() < 3 && self.eat_op(".") {
            parts.push(self.any_ident()?);
        }
        let name = parts.pop().unwrap_or_default();
        let schema = parts.pop();
        if let Some(db) = parts.pop() {
            if !db.eq_ignore_ascii_case(DATABASE) {
                return Err(SqlError::Plan {
                    message: format!("database '{db}' does not exist: this one is '{DATABASE}'"),
                    pos: Some(pos),
                });
            }
        }
        match schema {
            None => Ok((None, name)),
            Some(s) if s.eq_ignore_ascii_case(PUBLIC) => Ok((None, name)),
            Some(s) => match SystemSchema::by_name(&s) {
                Some(sys) => Ok((Some(sys), name.to_ascii_lowercase())),
                None => Err(no_schema(&s, pos)),
            },
        }
    }

    /// A table name a statement changes or describes: only tables of `public` qualify.
    pub(super) fn table_name(&mut self) -> Result<String> {
        let pos = self.pos();
        let name = self.read_table_name()?;
        writable(name, pos)
    }
}

/// The name (read by [`Parser::read_table_name`] at `pos`) of a table a statement changes:
/// a system catalog, or a name that would read as one, is an error.
pub(super) fn writable((schema, name): (Option<SystemSchema>, String), pos: Pos) -> Result<String> {
    match schema {
        None if reserved(&name) => Err(SqlError::Plan {
            message: format!("'{name}': a table name may not start with a system schema's name and '.'"),
            pos: Some(pos),
        }),
        None => Ok(name),
        Some(sys) => Err(SqlError::PermissionDenied(format!(
            "{}.{name} (line {}, column {}) is a system catalog: it can only be read",
            sys.name(),
            pos.line,
            pos.column
        ))),
    }
}

/// Whether a one-part name (a quoted `"pg_catalog.x"`) would read as a system table's.
fn reserved(name: &str) -> bool {
    SystemSchema::ALL.iter().any(|s| {
        let n = s.name().len();
        name.get(..n).is_some_and(|p| p.eq_ignore_ascii_case(s.name()))
            && name.get(n..).is_some_and(|r| r.starts_with('.'))
    })
}

fn no_schema(schema: &str, pos: Pos) -> SqlError {
    SqlError::Plan {
        message: format!(
            "schema '{schema}' does not exist: tables are in '{PUBLIC}', the system catalogs in {}",
            SystemSchema::ALL.map(|s| format!("'{}'", s.name())).join(" and ")
        ),
        pos: Some(pos),
    }
}
