//! ZeptoDB SQL: text → AST ([`parser`]) → bound logical plan ([`plan`]) → columnar results
//! ([`exec`]). [`Engine`] ties them to a storage [`zepto_storage::Catalog`].

pub mod error;
pub mod parser;

pub use error::{Pos, Result, SqlError};
