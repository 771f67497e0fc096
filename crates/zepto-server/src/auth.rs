//! API keys, roles and table grants.
//!
//! A key is presented as `Authorization: Bearer <key>` (InfluxDB clients' `Token <key>` is
//! accepted too). Keys are kept only as SHA-256 digests: the keys file stores digests, and a
//! key given on the command line is hashed at start. Lookup is by digest, so comparing a guess
//! leaks nothing about a stored key (an attacker cannot choose a digest's preimage).
//!
//! Roles are ordered: `reader` (SELECT, EXPLAIN, SHOW, DESCRIBE, /tables, /metrics) <
//! `writer` (+ INSERT, CREATE TABLE, ALTER ADD COLUMN, every /write format) < `admin` (+ DROP
//! TABLE and COPY, which reads and writes files on the server). A key may also carry table
//! grants: it then sees and touches only those tables.
//!
//! A key may be bound to a tenant: then every table with a `tenant_id` column holds, for it,
//! only the rows of that tenant, through SQL of every kind (the rule and what is refused are
//! in `zepto_sql::access`); `/write` into such a table (or ILP that would give a table a
//! `tenant_id` column) is refused, since ingest does not check rows one by one; and `/metrics`,
//! which counts every table's rows, is refused as for keys with grants.
//!
//! Keys file (JSON):
//! ```json
//! {"keys": [
//!   {"name": "ops",  "role": "admin",  "sha256": "<64 hex digits>"},
//!   {"name": "feed", "role": "writer", "sha256": "<64 hex digits>", "tables": ["trades"]},
//!   {"name": "acme-agent", "role": "writer", "sha256": "<64 hex digits>", "tenant": "acme"}
//! ]}
//! ```
//! A tenant is 1 to [`TENANT_MAX_BYTES`] bytes without control characters.
//! `zeptodb keygen` makes a random key and prints its entry.

use crate::error::ApiError;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use zepto_sql::{Access, TableAccess};

/// What a key may do; ordered, each role allowing everything the one below it does (see the module
/// docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Queries and metadata: SELECT, EXPLAIN, SHOW, DESCRIBE, `/tables`, `/metrics`.
    Reader,
    /// Reader, plus INSERT, CREATE TABLE, ALTER ... ADD COLUMN and every `/write` format.
    Writer,
    /// Writer, plus DROP TABLE and COPY (which reads and writes files on the server).
    Admin,
}

impl Role {
    /// The role named `reader`, `writer` or `admin` (any case); `None` otherwise.
    pub fn parse(s: &str) -> Option<Role> {
        match s.to_ascii_lowercase().as_str() {
            "reader" => Some(Role::Reader),
            "writer" => Some(Role::Writer),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    /// The lower-case name used in keys files and messages.
    pub fn name(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Writer => "writer",
            Role::Admin => "admin",
        }
    }

    /// Whether this role may run a statement needing `a`.
    pub fn allows(self, a: Access) -> bool {
        let need = match a {
            Access::Read => Role::Reader,
            Access::Write => Role::Writer,
            Access::Admin => Role::Admin,
        };
        self >= need
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Longest tenant name a key may carry, in bytes.
pub const TENANT_MAX_BYTES: usize = 128;

/// `Ok` if `tenant` may name a key's tenant: 1 to [`TENANT_MAX_BYTES`] bytes, no control
/// characters; otherwise what is wrong with it.
pub fn check_tenant(tenant: &str) -> Result<(), String> {
    if tenant.is_empty() {
        return Err("a tenant must not be empty".into());
    }
    if tenant.len() > TENANT_MAX_BYTES {
        return Err(format!("a tenant is at most {TENANT_MAX_BYTES} bytes, not {}", tenant.len()));
    }
    if tenant.chars().any(char::is_control) {
        return Err("a tenant must not contain control characters".into());
    }
    Ok(())
}

/// Who is calling: the key's name, role, table grants and tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// The key's name from the keys file or command line (never the key itself); `-` for the
    /// anonymous admin.
    pub name: String,
    /// What the key may do.
    pub role: Role,
    /// The tables the key may see and touch (all, unless the key has grants), and the tenant
    /// whose rows it sees (none, unless the key is bound to one).
    pub tables: TableAccess,
}

impl Principal {
    /// The caller when no keys are configured (loopback only): full rights.
    pub fn anonymous_admin() -> Principal {
        Principal { name: "-".into(), role: Role::Admin, tables: TableAccess::all() }
    }

    /// `Ok` if the caller's role is at least `need`; 403 `PERMISSION_DENIED` otherwise.
    pub fn require(&self, need: Role) -> Result<(), ApiError> {
        if self.role >= need {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!("key '{}' has role {}; this needs {need}", self.name, self.role)))
        }
    }

