//! ZeptoDB SQL: text → AST ([`parser`], the `zepto-parser` crate, re-exported here with its
//! [`error`] type) → bound logical plan ([`plan`]) → optimized plan → physical plan →
//! columnar results ([`exec`]). [`Engine`] ties them to a storage [`zepto_storage::Catalog`].
//! Bound expressions ([`expr`]) and their evaluator ([`eval`]) sit below both the planner and
//! the executor.
//! Every stage is handed the query's [`RunContext`] ([`interrupt`]: its cancel flag,
//! deadline and memory limit) explicitly, through the `Engine::*_in` methods.
#![warn(missing_docs)]

pub mod access;
pub mod cluster;
mod copy;
pub mod copy_client;
mod dml;
pub mod engine;
mod index;
pub use zepto_parser::error;
pub mod eval;
pub mod exec;
pub mod expr;
pub mod files;
pub mod interrupt;
pub mod local_cluster;
pub use zepto_parser as parser;
pub mod plan;
pub mod result;
pub mod settings;
mod spread;
pub mod system;

pub use access::TableAccess;
pub use engine::{Access, Engine, Prepared, QueryResult};
pub use error::{FileProblem, Pos, Result, SqlError};
pub use files::FilePolicy;
pub use interrupt::{QueryControl, RunContext};
pub use parser::ParamValue;
pub use settings::Settings;
