//! Settings a session may change with `SET name = value`, for the statements after the `SET`
//! in the same script (and, in doors that keep sessions, for the rest of the session).
//!
//! | name | values | default | what |
//! |---|---|---|---|
//! | `ann` | `on` / `off` (also `true`/`false`, `1`/`0`) | `on` | whether the planner may answer `ORDER BY <distance> LIMIT k` from an HNSW index; `off` searches exactly |
//! | `allow_partial` | `on` / `off` | `off` | on a cluster node: answer from the partitions that can answer when some cannot (a node died), the result marked with the missing ones, instead of failing |
//! | `cluster_scope` | `all` / `local` | `all` | on a cluster node: answer from every node's partitions, or only from this node's (to see where rows are; other nodes are not asked) |

use crate::error::{Pos, Result, SqlError};

/// The settings a query is planned and run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    ann: bool,
    cluster_local: bool,
    allow_partial: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { ann: true, cluster_local: false, allow_partial: false }
    }
}

/// The settings `SET` knows, for error messages.
const KNOWN: &str = "allow_partial, ann, cluster_scope";

fn on_off(name: &str, value: &str, pos: Pos) -> Result<bool> {
    match value {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        v => Err(SqlError::plan(format!("SET {name}: '{v}' is not on or off"), Some(pos))),
    }
}

impl Settings {
    /// Whether vector searches may use an index.
    pub fn ann(&self) -> bool {
        self.ann
    }

    /// Whether a cluster query answers from the partitions that can when some cannot.
    pub fn allow_partial(&self) -> bool {
        self.allow_partial
    }

    /// Whether a cluster node answers from its own partitions only (`cluster_scope = local`).
    pub fn cluster_local(&self) -> bool {
        self.cluster_local
    }

    /// These settings with `name` set to `value` (both lower-case, as the parser gives them).
    pub fn with(mut self, name: &str, value: &str, pos: Pos) -> Result<Settings> {
        match name {
            "ann" => self.ann = on_off(name, value, pos)?,
            "allow_partial" => self.allow_partial = on_off(name, value, pos)?,
            "cluster_scope" => {
                self.cluster_local = match value {
                    "all" => false,
                    "local" => true,
                    v => {
                        return Err(SqlError::plan(format!("SET cluster_scope: '{v}' is not all or local"), Some(pos)))
                    }
                }
            }
            _ => return Err(SqlError::plan(format!("unknown setting '{name}' (known: {KNOWN})"), Some(pos))),
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_checks_names_and_values() {
        let p = Pos::default();
        let s = Settings::default();
        assert!(s.ann());
        assert!(!s.with("ann", "off", p).expect("off").ann());
        assert!(s.with("ann", "0", p).expect("0").with("ann", "on", p).expect("on").ann());
        assert!(s.with("ann", "maybe", p).is_err());
        assert!(s
            .with("nope", "on", p)
            .expect_err("unknown")
            .to_string()
            .contains("known: allow_partial, ann, cluster_scope"));
        assert!(s.with("cluster_scope", "local", p).expect("local").cluster_local());
        assert!(!s.with("cluster_scope", "all", p).expect("all").cluster_local());
        assert!(s.with("cluster_scope", "some", p).is_err());
        assert!(s.with("allow_partial", "on", p).expect("on").allow_partial());
        assert!(!s.allow_partial(), "off by default");
    }
}
