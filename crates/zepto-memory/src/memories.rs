//! Putting, reading and deleting memories, and making room under a tenant's quota.

use crate::api::{MemoryRecord, PutRequest};
use crate::error::{MemoryError, Result};
use crate::query::Where;
use crate::rank::Weights;
use crate::store::{affected, AgentMemory};
use crate::tables::{metadata_json, Rows, MEMORIES};
use crate::tenant::TenantSources;
use crate::text::{estimate_tokens, id_time};
use crate::validate;
use zepto_sql::interrupt::RunContext;
use zepto_sql::ParamValue;
use zepto_storage::{Column, ColumnBuilder, Value};

/// A put, checked and ready to store.
struct NewMemory {
    row: Vec<Value>,
    id: String,
}

/// Prefix the field of an error with the item's place in a batch.
fn in_item(i: Option<usize>, e: MemoryError) -> MemoryError {
    match (i, e) {
        (Some(i), MemoryError::BadRequest { field, message }) => {
            MemoryError::BadRequest { field: format!("memories[{i}].{field}"), message }
        }
        (_, e) => e,
    }
}

fn opt_str(v: Option<&String>) -> Value {
    v.map_or(Value::Null, |s| Value::Str(s.clone()))
}

impl AgentMemory {
    /// `POST /api/ai/memories`: store records (all or none); returns their ids in order.
    pub fn put(&self, run: &RunContext, src: &TenantSources<'_>, reqs: &[PutRequest]) -> Result<Vec<String>> {
        if reqs.is_empty() {
            return Err(MemoryError::bad("memories", "is empty"));
        }
        let batch = reqs.len() > 1;
        let tenant = src.resolve(reqs.first().and_then(|r| r.tenant_id.as_deref()))?;
        let dim = match MEMORIES.dim(&self.engine)? {
            Some(d) => d,
            None => first_dim(reqs)?,
        };
        let mut rows = Vec::with_capacity(reqs.len());
        for (i, r) in reqs.iter().enumerate() {
            let at = batch.then_some(i);
            if src.resolve(r.tenant_id.as_deref()).map_err(|e| in_item(at, e))? != tenant {
                return Err(in_item(at, MemoryError::bad("tenant_id", "differs from the batch's tenant")));
            }
            rows.push(self.check_put(r, &tenant, dim).map_err(|e| in_item(at, e))?);
        }
        let _w = self.write_lock();
        if MEMORIES.ensure(&self.engine, run, dim)? != dim {
            return Err(MemoryError::bad("embedding", "the table was created meanwhile with another dimension"));
        }
        self.make_room(run, &tenant, rows.len())?;
        let ids = rows.iter().map(|r| r.id.clone()).collect();
        self.engine
            .catalog()
            .append(MEMORIES.name, columns(&self.engine, MEMORIES.name, rows.into_iter().map(|r| r.row))?)?;
        Ok(ids)
    }

    fn check_put(&self, r: &PutRequest, tenant: &str, dim: u16) -> Result<NewMemory> {
        let now = zepto_storage::time::now_ns();
        for (f, v) in [
            ("namespace", &r.namespace),
            ("user_id", &r.user_id),
            ("session_id", &r.session_id),
            ("agent_id", &r.agent_id),
            ("type", &r.kind),
        ] {
            validate::opt_name(f, v.as_deref())?;
        }
        let content = validate::text("content", r.content.as_deref(), self.config.max_text_bytes)?;
        let metadata = validate::metadata(r.metadata.as_ref(), self.config.max_metadata_bytes)?;
        let embedding = match &r.embedding {
            Some(e) => Value::Vector(validate::embedding_of("embedding", e, dim, MEMORIES.name)?),
            None => Value::Null,
        };
        let tokens = match r.token_count {
            Some(t) if t < 0 => return Err(MemoryError::bad("token_count", format!("{t} is negative"))),
            Some(t) => t,
            None => estimate_tokens(content),
        };
        let importance = validate::in_range("importance", r.importance.unwrap_or(0.5), 0.0, 1.0)?;
        let expires = validate::expiry(r.expires_at.as_ref(), r.ttl_seconds, now)?;
        let created = match &r.created_at {
            Some(t) => validate::time("created_at", t)?,
            None => self.tick(),
        };
        let id = self.ids.next('m', created);
        let row = vec![
            Value::Timestamp(created),
            Value::Str(tenant.to_string()),
            Value::Str(id.clone()),
            Value::Str(r.namespace.clone().unwrap_or_else(|| "default".into())),
            opt_str(r.user_id.as_ref()),
            opt_str(r.session_id.as_ref()),
            opt_str(r.agent_id.as_ref()),
            opt_str(r.kind.as_ref()),
            Value::Str(content.to_string()),
            Value::Str(metadata),
            embedding,
            Value::Int64(tokens),
            Value::Float64(importance),
            Value::Bool(r.pinned.unwrap_or(false)),
            expires.map_or(Value::Null, Value::Timestamp),
            Value::Timestamp(created),
            Value::Int64(0),
        ];
        Ok(NewMemory { row, id })
    }

