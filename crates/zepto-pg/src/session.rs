//! What a PostgreSQL client says that is about the session rather than the data, answered by
//! the door itself: transaction control (`BEGIN`, `COMMIT`, `ROLLBACK`, savepoints: acted on
//! by [`crate::txn`]), `SET` and
//! `SHOW` of PostgreSQL's session parameters, and the functions drivers call on connect
//! (`version()`, `current_schema()`, `current_database()`, `current_user`).
//!
//! Statements are recognized on their text (lower-cased, spaces folded, a trailing `;`
//! dropped); anything else goes to the engine. `SET` of the engine's own settings (`ann`,
//! `allow_partial`, `cluster_scope`) goes to the engine too.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The engine's settings (`SET` of these changes how queries run).
const ENGINE_SETTINGS: [&str; 3] = ["ann", "allow_partial", "cluster_scope"];

/// The version string `version()` answers: drivers (SQLAlchemy) read PostgreSQL's number in it.
pub fn version() -> String {
    zepto_sql::system::version()
}

/// The session's PostgreSQL parameters (`SET` stores, `SHOW` reads), kept per connection.
#[derive(Debug, Default)]
pub struct Params(Mutex<BTreeMap<String, String>>);

impl Params {
    fn set(&self, name: &str, value: &str) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(name.to_string(), value.to_string());
        }
    }

    fn get(&self, name: &str) -> Option<String> {
        let set = self.0.lock().ok().and_then(|m| m.get(name).cloned());
        set.or_else(|| default_param(name).map(str::to_string))
    }
}

/// A parameter's value before any `SET` (what PostgreSQL 16 reports by default).
fn default_param(name: &str) -> Option<&'static str> {
    Some(match name {
        "transaction isolation level" | "transaction_isolation" | "default_transaction_isolation" => "read committed",
        "standard_conforming_strings" | "integer_datetimes" => "on",
        "transaction_read_only" | "default_transaction_read_only" => "off",
        "server_version" => "16.0",
        "server_version_num" => "160000",
        "server_encoding" | "client_encoding" => "UTF8",
        "timezone" => "UTC",
        "datestyle" => "ISO, YMD",
        "intervalstyle" => "postgres",
        "search_path" => "public",
        "max_identifier_length" => "63",
        "extra_float_digits" => "1",
        "application_name" => "",
        "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => "0",
        "client_min_messages" => "notice",
        "bytea_output" => "hex",
        _ => return None,
    })
}

/// The door's answer to a session statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A transaction starts (the client's status turns to "in a transaction").
    Begin,
    /// A transaction ends (`COMMIT`, `ROLLBACK`, ...), with the tag to send.
    End(String),
    /// `SAVEPOINT name`.
    Savepoint(String),
    /// `ROLLBACK TO [SAVEPOINT] name`.
    RollbackTo(String),
    /// `RELEASE [SAVEPOINT] name`.
    Release(String),
    /// A command done, with its tag (`SET`, `DISCARD ALL`, ...).
    Done(String),
    /// One row of one text column.
    Value {
        /// The column's name.
        column: String,
        /// Its value.
        value: String,
    },
}

