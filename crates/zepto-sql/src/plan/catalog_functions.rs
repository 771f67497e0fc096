//! The functions and object-identifier casts PostgreSQL's clients call on its catalog
//! (`format_type`, `pg_get_userbyid`, `'t'::regclass`, `c.oid::regclass`, `to_regclass`,
//! `current_schema()`, `has_table_privilege`, `obj_description`, ...), bound here into plain
//! expressions over what the catalog holds when the statement is bound: a constant when the
//! argument is one, else a CASE over the objects' ids (the catalog is small), so they
//! evaluate like any expression and EXPLAIN shows what they became.
//!
//! What ZeptoDB has none of (comments, defaults, index and constraint definitions) answers
//! NULL; privileges answer true, as a session only ever sees what its key may read.

use super::bind_expr::{bind_binary, cast_to};
use crate::error::{Pos, Result, SqlError};
use crate::expr::BExpr;
use crate::parser::ast::BinaryOp;
use crate::system::pg_catalog::{namespace_oid, system_oid, table_oid, DATABASE_OID, OWNER_OID};
use crate::system::{self, all_tables, schema_names, user_tables, OWNER};
use zepto_parser::ast::SystemSchema;
use zepto_parser::names::DATABASE;
use zepto_storage::{DataType, Value};

pub use crate::system::CatalogContext;

/// How many arguments `name` takes, checked.
fn arity(name: &str, args: &[BExpr], lo: usize, hi: usize, pos: Pos) -> Result<()> {
    match args.len() {
        n if n >= lo && n <= hi => Ok(()),
        n => Err(SqlError::plan(format!("wrong number of arguments to {name}(): {n}"), Some(pos))),
    }
}

fn text(s: &str) -> BExpr {
    BExpr::Lit(Value::Str(s.to_string()), DataType::Varchar)
}

/// `name(args)` bound as a catalog function, or `None` when `name` is not one.
pub fn bind(name: &str, args: Vec<BExpr>, ctx: &CatalogContext, pos: Pos) -> Result<Option<BExpr>> {
    if let Some(e) = fixed(name, &args, pos)? {
        return Ok(Some(e));
    }
    let check = |lo, hi| arity(name, &args, lo, hi, pos);
    let e = match name {
        "format_type" => {
            check(2, 2)?;
            let types = system::types::all();
            let names = types.iter().filter_map(|t| Some((t.oid, system::types::format_type(t.oid)?)));
            by_oid(first(args), names, pos)?
        }
        "pg_get_userbyid" => {
            check(1, 1)?;
            by_oid(first(args), std::iter::once((OWNER_OID, OWNER.to_string())), pos)?
        }
        "pg_encoding_to_char" => {
            check(1, 1)?;
            by_oid(first(args), std::iter::once((6, "UTF8".to_string())), pos)?
        }
        "regclass" | "to_regclass" => {
            check(1, 1)?;
            relation(first(args), ctx, name == "to_regclass", pos)?
        }
        "regtype" | "to_regtype" => {
            check(1, 1)?;
            let types: Vec<(i32, String)> = system::types::all().into_iter().map(|t| (t.oid, t.name)).collect();
            named_object(first(args), &types, "type", name == "to_regtype", pos)?
        }
        "regnamespace" | "to_regnamespace" => {
            check(1, 1)?;
            let schemas: Vec<(i32, String)> = schema_names().map(|s| (namespace_oid(s), s.to_string())).collect();
            named_object(first(args), &schemas, "schema", name == "to_regnamespace", pos)?
        }
        "pg_table_is_visible" => {
            check(1, 1)?;
            table_is_visible(first(args), pos)?
        }
        "current_schemas" => {
            check(1, 1)?;
            // The search path, with the implicit schemas when asked: an array as its text.
            match first(args) {
                BExpr::Lit(Value::Bool(false), _) => text("{public}"),
                _ => text("{pg_catalog,public}"),
            }
        }
        "pg_table_size" | "pg_relation_size" | "pg_total_relation_size" => {
            check(1, 2)?;
            relation_bytes(first(args), ctx, |t| crate::system::extent::visible_bytes(ctx.catalog, t, ctx.access), pos)?
        }
        "pg_indexes_size" => {
            check(1, 1)?;
            relation_bytes(first(args), ctx, |_| Some(0), pos)?
        }
        "pg_database_size" => {
            check(1, 1)?;
            database_size(first(args), ctx, pos)?
        }
        "pg_get_indexdef" => {
            check(1, 3)?;
            index_definition(args, ctx, pos)?
        }
        "current_setting" => {
            check(1, 2)?;
            current_setting(args, pos)?
        }
        _ => return Ok(None),
    };
    Ok(Some(e))
}