    /// Evict so that `n` more records fit the tenant's quota: expired records first, then the
    /// lowest-scored unpinned ones. Refused, with nothing evicted, when that cannot make room.
    fn make_room(&self, run: &RunContext, tenant: &str, n: usize) -> Result<()> {
        let quota = self.config.max_memories_per_tenant;
        let now = zepto_storage::time::now_ns();
        let p = [ParamValue::Str(tenant.to_string()), ParamValue::Timestamp(now)];
        let r = self.sql(
            run,
            "SELECT count(*), sum(CASE WHEN expires_at <= $2 THEN 1 ELSE 0 END), \
             sum(CASE WHEN pinned AND (expires_at IS NULL OR expires_at > $2) THEN 1 ELSE 0 END) \
             FROM ai_memories WHERE tenant_id = $1",
            &p,
        )?;
        let r = Rows::new(&r);
        let count = |c| usize::try_from(r.int(c, 0).unwrap_or(0)).unwrap_or(0);
        let (total, expired, pinned) = (count(0), count(1), count(2));
        if total + n <= quota {
            return Ok(());
        }
        if pinned + n > quota {
            return Err(MemoryError::Quota(format!(
                "tenant '{tenant}' keeps at most {quota} memories and {pinned} of its {total} are pinned: {n} more do not fit"
            )));
        }
        if expired > 0 {
            self.sql(run, "DELETE FROM ai_memories WHERE tenant_id = $1 AND expires_at <= $2", &p)?;
        }
        let over = (total - expired + n).saturating_sub(quota);
        if over == 0 {
            return Ok(());
        }
        let score = Weights::default().sql(now, false);
        let victims = self.sql(
            run,
            &format!(
                "SELECT memory_id FROM ai_memories WHERE tenant_id = $1 AND NOT pinned \
                 ORDER BY {score} ASC, created_at ASC LIMIT {over}"
            ),
            &p[..1],
        )?;
        let v = Rows::new(&victims);
        let ids: Vec<String> = (0..v.len()).filter_map(|i| v.text(0, i)).collect();
        let mut w = Where::tenant(tenant);
        w.records('m', "memory_id", ids);
        self.sql(run, &format!("DELETE FROM ai_memories WHERE {}", w.sql()), w.params())?;
        Ok(())
    }

    /// The record `id` of the caller's tenant, as conditions (a binary search on the time the
    /// id carries); `None` when no such record can exist (a malformed id, no table yet).
    fn one_record(&self, src: &TenantSources<'_>, id: &str) -> Result<Option<Where>> {
        let tenant = src.resolve(None)?;
        if id_time('m', id).is_none() || MEMORIES.dim(&self.engine)?.is_none() {
            return Ok(None);
        }
        let mut w = Where::tenant(&tenant);
        w.records('m', "memory_id", [id.to_string()]);
        Ok(Some(w))
    }

    /// `GET /api/ai/memories/{id}`: one unexpired record of the caller's tenant.
    pub fn get(&self, run: &RunContext, src: &TenantSources<'_>, id: &str, embedding: bool) -> Result<MemoryRecord> {
        let missing = || MemoryError::NotFound(format!("no memory '{id}'"));
        let mut w = self.one_record(src, id)?.ok_or_else(missing)?;
        w.live(zepto_storage::time::now_ns());
        let list = MEMORIES.select_list(embedding);
        let r = self.sql(run, &format!("SELECT {list} FROM ai_memories WHERE {}", w.sql()), w.params())?;
        let rows = Rows::new(&r);
        let names: Vec<&str> = list.split(", ").collect();
        (!rows.is_empty()).then(|| record(&rows, 0, &names)).ok_or_else(missing)
    }

