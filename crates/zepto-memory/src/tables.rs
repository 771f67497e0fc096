//! The two tables the memory layer keeps, as ordinary tables anyone with access may query with
//! SQL: `ai_memories` and `ai_cache`. Both are partitioned by `tenant_id` (so a tenant's reads
//! touch only its partitions) and ordered by `created_at` (so "what was known at t" and a
//! lookup by id, whose time is inside the id, are binary searches). Each has an HNSW index on
//! its `embedding` column, whose dimension the first embedding stored fixes.
//!
//! The tables are created on first use. One that exists already (made by an earlier run, or
//! by a user ahead of time to choose the dimension) must have the columns below.

use crate::error::{MemoryError, Result};
use zepto_sql::interrupt::RunContext;
use zepto_sql::Engine;
use zepto_storage::{ColumnDef, DataType, Schema, Table, TableOptions, Value};

/// One of the layer's tables.
#[derive(Debug)]
pub struct Spec {
    /// Its name.
    pub name: &'static str,
    /// Its columns; the vector column's dimension is a placeholder (0).
    pub columns: &'static [(&'static str, DataType)],
    /// The name of the HNSW index on `embedding`.
    pub index: &'static str,
}

const V: DataType = DataType::Vector(0);

/// `ai_memories`: one row per memory.
pub const MEMORIES: Spec = Spec {
    name: "ai_memories",
    columns: &[
        ("created_at", DataType::Timestamp),
        ("tenant_id", DataType::Symbol),
        ("memory_id", DataType::Varchar),
        ("namespace", DataType::Symbol),
        ("user_id", DataType::Symbol),
        ("session_id", DataType::Symbol),
        ("agent_id", DataType::Symbol),
        ("type", DataType::Symbol),
        ("content", DataType::Varchar),
        ("metadata", DataType::Varchar),
        ("embedding", V),
        ("token_count", DataType::Int64),
        ("importance", DataType::Float64),
        ("pinned", DataType::Bool),
        ("expires_at", DataType::Timestamp),
        ("last_accessed_at", DataType::Timestamp),
        ("access_count", DataType::Int64),
    ],
    index: "ai_memories_embedding",
};

/// `ai_cache`: one row per cached answer.
pub const CACHE: Spec = Spec {
    name: "ai_cache",
    columns: &[
        ("created_at", DataType::Timestamp),
        ("tenant_id", DataType::Symbol),
        ("entry_id", DataType::Varchar),
        ("prompt", DataType::Varchar),
        ("prompt_norm", DataType::Varchar),
        ("response", DataType::Varchar),
        ("metadata", DataType::Varchar),
        ("embedding", V),
        ("expires_at", DataType::Timestamp),
        ("hits", DataType::Int64),
        ("last_hit_at", DataType::Timestamp),
    ],
    index: "ai_cache_embedding",
};

impl Spec {
    /// The position of column `name` (a name of this spec).
    pub fn col(&self, name: &str) -> usize {
        let i = self.columns.iter().position(|(n, _)| *n == name);
        debug_assert!(i.is_some(), "{name} is not a column of {}", self.name);
        i.unwrap_or(0)
    }

    /// `a, b, c`: every column, or every one but `embedding`.
    pub fn select_list(&self, with_embedding: bool) -> String {
        let names: Vec<&str> =
            self.columns.iter().map(|(n, _)| *n).filter(|n| with_embedding || *n != "embedding").collect();
        names.join(", ")
    }

    /// The dimension of the table's embeddings; `None` when the table does not exist yet. A
    /// table of that name whose columns differ from the spec is an error.
    pub fn dim(&self, engine: &Engine) -> Result<Option<u16>> {
        let Ok(t) = engine.catalog().snapshot(self.name) else {
            return Ok(None);
        };
        let cols = &t.schema().columns;
        let same = cols.len() == self.columns.len()
            && cols.iter().zip(self.columns).all(|(c, (n, dt))| {
                c.name.eq_ignore_ascii_case(n)
                    && (c.data_type == *dt || (*dt == V && c.data_type.vector_dim().is_some()))
            });
        if !same {
            return Err(MemoryError::bad(
                "body",
                format!("table {} exists with other columns than the memory layer's (drop or rename it)", self.name),
            ));
        }
        Ok(cols.get(self.col("embedding")).and_then(|c| c.data_type.vector_dim()).and_then(|d| u16::try_from(d).ok()))
    }

    /// The table's dimension, creating the table (with `dim`) and its index if it does not
    /// exist yet.
    pub fn ensure(&self, engine: &Engine, run: &RunContext, dim: u16) -> Result<u16> {
        if let Some(d) = self.dim(engine)? {
            return Ok(d);
        }
        let vector = DataType::vector(usize::from(dim))
            .ok_or_else(|| MemoryError::bad("embedding", "dimension out of range"))?;
        let columns = self
            .columns
            .iter()
            .map(|(n, dt)| ColumnDef { name: (*n).to_string(), data_type: if *dt == V { vector } else { *dt } })
            .collect();
        let opts = TableOptions {
            partition_key: Some("tenant_id".into()),
            timestamp: Some("created_at".into()),
            ..Default::default()
        };
        let table = Table::new(self.name, Schema { columns }, &opts)?;
        engine.catalog().create(table, true)?;
        let sql = format!(
            "CREATE INDEX IF NOT EXISTS {} ON {} USING HNSW (embedding) WITH (metric = 'cosine')",
            self.index, self.name
        );
        engine.execute_in(run, &sql)?;
        self.dim(engine)?.ok_or_else(|| MemoryError::bad("body", format!("table {} was dropped meanwhile", self.name)))
    }
}

/// Reads the rows of a result by column position.
pub struct Rows {
    batch: zepto_sql::exec::Batch,
}

impl Rows {
    /// The rows of `r` (one batch).
    pub fn new(r: &zepto_sql::QueryResult) -> Rows {
        Rows { batch: r.batch() }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.batch.rows
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.batch.rows == 0
    }

    fn get(&self, c: usize, i: usize) -> Value {
        if i >= self.batch.rows {
            return Value::Null;
        }
        self.batch.columns.get(c).map_or(Value::Null, |col| col.get(i))
    }

    /// Text (VARCHAR or SYMBOL), `None` for NULL.
    pub fn text(&self, c: usize, i: usize) -> Option<String> {
        match self.get(c, i) {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An integer or timestamp, `None` for NULL.
    pub fn int(&self, c: usize, i: usize) -> Option<i64> {
        self.get(c, i).as_i64()
    }

    /// A number, `None` for NULL.
    pub fn float(&self, c: usize, i: usize) -> Option<f64> {
        self.get(c, i).as_f64()
    }

    /// A boolean (NULL is false).
    pub fn bool(&self, c: usize, i: usize) -> bool {
        matches!(self.get(c, i), Value::Bool(true))
    }

    /// A vector, `None` for NULL.
    pub fn vector(&self, c: usize, i: usize) -> Option<Vec<f32>> {
        match self.get(c, i) {
            Value::Vector(v) => Some(v),
            _ => None,
        }
    }

    /// A timestamp as ISO-8601 text with nanoseconds, `None` for NULL.
    pub fn time(&self, c: usize, i: usize) -> Option<String> {
        self.int(c, i).map(zepto_storage::time::format_timestamp_iso)
    }
}

/// Metadata text back to JSON (stored text that is not JSON comes back as a string).
pub fn metadata_json(text: Option<String>) -> serde_json::Value {
    match text {
        None => serde_json::Value::Null,
        Some(t) => serde_json::from_str(&t).unwrap_or(serde_json::Value::String(t)),
    }
}