/// The functions whose answer does not depend on their arguments: the session's constants,
/// privileges (true), and the definitions and comments of objects ZeptoDB has none of (NULL).
fn fixed(name: &str, args: &[BExpr], pos: Pos) -> Result<Option<BExpr>> {
    let (lo, hi, e) = match name {
        "current_schema" => (0, 0, text("public")),
        "current_catalog" | "current_database" => (0, 0, text(DATABASE)),
        "current_user" | "session_user" | "user" => (0, 0, text(OWNER)),
        "version" => (0, 0, text(&system::version())),
        "pg_backend_pid" => (0, 0, BExpr::Lit(Value::Int32(std::process::id() as i32), DataType::Int32)),
        // Every type, function and collation lives in pg_catalog, which is on the search path.
        // Nothing is published (ZeptoDB has no logical replication).
        "pg_relation_is_publishable" => (1, 1, BExpr::Lit(Value::Bool(false), DataType::Bool)),
        "pg_type_is_visible" | "pg_function_is_visible" | "pg_collation_is_visible" => {
            (1, 1, BExpr::Lit(Value::Bool(true), DataType::Bool))
        }
        "has_table_privilege"
        | "has_schema_privilege"
        | "has_database_privilege"
        | "has_column_privilege"
        | "has_any_column_privilege" => (2, 4, BExpr::Lit(Value::Bool(true), DataType::Bool)),
        "obj_description"
        | "col_description"
        | "shobj_description"
        | "pg_get_expr"
        | "pg_get_constraintdef"
        | "pg_get_viewdef"
        | "pg_get_triggerdef"
        | "pg_get_partkeydef"
        | "pg_get_statisticsobjdef_columns"
        | "pg_get_serial_sequence"
        | "pg_get_function_result"
        | "pg_get_function_arguments"
        | "pg_get_function_identity_arguments" => (1, 3, BExpr::Lit(Value::Null, DataType::Varchar)),
        _ => return Ok(None),
    };
    arity(name, args, lo, hi, pos)?;
    Ok(Some(e))
}

/// `pg_table_is_visible(id)`: on the search path (public and pg_catalog), so false for
/// information_schema's relations; false for NULL.
fn table_is_visible(id: BExpr, pos: Pos) -> Result<BExpr> {
    let hidden = all_tables().filter(|t| t.schema == SystemSchema::InformationSchema);
    let hidden: Vec<(i32, Value)> = hidden.map(|t| (system_oid(t.schema, t.name), Value::Bool(false))).collect();
    let id = oid_arg(id, pos)?;
    let visible = case_by_oid(id.clone(), hidden, DataType::Bool, pos)?;
    let not_null = BExpr::IsNull { expr: Box::new(id), negated: true };
    Ok(coalesce_bool(visible, not_null))
}

/// `a[i]` of a constant array of names (`(current_schemas(true))[1]`), from 1; NULL past its
/// `pg_get_indexdef(oid [, column, pretty])`: an index's `CREATE INDEX` text, or with a
/// column number its key column's name (0: the whole text; past its columns, empty); NULL
/// for an id that is no index the session may see.
fn index_definition(args: Vec<BExpr>, ctx: &CatalogContext, pos: Pos) -> Result<BExpr> {
    let indexes = system::pg_catalog::visible_indexes(ctx);
    let oid = |t: &str, d: &zepto_storage::IndexDef| system::pg_catalog::index_oid(t, d.name());
    let defs: Vec<(i32, String)> =
        indexes.iter().map(|(t, d, _, _)| (oid(t, d), system::pg_catalog::index_definition(t, d))).collect();
    let mut args = args.into_iter();
    let id = args.next().unwrap_or(BExpr::Lit(Value::Null, DataType::Null));
    let Some(column) = args.next() else {
        return by_oid(id, defs.into_iter(), pos);
    };
    let columns = indexes.iter().map(|(t, d, _, _)| (oid(t, d), d.column().to_string()));
    let column = cast_to(column, DataType::Int64)?;
    let int = |k: i64| BExpr::Lit(Value::Int64(k), DataType::Int64);
    let whole = bind_binary(BinaryOp::Eq, column.clone(), int(0), pos)?;
    let first = bind_binary(BinaryOp::Eq, column.clone(), int(1), pos)?;
    let some = bind_binary(BinaryOp::Gt, column, int(1), pos)?;
    let e = case(
        vec![
            (whole, by_oid(id.clone(), defs.into_iter(), pos)?),
            (first, by_oid(id.clone(), columns, pos)?),
            (some, text("")),
        ],
        DataType::Varchar,
    );
    crate::plan::bind_expr::fold(e)
}

