//! The system catalogs: `information_schema` and `pg_catalog` tables, built from the engine's
//! catalog when a statement names one (`FROM information_schema.columns`), then planned,
//! filtered, joined and grouped like any table (EXPLAIN shows their scans). A session sees
//! only the tables its key may read. BI tools, drivers and `psql` find tables and columns
//! this way; every door reaches them through the same binder.
//!
//! Each table is data here (`TABLES`): its schema, its columns, and a function making its
//! rows. Types are named as PostgreSQL names them ([`pg_names`], which the PostgreSQL door's
//! `format_type` answers use too), since PostgreSQL's clients
//! are the ones that read these catalogs.

use crate::access::TableAccess;
use crate::error::{Pos, Result, SqlError};
use crate::expr::ArrayOf;
use std::sync::Arc;
use zepto_parser::ast::SystemSchema;
use zepto_parser::names::{DATABASE, PUBLIC};
use zepto_storage::{Catalog, Column, ColumnBuilder, ColumnDef, DataType, Schema, Table, TableOptions, Value};

/// The owner every schema and table reports.
pub(crate) const OWNER: &str = "zeptodb";

/// What the system catalogs and the catalog functions read: the catalog as a session sees
/// it, through its grants and its transaction (the tables its held `CREATE TABLE` and `DROP
/// TABLE` make and drop, as the transaction's own statements find them).
pub struct CatalogContext<'a> {
    /// The database's tables.
    pub catalog: &'a Catalog,
    /// The session's grants.
    pub access: &'a TableAccess,
    /// The session's transaction, if any.
    pub txn: Option<&'a crate::txn::Txn>,
}

impl CatalogContext<'_> {
    /// Table `name` as the session finds it (made or dropped by its transaction, else as
    /// stored); `None` when there is none.
    pub fn table(&self, name: &str) -> Option<Arc<Table>> {
        match self.txn.and_then(|t| t.defined(name)) {
            Some(t) => t,
            None => self.catalog.snapshot(name).ok(),
        }
    }

    /// The names of the tables the session finds, grants aside: the stored ones and those its
    /// transaction makes or drops (a name dropped is kept: [`CatalogContext::table`] then
    /// finds nothing). Sorted.
    fn names(&self) -> Vec<String> {
        let mut names = self.catalog.table_names();
        if let Some(txn) = self.txn {
            for n in txn.defined_names() {
                if !names.iter().any(|m| m.eq_ignore_ascii_case(&n)) {
                    names.push(n);
                }
            }
        }
        names.sort();
        names
    }

    /// Every index of the tables the session finds, with its table's name: a table the
    /// transaction made brings the indexes made with it, one it dropped takes its own away.
    pub fn indexes(&self) -> Vec<(String, zepto_storage::IndexDef)> {
        let tables = self.names().into_iter().filter_map(|n| self.table(&n));
        tables.flat_map(|t| t.indexes().iter().map(|d| (t.name().to_string(), d.clone())).collect::<Vec<_>>()).collect()
    }
}

/// One system table: where it lives, its columns, and what makes its rows.
pub(crate) struct SystemTable {
    pub(crate) schema: SystemSchema,
    pub(crate) name: &'static str,
    columns: &'static [(&'static str, DataType)],
    rows: fn(&CatalogContext) -> Vec<Vec<Value>>,
}

use DataType::{Int32, Varchar};

pub mod extent;
pub mod pg_catalog;
pub mod types;

pub use crate::pg_types::{pg_names, PgTypeName};

/// The tables of `information_schema` (`pg_catalog`'s are [`pg_catalog::TABLES`]).
static TABLES: &[SystemTable] = &[
    SystemTable {
        schema: SystemSchema::InformationSchema,
        name: "schemata",
        columns: &[("catalog_name", Varchar), ("schema_name", Varchar), ("schema_owner", Varchar)],
        rows: schemata,
    },
    SystemTable {
        schema: SystemSchema::InformationSchema,
        name: "tables",
        columns: &[
            ("table_catalog", Varchar),
            ("table_schema", Varchar),
            ("table_name", Varchar),
            ("table_type", Varchar),
            ("is_insertable_into", Varchar),
            ("is_typed", Varchar),
        ],
        rows: tables,
    },
    SystemTable {
        schema: SystemSchema::InformationSchema,
        name: "columns",
        columns: &[
            ("table_catalog", Varchar),
            ("table_schema", Varchar),
            ("table_name", Varchar),
            ("column_name", Varchar),
            ("ordinal_position", Int32),
            ("column_default", Varchar),
            ("is_nullable", Varchar),
            ("data_type", Varchar),
            ("character_maximum_length", Int32),
            ("numeric_precision", Int32),
            ("numeric_precision_radix", Int32),
            ("numeric_scale", Int32),
            ("datetime_precision", Int32),
            ("udt_catalog", Varchar),
            ("udt_schema", Varchar),
            ("udt_name", Varchar),
            ("is_identity", Varchar),
            ("is_generated", Varchar),
        ],
        rows: columns,
    },
    SystemTable {
        schema: SystemSchema::InformationSchema,
        name: "views",
        columns: &[
            ("table_catalog", Varchar),
            ("table_schema", Varchar),
            ("table_name", Varchar),
            ("view_definition", Varchar),
            ("check_option", Varchar),
            ("is_updatable", Varchar),
            ("is_insertable_into", Varchar),
        ],
        rows: no_rows,
    },
    SystemTable {
        schema: SystemSchema::InformationSchema,
        name: "table_constraints",
        columns: &[
            ("constraint_catalog", Varchar),
            ("constraint_schema", Varchar),
            ("constraint_name", Varchar),
            ("table_catalog", Varchar),
            ("table_schema", Varchar),
            ("table_name", Varchar),
            ("constraint_type", Varchar),
            ("is_deferrable", Varchar),
            ("initially_deferred", Varchar),
            ("enforced", Varchar),
            ("nulls_distinct", Varchar),
        ],
        rows: no_rows,
    },
    SystemTable {
        schema: SystemSchema::InformationSchema,
        name: "key_column_usage",
        columns: &[
            ("constraint_catalog", Varchar),
            ("constraint_schema", Varchar),
            ("constraint_name", Varchar),
            ("table_catalog", Varchar),
            ("table_schema", Varchar),
            ("table_name", Varchar),
            ("column_name", Varchar),
            ("ordinal_position", Int32),
            ("position_in_unique_constraint", Int32),
        ],
        rows: no_rows,
    },
];

