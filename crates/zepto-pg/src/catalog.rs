//! Answers to the catalog queries clients send to list tables and columns, recognized by
//! their shape and answered from ZeptoDB's catalog (ZeptoDB has no `pg_catalog` schema to run
//! them on): psql's `\dt`, `\d` and `\d NAME`; SQLAlchemy's table listing and `has_table`
//! (which pandas `read_sql` asks first); psycopg's and pgjdbc's type lookups. A recognized
//! query about something ZeptoDB does not have (policies, publications, inheritance) gets no
//! rows, with the columns the client reads. Everything else goes to the engine.
//!
//! Tables have stable object ids (a hash of the name from 16384 up), all in schema `public`.

use postgres_types::Type;
use zepto_storage::{DataType, Table};

/// A catalog answer: its columns and rows (values as PostgreSQL's text; `None` is NULL).
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// Column names and types.
    pub columns: Vec<(String, Type)>,
    /// The rows.
    pub rows: Vec<Vec<Option<String>>>,
}

impl Rows {
    fn new(columns: &[(&str, Type)]) -> Rows {
        Rows { columns: columns.iter().map(|(n, t)| (n.to_string(), t.clone())).collect(), rows: Vec::new() }
    }

    /// No rows, `n` text columns (named `c1`, `c2`, ...).
    fn empty(n: usize) -> Rows {
        Rows { columns: (1..=n).map(|i| (format!("c{i}"), Type::TEXT)).collect(), rows: Vec::new() }
    }

    fn push(&mut self, row: &[&str]) {
        self.rows.push(row.iter().map(|v| Some(v.to_string())).collect());
    }
}

/// The object id of table `name`.
pub fn table_oid(name: &str) -> u32 {
    let h = name.to_ascii_lowercase().bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    16_384 + h % 1_000_000_000
}

/// PostgreSQL's name of a column type (`format_type`).
pub fn type_name(dt: DataType) -> &'static str {
    zepto_sql::system::pg_names(dt).format
}

/// The answer to `folded` (the query folded by [`crate::session::fold`]) with its parameters
/// as text, from `tables` (those the caller may see), if it is a catalog query we know.
pub fn answer(folded: &str, params: &[String], tables: &[std::sync::Arc<Table>], user: &str) -> Option<Rows> {
    let q = folded;
    if q.contains("to_regtype(") && q.contains("from pg_type") {
        return Some(Rows::new(&[
            ("name", Type::TEXT),
            ("oid", Type::OID),
            ("array_oid", Type::OID),
            ("regtype", Type::TEXT),
            ("delimiter", Type::TEXT),
        ]));
    }
    if q.contains("from pg_catalog.pg_type t join pg_catalog.pg_namespace n on t.typnamespace = n.oid where t.oid =") {
        return Some(type_lookup(params));
    }
    if q.contains("pg_catalog.pg_class.relname") {
        return Some(sqlalchemy_tables(q, params, tables));
    }
    if q.contains("pg_catalog.pg_get_userbyid(c.relowner) as \"owner\"") {
        return Some(psql_list(tables, user));
    }
    if q.starts_with("select c.oid, n.nspname, c.relname from pg_catalog.pg_class c") {
        return Some(psql_lookup(q, tables));
    }
    psql_describe(q, tables)
}

/// pgjdbc's lookup of a type by OID: (in search path, schema, name).
fn type_lookup(params: &[String]) -> Rows {
    let mut r = Rows::new(&[("onpath", Type::BOOL), ("nspname", Type::TEXT), ("typname", Type::TEXT)]);
    let names = [
        (16, "bool"),
        (20, "int8"),
        (23, "int4"),
        (25, "text"),
        (700, "float4"),
        (701, "float8"),
        (1021, "_float4"),
        (1082, "date"),
        (1114, "timestamp"),
        (1186, "interval"),
    ];
    let oid = params.first().and_then(|p| p.trim().parse::<u32>().ok());
    if let Some((_, name)) = names.iter().find(|(o, _)| Some(*o) == oid) {
        r.push(&["t", "pg_catalog", name]);
    }
    r
}

/// SQLAlchemy's `get_table_names` and `has_table` (`relname IN ($n)`): the names of the
/// tables, or of those named among the parameters.
fn sqlalchemy_tables(q: &str, params: &[String], tables: &[std::sync::Arc<Table>]) -> Rows {
    let mut r = Rows::new(&[("relname", Type::TEXT)]);
    let only = q.contains("relname in (");
    for t in tables.iter().filter(|t| !only || params.iter().any(|p| p == t.name())) {
        r.push(&[t.name()]);
    }
    r
}

/// psql's `\dt` and `\d`: Schema, Name, Type, Owner.
fn psql_list(tables: &[std::sync::Arc<Table>], user: &str) -> Rows {
    let mut r = Rows::new(&[("Schema", Type::TEXT), ("Name", Type::TEXT), ("Type", Type::TEXT), ("Owner", Type::TEXT)]);
    for t in tables {
        r.push(&["public", t.name(), "table", user]);
    }
    r
}

