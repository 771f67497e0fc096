//! Errors as the HTTP door reports them: a status and SPEC §2's JSON body
//! `{"error":{"code":"SQL_PARSE","message":"...","line":1,"column":17}}`.
//!
//! Code names are stable (clients switch on them); `line`/`column` point into the SQL text,
//! `row` names the 1-based data row of a CSV/JSONL/Arrow ingest body, `line` the ILP line.

use hyper::StatusCode;
use zepto_io::IoError;
use zepto_sql::SqlError;
use zepto_storage::StorageError;

/// An error as the HTTP door reports it: the status line plus the JSON body of [`ApiError::body`].
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code (`SQL_PARSE`, `TABLE_NOT_FOUND`, `INGEST`, ...); clients switch
    /// on it.
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
    /// 1-based line in the SQL text, or the ILP line of an ingest body.
    pub line: Option<u64>,
    /// 1-based column in the SQL text.
    pub column: Option<u64>,
    /// 1-based data row of a CSV, JSONL or Arrow ingest body.
    pub row: Option<u64>,
    /// For 405: the methods the resource allows (the `Allow` header).
    pub allow: Option<&'static str>,
    /// For 503: seconds after which to try again (the `Retry-After` header).
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// An error with this status, code and message and no position.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            line: None,
            column: None,
            row: None,
            allow: None,
            retry_after: None,
        }
    }

    /// 400 `BAD_REQUEST`: a malformed request (parameters, headers).
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", message)
    }

    /// 404 `NOT_FOUND`: no such route or resource.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }

    /// 401 `UNAUTHENTICATED`: no API key, or an unknown one.
    pub fn unauthenticated(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", message)
    }

    /// 403 `PERMISSION_DENIED`: the key's role or grants do not allow it.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "PERMISSION_DENIED", message)
    }

    /// 500 `INTERNAL`: a failure on the server's side, not the client's.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", message)
    }

    /// A bad ingest body: `row` (CSV, JSONL, Arrow) or `line` (ILP) names where.
    pub fn ingest(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "INGEST", message)
    }

    /// Point at a 1-based ingest data row.
    pub fn at_row(mut self, row: Option<usize>) -> ApiError {
        self.row = row.map(|r| r as u64);
        self
    }

    /// Point at a 1-based line (ILP ingest).
    pub fn at_line(mut self, line: usize) -> ApiError {
        self.line = Some(line as u64);
        self
    }

    /// The JSON body.
    pub fn body(&self) -> String {
        let mut s = String::with_capacity(64 + self.message.len());
        s.push_str("{\"error\":{\"code\":\"");
        s.push_str(self.code);
        s.push_str("\",\"message\":");
        zepto_io::format::json_escape(&self.message, &mut s);
        for (k, v) in [("line", self.line), ("column", self.column), ("row", self.row)] {
            if let Some(v) = v {
                s.push_str(&format!(",\"{k}\":{v}"));
            }
        }
        s.push_str("}}\n");
        s
    }
}

impl From<SqlError> for ApiError {
    fn from(e: SqlError) -> ApiError {
        let status = match &e {
            SqlError::Parse { .. } | SqlError::Plan { .. } | SqlError::ColumnNotFound { .. } => StatusCode::BAD_REQUEST,
            SqlError::Execution(_) | SqlError::LimitExceeded(_) => StatusCode::BAD_REQUEST,
            SqlError::File { problem, .. } => match problem {
                zepto_sql::FileProblem::NotFound => StatusCode::NOT_FOUND,
                zepto_sql::FileProblem::Denied => StatusCode::FORBIDDEN,
                zepto_sql::FileProblem::Malformed => StatusCode::BAD_REQUEST,
            },
            SqlError::TableNotFound { .. } => StatusCode::NOT_FOUND,
            SqlError::TableExists(_) => StatusCode::CONFLICT,
            SqlError::PermissionDenied(_) => StatusCode::FORBIDDEN,
            // gRPC's mapping: RESOURCE_EXHAUSTED → 429, DEADLINE_EXCEEDED → 504.
            SqlError::ResourcesExhausted(_) => StatusCode::TOO_MANY_REQUESTS,
            SqlError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            // nginx's "client closed request": nobody reads it, but the log does.
            SqlError::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
            SqlError::NotSupported(_) => StatusCode::NOT_IMPLEMENTED,
            SqlError::DiskFull(_) => StatusCode::INSUFFICIENT_STORAGE,
            SqlError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            SqlError::Io(_) | SqlError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let pos = e.pos();
        ApiError {
            status,
            code: e.code(),
            message: e.to_string(),
            line: pos.map(|p| u64::from(p.line)),
            column: pos.map(|p| u64::from(p.column)),
            row: None,
            allow: None,
            retry_after: None,
        }
    }
}

impl From<zepto_memory::MemoryError> for ApiError {
    fn from(e: zepto_memory::MemoryError) -> ApiError {
        use zepto_memory::MemoryError as M;
        match e {
            M::BadRequest { .. } => ApiError::bad_request(e.to_string()),
            M::Forbidden(m) => ApiError::forbidden(m),
            M::NotFound(m) => ApiError::not_found(m),
            M::Quota(m) => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "QUOTA_EXCEEDED", m),
            M::Sql(e) => e.into(),
            M::Storage(e) => storage_error(e),
            M::Internal(m) => ApiError::internal(m),
        }
    }
}

impl From<IoError> for ApiError {
    fn from(e: IoError) -> ApiError {
        let row = e.row();
        ApiError::ingest(e.to_string()).at_row(row)
    }
}

/// A storage refusal as the ingest and agent-memory endpoints report it.
pub fn storage_error(e: StorageError) -> ApiError {
    match e {
        StorageError::TableNotFound(n) => {
            ApiError::new(StatusCode::NOT_FOUND, "TABLE_NOT_FOUND", format!("table '{n}' does not exist"))
        }
        StorageError::Conflict(_) => {
            ApiError::new(StatusCode::CONFLICT, "INGEST", format!("{e} (the table changed; retry)"))
        }
        // Refused whole, applied nowhere: the client may retry once space is freed.
        StorageError::DiskFull(_) => ApiError::new(StatusCode::INSUFFICIENT_STORAGE, "DISK_FULL", e.to_string()),
        StorageError::Durability(_) => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "NOT_DURABLE", format!("{e}: the batch was not applied"))
        }
        e => ApiError::ingest(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_errors_keep_code_and_position() {
        let e: ApiError = zepto_sql::Engine::new().execute("SELECT 1 +").expect_err("bad sql").into();
        assert_eq!((e.status, e.code), (StatusCode::BAD_REQUEST, "SQL_PARSE"));
        assert_eq!((e.line, e.column), (Some(1), Some(11)));
        let body = e.body();
        assert!(body.starts_with("{\"error\":{\"code\":\"SQL_PARSE\",\"message\":\""), "{body}");
        assert!(body.contains("\"line\":1,\"column\":11"), "{body}");
        let e: ApiError = zepto_sql::Engine::new().execute("SELECT * FROM nope").expect_err("no table").into();
        assert_eq!((e.status, e.code), (StatusCode::NOT_FOUND, "TABLE_NOT_FOUND"));
    }
}