/// The catalogs' array columns and their items' type: `{...}` array text, or for the
/// `int2vector` and `oidvector` columns (`indkey`, `indclass`, `proargtypes`, ...) their items
/// separated by spaces, as PostgreSQL writes both ([`crate::eval::array`]).
const ARRAY_COLUMNS: &[(&str, &str, ArrayOf)] = &[
    ("pg_namespace", "nspacl", TEXTS),
    ("pg_class", "relacl", TEXTS),
    ("pg_class", "reloptions", TEXTS),
    ("pg_attribute", "attacl", TEXTS),
    ("pg_attribute", "attoptions", TEXTS),
    ("pg_attribute", "attfdwoptions", TEXTS),
    ("pg_database", "datacl", TEXTS),
    ("pg_roles", "rolconfig", TEXTS),
    ("pg_user", "useconfig", TEXTS),
    ("pg_index", "indkey", VECTOR),
    ("pg_index", "indcollation", VECTOR),
    ("pg_index", "indclass", VECTOR),
    ("pg_index", "indoption", VECTOR),
    ("pg_constraint", "conkey", ArrayOf { item: Int32, spaced: false }),
    ("pg_constraint", "confkey", ArrayOf { item: Int32, spaced: false }),
    ("pg_proc", "proargtypes", VECTOR),
    ("pg_publication_rel", "prattrs", VECTOR),
    ("pg_tablespace", "spcacl", TEXTS),
    ("pg_tablespace", "spcoptions", TEXTS),
];

/// `text[]` (and `aclitem[]`).
const TEXTS: ArrayOf = ArrayOf { item: Varchar, spaced: false };
/// `int2vector`, `oidvector`.
const VECTOR: ArrayOf = ArrayOf { item: Int32, spaced: true };

/// What system table `table`'s column `column` holds, if it is an array.
pub(crate) fn array_item(table: &str, column: &str) -> Option<ArrayOf> {
    ARRAY_COLUMNS.iter().find(|(t, c, _)| *t == table && *c == column).map(|x| x.2)
}

/// Every system table: `information_schema`'s, then `pg_catalog`'s.
pub(crate) fn all_tables() -> impl Iterator<Item = &'static SystemTable> {
    TABLES.iter().chain(pg_catalog::TABLES)
}

/// Neither table constraints, keys nor views exist in ZeptoDB: their tables have no rows.
fn no_rows(_: &CatalogContext) -> Vec<Vec<Value>> {
    Vec::new()
}

/// Whether a bare `name` (no schema) is a `pg_catalog` table: PostgreSQL finds those on
/// every search path (`FROM pg_type`).
pub fn in_search_path(name: &str) -> bool {
    pg_catalog::TABLES.iter().any(|t| t.name.eq_ignore_ascii_case(name))
}

/// Whether `name` is a system catalog's table as the binder names it (`information_schema.tables`):
/// no user table can be named so (the parser refuses a system schema's prefix in a name).
pub fn is_catalog_table(name: &str) -> bool {
    all_tables().any(|t| name.strip_prefix(t.schema.name()).and_then(|r| r.strip_prefix('.')) == Some(t.name))
}

