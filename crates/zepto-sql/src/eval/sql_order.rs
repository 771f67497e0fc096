//! SQL's order of values, written once for every comparison. It is the natural order except
//! for floats, where DuckDB and PostgreSQL make it total: NaN equals NaN and is greater than
//! every other value (+Infinity included), and -0.0 equals 0.0. So `x > 1.5` keeps NaN rows,
//! `x = 'NaN'` finds them, `x IN (.., 'NaN')` matches them, and ORDER BY, min/max and GROUP BY
//! agree with the comparison operators.
//!
//! The float forms stay branch-free (an `is_nan` is a compare), so the row-by-row comparison
//! kernels still run in SIMD lanes.

use std::cmp::Ordering;

/// `=`, `<` and `<=` as SQL orders a type (the other three operators follow from them).
pub trait SqlOrd: Copy {
    /// `self = o`.
    fn sql_eq(self, o: Self) -> bool;
    /// `self < o`.
    fn sql_lt(self, o: Self) -> bool;
    /// `self <= o`.
    fn sql_le(self, o: Self) -> bool;
    /// Whether this is a float NaN (never, for other types).
    fn is_nan(self) -> bool;
}

macro_rules! natural_order {
    ($($t:ty),+) => {$(
        impl SqlOrd for $t {
            #[inline(always)]
            fn sql_eq(self, o: Self) -> bool {
                self == o
            }
            #[inline(always)]
            fn sql_lt(self, o: Self) -> bool {
                self < o
            }
            #[inline(always)]
            fn sql_le(self, o: Self) -> bool {
                self <= o
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
        }
    )+};
}

natural_order!(bool, i32, u32, i64, i128);

macro_rules! float_order {
    ($($t:ty),+) => {$(
        impl SqlOrd for $t {
            #[inline(always)]
            fn sql_eq(self, o: Self) -> bool {
                self == o || (self.is_nan() & o.is_nan())
            }
            #[inline(always)]
            fn sql_lt(self, o: Self) -> bool {
                self < o || (!self.is_nan() & o.is_nan())
            }
            #[inline(always)]
            fn sql_le(self, o: Self) -> bool {
                self <= o || o.is_nan()
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    )+};
}

float_order!(f32, f64);

/// The order of two values under [`SqlOrd`] (floats: NaN greatest and equal to itself, -0.0 = 0.0).
#[inline]
pub fn sql_cmp<T: SqlOrd>(a: T, b: T) -> Ordering {
    if a.sql_lt(b) {
        Ordering::Less
    } else if a.sql_eq(b) {
        Ordering::Equal
    } else {
        Ordering::Greater
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: [f64; 9] = [f64::NEG_INFINITY, -7.5, -0.0, 0.0, 1e-300, 1.5, f64::INFINITY, f64::NAN, -f64::NAN];

    /// The rank of a value in SQL's order: equal values share one.
    fn rank(x: f64) -> u32 {
        match x {
            x if x.is_nan() => 6,
            x if x == f64::INFINITY => 5,
            1.5 => 4,
            x if x > 0.0 => 3,
            0.0 => 2,
            -7.5 => 1,
            _ => 0,
        }
    }

    #[test]
    fn floats_order_as_their_ranks_with_nan_greatest() {
        for a in SAMPLES {
            for b in SAMPLES {
                let want = rank(a).cmp(&rank(b));
                assert_eq!(sql_cmp(a, b), want, "{a} vs {b}");
                assert_eq!(a.sql_eq(b), want == Ordering::Equal, "{a} = {b}");
                assert_eq!(a.sql_lt(b), want == Ordering::Less, "{a} < {b}");
                assert_eq!(a.sql_le(b), want != Ordering::Greater, "{a} <= {b}");
                let (x, y) = (a as f32, b as f32);
                let want32 = rank(f64::from(x)).cmp(&rank(f64::from(y)));
                assert_eq!(sql_cmp(x, y), want32, "f32 {x} vs {y}");
            }
        }
    }

    #[test]
    fn integers_keep_their_natural_order() {
        for (a, b) in [(i64::MIN, 0), (3, 3), (5, -5)] {
            assert_eq!((a.sql_eq(b), a.sql_lt(b), a.sql_le(b)), (a == b, a < b, a <= b));
        }
        assert!(false.sql_lt(true) && !true.sql_le(false));
    }
}
