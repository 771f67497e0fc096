//! The rows of `pg_catalog`'s tables, made from the catalog as the session may see it, with
//! the object ids that join them (`mod.rs`).

use super::{
    index_definition, index_oid, namespace_oid, system_oid, table_oid, visible_indexes, DATABASE_OID, HNSW_AM_OID,
    OWNER_OID,
};
use crate::access::TableAccess;
use crate::system::{all_tables, text, user_tables, CatalogContext, OWNER};
use zepto_parser::ast::SystemSchema;
use zepto_parser::names::{DATABASE, PUBLIC};
use zepto_storage::{Catalog, DataType, Value};

/// No rows.
pub(super) fn none(_: &CatalogContext) -> Vec<Vec<Value>> {
    Vec::new()
}

fn int(v: i32) -> Value {
    Value::Int32(v)
}

pub(super) fn pg_namespace(_: &CatalogContext) -> Vec<Vec<Value>> {
    crate::system::schema_names().map(|s| vec![int(namespace_oid(s)), text(s), int(OWNER_OID), Value::Null]).collect()
}

pub(super) fn pg_tables(ctx: &CatalogContext) -> Vec<Vec<Value>> {
    let indexed: Vec<String> = ctx.indexes().into_iter().map(|(t, _)| t.to_ascii_lowercase()).collect();
    let user = user_tables(ctx).into_iter().map(|(n, _)| {
        let has_index = indexed.contains(&n.to_ascii_lowercase());
        (PUBLIC, n, has_index)
    });
    let system = all_tables()
        .filter(|t| t.schema == SystemSchema::PgCatalog)
        .map(|t| (SystemSchema::PgCatalog.name(), t.name.to_string(), false));
    user.chain(system)
        .map(|(schema, n, has_index)| {
            let no = Value::Bool(false);
            vec![text(schema), text(&n), text(OWNER), Value::Null, Value::Bool(has_index), no.clone(), no.clone(), no]
        })
        .collect()
}

/// A relation as `pg_class` and `pg_attribute` describe it: id, schema, name, kind, columns.
struct Relation {
    oid: i32,
    /// `relam`: heap for a table, the index's method for an index, none for a view.
    am: i32,
    schema: &'static str,
    name: String,
    kind: &'static str,
    rows: Option<usize>,
    has_index: bool,
    columns: Vec<(String, DataType)>,
}

/// Every relation the session may see: its tables, then the system tables; the rows of each
/// table and view counted when `counted` (`pg_class` shows them; counting a tenant's share
/// reads its rows).
fn relations(ctx: &CatalogContext, counted: bool) -> Vec<Relation> {
    let (catalog, access) = (ctx.catalog, ctx.access);
    let rows = |t: &zepto_storage::Table| {
        counted.then(|| crate::system::extent::visible_extent(catalog, t, access)).flatten().map(|e| e.rows)
    };
    let indexed: Vec<String> = ctx.indexes().into_iter().map(|(t, _)| t.to_ascii_lowercase()).collect();
    let user = user_tables(ctx).into_iter().map(|(name, schema)| Relation {
        oid: table_oid(&name),
        am: 2,
        schema: PUBLIC,
        kind: "r",
        rows: ctx.table(&name).and_then(|t| rows(&t)),
        has_index: indexed.contains(&name.to_ascii_lowercase()),
        columns: schema.columns.into_iter().map(|c| (c.name, c.data_type)).collect(),
        name,
    });
    let indexes = visible_indexes(ctx).into_iter().map(|(table, def, _, dt)| Relation {
        oid: index_oid(&table, def.name()),
        am: HNSW_AM_OID,
        schema: PUBLIC,
        name: def.name().to_string(),
        kind: "i",
        rows: None,
        has_index: false,
        columns: vec![(def.column().to_string(), dt)],
    });
    let views = user_views(catalog, access).into_iter().map(|(name, t)| Relation {
        oid: table_oid(&name),
        am: 2,
        schema: PUBLIC,
        kind: "m",
        rows: rows(&t),
        has_index: false,
        columns: t.schema().columns.iter().map(|c| (c.name.clone(), c.data_type)).collect(),
        name,
    });
    let system = all_tables().map(|t| Relation {
        oid: system_oid(t.schema, t.name),
        am: if t.schema == SystemSchema::InformationSchema { 0 } else { 2 },
        schema: t.schema.name(),
        name: t.name.to_string(),
        kind: if t.schema == SystemSchema::InformationSchema { "v" } else { "r" },
        rows: None,
        has_index: false,
        columns: t.columns.iter().map(|(c, dt)| (c.to_string(), *dt)).collect(),
    });
    user.chain(views).chain(indexes).chain(system).collect()
}

