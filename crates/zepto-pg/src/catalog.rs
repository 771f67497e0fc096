//! The few catalog queries still answered here rather than by the engine's catalogs
//! (`information_schema`, `pg_catalog`, which every other query of psql, SQLAlchemy, psycopg
//! and pgjdbc runs on): psql's `\d NAME` queries about objects ZeptoDB has none of (policies,
//! extended statistics, publications, inheritance), written in PostgreSQL-only SQL the engine
//! does not run (arrays built from subqueries). They get no rows, in the columns psql reads.
//!
//! Tables have the object ids `pg_catalog.pg_class` gives them, all in schema `public`.

use postgres_types::Type;
use zepto_storage::DataType;

/// A catalog answer: its columns and rows (values as PostgreSQL's text; `None` is NULL).
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// Column names and types.
    pub columns: Vec<(String, Type)>,
    /// The rows.
    pub rows: Vec<Vec<Option<String>>>,
}

impl Rows {
    /// No rows, `n` text columns (named `c1`, `c2`, ...).
    fn empty(n: usize) -> Rows {
        Rows { columns: (1..=n).map(|i| (format!("c{i}"), Type::TEXT)).collect(), rows: Vec::new() }
    }
}

/// The object id of table `name` (`pg_class.oid`).
pub fn table_oid(name: &str) -> i32 {
    zepto_sql::system::pg_catalog::table_oid(name)
}

/// PostgreSQL's name of a column type (`format_type`).
pub fn type_name(dt: DataType) -> &'static str {
    zepto_sql::system::pg_names(dt).format
}

/// The answer to `folded` (the query folded by [`crate::session::fold`]) if it is one of
/// psql's `\d NAME` queries about objects ZeptoDB has none of and whose PostgreSQL-only SQL
/// (arrays built from subqueries, `unnest`) the engine does not run: no rows, in the columns
/// psql reads. Every other catalog query runs on the engine's catalogs.
pub fn answer(folded: &str) -> Option<Rows> {
    let none = [
        ("from pg_catalog.pg_policy pol", 6),
        ("from pg_catalog.pg_statistic_ext", 9),
        ("from pg_catalog.pg_publication p", 3),
        ("select c.oid::pg_catalog.regclass from pg_catalog.pg_class c, pg_catalog.pg_inherits i", 1),
        ("select c.oid::pg_catalog.regclass, c.relkind, inhdetachpending", 4),
    ];
    none.iter().find(|(frag, _)| folded.contains(frag)).map(|(_, n)| Rows::empty(*n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_psqls_queries_about_missing_objects_are_answered_here() {
        let policies = "select pol.polname, pol.polpermissive from pg_catalog.pg_policy pol where pol.polrelid = '1'";
        assert_eq!(answer(policies).map(|r| (r.columns.len(), r.rows.len())), Some((6, 0)));
        assert_eq!(answer("select relname from pg_catalog.pg_class"), None);
        assert_ne!(table_oid("trades"), table_oid("quotes"));
        assert_eq!(table_oid("Trades"), table_oid("trades"));
    }
}