    /// `Ok` if the caller's grants include `table`; 403 `PERMISSION_DENIED` otherwise.
    pub fn require_table(&self, table: &str) -> Result<(), ApiError> {
        if self.tables.allows(table) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!("key '{}' has no grant for table '{table}'", self.name)))
        }
    }

    /// `Ok` unless the caller is bound to a tenant and `table` has a `tenant_id` column (or,
    /// with `adds_tenant_id`, is about to get one): then 403 `PERMISSION_DENIED`, as `/write`
    /// does not check the tenant of each row.
    pub fn require_unscoped_write(&self, table: &str, has_tenant_id: bool) -> Result<(), ApiError> {
        match self.tables.tenant() {
            Some(tenant) if has_tenant_id => Err(ApiError::forbidden(format!(
                "key '{}' is bound to tenant '{tenant}' and table '{table}' has a {} column: write its rows through /api/ai (or SQL INSERT)",
                self.name,
                zepto_sql::access::TENANT_COLUMN
            ))),
            _ => Ok(()),
        }
    }
}

/// A SHA-256 digest: how keys are stored and looked up.
pub type Digest32 = [u8; 32];

/// The SHA-256 digest of a key in clear.
pub fn digest(key: &str) -> Digest32 {
    Sha256::digest(key.as_bytes()).into()
}

/// Bytes (a digest: the keys file's `sha256`) as lower-case hex digits.
pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex(s: &str) -> Option<Digest32> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The configured keys. Empty means authentication is off.
#[derive(Debug, Clone, Default)]
pub struct KeyStore {
    keys: HashMap<Digest32, Principal>,
}

impl KeyStore {
    /// True when no key is configured: authentication is off (loopback only).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Number of configured keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Add a key given in clear (command line, environment).
    pub fn add_plain(&mut self, name: &str, key: &str, role: Role, tables: TableAccess) -> Result<(), String> {
        if key.len() < 16 {
            return Err(format!("API key '{name}' is too short: use at least 16 characters (zeptodb keygen)"));
        }
        self.insert(digest(key), Principal { name: name.into(), role, tables })
    }

    fn insert(&mut self, d: Digest32, p: Principal) -> Result<(), String> {
        if self.keys.contains_key(&d) {
            return Err(format!("API key '{}' is configured twice", p.name));
        }
        // A name identifies its key (in the access log, and as the owner of kept results).
        if self.keys.values().any(|q| q.name == p.name) {
            return Err(format!("two API keys are named '{}': give each key its own name", p.name));
        }
        self.keys.insert(d, p);
        Ok(())
    }

    /// Load a keys file (see the module docs).
    pub fn load_file(&mut self, path: &str) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        self.load_json(&text).map_err(|e| format!("{path}: {e}"))
    }

    /// Add the keys of a keys file's text (see the module docs). Fails on malformed JSON, a bad
    /// role or digest, or a key configured twice.
    pub fn load_json(&mut self, text: &str) -> Result<(), String> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let keys = v.get("keys").and_then(|k| k.as_array()).ok_or("expected {\"keys\": [...]}")?;
        for (i, k) in keys.iter().enumerate() {
            let field = |f: &str| k.get(f).and_then(|x| x.as_str());
            let name = field("name").ok_or_else(|| format!("key {}: missing \"name\"", i + 1))?;
            let role = field("role").ok_or_else(|| format!("key '{name}': missing \"role\""))?;
            let role = Role::parse(role)
                .ok_or_else(|| format!("key '{name}': role '{role}' is not one of reader, writer, admin"))?;
            let d = field("sha256")
                .and_then(parse_hex)
                .ok_or_else(|| format!("key '{name}': \"sha256\" must be 64 hex digits"))?;
            let tables = match k.get("tables") {
                None | Some(serde_json::Value::Null) => TableAccess::all(),
                Some(serde_json::Value::Array(a)) => {
                    let names: Option<Vec<&str>> = a.iter().map(|t| t.as_str()).collect();
                    TableAccess::only(names.ok_or_else(|| format!("key '{name}': \"tables\" must be strings"))?)
                }
                Some(_) => return Err(format!("key '{name}': \"tables\" must be a list of table names")),
            };
            let tables = match k.get("tenant") {
                None | Some(serde_json::Value::Null) => tables,
                Some(serde_json::Value::String(t)) => {
                    check_tenant(t).map_err(|e| format!("key '{name}': \"tenant\": {e}"))?;
                    tables.with_tenant(t)
                }
                Some(_) => return Err(format!("key '{name}': \"tenant\" must be a string")),
            };
            self.insert(d, Principal { name: name.into(), role, tables })?;
        }
        Ok(())
    }

    /// Who presents this `Authorization` header value. With no keys configured everyone is
    /// the anonymous admin (the server then listens on loopback only).
    pub fn authenticate(&self, header: Option<&str>) -> Result<Principal, ApiError> {
        if self.keys.is_empty() {
            return Ok(Principal::anonymous_admin());
        }
        let h = header.ok_or_else(|| ApiError::unauthenticated("missing Authorization: Bearer <API key>"))?;
        let key = h
            .strip_prefix("Bearer ")
            .or_else(|| h.strip_prefix("bearer "))
            .or_else(|| h.strip_prefix("Token "))
            .ok_or_else(|| ApiError::unauthenticated("Authorization must be 'Bearer <API key>'"))?
            .trim();
        self.keys.get(&digest(key)).cloned().ok_or_else(|| ApiError::unauthenticated("unknown API key"))
    }
}