/// The materialized views `access` may read, with their rows (read now: a stale view is
/// rebuilt, one that fails to is left out).
fn user_views(catalog: &Catalog, access: &TableAccess) -> Vec<(String, std::sync::Arc<zepto_storage::Table>)> {
    catalog
        .view_defs()
        .into_iter()
        .map(|v| v.name().to_string())
        .filter(|n| access.allows(n))
        .filter_map(|n| catalog.snapshot(&n).ok().map(|t| (n, t)))
        .collect()
}

pub(super) fn pg_class(ctx: &CatalogContext) -> Vec<Vec<Value>> {
    let (t, f) = (Value::Bool(true), Value::Bool(false));
    relations(ctx, true)
        .into_iter()
        .map(|r| {
            let tuples = r.rows.map_or(-1.0, |n| n as f32);
            let natts = i32::try_from(r.columns.len()).unwrap_or(i32::MAX);

            vec![
                int(r.oid),
                text(&r.name),
                int(namespace_oid(r.schema)),
                int(0),
                int(0),
                int(OWNER_OID),
                int(r.am),
                int(r.oid),
                int(0),
                int(0),
                Value::Float32(tuples),
                int(0),
                int(0),
                Value::Bool(r.has_index),
                f.clone(),
                text("p"),
                text(r.kind),
                int(natts),
                int(0),
                f.clone(),
                f.clone(),
                f.clone(),
                f.clone(),
                f.clone(),
                t.clone(),
                text("d"),
                f.clone(),
                int(0),
                Value::Null,
                Value::Null,
                Value::Null,
            ]
        })
        .collect()
}

pub(super) fn pg_attribute(ctx: &CatalogContext) -> Vec<Vec<Value>> {
    let types = crate::system::types::all();
    let mut out = Vec::new();
    for r in relations(ctx, false) {
        for ((name, dt), num) in r.columns.into_iter().zip(1..) {
            let oid = crate::system::types::oid_of(dt);
            let ty = types.iter().find(|t| t.oid == oid);
            let len = ty.map_or(-1, |t| t.len);
            let by_value = ty.is_some_and(|t| t.by_value);
            let text_like = matches!(dt, DataType::Varchar | DataType::Symbol | DataType::Null);
            out.push(vec![
                int(r.oid),
                text(&name),
                int(oid),
                int(-1),
                int(len),
                int(num),
                int(i32::from(matches!(dt, DataType::Vector(_)))),
                int(-1),
                int(-1),
                Value::Bool(by_value),
                text(if len == 8 {
                    "d"
                } else if len == 4 {
                    "i"
                } else {
                    "c"
                }),
                text(if by_value { "p" } else { "x" }),
                text(""),
                Value::Bool(false),
                Value::Bool(false),
                Value::Bool(false),
                text(""),
                text(""),
                Value::Bool(false),
                Value::Bool(true),
                int(0),
                int(if text_like { 100 } else { 0 }),
                Value::Null,
                Value::Null,
                Value::Null,
            ]);
        }
    }
    out
}

pub(super) fn pg_type(_: &CatalogContext) -> Vec<Vec<Value>> {
    crate::system::types::all()
        .into_iter()
        .map(|t| {
            let stem = t.input.strip_suffix("in").unwrap_or(&t.input).to_string();
            let array = t.category == "A";
            vec![
                int(t.oid),
                text(&t.name),
                int(namespace_oid("pg_catalog")),
                int(OWNER_OID),
                int(t.len),
                Value::Bool(t.by_value),
                text(if t.name == "unknown" { "p" } else { "b" }),
                text(t.category),
                Value::Bool(t.preferred),
                Value::Bool(true),
                text(","),
                int(0),
                text(if array { "array_subscript_handler" } else { "-" }),
                int(t.element),
                int(t.array),
                text(&t.input),
                text(&format!("{stem}out")),
                text(&format!("{stem}recv")),
                text(&format!("{stem}send")),
                text(match t.len {
                    8 => "d",
                    4 => "i",
                    2 => "s",
                    _ => "c",
                }),
                text(if t.by_value { "p" } else { "x" }),
                Value::Bool(false),
                int(0),
                int(-1),
                int(0),
                int(if matches!(t.name.as_str(), "text" | "varchar" | "bpchar" | "name") { 100 } else { 0 }),
                Value::Null,
            ]
        })
        .collect()
}