/// `current_setting(name [, missing_ok])` of a constant name: the setting's value as
/// `pg_settings` shows it; an unknown name is an error unless `missing_ok` (then NULL).
fn current_setting(args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    let missing_ok = matches!(args.get(1), Some(BExpr::Lit(Value::Bool(true), _)));
    let Some(BExpr::Lit(Value::Str(name), _)) = args.first() else {
        return Err(SqlError::NotSupported("current_setting() of anything but a constant name".into()));
    };
    match crate::system::pg_catalog::setting(name) {
        Some(v) => Ok(text(v)),
        None if missing_ok => Ok(BExpr::Lit(Value::Null, DataType::Varchar)),
        None => Err(SqlError::plan(format!("unrecognized configuration parameter \"{name}\""), Some(pos))),
    }
}

fn first(args: Vec<BExpr>) -> BExpr {
    args.into_iter().next().unwrap_or(BExpr::Lit(Value::Null, DataType::Null))
}

/// The text named for `id` among `names` (NULL for any other id).
fn by_oid(id: BExpr, names: impl Iterator<Item = (i32, String)>, pos: Pos) -> Result<BExpr> {
    let id = oid_arg(id, pos)?;
    case_by_oid(id, names.map(|(o, n)| (o, Value::Str(n))).collect(), DataType::Varchar, pos)
}

/// The value given for `id` among `values` (NULL for any other id): a constant for a constant
/// id, else a CASE over the ids.
fn case_by_oid(id: BExpr, values: Vec<(i32, Value)>, ty: DataType, pos: Pos) -> Result<BExpr> {
    if let BExpr::Lit(v, _) = &id {
        let found = v.as_i64().and_then(|x| values.iter().find(|(o, _)| i64::from(*o) == x));
        return Ok(BExpr::Lit(found.map_or(Value::Null, |(_, v)| v.clone()), ty));
    }
    let mut whens = Vec::with_capacity(values.len());
    for (oid, v) in values {
        let is = bind_binary(BinaryOp::Eq, id.clone(), BExpr::Lit(Value::Int32(oid), DataType::Int32), pos)?;
        whens.push((is, BExpr::Lit(v, ty)));
    }
    Ok(case(whens, ty))
}

/// `a` where it is not NULL, else `b` (both BOOLEAN).
fn coalesce_bool(a: BExpr, b: BExpr) -> BExpr {
    let a_null = BExpr::IsNull { expr: Box::new(a.clone()), negated: false };
    BExpr::Case { whens: vec![(a_null, b)], else_: Some(Box::new(a)), ty: DataType::Bool }
}

/// An object id argument: an integer (or NULL), or a string literal of one.
fn oid_arg(id: BExpr, pos: Pos) -> Result<BExpr> {
    match id.data_type() {
        t if t.is_integer() => Ok(id),
        DataType::Null => cast_to(id, DataType::Int32),
        t if t.is_string() => cast_to(id, DataType::Int64),
        t => Err(SqlError::plan(format!("an object id is an integer, not {t}"), Some(pos))),
    }
}

fn case(whens: Vec<(BExpr, BExpr)>, ty: DataType) -> BExpr {
    BExpr::Case { whens, else_: None, ty }
}

/// `pg_table_size(oid)` and its kin: `bytes(table)` for a table the session may read (its
/// column data in memory: `pg_table_size`, `pg_relation_size` and `pg_total_relation_size`
/// alike, as ZeptoDB keeps no TOAST, free space map or index beside it; NULL for a tenant's
/// share of a table, whose columns hold every tenant's rows), 0 for a system table, NULL for
/// any other id (PostgreSQL's answer for a relation that does not exist).
fn relation_bytes(
    id: BExpr,
    ctx: &CatalogContext,
    bytes: impl Fn(&zepto_storage::Table) -> Option<usize>,
    pos: Pos,
) -> Result<BExpr> {
    let id = oid_arg(id, pos)?;
    let size = |n: Option<usize>| n.map_or(Value::Null, |n| Value::Int64(i64::try_from(n).unwrap_or(i64::MAX)));
    let user = user_tables(ctx).into_iter().filter_map(|(name, _)| {
        let t = ctx.table(&name)?;
        Some((table_oid(&name), size(bytes(&t))))
    });
    let system = all_tables().map(|t| (system_oid(t.schema, t.name), Value::Int64(0)));
    case_by_oid(id, user.chain(system).collect(), DataType::Int64, pos)
}

