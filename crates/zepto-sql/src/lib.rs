//! ZeptoDB's SQL engine: SQL text in, columnar batches out, over a storage `Catalog`.
//!
//! Text → AST ([`parser`], the `zepto-parser` crate, re-exported here with its [`error`] type)
//! → bound logical plan ([`plan`]) → optimized plan → physical plan → batches ([`exec`]).
//! [`Engine`] ties the stages to a `zepto_storage::Catalog`. Bound expressions ([`expr`]) and
//! their evaluator ([`eval`]) sit below both the planner and the executor.
//!
//! # What it owns
//!
//! The binder (`plan/binder/`, `plan/bind_expr/`), the optimizer, the physical planner and
//! distributed plans ([`plan::dist`]); the operators and one accumulator per aggregate
//! ([`exec::accum`]); the function catalog ([`expr::functions`]); the system catalogs
//! ([`system`]); grants and tenant scope ([`access`]); `SET` ([`settings`]); cancel, deadline
//! and memory limit ([`interrupt`]); what the engine knows of a cluster ([`cluster`]); a
//! subscription's query over the change feed ([`subscription`]); materialized views' upkeep
//! (`view/`: compiled here, driven by the catalog through `zepto_storage::view`); PostgreSQL's
//! arrays ([`eval::array`]) and set-returning functions ([`plan::srf`]).
//!
//! # Entry points
//!
//! Doors call [`Engine::execute_in`], [`Engine::execute_statement_in`], or [`Engine::prepare_in`]
//! then [`Engine::run_prepared_in`]; [`Engine::copy_in`] and [`Engine::copy_out`] for COPY over
//! a connection; [`Engine::run_fragment`] for another node's plan fragment. Each `*_in` method
//! takes the query's [`RunContext`]; the plain forms run without limits.
//!
//! # Invariants
//!
//! - A statement applies whole or not at all: it is parsed, typed and checked before any lock.
//! - Context is passed down explicitly ([`RunContext`]), never read from a thread-local.
//! - Each stage takes only what the one before makes. The binder makes every type and cast
//!   explicit; the physical planner decides once, and the executor runs exactly that choice.
//! - A scalar function depends only on its arguments: the binder folds calls on constants
//!   (`now()` is bound to the statement's time).
//! - An aggregate's meaning is written in its accumulator only.
//!
//! # When you change …
//!
//! - **A scalar function**: in `expr/functions.rs`, a [`ScalarFunc`](expr::functions::ScalarFunc)
//!   variant (plan fragments travel as postcard, which names a variant by its position: the
//!   nodes of a cluster run one build), its names in
//!   [`scalar_by_name`](expr::functions::scalar_by_name), its
//!   [`family`](expr::functions::ScalarFunc::family) and
//!   [`scalar_arity`](expr::functions::scalar_arity). Its argument casts and result type: the
//!   family's function in `plan/bind_expr/calls.rs` (`bind_function`). Its kernel: the family's arm
//!   of `call` in `eval/scalar.rs` (or `eval/calendar/`, `eval/vector.rs`). Test it beside the
//!   kernel and in `tests/gen/corpus.py` when DuckDB has it (the `.slt` files are generated);
//!   document it in `docs/` (`sql-timeseries.md`, `questdb.md`, `vectors.md`).
//! - **An aggregate**: [`AggFunc`](expr::functions::AggFunc) with `agg_by_name`, `agg_type`,
//!   `agg_arity`, `mergeable` and `state_width`; its accumulator in `exec/accum/`, built in
//!   [`exec::accum::accumulator_for`].
//! - **A function clients call on the catalog** (`format_type`, `::regclass`):
//!   `plan/catalog_functions.rs`. A system table: [`system`], `docs/pg.md`,
//!   `tests/system_catalogs.rs`.
//! - **A setting**: [`Settings::with`] and the table in [`settings`]; also `ENGINE_SETTINGS` in
//!   `zepto-pg/src/session.rs`, or the PostgreSQL door keeps that `SET` to itself.
//! - **A statement**: `zepto-parser` first (see its crate doc); then its arm in
//!   [`Engine::execute_statement_in`], and `spread.rs` if it changes a table a cluster spreads.
#![warn(missing_docs)]
// The one exception: AVX2 kernels written with intrinsics (`exec/accum/run_extremes.rs`).
#![deny(unsafe_code)]

pub mod access;
pub mod cluster;
pub mod column_names;
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
pub mod pg_types;
pub mod plan;
pub mod result;
pub mod settings;
mod spread;
pub mod subscription;
pub mod system;
pub mod txn;
pub(crate) mod view;

pub use access::TableAccess;
pub use column_names::ColumnNames;
pub use engine::{Access, Engine, Prepared, QueryResult};
pub use error::{FileProblem, Pos, Result, SqlError};
pub use files::FilePolicy;
pub use interrupt::{QueryControl, RunContext};
pub use parser::ParamValue;
pub use settings::Settings;