/// The statements of a script: `(byte offset, text)` of each piece between top-level `;`s
/// (not inside quotes or comments), empty pieces left out. In an escape string (`E'...'`, as
/// the lexer reads it) a backslash escapes the next byte, so `E'it\'s; x'` is one string.
pub fn split(sql: &str) -> Vec<(usize, &str)> {
    fn push<'a>(sql: &'a str, from: usize, to: usize, out: &mut Vec<(usize, &'a str)>) {
        if let Some(piece) = sql.get(from..to).filter(|p| !p.trim().is_empty()) {
            out.push((from, piece));
        }
    }
    let b = sql.as_bytes();
    let (mut out, mut start, mut i) = (Vec::new(), 0, 0);
    while let Some(&c) = b.get(i) {
        i += 1;
        match c {
            b'\'' | b'"' => {
                let escapes = c == b'\'' && escape_string_at(b, i - 1);
                while let Some(&d) = b.get(i) {
                    i += 1;
                    if d == c {
                        break;
                    }
                    if escapes && d == b'\\' {
                        i += 1;
                    }
                }
            }
            b'-' if b.get(i) == Some(&b'-') => {
                while b.get(i).is_some_and(|&d| d != b'\n') {
                    i += 1;
                }
            }
            b'/' if b.get(i) == Some(&b'*') => {
                i += 1;
                while i < b.len() && !(b.get(i) == Some(&b'*') && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b';' => {
                push(sql, start, i - 1, &mut out);
                start = i;
            }
            _ => {}
        }
    }
    push(sql, start, b.len(), &mut out);
    out
}

/// Whether the quote at `q` opens an escape string: an `E` (or `e`) before it that starts a
/// token (`date'...'` is a typed literal, not one).
fn escape_string_at(b: &[u8], q: usize) -> bool {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    q >= 1 && matches!(b[q - 1], b'E' | b'e') && (q < 2 || !ident(b[q - 2]))
}

/// `sql` folded for matching: lower case, runs of white space as one space, no trailing `;`.
pub fn fold(sql: &str) -> String {
    let lower = sql.trim().trim_end_matches(';').trim().to_lowercase();
    lower.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The answer to `sql` if it is a session statement (`user` is the login's user name).
pub fn answer(sql: &str, params: &Params, user: &str) -> Option<Answer> {
    let q = fold(sql);
    let first = q.split([' ', '(']).next().unwrap_or_default();
    let done = |tag: &str| Some(Answer::Done(tag.to_string()));
    match first {
        "begin" | "start" => return Some(Answer::Begin),
        "commit" | "end" => return Some(Answer::End("COMMIT".into())),
        "abort" => return Some(Answer::End("ROLLBACK".into())),
        "rollback" if rollback_to(&q).is_some() => return rollback_to(&q).map(Answer::RollbackTo),
        "rollback" => return Some(Answer::End("ROLLBACK".into())),
        "savepoint" => return Some(Answer::Savepoint(savepoint_name(&q["savepoint".len()..]))),
        "release" => return Some(Answer::Release(savepoint_name(&q["release".len()..]))),
        "discard" => return done("DISCARD ALL"),
        "deallocate" => return done("DEALLOCATE"),
        "reset" => return done("RESET"),
        "set" => return set(&q, sql, params),
        "show" => return show(&q, params),
        "select" => {}
        _ => return None,
    }
    let value = |column: &str, value: String| Some(Answer::Value { column: column.into(), value });
    match q.strip_prefix("select ")?.trim() {
        "version()" | "pg_catalog.version()" => value("version", version()),
        "current_schema()" | "current_schema" | "pg_catalog.current_schema()" => {
            value("current_schema", "public".into())
        }
        "current_database()" | "pg_catalog.current_database()" | "current_catalog" => {
            value("current_database", "zeptodb".into())
        }
        "current_user" | "session_user" | "user" | "current_role" => value("current_user", user.into()),
        _ => None,
    }
}

/// The savepoint of `ROLLBACK [WORK | TRANSACTION] TO [SAVEPOINT] name` (folded text).
fn rollback_to(q: &str) -> Option<String> {
    let rest = q.strip_prefix("rollback ")?;
    let rest = rest.strip_prefix("work ").or_else(|| rest.strip_prefix("transaction ")).unwrap_or(rest);
    rest.strip_prefix("to ").map(savepoint_name)
}

/// A savepoint's name after `ROLLBACK TO`, `SAVEPOINT` or `RELEASE` (folded text): the word
/// `SAVEPOINT` before it dropped, quotes taken off.
fn savepoint_name(rest: &str) -> String {
    let rest = rest.trim();
    let rest = rest.strip_prefix("savepoint ").unwrap_or(rest);
    rest.trim().trim_matches('"').to_string()
}

/// `SET [SESSION | LOCAL] name {= | TO} value`: stored (the value as written in `sql`),
/// unless it is the engine's.
fn set(q: &str, sql: &str, params: &Params) -> Option<Answer> {
    let rest = q.strip_prefix("set ")?;
    let rest = rest.strip_prefix("session ").or_else(|| rest.strip_prefix("local ")).unwrap_or(rest);
    if rest.starts_with("transaction")
        || rest.starts_with("characteristics")
        || rest.starts_with("session characteristics")
    {
        return Some(Answer::Done("SET".into()));
    }
    let (name, _) = rest.split_once(" to ").or_else(|| rest.split_once('='))?;
    let name = name.trim();
    if ENGINE_SETTINGS.contains(&name) {
        return None;
    }
    let orig = sql.trim().trim_end_matches(';').trim();
    let lower = orig.to_ascii_lowercase();
    let at = lower.find('=').map(|p| p + 1).or_else(|| lower.find(" to ").map(|p| p + 4))?;
    let value = orig.get(at..)?.trim().trim_matches('\'').trim_matches('"');
    params.set(if name == "time zone" { "timezone" } else { name }, value);
    Some(Answer::Done("SET".into()))
}

/// `SHOW name`: the stored or default value (`SHOW ALL` and unknown names go to the engine).
fn show(q: &str, params: &Params) -> Option<Answer> {
    let name = q.strip_prefix("show ")?.trim();
    let name = if name == "time zone" { "timezone" } else { name };
    let value = params.get(name)?;
    let column = name.replace(' ', "_");
    Some(Answer::Value { column, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_split_at_top_level_semicolons() {
        let pieces: Vec<&str> = split("BEGIN; INSERT INTO t VALUES ('a;b'); -- c;\nSELECT \"x;\" /* ; */ ;;")
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        assert_eq!(pieces, ["BEGIN", " INSERT INTO t VALUES ('a;b')", " -- c;\nSELECT \"x;\" /* ; */ "]);
        assert_eq!(split("SELECT 1")[0], (0, "SELECT 1"));
        assert_eq!(split("SELECT 1; SELECT 2")[1], (9, " SELECT 2"));
        assert!(split(" ; ").is_empty());
    }

    /// A backslash escapes the quote after it in an `E'...'` string only: the `;` after an
    /// escaped quote is inside the string, and a typed literal's backslash escapes nothing.
    #[test]
    fn escape_strings_keep_their_escaped_quotes() {
        let pieces = |sql| split(sql).into_iter().map(|(_, p)| p.trim()).collect::<Vec<_>>();
        assert_eq!(pieces(r"SELECT E'it\'s; here'; SELECT 2"), [r"SELECT E'it\'s; here'", "SELECT 2"]);
        assert_eq!(pieces(r"SELECT e'a\\'; SELECT 2"), [r"SELECT e'a\\'", "SELECT 2"]);
        assert_eq!(pieces(r"SELECT (E'\';');SELECT 3"), [r"SELECT (E'\';')", "SELECT 3"]);
        assert_eq!(pieces(r"SELECT date'x\'; SELECT 2"), [r"SELECT date'x\'", "SELECT 2"]);
        assert_eq!(pieces(r"SELECT 'a\'; SELECT 2"), [r"SELECT 'a\'", "SELECT 2"]);
    }

    #[test]
    fn session_statements_are_answered_here_and_the_rest_is_not() {
        let p = Params::default();
        let a = |sql: &str| answer(sql, &p, "quant");
        assert_eq!(a("BEGIN"), Some(Answer::Begin));
        assert_eq!(a("  commit ; "), Some(Answer::End("COMMIT".into())));
        assert_eq!(a("ROLLBACK TO SAVEPOINT s1"), Some(Answer::RollbackTo("s1".into())));
        assert_eq!(a("rollback to \"S2\";"), Some(Answer::RollbackTo("s2".into())));
        assert_eq!(a("ROLLBACK WORK TO s3"), Some(Answer::RollbackTo("s3".into())));
        assert_eq!(a("rollback transaction to savepoint s4"), Some(Answer::RollbackTo("s4".into())));
        assert_eq!(a("ROLLBACK WORK"), Some(Answer::End("ROLLBACK".into())));
        assert_eq!(a("SAVEPOINT s1"), Some(Answer::Savepoint("s1".into())));
        assert_eq!(a("RELEASE SAVEPOINT s1"), Some(Answer::Release("s1".into())));
        assert_eq!(a("release s1"), Some(Answer::Release("s1".into())));
        assert_eq!(a("SET application_name = 'PostgreSQL JDBC Driver'"), Some(Answer::Done("SET".into())));
        let shown = a("SHOW application_name");
        assert_eq!(
            shown,
            Some(Answer::Value { column: "application_name".into(), value: "PostgreSQL JDBC Driver".into() })
        );
        assert_eq!(
            a("show transaction isolation level"),
            Some(Answer::Value { column: "transaction_isolation_level".into(), value: "read committed".into() })
        );
        assert!(
            matches!(a("select pg_catalog.version()"), Some(Answer::Value { value, .. }) if value.starts_with("PostgreSQL 16.0"))
        );
        assert_eq!(
            a("SELECT current_user"),
            Some(Answer::Value { column: "current_user".into(), value: "quant".into() })
        );
        assert_eq!(a("SET ann = off"), None, "the engine's own setting");
        assert_eq!(a("SELECT 1"), None);
        assert_eq!(a("SHOW tables"), None);
    }
}