/// `N` random bytes from the OS, as hex.
pub fn random_hex<const N: usize>() -> std::io::Result<String> {
    use std::io::Read;
    let mut raw = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut raw)?;
    Ok(hex(&raw))
}

/// A new random key (32 bytes from the OS, hex) and its keys-file entry, with table grants
/// and a tenant if given (the caller checks the tenant with [`check_tenant`]).
pub fn keygen(name: &str, role: Role, tables: &[String], tenant: Option<&str>) -> std::io::Result<(String, String)> {
    let key = format!("zk_{}", random_hex::<32>()?);
    let mut entry = String::from("{\"name\": ");
    zepto_io::format::json_escape(name, &mut entry);
    entry.push_str(&format!(", \"role\": \"{role}\", \"sha256\": \"{}\"", hex(&digest(&key))));
    if !tables.is_empty() {
        entry.push_str(", \"tables\": [");
        for (i, t) in tables.iter().enumerate() {
            if i > 0 {
                entry.push_str(", ");
            }
            zepto_io::format::json_escape(t, &mut entry);
        }
        entry.push(']');
    }
    if let Some(t) = tenant {
        entry.push_str(", \"tenant\": ");
        zepto_io::format::json_escape(t, &mut entry);
    }
    entry.push('}');
    Ok((key, entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_keys() {
        let mut ks = KeyStore::default();
        assert_eq!(ks.authenticate(None).expect("open").role, Role::Admin);
        ks.add_plain("ops", "0123456789abcdef-admin", Role::Admin, TableAccess::all()).expect("adds");
        let (key, entry) = keygen("feed", Role::Writer, &["trades".into()], None).expect("keygen");
        ks.load_json(&format!("{{\"keys\": [{entry}]}}")).expect("loads");
        assert_eq!(ks.authenticate(None).expect_err("no header").code, "UNAUTHENTICATED");
        assert_eq!(ks.authenticate(Some("Bearer wrong")).expect_err("bad").code, "UNAUTHENTICATED");
        assert_eq!(ks.authenticate(Some("Basic abc")).expect_err("scheme").code, "UNAUTHENTICATED");
        let p = ks.authenticate(Some(&format!("Bearer {key}"))).expect("feed");
        assert_eq!((p.name.as_str(), p.role), ("feed", Role::Writer));
        assert!(p.tables.allows("TRADES") && !p.tables.allows("quotes"));
        assert!(p.require(Role::Writer).is_ok() && p.require(Role::Admin).is_err());
        assert!(Role::Reader.allows(Access::Read) && !Role::Reader.allows(Access::Write));
        let admin = ks.authenticate(Some("Token 0123456789abcdef-admin")).expect("token scheme");
        assert_eq!(admin.role, Role::Admin);
        assert!(ks.add_plain("short", "abc", Role::Reader, TableAccess::all()).is_err());
        assert!(ks.load_json("{\"keys\": [{\"name\": \"x\", \"role\": \"root\", \"sha256\": \"00\"}]}").is_err());
    }

    #[test]
    fn tenant_bound_keys() {
        let mut ks = KeyStore::default();
        let (key, entry) = keygen("agent", Role::Writer, &[], Some("ac\"me")).expect("keygen");
        assert!(entry.contains("\"tenant\": \"ac\\\"me\""), "{entry}");
        ks.load_json(&format!("{{\"keys\": [{entry}]}}")).expect("loads");
        let p = ks.authenticate(Some(&format!("Bearer {key}"))).expect("agent");
        assert_eq!(p.tables.tenant(), Some("ac\"me"));
        assert!(p.tables.is_all() && !p.tables.is_unrestricted());
        assert_eq!(p.require_unscoped_write("m", true).expect_err("scoped").code, "PERMISSION_DENIED");
        assert!(p.require_unscoped_write("m", false).is_ok());
        assert!(Principal::anonymous_admin().require_unscoped_write("m", true).is_ok());
        let d = "0".repeat(64);
        for (tenant, why) in [
            ("\"\"", "empty"),
            (&format!("\"{}\"", "x".repeat(129)), "at most 128"),
            ("\"a\\u0007b\"", "control"),
            ("\"a\\nb\"", "control"),
            ("7", "string"),
        ] {
            let json = format!(
                "{{\"keys\": [{{\"name\": \"t\", \"role\": \"reader\", \"sha256\": \"{d}\", \"tenant\": {tenant}}}]}}"
            );
            let err = KeyStore::default().load_json(&json).expect_err(tenant);
            assert!(err.contains(why), "{tenant}: {err}");
        }
        let json = format!(
            "{{\"keys\": [{{\"name\": \"t\", \"role\": \"reader\", \"sha256\": \"{d}\", \"tenant\": \"{}\"}}]}}",
            "é".repeat(64)
        );
        assert!(KeyStore::default().load_json(&json).is_ok(), "128 bytes is the limit");
    }
}