/// psql's lookup of `\d NAME`: the tables matching its pattern (`'^(name)$'`, `.*` for `*`).
fn psql_lookup(q: &str, tables: &[std::sync::Arc<Table>]) -> Rows {
    let mut r = Rows::new(&[("oid", Type::OID), ("nspname", Type::TEXT), ("relname", Type::TEXT)]);
    let pattern = q.split_once("'^(").and_then(|(_, rest)| rest.split_once(")$'")).map(|(p, _)| p);
    for t in tables.iter().filter(|t| pattern.is_none_or(|p| matches(p, &t.name().to_lowercase()))) {
        r.push(&[&table_oid(t.name()).to_string(), "public", t.name()]);
    }
    r
}

/// The longest name pattern matched (a longer one matches nothing).
const MAX_PATTERN: usize = 1024;

/// Whether `name` matches psql's translation of a name pattern: literal text, `.` (any one
/// character) and `.*` (any run). Iterative, remembering only the last `.*` to back up to:
/// time proportional to the pattern's length times the name's, never recursion.
fn matches(pattern: &str, name: &str) -> bool {
    if pattern.len() > MAX_PATTERN {
        return false;
    }
    #[derive(PartialEq)]
    enum Tok {
        Any,
        One,
        Char(char),
    }
    let mut toks: Vec<Tok> = Vec::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        let t = match c {
            '.' if chars.peek() == Some(&'*') => {
                chars.next();
                Tok::Any
            }
            '.' => Tok::One,
            c => Tok::Char(c),
        };
        if !(t == Tok::Any && toks.last() == Some(&Tok::Any)) {
            toks.push(t);
        }
    }
    let s: Vec<char> = name.chars().collect();
    let (mut p, mut i, mut star): (usize, usize, Option<(usize, usize)>) = (0, 0, None);
    while i < s.len() {
        match toks.get(p) {
            Some(Tok::Any) => {
                star = Some((p, i));
                p += 1;
            }
            Some(Tok::One) => (p, i) = (p + 1, i + 1),
            Some(Tok::Char(c)) if s.get(i) == Some(c) => (p, i) = (p + 1, i + 1),
            _ => match star {
                Some((sp, si)) => {
                    (p, i) = (sp + 1, si + 1);
                    star = Some((sp, si + 1));
                }
                None => return false,
            },
        }
    }
    toks.get(p..).is_some_and(|rest| rest.iter().all(|t| *t == Tok::Any))
}

/// psql's queries about one table (`WHERE c.oid = '16385'` and the like): its flags, its
/// columns; none of the rest exists here.
fn psql_describe(q: &str, tables: &[std::sync::Arc<Table>]) -> Option<Rows> {
    let table = |t: &&std::sync::Arc<Table>| q.contains(&format!("'{}'", table_oid(t.name())));
    if q.starts_with("select c.relchecks, c.relkind") {
        let mut r = Rows::empty(15);
        if tables.iter().any(|t| table(&t)) {
            r.push(&["0", "r", "f", "f", "f", "f", "f", "f", "f", "", "0", "", "p", "d", "heap"]);
        }
        return Some(r);
    }
    if q.starts_with("select a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)") {
        let mut r = Rows::empty(7);
        if let Some(t) = tables.iter().find(table) {
            for c in &t.schema().columns {
                r.rows.push(vec![
                    Some(c.name.clone()),
                    Some(type_name(c.data_type).into()),
                    None,
                    Some("f".into()),
                    None,
                    Some(String::new()),
                    Some(String::new()),
                ]);
            }
        }
        return Some(r);
    }
    let none = [
        ("from pg_catalog.pg_policy pol", 6),
        ("from pg_catalog.pg_statistic_ext", 9),
        ("from pg_catalog.pg_publication p", 3),
        ("select c.oid::pg_catalog.regclass from pg_catalog.pg_class c, pg_catalog.pg_inherits i", 1),
        ("select c.oid::pg_catalog.regclass, c.relkind, inhdetachpending", 4),
    ];
    none.iter().find(|(frag, _)| q.contains(frag)).map(|(_, n)| Rows::empty(*n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psql_patterns_match_like_psql() {
        assert!(matches("trades", "trades"));
        assert!(!matches("trades", "trades2"));
        assert!(matches("tr.*", "trades") && matches(".*des", "trades") && matches("t.ades", "trades"));
        assert!(!matches("q.*", "trades"));
        assert!(matches(".*a.*e.*", "trades") && !matches(".*a.*z.*", "trades"));
        assert!(matches("", "") && !matches("", "t") && matches(".*", ""));
        // A hostile pattern: no backtracking blow-up, no recursion, a long one refused.
        let hostile = format!("{}x", ".*".repeat(400));
        let t0 = std::time::Instant::now();
        assert!(!matches(&hostile, &"trades".repeat(20)));
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        assert!(!matches(&".*".repeat(100_000), "trades"), "over MAX_PATTERN");
        assert_ne!(table_oid("trades"), table_oid("quotes"));
        assert_eq!(table_oid("Trades"), table_oid("trades"));
    }
}
