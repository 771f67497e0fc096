//! What the catalogs (`/tables`, `pg_class`, `pg_table_size`) report of a table to a session:
//! its rows, partitions and bytes, or for a session scoped to a tenant only the tenant's share
//! (`crate::access` says how a scope filters rows; this counts them the same way).

use crate::access::TableAccess;
use crate::eval::cast::cast_value;
use zepto_storage::{Catalog, Column, ColumnData, DataType, Table, Value};

/// What a catalog reports of `table` to a session with `access` (`/tables`, `pg_class`): its
/// rows and the partitions holding them. All of the table's, unless the session is scoped to
/// a tenant and the table has a `tenant_id` column: then the tenant's rows and the partitions
/// holding any of them, counted as the scope filters rows (`tenant_id`, as text, equal to the
/// tenant), so a catalog never tells a scoped key another tenant's totals, or how many tenants
/// there are. A partition keyed by `tenant_id` is one tenant's: counted whole or not at all;
/// otherwise a SYMBOL `tenant_id` compares codes, other types each row's text. `None` for a
/// view the session may not read (its rows aggregate every tenant's).
pub fn visible_extent(catalog: &Catalog, table: &Table, access: &TableAccess) -> Option<Extent> {
    if refused(catalog, table, access) {
        return None;
    }
    let Some((tenant, c)) = access.scope_of(table.schema()) else {
        return Some(Extent { rows: table.row_count(), partitions: table.partitions().len() });
    };
    let keyed = table.key_col() == Some(c);
    let mut out = Extent { rows: 0, partitions: 0 };
    for p in table.partitions() {
        let (col, at) = p.source(c);
        let n = if keyed {
            // One tenant's partition: its first row says whose.
            p.len() * usize::from(tenant_rows(col, at..at + p.len().min(1), tenant) > 0)
        } else {
            tenant_rows(col, at..at + p.len(), tenant)
        };
        out.rows += n;
        out.partitions += usize::from(n > 0);
    }
    Some(out)
}

/// Whether `table` is a view a session scoped to a tenant may not read (its rows aggregate
/// every tenant's, [`crate::access::check_scoped_read`]): its size is theirs too.
fn refused(catalog: &Catalog, table: &Table, access: &TableAccess) -> bool {
    crate::access::check_scoped_read(catalog, access, table.name(), table.schema()).is_err()
}

/// The rows of `col` among `rows` whose value, as text, is `tenant` (NULL never is).
fn tenant_rows(col: &Column, rows: std::ops::Range<usize>, tenant: &str) -> usize {
    match col.data() {
        ColumnData::Symbol { codes, dict } => match (dict.code(tenant), codes.get(rows.clone())) {
            (Some(code), Some(v)) => (rows.start..).zip(v).filter(|&(i, &k)| k == code && col.is_valid(i)).count(),
            _ => 0,
        },
        ColumnData::Varchar(_) => rows.filter(|&i| col.str_at(i) == Some(tenant)).count(),
        _ => rows
            .filter(|&i| {
                cast_value(&col.get(i), DataType::Varchar, true)
                    .is_ok_and(|v| matches!(&v, Value::Str(s) if s == tenant))
            })
            .count(),
    }
}

/// The bytes a catalog reports for `table` (`pg_table_size` and its kin): its columns in
/// memory, or `None` for a table the session sees only its tenant's share of (the columns
/// hold every tenant's rows; [`visible_extent`]) or a view it may not read.
pub fn visible_bytes(catalog: &Catalog, table: &Table, access: &TableAccess) -> Option<usize> {
    let whole = access.scope_of(table.schema()).is_none() && !refused(catalog, table, access);
    whole.then(|| table.data_bytes())
}

/// A table as a session's catalogs report it ([`visible_extent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Rows the session sees.
    pub rows: usize,
    /// Partitions holding any of them.
    pub partitions: usize,
}
