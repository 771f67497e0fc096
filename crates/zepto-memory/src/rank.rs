//! The ranking of search and context, written once as a SQL expression over a record's
//! columns, so the engine computes it next to the data and a user can run the same ranking in
//! SQL:
//!
//! ```text
//! score = w_similarity · similarity                      cosine to the query, -1..1 (0 without one)
//!       + w_importance · importance                      0..1, given at put (default 0.5)
//!       + w_recency    · 0.5 ^ (age / half_life)          age since created_at, half-life 7 days
//!       + w_access     · min(1, ln(1 + access_count) / ln(101))   saturates at 100 reads
//!       + w_pinned     · (1 if pinned else 0)
//! ```
//!
//! Default weights: similarity 1.0, importance 0.3, recency 0.2, access 0.1, pinned 0.3.
//! Ties go to the newer record, then the smaller id.

use crate::api::WeightsInput;
use crate::error::{MemoryError, Result};

/// The default recency half-life: 7 days.
pub const DEFAULT_HALF_LIFE_SECONDS: f64 = 7.0 * 86_400.0;

/// The weights of the score (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    similarity: f64,
    importance: f64,
    recency: f64,
    access: f64,
    pinned: f64,
    half_life_ns: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            similarity: 1.0,
            importance: 0.3,
            recency: 0.2,
            access: 0.1,
            pinned: 0.3,
            half_life_ns: DEFAULT_HALF_LIFE_SECONDS * 1e9,
        }
    }
}

fn weight(field: &str, v: Option<f64>, default: f64) -> Result<f64> {
    let w = v.unwrap_or(default);
    if !(w.is_finite() && (0.0..=100.0).contains(&w)) {
        return Err(MemoryError::bad(&format!("weights.{field}"), format!("{w} is not between 0 and 100")));
    }
    Ok(w)
}

impl Weights {
    /// The defaults overridden by what a request gives (each weight 0..=100, the half-life
    /// positive).
    pub fn from_request(w: Option<&WeightsInput>, half_life_seconds: Option<f64>) -> Result<Weights> {
        let d = Weights::default();
        let w = w.copied().unwrap_or_default();
        let half_life_ns = match half_life_seconds {
            None => d.half_life_ns,
            Some(s) if s.is_finite() && s > 0.0 && s < 1e10 => s * 1e9,
            Some(s) => return Err(MemoryError::bad("half_life_seconds", format!("{s} is not a positive number"))),
        };
        Ok(Weights {
            similarity: weight("similarity", w.similarity, d.similarity)?,
            importance: weight("importance", w.importance, d.importance)?,
            recency: weight("recency", w.recency, d.recency)?,
            access: weight("access", w.access, d.access)?,
            pinned: weight("pinned", w.pinned, d.pinned)?,
            half_life_ns,
        })
    }

    /// The score as SQL over the columns of `ai_memories` at time `now` (nanoseconds), with
    /// a `similarity` column when `with_similarity`.
    pub fn sql(&self, now: i64, with_similarity: bool) -> String {
        let mut s = format!(
            "{:?} * importance \
             + {:?} * power(0.5, greatest(0.0, ({now} - epoch_ns(created_at)) / {:?})) \
             + {:?} * least(1.0, ln(1.0 + access_count) / ln(101.0)) \
             + {:?} * (CASE WHEN pinned THEN 1.0 ELSE 0.0 END)",
            self.importance, self.recency, self.half_life_ns, self.access, self.pinned
        );
        if with_similarity {
            s = format!("{:?} * similarity + {s}", self.similarity);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_checked() {
        let w = WeightsInput { recency: Some(0.0), ..Default::default() };
        let got = Weights::from_request(Some(&w), Some(60.0)).expect("ok");
        assert_eq!(got.recency, 0.0);
        assert_eq!(got.half_life_ns, 60e9);
        assert!(Weights::from_request(Some(&WeightsInput { pinned: Some(-1.0), ..Default::default() }), None).is_err());
        assert!(Weights::from_request(None, Some(0.0)).is_err());
        assert!(Weights::default().sql(5, true).starts_with("1.0 * similarity + 0.3 * importance"));
    }
}
