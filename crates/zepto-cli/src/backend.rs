//! Where `zeptodb sql` runs statements: an in-process engine, or a server (`--url`).

use crate::remote::Remote;
use zepto_sql::{Engine, QueryResult};

pub enum Backend {
    Local(Engine),
    Remote(Remote),
}

/// A failed statement, local or remote, as the CLI prints it.
pub struct Failure {
    pub code: String,
    pub message: String,
}

impl Failure {
    pub fn line(&self) -> String {
        format!("error [{}]: {}", self.code, self.message)
    }
}

impl Backend {
    pub fn execute(&mut self, sql: &str) -> Result<QueryResult, Failure> {
        match self {
            Backend::Local(e) => e.execute(sql).map_err(|e| Failure { code: e.code().into(), message: e.to_string() }),
            Backend::Remote(r) => r.execute(sql).map_err(|e| Failure { code: e.code, message: e.message }),
        }
    }
}
