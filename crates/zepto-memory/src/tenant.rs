//! Whose records a request reads and writes.
//!
//! A tenant comes from (in order of authority) the API key, when the key is bound to one; the
//! `X-Zepto-Tenant-Id` header; a `tenant_id` field in the body. The header and the field must
//! agree (a conflict is a bad request), and a tenant-bound key may not name another tenant
//! (forbidden). With none of them, the tenant is `default`.

use crate::error::{MemoryError, Result};
use crate::validate;

/// The tenant of requests that name none.
pub const DEFAULT_TENANT: &str = "default";

/// Where a request's tenant may come from.
#[derive(Debug, Clone, Copy, Default)]
pub struct TenantSources<'a> {
    /// The tenant the caller's API key is bound to.
    pub key: Option<&'a str>,
    /// The `X-Zepto-Tenant-Id` header.
    pub header: Option<&'a str>,
}

impl TenantSources<'_> {
    /// The tenant of a request whose body says `field` (its `tenant_id`).
    pub fn resolve(&self, field: Option<&str>) -> Result<String> {
        if let Some(h) = self.header {
            validate::name("X-Zepto-Tenant-Id", h)?;
        }
        if let Some(f) = field {
            validate::name("tenant_id", f)?;
        }
        let asked = match (self.header, field) {
            (Some(h), Some(f)) if h != f => {
                return Err(MemoryError::bad(
                    "tenant_id",
                    format!("'{f}' conflicts with the X-Zepto-Tenant-Id header '{h}'"),
                ))
            }
            (h, f) => h.or(f),
        };
        match (self.key, asked) {
            (Some(k), Some(a)) if k != a => {
                Err(MemoryError::Forbidden(format!("this API key is bound to tenant '{k}' and cannot act for '{a}'")))
            }
            (Some(k), _) => Ok(k.to_string()),
            (None, a) => Ok(a.unwrap_or(DEFAULT_TENANT).to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_agree_or_fail() {
        let none = TenantSources::default();
        assert_eq!(none.resolve(None).expect("default"), "default");
        assert_eq!(none.resolve(Some("a")).expect("field"), "a");
        let header = TenantSources { key: None, header: Some("a") };
        assert_eq!(header.resolve(None).expect("header"), "a");
        assert_eq!(header.resolve(Some("a")).expect("same"), "a");
        assert!(matches!(header.resolve(Some("b")), Err(MemoryError::BadRequest { .. })));
        let key = TenantSources { key: Some("k"), header: None };
        assert_eq!(key.resolve(None).expect("key"), "k");
        assert_eq!(key.resolve(Some("k")).expect("same"), "k");
        assert!(matches!(key.resolve(Some("b")), Err(MemoryError::Forbidden(_))));
        let both = TenantSources { key: Some("k"), header: Some("b") };
        assert!(matches!(both.resolve(None), Err(MemoryError::Forbidden(_))));
        assert!(none.resolve(Some("")).is_err());
    }
}
