//! The metadata commands: the tables a caller may see (`GetTables`, with their Arrow schemas
//! when asked) and the one table type, `TABLE`. ZeptoDB has no catalogs or schemas: tables
//! are listed under the empty catalog and schema names.

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_flight::sql::CommandGetTables;
use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;
use tonic::Status;
use zepto_sql::Engine;
use zepto_storage::Column;

/// The tables `engine`'s caller may see that `query` asks for.
pub(crate) fn tables(engine: &Engine, query: CommandGetTables) -> Result<RecordBatch, Status> {
    let r = engine.execute("SHOW TABLES").map_err(|e| crate::run::status(&e))?;
    let batch = r.batch();
    let names: Vec<String> = match batch.columns.first() {
        Some(c) => (0..batch.rows).map(|i| c.get(i).to_string()).collect(),
        None => Vec::new(),
    };
    let mut builder = query.into_builder();
    for name in names {
        let Ok(snap) = engine.catalog().snapshot(&name) else { continue };
        let cols: Vec<String> = snap.schema().columns.iter().map(|c| c.name.clone()).collect();
        let empty: Vec<Column> = snap.schema().columns.iter().map(|c| Column::nulls(c.data_type, 0)).collect();
        let refs: Vec<&Column> = empty.iter().collect();
        let b = zepto_io::ipc::record_batch(&cols, &refs, 0).map_err(|e| Status::internal(e.to_string()))?;
        let schema = crate::run::hydrated(&b.schema());
        builder.append("", "", &name, "TABLE", &schema).map_err(|e| Status::internal(e.to_string()))?;
    }
    builder.build().map_err(|e| Status::internal(e.to_string()))
}

/// The table types: `TABLE` alone.
pub(crate) fn table_types() -> Result<RecordBatch, Status> {
    let schema = Arc::new(Schema::new(vec![Field::new("table_type", DataType::Utf8, false)]));
    let col: ArrayRef = Arc::new(StringArray::from(vec!["TABLE"]));
    RecordBatch::try_new(schema, vec![col]).map_err(|e| Status::internal(e.to_string()))
}
