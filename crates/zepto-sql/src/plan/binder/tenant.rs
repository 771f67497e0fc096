//! The tenant scope's filter (the rule is in [`crate::access`]): the predicate
//! `tenant_id = '<tenant>'` over a table's columns in schema order. The binder puts it
//! directly over every scan of a scoped table (so the optimizer pushes it into the scan like a
//! WHERE, and the operators that take a filtered scan apply it before any other filter), and
//! DELETE and UPDATE choose their rows among those it keeps.

use crate::access::TableAccess;
use crate::error::{Pos, Result};
use crate::parser::ast::BinaryOp;
use crate::plan::bind_expr::{bind_binary, cast_to};
use crate::plan::BExpr;
use zepto_storage::{DataType, Schema, Value};

/// The scope's predicate over a table of `schema` (column `i` is `BExpr::Col(i)`), when
/// `access` is scoped to a tenant and the table has a `tenant_id` column; `None` otherwise.
/// A string `tenant_id` is compared as it is (what a WHERE on it binds to, so the optimizer
/// treats both alike); any other type as `CAST(tenant_id AS VARCHAR)`.
pub(crate) fn scope_filter(access: &TableAccess, schema: &Schema) -> Result<Option<BExpr>> {
    let Some((tenant, i)) = access.scope_of(schema) else { return Ok(None) };
    let ty = schema.columns[i].data_type;
    let col = BExpr::Col(i, ty);
    let col = if ty.is_string() { col } else { cast_to(col, DataType::Varchar)? };
    let lit = BExpr::Lit(Value::Str(tenant.to_string()), DataType::Varchar);
    bind_binary(BinaryOp::Eq, col, lit, Pos::default()).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::ColumnDef;

    fn schema(tenant_type: DataType) -> Schema {
        let col = |name: &str, data_type| ColumnDef { name: name.into(), data_type };
        Schema { columns: vec![col("ts", DataType::Timestamp), col("TENANT_ID", tenant_type)] }
    }

    #[test]
    fn a_string_tenant_id_is_compared_as_a_where_would() {
        let a = TableAccess::all().with_tenant("a");
        let p = scope_filter(&a, &schema(DataType::Symbol)).expect("binds").expect("scoped");
        let BExpr::Binary { op: BinaryOp::Eq, left, right, .. } = p else { panic!("an equality: {p:?}") };
        assert!(matches!(*left, BExpr::Col(1, DataType::Symbol)));
        assert!(matches!(*right, BExpr::Lit(Value::Str(ref s), _) if s == "a"));
        // Other types compare as text; no scope, or no such column, no filter.
        let p = scope_filter(&a, &schema(DataType::Int64)).expect("binds").expect("scoped");
        assert!(matches!(p, BExpr::Binary { ref left, .. } if matches!(**left, BExpr::Cast { .. })));
        assert!(scope_filter(&TableAccess::all(), &schema(DataType::Symbol)).expect("binds").is_none());
        let plain = Schema { columns: vec![ColumnDef { name: "x".into(), data_type: DataType::Symbol }] };
        assert!(scope_filter(&a, &plain).expect("binds").is_none());
    }
}