/// `pg_database_size(name or oid)`: the column data of every table the session may read (a
/// tenant's share of a table not counted, [`relation_bytes`]), for this database; NULL for
/// any other.
fn database_size(db: BExpr, ctx: &CatalogContext, pos: Pos) -> Result<BExpr> {
    let total: usize = user_tables(ctx)
        .into_iter()
        .filter_map(|(name, _)| ctx.table(&name))
        .filter_map(|t| crate::system::extent::visible_bytes(ctx.catalog, &t, ctx.access))
        .sum();
    let total = Value::Int64(i64::try_from(total).unwrap_or(i64::MAX));
    if db.data_type().is_string() {
        let is = bind_binary(BinaryOp::Eq, db, text(DATABASE), pos)?;
        return crate::plan::bind_expr::fold(case(vec![(is, BExpr::Lit(total, DataType::Int64))], DataType::Int64));
    }
    case_by_oid(oid_arg(db, pos)?, vec![(DATABASE_OID, total)], DataType::Int64, pos)
}

/// `x::regclass` and `to_regclass(x)`: a relation's name from its id, or its id from its name.
fn relation(x: BExpr, ctx: &CatalogContext, lenient: bool, pos: Pos) -> Result<BExpr> {
    let user = user_tables(ctx).into_iter().map(|(n, _)| (table_oid(&n), n));
    let system = all_tables().map(|t| (system_oid(t.schema, t.name), format!("{}.{}", t.schema.name(), t.name)));
    let relations: Vec<(i32, String)> = user.chain(system).collect();
    named_object(x, &relations, "relation", lenient, pos)
}

/// An object of `objects` (id, name) looked up both ways: an id (an integer) gives its name,
/// a name (text) its id. An unknown name is an error naming `what`, or NULL when `lenient`
/// (the `to_reg*` functions).
fn named_object(x: BExpr, objects: &[(i32, String)], what: &str, lenient: bool, pos: Pos) -> Result<BExpr> {
    if x.data_type().is_integer() {
        return by_oid(x, objects.iter().cloned(), pos);
    }
    let x = if x.data_type().is_string() { x } else { cast_to(x, DataType::Varchar)? };
    if let BExpr::Lit(v, _) = &x {
        let Value::Str(name) = v else {
            return Ok(BExpr::Lit(Value::Null, DataType::Int32));
        };
        return match lookup(objects, name) {
            Some(oid) => Ok(BExpr::Lit(Value::Int32(oid), DataType::Int32)),
            None if lenient => Ok(BExpr::Lit(Value::Null, DataType::Int32)),
            None if what == "relation" => Err(SqlError::TableNotFound { name: name.clone(), pos: Some(pos) }),
            None => Err(SqlError::plan(format!("{what} \"{name}\" does not exist"), Some(pos))),
        };
    }
    let mut whens = Vec::with_capacity(objects.len());
    for (oid, n) in objects {
        let is = bind_binary(BinaryOp::Eq, x.clone(), BExpr::Lit(Value::Str(n.clone()), DataType::Varchar), pos)?;
        whens.push((is, BExpr::Lit(Value::Int32(*oid), DataType::Int32)));
    }
    Ok(case(whens, DataType::Int32))
}

/// The id of the object `name` names (PostgreSQL's spelling: `t`, `public.t`, `"T"`,
/// `pg_class` or `pg_catalog.pg_class`; parts in any case).
fn lookup(objects: &[(i32, String)], name: &str) -> Option<i32> {
    let unquoted = name.trim().replace('"', "");
    let wanted = unquoted.strip_prefix("public.").unwrap_or(&unquoted);
    let matches = |n: &str| {
        let in_search_path = n.strip_prefix("pg_catalog.").unwrap_or(n);
        n.eq_ignore_ascii_case(wanted) || in_search_path.eq_ignore_ascii_case(wanted)
    };
    objects.iter().find(|(_, n)| matches(n)).map(|(o, _)| *o)
}
