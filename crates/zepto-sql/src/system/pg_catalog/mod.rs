//! `pg_catalog`: PostgreSQL's own catalog tables, with the object ids that join them
//! (`pg_class.oid = pg_attribute.attrelid`, `pg_attribute.atttypid = pg_type.oid`,
//! `pg_class.relnamespace = pg_namespace.oid`), as psql, pgjdbc, SQLAlchemy and BI tools read
//! them. What ZeptoDB has no such thing as (constraints, defaults, comments, rules, stored
//! functions, extensions, views) is a table with PostgreSQL's columns and no rows.
//!
//! Object ids: a user table's is [`table_oid`] of its name (stable across restarts); a system
//! table's is [`SYSTEM_OID_BASE`] plus its place in the list; the schemas and the one role and
//! database have PostgreSQL's own (`pg_catalog` 11, `public` 2200, the owner 10).
//!
//! Here: the object ids and the indexes the session may see; the tables themselves are
//! declared in `tables.rs`, their rows made in `rows.rs`, and the server settings
//! (`pg_settings`, `current_setting`) kept in `settings.rs`.

mod rows;
mod settings;
mod tables;

pub use settings::setting;
pub(super) use tables::TABLES;

use super::{all_tables, user_tables, CatalogContext};
use zepto_parser::ast::SystemSchema;
use zepto_storage::DataType;

/// The role that owns everything (PostgreSQL's bootstrap superuser's id).
pub const OWNER_OID: i32 = 10;

/// The database's id.
pub const DATABASE_OID: i32 = 5;

/// System tables' ids start here (below the user tables', above PostgreSQL's fixed ones).
pub const SYSTEM_OID_BASE: i32 = 12_000;

/// The object id of user table `name` (a hash of its name, from 16384 up: the same on every
/// node and after every restart).
pub fn table_oid(name: &str) -> i32 {
    let h = name.to_ascii_lowercase().bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    16_384 + (h % 1_000_000_000) as i32
}

/// The access method of ZeptoDB's vector indexes (`pg_am.oid` of `hnsw`).
pub const HNSW_AM_OID: i32 = 9_900;

/// The object id of index `index` of table `table` (a hash, as a table's).
pub fn index_oid(table: &str, index: &str) -> i32 {
    table_oid(&format!("{table}\u{1f}{index}"))
}

/// The indexes the session may see: (table, index definition, the column's attribute
/// number from 1, its type).
pub(crate) fn visible_indexes(ctx: &CatalogContext) -> Vec<(String, zepto_storage::IndexDef, i32, DataType)> {
    let tables = user_tables(ctx);
    ctx.indexes()
        .into_iter()
        .filter_map(|(table, def)| {
            let (_, schema) = tables.iter().find(|(n, _)| n.eq_ignore_ascii_case(&table))?;
            let at = schema.columns.iter().position(|c| c.name.eq_ignore_ascii_case(def.column()))?;
            let num = i32::try_from(at + 1).ok()?;
            let dt = schema.columns[at].data_type;
            Some((table, def, num, dt))
        })
        .collect()
}

/// `CREATE INDEX` text of an index, as `pg_get_indexdef` gives it.
pub fn index_definition(table: &str, def: &zepto_storage::IndexDef) -> String {
    let mut s = format!("CREATE INDEX {} ON public.{table} USING {} ({})", def.name(), def.method(), def.column());
    if !def.options().is_empty() {
        let opts: Vec<String> = def.options().iter().map(|(k, v)| format!("{k}='{v}'")).collect();
        s.push_str(&format!(" WITH ({})", opts.join(", ")));
    }
    s
}

/// The id of schema `name`.
pub fn namespace_oid(name: &str) -> i32 {
    match name {
        "pg_catalog" => 11,
        "public" => 2200,
        _ => 13_000,
    }
}

/// The id of system table `name` in `schema`.
pub fn system_oid(schema: SystemSchema, name: &str) -> i32 {
    let at = all_tables().position(|t| t.schema == schema && t.name == name).unwrap_or(0);
    SYSTEM_OID_BASE + at as i32
}
