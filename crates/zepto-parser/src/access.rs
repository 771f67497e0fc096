//! What a statement asks of its caller ([`Access`], which the server's roles map onto) and the
//! table it changes: read off the statement's kind before anything is bound or run, so a door
//! can refuse a statement its caller may not run without planning it.

use crate::ast::{CopyEnd, Statement};
use crate::error::Pos;

/// What a statement needs: the roles of the server map onto these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// SELECT, EXPLAIN, SHOW TABLES, DESCRIBE, COPY ... TO STDOUT.
    Read,
    /// INSERT, COPY ... FROM STDIN, UPDATE, DELETE, CREATE TABLE (AS), CREATE INDEX, ALTER
    /// TABLE ADD COLUMN, CREATE and REFRESH MATERIALIZED VIEW.
    Write,
    /// DROP TABLE, DROP INDEX, DROP MATERIALIZED VIEW, COPY of a file (which reads or writes
    /// files on the server) and CHECKPOINT.
    Admin,
}

impl Statement {
    /// What the statement needs of the caller's role.
    pub fn access(&self) -> Access {
        match self {
            Statement::Query(_)
            | Statement::Explain { .. }
            | Statement::ShowTables
            | Statement::Describe { .. }
            | Statement::Set { .. }
            | Statement::CopyTo { target: CopyEnd::Client, .. } => Access::Read,
            Statement::Insert { .. }
            | Statement::CopyFrom { source: CopyEnd::Client, .. }
            | Statement::Delete { .. }
            | Statement::Update { .. }
            | Statement::CreateTable(_)
            | Statement::CreateTableAs { .. }
            | Statement::CreateMaterializedView { .. }
            | Statement::RefreshMaterializedView { .. }
            | Statement::CreateIndex { .. }
            | Statement::AlterAddColumn { .. } => Access::Write,
            Statement::DropTable { .. }
            | Statement::DropMaterializedView { .. }
            | Statement::DropIndex { .. }
            | Statement::CopyFrom { .. }
            | Statement::CopyTo { .. }
            | Statement::AlterSetTtl { .. }
            | Statement::AlterDedup { .. }
            | Statement::AlterTier { .. }
            | Statement::Checkpoint
            | Statement::Backup { .. } => Access::Admin,
        }
    }

    /// The table a writing statement changes (a materialized view counts as one), with its
    /// position if known. The tables a statement's query reads (CREATE TABLE AS, CREATE
    /// MATERIALIZED VIEW) are checked when it is bound, as any query's are.
    pub fn target(&self) -> Option<(&str, Option<Pos>)> {
        match self {
            Statement::CreateTable(ct) => Some((&ct.name, None)),
            Statement::CreateTableAs { name, .. } => Some((name, None)),
            Statement::DropTable { name, pos, .. }
            | Statement::CreateMaterializedView { name, pos, .. }
            | Statement::RefreshMaterializedView { name, pos }
            | Statement::DropMaterializedView { name, pos, .. } => Some((name, Some(*pos))),
            Statement::AlterAddColumn { table, pos, .. }
            | Statement::CreateIndex { table, pos, .. }
            | Statement::AlterSetTtl { table, pos, .. }
            | Statement::AlterDedup { table, pos, .. }
            | Statement::AlterTier { table, pos, .. }
            | Statement::Insert { table, pos, .. }
            | Statement::Delete { table, pos, .. }
            | Statement::Update { table, pos, .. }
            | Statement::CopyFrom { table, pos, .. }
            | Statement::Describe { table, pos } => Some((table, Some(*pos))),
            _ => None,
        }
    }
}