    /// `DELETE /api/ai/memories/{id}`.
    pub fn delete(&self, run: &RunContext, src: &TenantSources<'_>, id: &str) -> Result<()> {
        let missing = || MemoryError::NotFound(format!("no memory '{id}'"));
        let w = self.one_record(src, id)?.ok_or_else(missing)?;
        let _w = self.write_lock();
        let r = self.sql(run, &format!("DELETE FROM ai_memories WHERE {}", w.sql()), w.params())?;
        if affected(&r) == 0 {
            return Err(missing());
        }
        Ok(())
    }
}

/// The dimension the first embedding of a batch fixes (the table does not exist yet).
fn first_dim(reqs: &[PutRequest]) -> Result<u16> {
    let e = reqs.iter().find_map(|r| r.embedding.as_ref()).ok_or_else(|| {
        MemoryError::bad("embedding", "the first memory stored must carry an embedding: its length fixes the dimension")
    })?;
    u16::try_from(e.len())
        .ok()
        .filter(|d| *d > 0)
        .ok_or_else(|| MemoryError::bad("embedding", format!("has {} values; an embedding has 1 to 65535", e.len())))
}

/// Rows (in the table's column order) as the table's columns.
pub(crate) fn columns(
    engine: &zepto_sql::Engine,
    table: &str,
    rows: impl Iterator<Item = Vec<Value>>,
) -> Result<Vec<Column>> {
    let rows: Vec<Vec<Value>> = rows.collect();
    let table = engine.catalog().snapshot(table)?;
    build_columns(&table.schema().columns, &rows)
}

/// Rows of values as columns of `schema`.
pub(crate) fn build_columns(schema: &[zepto_storage::ColumnDef], rows: &[Vec<Value>]) -> Result<Vec<Column>> {
    let mut b: Vec<ColumnBuilder> = schema.iter().map(|c| ColumnBuilder::new(c.data_type, rows.len())).collect();
    for row in rows {
        debug_assert_eq!(row.len(), b.len(), "a row has one value per column");
        for (builder, v) in b.iter_mut().zip(row) {
            match v {
                Value::Null => builder.push_null(),
                v => builder.push_value(v)?,
            }
        }
    }
    Ok(b.into_iter().map(ColumnBuilder::finish).collect())
}

/// Row `i` of a result whose columns are `names` (a select list of `ai_memories`, then
/// possibly `similarity` and `score`).
pub(crate) fn record(rows: &Rows, i: usize, names: &[&str]) -> MemoryRecord {
    let c = |n: &str| names.iter().position(|x| *x == n).unwrap_or(usize::MAX);
    MemoryRecord {
        memory_id: rows.text(c("memory_id"), i).unwrap_or_default(),
        tenant_id: rows.text(c("tenant_id"), i).unwrap_or_default(),
        namespace: rows.text(c("namespace"), i),
        user_id: rows.text(c("user_id"), i),
        session_id: rows.text(c("session_id"), i),
        agent_id: rows.text(c("agent_id"), i),
        kind: rows.text(c("type"), i),
        content: rows.text(c("content"), i).unwrap_or_default(),
        metadata: metadata_json(rows.text(c("metadata"), i)),
        embedding: rows.vector(c("embedding"), i),
        token_count: rows.int(c("token_count"), i).unwrap_or(0),
        importance: rows.float(c("importance"), i).unwrap_or(0.0),
        pinned: rows.bool(c("pinned"), i),
        created_at: rows.time(c("created_at"), i).unwrap_or_default(),
        last_accessed_at: rows.time(c("last_accessed_at"), i).unwrap_or_default(),
        expires_at: rows.time(c("expires_at"), i),
        access_count: rows.int(c("access_count"), i).unwrap_or(0),
        score: rows.float(c("score"), i),
        similarity: rows.float(c("similarity"), i),
    }
}
