//! The server-wide budget of request bodies held in memory at once.
//!
//! Why: each body is limited on its own (`--max-body-mb`, `--max-query-mb`), but a body is read
//! whole before a query or ingest slot is taken, so without a shared budget memory grows with
//! the number of connections: 1,000 clients each sending 256 MiB would ask for 256 GiB. Every
//! body draws on one budget (`--max-inflight-body-mb`) as its bytes arrive, and gives them back
//! when the request is done with them; a body that would overdraw it is refused at once with
//! 503 and `Retry-After`, so the server's memory for bodies stays under the budget whatever the
//! load.
//!
//! The PostgreSQL door's `COPY ... FROM STDIN` draws on the same budget as its decoded rows
//! grow (they are held until CopyDone, to store all or nothing): a client data not yet stored
//! is a request body, whichever door it comes through.
//!
//! The budget is a semaphore counted in KiB (tokio's permits are `u32` per acquisition); a
//! body holds `ceil(bytes / 1024)` permits, taken as it grows.

use crate::error::ApiError;
use hyper::StatusCode;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes per permit.
const UNIT: usize = 1024;

/// The shared budget.
#[derive(Clone, Debug)]
pub struct BodyBudget {
    sem: Arc<Semaphore>,
    bytes: usize,
}

impl BodyBudget {
    /// A budget of `bytes` (rounded up to whole KiB; at least one).
    pub fn new(bytes: usize) -> BodyBudget {
        let units = bytes.div_ceil(UNIT).clamp(1, Semaphore::MAX_PERMITS);
        BodyBudget { sem: Arc::new(Semaphore::new(units)), bytes }
    }

    /// An empty share, to grow as a body arrives.
    pub fn share(&self) -> Held {
        Held { budget: self.clone(), permits: None, units: 0 }
    }

    /// Bytes not held by any body now.
    pub fn available(&self) -> usize {
        self.sem.available_permits().saturating_mul(UNIT)
    }

    /// Bytes held by bodies now (what the `zepto_request_body_bytes_in_flight` gauge shows).
    pub fn held(&self) -> usize {
        self.capacity().saturating_sub(self.available())
    }

    /// The whole budget in bytes, as a whole number of permits.
    fn capacity(&self) -> usize {
        self.bytes.div_ceil(UNIT).clamp(1, Semaphore::MAX_PERMITS).saturating_mul(UNIT)
    }
}

/// A share refused: the budget (of this many bytes) is held by other requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    /// The whole budget (`--max-inflight-body-mb`).
    pub budget_bytes: usize,
}

/// The part of the budget one request holds; given back when dropped.
pub struct Held {
    budget: BodyBudget,
    permits: Option<OwnedSemaphorePermit>,
    units: usize,
}

impl Held {
    /// Hold enough for `total` bytes in all (a body's size so far), or refuse with 503.
    pub fn cover(&mut self, total: usize) -> Result<(), ApiError> {
        self.try_cover(total).map_err(|_| self.refusal())
    }

    /// [`Held::cover`] for a door that words its own refusal: holding no more when the budget
    /// cannot cover `total`.
    pub fn try_cover(&mut self, total: usize) -> Result<(), OverBudget> {
        let over = OverBudget { budget_bytes: self.budget.bytes };
        let want = total.div_ceil(UNIT);
        if want <= self.units {
            return Ok(());
        }
        let more = u32::try_from(want - self.units).map_err(|_| over)?;
        let p = self.budget.sem.clone().try_acquire_many_owned(more).map_err(|_| over)?;
        match &mut self.permits {
            Some(held) => held.merge(p),
            None => self.permits = Some(p),
        }
        self.units = want;
        Ok(())
    }

    /// Hold no more than `total` bytes in all, giving the rest back: what a request that let
    /// go of part of its data (a transaction rolled back to a savepoint) still needs.
    pub fn shrink_to(&mut self, total: usize) {
        let want = total.div_ceil(UNIT);
        let Some(permits) = self.permits.as_mut().filter(|_| want < self.units) else { return };
        if let Some(given_back) = permits.split(self.units - want) {
            drop(given_back);
            self.units = want;
        }
        debug_assert_eq!(self.permits.as_ref().map_or(0, |p| p.num_permits()), self.units);
    }

    /// Bytes held.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.units * UNIT
    }

    fn refusal(&self) -> ApiError {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "BODIES_IN_FLIGHT",
            format!(
                "the server holds as many request bodies as it may ({} MiB in flight; \
                 --max-inflight-body-mb raises it): retry shortly",
                self.budget.bytes >> 20
            ),
        );
        e.retry_after = Some(1);
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_share_one_budget_and_give_it_back() {
        let b = BodyBudget::new(10 * UNIT);
        let mut one = b.share();
        one.cover(3 * UNIT + 1).expect("fits");
        assert_eq!(one.bytes(), 4 * UNIT);
        one.cover(2 * UNIT).expect("already held");
        let mut two = b.share();
        two.cover(6 * UNIT).expect("fits beside the first");
        let err = two.cover(7 * UNIT).expect_err("over the budget");
        assert_eq!((err.status, err.code), (StatusCode::SERVICE_UNAVAILABLE, "BODIES_IN_FLIGHT"));
        assert_eq!(err.retry_after, Some(1));
        assert_eq!(two.bytes(), 6 * UNIT, "a refusal takes nothing");
        drop(one);
        two.cover(10 * UNIT).expect("the first body's share came back");
        assert_eq!((b.available(), b.held()), (0, 10 * UNIT));
        drop(two);
        assert_eq!((b.available(), b.held()), (10 * UNIT, 0));
    }

    #[test]
    fn a_share_shrinks_and_gives_the_rest_back() {
        let b = BodyBudget::new(10 * UNIT);
        let mut one = b.share();
        one.cover(8 * UNIT).expect("fits");
        one.shrink_to(3 * UNIT - 1);
        assert_eq!((one.bytes(), b.held()), (3 * UNIT, 3 * UNIT));
        one.shrink_to(5 * UNIT);
        assert_eq!(one.bytes(), 3 * UNIT, "shrinking never grows");
        b.share().cover(7 * UNIT).expect("what it gave back is free");
        one.shrink_to(0);
        assert_eq!((one.bytes(), b.held()), (0, 0));
        one.cover(2 * UNIT).expect("grows again");
        drop(one);
        assert_eq!(b.held(), 0);
    }
}