pub(super) fn pg_database(_: &CatalogContext) -> Vec<Vec<Value>> {
    let (t, f) = (Value::Bool(true), Value::Bool(false));
    vec![vec![
        int(DATABASE_OID),
        text(DATABASE),
        int(OWNER_OID),
        int(6),
        text("c"),
        f,
        t,
        int(-1),
        int(1663),
        text("C.UTF-8"),
        text("C.UTF-8"),
        Value::Null,
        Value::Null,
        Value::Null,
    ]]
}

pub(super) fn pg_roles(_: &CatalogContext) -> Vec<Vec<Value>> {
    let (t, f) = (Value::Bool(true), Value::Bool(false));
    vec![vec![
        int(OWNER_OID),
        text(OWNER),
        t.clone(),
        t.clone(),
        t.clone(),
        t.clone(),
        t.clone(),
        f.clone(),
        int(-1),
        text("********"),
        Value::Null,
        f,
        Value::Null,
    ]]
}

pub(super) fn pg_user(_: &CatalogContext) -> Vec<Vec<Value>> {
    let (t, f) = (Value::Bool(true), Value::Bool(false));
    vec![vec![text(OWNER), int(OWNER_OID), t.clone(), t, f.clone(), f, text("********"), Value::Null, Value::Null]]
}

/// The materialized views with their queries.
pub(super) fn pg_matviews(ctx: &CatalogContext) -> Vec<Vec<Value>> {
    let (catalog, access) = (ctx.catalog, ctx.access);
    let f = Value::Bool(false);
    catalog
        .view_defs()
        .into_iter()
        .filter(|v| access.allows(v.name()))
        .map(|v| {
            vec![text(PUBLIC), text(v.name()), text(OWNER), Value::Null, f.clone(), Value::Bool(true), text(v.sql())]
        })
        .collect()
}

/// The indexes with their `CREATE INDEX` text.
pub(super) fn pg_indexes(ctx: &CatalogContext) -> Vec<Vec<Value>> {
    visible_indexes(ctx)
        .into_iter()
        .map(|(table, def, _, _)| {
            let sql = index_definition(&table, &def);
            vec![text(PUBLIC), text(&table), text(def.name()), Value::Null, text(&sql)]
        })
        .collect()
}

/// One row per vector index: a single key column, not unique, valid and ready.
pub(super) fn pg_index(ctx: &CatalogContext) -> Vec<Vec<Value>> {
    let (t, f) = (Value::Bool(true), Value::Bool(false));
    visible_indexes(ctx)
        .into_iter()
        .map(|(table, def, num, _)| {
            let mut row = vec![int(index_oid(&table, def.name())), int(table_oid(&table)), int(1), int(1)];
            // indisunique .. indisreplident
            row.extend([&f, &f, &f, &f, &t, &f, &t, &f, &t, &t, &f].into_iter().cloned());
            row.extend([text(&num.to_string()), text("0"), text("0"), text("0"), Value::Null, Value::Null]);
            row
        })
        .collect()
}

pub(super) fn pg_am(_: &CatalogContext) -> Vec<Vec<Value>> {
    [
        (2, "heap", "heap_tableam_handler", "t"),
        (403, "btree", "bthandler", "i"),
        (405, "hash", "hashhandler", "i"),
        (HNSW_AM_OID, "hnsw", "hnswhandler", "i"),
    ]
    .iter()
    .map(|(oid, name, handler, kind)| vec![int(*oid), text(name), text(handler), text(kind)])
    .collect()
}

pub(super) fn pg_collation(_: &CatalogContext) -> Vec<Vec<Value>> {
    [(100, "default", "d", ""), (950, "C", "c", "C"), (951, "POSIX", "c", "POSIX")]
        .iter()
        .map(|(oid, name, provider, locale)| {
            let ns = namespace_oid("pg_catalog");
            vec![
                int(*oid),
                text(name),
                int(ns),
                int(OWNER_OID),
                text(provider),
                Value::Bool(true),
                int(-1),
                text(locale),
                text(locale),
            ]
        })
        .collect()
}

pub(super) fn pg_tablespace(_: &CatalogContext) -> Vec<Vec<Value>> {
    [(1663, "pg_default"), (1664, "pg_global")]
        .iter()
        .map(|(oid, name)| vec![int(*oid), text(name), int(OWNER_OID), Value::Null, Value::Null])
        .collect()
}
