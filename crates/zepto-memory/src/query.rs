//! A WHERE clause and its parameters, built up condition by condition, so no request value is
//! ever spliced into SQL text.

use crate::api::Filters;
use crate::error::Result;
use crate::text::id_time;
use crate::validate;
use zepto_sql::ParamValue;

/// Conditions joined by AND, with their `$n` parameters.
#[derive(Debug, Default)]
pub struct Where {
    conds: Vec<String>,
    params: Vec<ParamValue>,
}

impl Where {
    /// Only the rows of `tenant`.
    pub fn tenant(tenant: &str) -> Where {
        let mut w = Where::default();
        w.cmp("tenant_id", "=", ParamValue::Str(tenant.to_string()));
        w
    }

    /// A parameter; returns its `$n`.
    pub fn param(&mut self, v: ParamValue) -> String {
        self.params.push(v);
        format!("${}", self.params.len())
    }

    /// `col op $n`.
    pub fn cmp(&mut self, col: &str, op: &str, v: ParamValue) {
        let p = self.param(v);
        self.conds.push(format!("{col} {op} {p}"));
    }

    /// A condition without parameters.
    pub fn raw(&mut self, cond: &str) {
        self.conds.push(cond.to_string());
    }

    /// Records that have not expired at `now`.
    pub fn live(&mut self, now: i64) {
        let p = self.param(ParamValue::Timestamp(now));
        self.conds.push(format!("(expires_at IS NULL OR expires_at > {p})"));
    }

    /// `col IN ($a, $b, ...)` (`col = $a` for one value, `FALSE` for none).
    pub fn one_of(&mut self, col: &str, vals: impl IntoIterator<Item = ParamValue>) {
        let ps: Vec<String> = vals.into_iter().map(|v| self.param(v)).collect();
        if ps.is_empty() {
            self.conds.push("FALSE".into());
        } else if let [p] = ps.as_slice() {
            // `=` reaches a scan's time range (a binary search), where `IN` of one would not.
            self.conds.push(format!("{col} = {p}"));
        } else {
            self.conds.push(format!("{col} IN ({})", ps.join(", ")));
        }
    }

    /// The records `ids` (made with `prefix`, their id column `col`): `created_at IN (...)` from
    /// the times inside the ids, a binary search per record, then the ids themselves.
    pub fn records(&mut self, prefix: char, col: &str, ids: impl IntoIterator<Item = String>) {
        let ids: Vec<String> = ids.into_iter().collect();
        self.one_of("created_at", ids.iter().filter_map(|id| id_time(prefix, id)).map(ParamValue::Timestamp));
        self.one_of(col, ids.into_iter().map(ParamValue::Str));
    }

    /// The filters of a search or context (the tenant is added by [`Where::tenant`]).
    pub fn filters(&mut self, f: &Filters) -> Result<()> {
        let names = [
            ("namespace", &f.namespace),
            ("user_id", &f.user_id),
            ("session_id", &f.session_id),
            ("agent_id", &f.agent_id),
            ("type", &f.kind),
        ];
        for (col, v) in names {
            if let Some(v) = v {
                validate::name(col, v)?;
                self.cmp(col, "=", ParamValue::Str(v.clone()));
            }
        }
        if let Some(t) = &f.created_before {
            self.cmp("created_at", "<", ParamValue::Timestamp(validate::time("created_before", t)?));
        }
        if let Some(t) = &f.created_after {
            self.cmp("created_at", ">=", ParamValue::Timestamp(validate::time("created_after", t)?));
        }
        Ok(())
    }

    /// `cond AND cond ...` (`TRUE` when there is none).
    pub fn sql(&self) -> String {
        if self.conds.is_empty() {
            "TRUE".into()
        } else {
            self.conds.join(" AND ")
        }
    }

    /// The parameters, in `$n` order.
    pub fn params(&self) -> &[ParamValue] {
        &self.params
    }
}
