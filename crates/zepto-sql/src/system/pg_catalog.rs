//! `pg_catalog`: PostgreSQL's own catalog tables, with the object ids that join them
//! (`pg_class.oid = pg_attribute.attrelid`, `pg_attribute.atttypid = pg_type.oid`,
//! `pg_class.relnamespace = pg_namespace.oid`), as psql, pgjdbc, SQLAlchemy and BI tools read
//! them. What ZeptoDB has no such thing as (constraints, defaults, comments, rules, stored
//! functions, extensions, views) is a table with PostgreSQL's columns and no rows.
//!
//! Object ids: a user table's is [`table_oid`] of its name (stable across restarts); a system
//! table's is [`SYSTEM_OID_BASE`] plus its place in the list; the schemas and the one role and
//! database have PostgreSQL's own (`pg_catalog` 11, `public` 2200, the owner 10).

use super::{all_tables, text, user_tables, SystemTable, OWNER};
use crate::access::TableAccess;
use zepto_parser::ast::SystemSchema;
use zepto_parser::names::{DATABASE, PUBLIC};
use zepto_storage::{Catalog, DataType, Value};
use DataType::{Bool, Float32, Int32, Varchar};

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
pub(crate) fn visible_indexes(
    catalog: &Catalog,
    access: &TableAccess,
) -> Vec<(String, zepto_storage::IndexDef, i32, DataType)> {
    let tables = user_tables(catalog, access);
    catalog
        .indexes()
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

/// No rows.
fn none(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
    Vec::new()
}

/// The tables of `pg_catalog`.
pub(super) static TABLES: &[SystemTable] = &[
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_namespace",
        columns: &[("oid", Int32), ("nspname", Varchar), ("nspowner", Int32), ("nspacl", Varchar)],
        rows: pg_namespace,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_tables",
        columns: &[
            ("schemaname", Varchar),
            ("tablename", Varchar),
            ("tableowner", Varchar),
            ("tablespace", Varchar),
            ("hasindexes", Bool),
            ("hasrules", Bool),
            ("hastriggers", Bool),
            ("rowsecurity", Bool),
        ],
        rows: pg_tables,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_class",
        columns: &[
            ("oid", Int32),
            ("relname", Varchar),
            ("relnamespace", Int32),
            ("reltype", Int32),
            ("reloftype", Int32),
            ("relowner", Int32),
            ("relam", Int32),
            ("relfilenode", Int32),
            ("reltablespace", Int32),
            ("relpages", Int32),
            ("reltuples", Float32),
            ("relallvisible", Int32),
            ("reltoastrelid", Int32),
            ("relhasindex", Bool),
            ("relisshared", Bool),
            ("relpersistence", Varchar),
            ("relkind", Varchar),
            ("relnatts", Int32),
            ("relchecks", Int32),
            ("relhasrules", Bool),
            ("relhastriggers", Bool),
            ("relhassubclass", Bool),
            ("relrowsecurity", Bool),
            ("relforcerowsecurity", Bool),
            ("relispopulated", Bool),
            ("relreplident", Varchar),
            ("relispartition", Bool),
            ("relrewrite", Int32),
            ("relacl", Varchar),
            ("reloptions", Varchar),
            ("relpartbound", Varchar),
        ],
        rows: pg_class,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_attribute",
        columns: &[
            ("attrelid", Int32),
            ("attname", Varchar),
            ("atttypid", Int32),
            ("attstattarget", Int32),
            ("attlen", Int32),
            ("attnum", Int32),
            ("attndims", Int32),
            ("attcacheoff", Int32),
            ("atttypmod", Int32),
            ("attbyval", Bool),
            ("attalign", Varchar),
            ("attstorage", Varchar),
            ("attcompression", Varchar),
            ("attnotnull", Bool),
            ("atthasdef", Bool),
            ("atthasmissing", Bool),
            ("attidentity", Varchar),
            ("attgenerated", Varchar),
            ("attisdropped", Bool),
            ("attislocal", Bool),
            ("attinhcount", Int32),
            ("attcollation", Int32),
            ("attacl", Varchar),
            ("attoptions", Varchar),
            ("attfdwoptions", Varchar),
        ],
        rows: pg_attribute,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_type",
        columns: &[
            ("oid", Int32),
            ("typname", Varchar),
            ("typnamespace", Int32),
            ("typowner", Int32),
            ("typlen", Int32),
            ("typbyval", Bool),
            ("typtype", Varchar),
            ("typcategory", Varchar),
            ("typispreferred", Bool),
            ("typisdefined", Bool),
            ("typdelim", Varchar),
            ("typrelid", Int32),
            ("typsubscript", Varchar),
            ("typelem", Int32),
            ("typarray", Int32),
            ("typinput", Varchar),
            ("typoutput", Varchar),
            ("typreceive", Varchar),
            ("typsend", Varchar),
            ("typalign", Varchar),
            ("typstorage", Varchar),
            ("typnotnull", Bool),
            ("typbasetype", Int32),
            ("typtypmod", Int32),
            ("typndims", Int32),
            ("typcollation", Int32),
            ("typdefault", Varchar),
        ],
        rows: pg_type,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_database",
        columns: &[
            ("oid", Int32),
            ("datname", Varchar),
            ("datdba", Int32),
            ("encoding", Int32),
            ("datlocprovider", Varchar),
            ("datistemplate", Bool),
            ("datallowconn", Bool),
            ("datconnlimit", Int32),
            ("dattablespace", Int32),
            ("datcollate", Varchar),
            ("datctype", Varchar),
            ("daticulocale", Varchar),
            ("daticurules", Varchar),
            ("datacl", Varchar),
        ],
        rows: pg_database,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_roles",
        columns: &[
            ("oid", Int32),
            ("rolname", Varchar),
            ("rolsuper", Bool),
            ("rolinherit", Bool),
            ("rolcreaterole", Bool),
            ("rolcreatedb", Bool),
            ("rolcanlogin", Bool),
            ("rolreplication", Bool),
            ("rolconnlimit", Int32),
            ("rolpassword", Varchar),
            ("rolvaliduntil", Varchar),
            ("rolbypassrls", Bool),
            ("rolconfig", Varchar),
        ],
        rows: pg_roles,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_user",
        columns: &[
            ("usename", Varchar),
            ("usesysid", Int32),
            ("usecreatedb", Bool),
            ("usesuper", Bool),
            ("userepl", Bool),
            ("usebypassrls", Bool),
            ("passwd", Varchar),
            ("valuntil", Varchar),
            ("useconfig", Varchar),
        ],
        rows: pg_user,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_settings",
        columns: &[
            ("name", Varchar),
            ("setting", Varchar),
            ("unit", Varchar),
            ("category", Varchar),
            ("short_desc", Varchar),
            ("context", Varchar),
            ("vartype", Varchar),
            ("source", Varchar),
            ("boot_val", Varchar),
            ("reset_val", Varchar),
        ],
        rows: pg_settings,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_auth_members",
        columns: &[
            ("oid", Int32),
            ("roleid", Int32),
            ("member", Int32),
            ("grantor", Int32),
            ("admin_option", Bool),
            ("inherit_option", Bool),
            ("set_option", Bool),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_matviews",
        columns: &[
            ("schemaname", Varchar),
            ("matviewname", Varchar),
            ("matviewowner", Varchar),
            ("tablespace", Varchar),
            ("hasindexes", Bool),
            ("ispopulated", Bool),
            ("definition", Varchar),
        ],
        rows: pg_matviews,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_indexes",
        columns: &[
            ("schemaname", Varchar),
            ("tablename", Varchar),
            ("indexname", Varchar),
            ("tablespace", Varchar),
            ("indexdef", Varchar),
        ],
        rows: pg_indexes,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_am",
        columns: &[("oid", Int32), ("amname", Varchar), ("amhandler", Varchar), ("amtype", Varchar)],
        rows: pg_am,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_index",
        columns: &[
            ("indexrelid", Int32),
            ("indrelid", Int32),
            ("indnatts", Int32),
            ("indnkeyatts", Int32),
            ("indisunique", Bool),
            ("indnullsnotdistinct", Bool),
            ("indisprimary", Bool),
            ("indisexclusion", Bool),
            ("indimmediate", Bool),
            ("indisclustered", Bool),
            ("indisvalid", Bool),
            ("indcheckxmin", Bool),
            ("indisready", Bool),
            ("indislive", Bool),
            ("indisreplident", Bool),
            ("indkey", Varchar),
            ("indcollation", Varchar),
            ("indclass", Varchar),
            ("indoption", Varchar),
            ("indexprs", Varchar),
            ("indpred", Varchar),
        ],
        rows: pg_index,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_constraint",
        columns: &[
            ("oid", Int32),
            ("conname", Varchar),
            ("connamespace", Int32),
            ("contype", Varchar),
            ("condeferrable", Bool),
            ("condeferred", Bool),
            ("convalidated", Bool),
            ("conrelid", Int32),
            ("contypid", Int32),
            ("conindid", Int32),
            ("conparentid", Int32),
            ("confrelid", Int32),
            ("confupdtype", Varchar),
            ("confdeltype", Varchar),
            ("confmatchtype", Varchar),
            ("conislocal", Bool),
            ("coninhcount", Int32),
            ("connoinherit", Bool),
            ("conkey", Varchar),
            ("confkey", Varchar),
            ("conbin", Varchar),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_description",
        columns: &[("objoid", Int32), ("classoid", Int32), ("objsubid", Int32), ("description", Varchar)],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_attrdef",
        columns: &[("oid", Int32), ("adrelid", Int32), ("adnum", Int32), ("adbin", Varchar)],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_proc",
        columns: &[
            ("oid", Int32),
            ("proname", Varchar),
            ("pronamespace", Int32),
            ("proowner", Int32),
            ("prolang", Int32),
            ("prokind", Varchar),
            ("proretset", Bool),
            ("pronargs", Int32),
            ("prorettype", Int32),
            ("proargtypes", Varchar),
            ("prosrc", Varchar),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_extension",
        columns: &[
            ("oid", Int32),
            ("extname", Varchar),
            ("extowner", Int32),
            ("extnamespace", Int32),
            ("extrelocatable", Bool),
            ("extversion", Varchar),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_views",
        columns: &[("schemaname", Varchar), ("viewname", Varchar), ("viewowner", Varchar), ("definition", Varchar)],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_collation",
        columns: &[
            ("oid", Int32),
            ("collname", Varchar),
            ("collnamespace", Int32),
            ("collowner", Int32),
            ("collprovider", Varchar),
            ("collisdeterministic", Bool),
            ("collencoding", Int32),
            ("collcollate", Varchar),
            ("collctype", Varchar),
        ],
        rows: pg_collation,
    },
    // Operator classes belong to indexes, and ZeptoDB has none (a table is sorted by time
    // within each partition instead): no rows.
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_opclass",
        columns: &[
            ("oid", Int32),
            ("opcmethod", Int32),
            ("opcname", Varchar),
            ("opcnamespace", Int32),
            ("opcowner", Int32),
            ("opcfamily", Int32),
            ("opcintype", Int32),
            ("opcdefault", Bool),
            ("opckeytype", Int32),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_policy",
        columns: &[
            ("oid", Int32),
            ("polname", Varchar),
            ("polrelid", Int32),
            ("polcmd", Varchar),
            ("polpermissive", Bool),
            ("polroles", Varchar),
            ("polqual", Varchar),
            ("polwithcheck", Varchar),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_statistic_ext",
        columns: &[
            ("oid", Int32),
            ("stxrelid", Int32),
            ("stxname", Varchar),
            ("stxnamespace", Int32),
            ("stxowner", Int32),
            ("stxstattarget", Int32),
            ("stxkeys", Varchar),
            ("stxkind", Varchar),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_publication",
        columns: &[
            ("oid", Int32),
            ("pubname", Varchar),
            ("pubowner", Int32),
            ("puballtables", Bool),
            ("pubinsert", Bool),
            ("pubupdate", Bool),
            ("pubdelete", Bool),
            ("pubtruncate", Bool),
            ("pubviaroot", Bool),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_publication_rel",
        columns: &[("oid", Int32), ("prpubid", Int32), ("prrelid", Int32), ("prqual", Varchar), ("prattrs", Varchar)],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_publication_namespace",
        columns: &[("oid", Int32), ("pnpubid", Int32), ("pnnspid", Int32)],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_trigger",
        columns: &[
            ("oid", Int32),
            ("tgrelid", Int32),
            ("tgparentid", Int32),
            ("tgname", Varchar),
            ("tgfoid", Int32),
            ("tgtype", Int32),
            ("tgenabled", Varchar),
            ("tgisinternal", Bool),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_rewrite",
        columns: &[
            ("oid", Int32),
            ("rulename", Varchar),
            ("ev_class", Int32),
            ("ev_type", Varchar),
            ("ev_enabled", Varchar),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_sequence",
        columns: &[
            ("seqrelid", Int32),
            ("seqtypid", Int32),
            ("seqstart", DataType::Int64),
            ("seqincrement", DataType::Int64),
            ("seqmax", DataType::Int64),
            ("seqmin", DataType::Int64),
            ("seqcache", DataType::Int64),
            ("seqcycle", Bool),
        ],
        rows: none,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_tablespace",
        columns: &[
            ("oid", Int32),
            ("spcname", Varchar),
            ("spcowner", Int32),
            ("spcacl", Varchar),
            ("spcoptions", Varchar),
        ],
        rows: pg_tablespace,
    },
    SystemTable {
        schema: SystemSchema::PgCatalog,
        name: "pg_inherits",
        columns: &[("inhrelid", Int32), ("inhparent", Int32), ("inhseqno", Int32), ("inhdetachpending", Bool)],
        rows: none,
    },
];

fn int(v: i32) -> Value {
    Value::Int32(v)
}

fn pg_namespace(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
    super::schema_names().map(|s| vec![int(namespace_oid(s)), text(s), int(OWNER_OID), Value::Null]).collect()
}

fn pg_tables(catalog: &Catalog, access: &TableAccess) -> Vec<Vec<Value>> {
    let indexed: Vec<String> = catalog.indexes().into_iter().map(|(t, _)| t.to_ascii_lowercase()).collect();
    let user = user_tables(catalog, access).into_iter().map(|(n, _)| {
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
fn relations(catalog: &Catalog, access: &TableAccess, counted: bool) -> Vec<Relation> {
    let rows = |t: &zepto_storage::Table| {
        counted.then(|| crate::system::extent::visible_extent(catalog, t, access)).flatten().map(|e| e.rows)
    };
    let indexed: Vec<String> = catalog.indexes().into_iter().map(|(t, _)| t.to_ascii_lowercase()).collect();
    let user = user_tables(catalog, access).into_iter().map(|(name, schema)| Relation {
        oid: table_oid(&name),
        am: 2,
        schema: PUBLIC,
        kind: "r",
        rows: catalog.snapshot(&name).ok().and_then(|t| rows(&t)),
        has_index: indexed.contains(&name.to_ascii_lowercase()),
        columns: schema.columns.into_iter().map(|c| (c.name, c.data_type)).collect(),
        name,
    });
    let indexes = visible_indexes(catalog, access).into_iter().map(|(table, def, _, dt)| Relation {
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

fn pg_class(catalog: &Catalog, access: &TableAccess) -> Vec<Vec<Value>> {
    let (t, f) = (Value::Bool(true), Value::Bool(false));
    relations(catalog, access, true)
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

fn pg_attribute(catalog: &Catalog, access: &TableAccess) -> Vec<Vec<Value>> {
    let types = super::types::all();
    let mut out = Vec::new();
    for r in relations(catalog, access, false) {
        for ((name, dt), num) in r.columns.into_iter().zip(1..) {
            let oid = super::types::oid_of(dt);
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

fn pg_type(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
    super::types::all()
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

fn pg_database(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
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

fn pg_roles(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
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

fn pg_user(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
    let (t, f) = (Value::Bool(true), Value::Bool(false));
    vec![vec![text(OWNER), int(OWNER_OID), t.clone(), t, f.clone(), f, text("********"), Value::Null, Value::Null]]
}

/// The server settings clients read at connect (their values as the door's startup reports).
/// The value of setting `name` (any case), as `pg_settings` shows it.
pub fn setting(name: &str) -> Option<&'static str> {
    SETTINGS.iter().find(|s| s.0.eq_ignore_ascii_case(name)).map(|s| s.1)
}

/// The settings: name, value, category, description, context, type.
#[allow(clippy::type_complexity)]
static SETTINGS: &[(&str, &str, &str, &str, &str, &str)] = &[
    (
        "default_table_access_method",
        "heap",
        "Client Connection Defaults",
        "Sets the default table access method for new tables.",
        "user",
        "string",
    ),
    ("server_version", "16.0", "Preset Options", "Shows the server version.", "internal", "string"),
    (
        "server_version_num",
        "160000",
        "Preset Options",
        "Shows the server version as an integer.",
        "internal",
        "integer",
    ),
    ("server_encoding", "UTF8", "Preset Options", "Shows the server character set encoding.", "internal", "string"),
    (
        "client_encoding",
        "UTF8",
        "Client Connection Defaults",
        "Sets the client's character set encoding.",
        "user",
        "string",
    ),
    (
        "DateStyle",
        "ISO, MDY",
        "Client Connection Defaults",
        "Sets the display format for date and time values.",
        "user",
        "string",
    ),
    (
        "TimeZone",
        "UTC",
        "Client Connection Defaults",
        "Sets the time zone for displaying and interpreting time stamps.",
        "user",
        "string",
    ),
    (
        "standard_conforming_strings",
        "on",
        "Version and Platform Compatibility",
        "Causes '...' strings to treat backslashes literally.",
        "user",
        "bool",
    ),
    ("integer_datetimes", "on", "Preset Options", "Shows whether datetimes are integer based.", "internal", "bool"),
    (
        "search_path",
        "\"$user\", public",
        "Client Connection Defaults",
        "Sets the schema search order for names that are not schema-qualified.",
        "user",
        "string",
    ),
    ("max_identifier_length", "63", "Preset Options", "Shows the maximum identifier length.", "internal", "integer"),
];

fn pg_settings(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
    SETTINGS
        .iter()
        .map(|(name, value, category, desc, context, kind)| {
            vec![
                text(name),
                text(value),
                Value::Null,
                text(category),
                text(desc),
                text(context),
                text(kind),
                text("default"),
                text(value),
                text(value),
            ]
        })
        .collect()
}

/// The materialized views with their queries.
fn pg_matviews(catalog: &Catalog, access: &TableAccess) -> Vec<Vec<Value>> {
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
fn pg_indexes(catalog: &Catalog, access: &TableAccess) -> Vec<Vec<Value>> {
    visible_indexes(catalog, access)
        .into_iter()
        .map(|(table, def, _, _)| {
            let sql = index_definition(&table, &def);
            vec![text(PUBLIC), text(&table), text(def.name()), Value::Null, text(&sql)]
        })
        .collect()
}

/// One row per vector index: a single key column, not unique, valid and ready.
fn pg_index(catalog: &Catalog, access: &TableAccess) -> Vec<Vec<Value>> {
    let (t, f) = (Value::Bool(true), Value::Bool(false));
    visible_indexes(catalog, access)
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

fn pg_am(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
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

fn pg_collation(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
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

fn pg_tablespace(_: &Catalog, _: &TableAccess) -> Vec<Vec<Value>> {
    [(1663, "pg_default"), (1664, "pg_global")]
        .iter()
        .map(|(oid, name)| vec![int(*oid), text(name), int(OWNER_OID), Value::Null, Value::Null])
        .collect()
}