/// The system table `schema.name` as of now, holding what `access` may see.
pub(crate) fn table(schema: SystemSchema, name: &str, ctx: &CatalogContext, pos: Pos) -> Result<Arc<Table>> {
    let qualified = format!("{}.{name}", schema.name());
    let Some(t) = all_tables().find(|t| t.schema == schema && t.name == name) else {
        return Err(SqlError::TableNotFound { name: qualified, pos: Some(pos) });
    };
    let defs = t.columns.iter().map(|(n, dt)| ColumnDef { name: n.to_string(), data_type: *dt }).collect();
    let internal = |e: zepto_storage::StorageError| SqlError::Execution(format!("{qualified}: {e}"));
    let mut table = Table::new(&qualified, Schema { columns: defs }, &TableOptions::default()).map_err(internal)?;
    let rows = (t.rows)(ctx);
    let mut builders: Vec<ColumnBuilder> =
        t.columns.iter().map(|(_, dt)| ColumnBuilder::new(*dt, rows.len())).collect();
    for row in &rows {
        debug_assert_eq!(row.len(), builders.len(), "{qualified}: a row of the wrong width");
        for (b, v) in builders.iter_mut().zip(row) {
            b.push_value(v).map_err(internal)?;
        }
    }
    let cols: Vec<Column> = builders.into_iter().map(ColumnBuilder::finish).collect();
    if !rows.is_empty() {
        table.append(cols).map_err(internal)?;
    }
    Ok(Arc::new(table))
}

/// The user tables the session may read (its grants), as it finds them (its transaction's
/// held creations and drops), sorted, with their schemas.
pub(crate) fn user_tables(ctx: &CatalogContext) -> Vec<(String, Schema)> {
    ctx.names()
        .into_iter()
        .filter(|n| ctx.access.allows(n))
        .filter_map(|n| ctx.table(&n).map(|t| (t.name().to_string(), t.schema().clone())))
        .collect()
}

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

/// Every schema: the tables' and the system catalogs'.
pub(crate) fn schema_names() -> impl Iterator<Item = &'static str> {
    std::iter::once(PUBLIC).chain(SystemSchema::ALL.map(SystemSchema::name))
}

fn schemata(_: &CatalogContext) -> Vec<Vec<Value>> {
    schema_names().map(|s| vec![text(DATABASE), text(s), text(OWNER)]).collect()
}

fn tables(ctx: &CatalogContext) -> Vec<Vec<Value>> {
    let user = user_tables(ctx).into_iter().map(|(n, _)| (PUBLIC, n, "BASE TABLE", "YES"));
    let system = all_tables().map(|t| (t.schema.name(), t.name.to_string(), system_kind(t.schema), "NO"));
    user.chain(system)
        .map(|(schema, name, kind, insertable)| {
            vec![text(DATABASE), text(schema), text(&name), text(kind), text(insertable), text("NO")]
        })
        .collect()
}

/// What PostgreSQL calls its system tables: information_schema's are views.
fn system_kind(schema: SystemSchema) -> &'static str {
    match schema {
        SystemSchema::InformationSchema => "VIEW",
        SystemSchema::PgCatalog => "BASE TABLE",
    }
}

fn columns(ctx: &CatalogContext) -> Vec<Vec<Value>> {
    let user = user_tables(ctx).into_iter().map(|(n, s)| {
        let cols: Vec<(String, DataType)> = s.columns.into_iter().map(|c| (c.name, c.data_type)).collect();
        (PUBLIC, n, cols)
    });
    let system = all_tables().map(|t| {
        let cols: Vec<(String, DataType)> = t.columns.iter().map(|(c, dt)| (c.to_string(), *dt)).collect();
        (t.schema.name(), t.name.to_string(), cols)
    });
    // Ordinal positions count from 1 in each table.
    user.chain(system)
        .flat_map(|(schema, table, cols)| {
            cols.into_iter()
                .zip(1..)
                .map(move |((column, dt), ordinal)| column_row(schema, &table, &column, ordinal, dt))
        })
        .collect()
}

/// One row of `information_schema.columns`.
fn column_row(schema: &str, table: &str, column: &str, ordinal: i32, dt: DataType) -> Vec<Value> {
    let names = pg_names(dt);
    let int = |v: Option<i32>| v.map_or(Value::Null, Value::Int32);
    let (precision, radix, scale) = match dt {
        DataType::Int32 => (Some(32), Some(2), Some(0)),
        DataType::Int64 => (Some(64), Some(2), Some(0)),
        DataType::Float32 => (Some(24), Some(2), None),
        DataType::Float64 => (Some(53), Some(2), None),
        _ => (None, None, None),
    };
    let datetime = match dt {
        DataType::Timestamp => Some(6),
        DataType::Date => Some(0),
        _ => None,
    };
    vec![
        text(DATABASE),
        text(schema),
        text(table),
        text(column),
        Value::Int32(ordinal),
        Value::Null,
        text("YES"),
        text(names.data_type),
        Value::Null,
        int(precision),
        int(radix),
        int(scale),
        int(datetime),
        text(DATABASE),
        text(SystemSchema::PgCatalog.name()),
        text(names.udt_name),
        text("NO"),
        text("NEVER"),
    ]
}

/// What `version()` answers: PostgreSQL's form, which drivers (SQLAlchemy) read a version
/// number from, naming ZeptoDB's.
pub fn version() -> String {
    format!("PostgreSQL 16.0 (ZeptoDB {}) on {}, compiled by rustc", env!("CARGO_PKG_VERSION"), std::env::consts::ARCH)
}
