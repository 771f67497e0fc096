//! Integer `//` and `%` of a column by one constant divisor, as multiplications and shifts
//! (`strength_reduce`: the divisor's reciprocal worked out once, as a compiler does for a
//! divisor it knows), instead of a hardware division per row. `GROUP BY size % 10`,
//! `ts // 60000000000` and the like evaluate their key this way.
//!
//! The answers are exactly Rust's `wrapping_div` / `wrapping_rem` (what the evaluator gives
//! for any divisor): both truncate toward zero, so the quotient and remainder of the
//! magnitudes are taken unsigned and the signs put back (the quotient's is the operands'
//! exclusive or, the remainder's the dividend's). `i64::MIN // -1` wraps to `i64::MIN` as
//! `wrapping_div` does; the evaluator refuses that one quotient (out of range, as DuckDB) before
//! it is shown.

use strength_reduce::{StrengthReducedU32, StrengthReducedU64};

/// Signed integers whose division by a constant can be strength-reduced.
pub(crate) trait ByConst: Copy {
    /// `v[i].wrapping_div(c)` for every row; `None` when `c` is zero (the caller's rules for
    /// it apply) or the type has no reduction.
    fn div_all(v: &[Self], c: Self) -> Option<Vec<Self>>;
    /// `v[i].wrapping_rem(c)` for every row; `None` as for [`ByConst::div_all`].
    fn rem_all(v: &[Self], c: Self) -> Option<Vec<Self>>;
}

macro_rules! by_const {
    ($t:ty, $u:ty, $reduced:ty, $bits:expr) => {
        impl ByConst for $t {
            fn div_all(v: &[$t], c: $t) -> Option<Vec<$t>> {
                let d = (c != 0).then(|| <$reduced>::new(c.unsigned_abs()))?;
                let c_neg = (c >> ($bits - 1)) as $u;
                Some(
                    v.iter()
                        .map(|&x| {
                            // All ones when the quotient is negative, else zero.
                            let neg = ((x >> ($bits - 1)) as $u) ^ c_neg;
                            ((x.unsigned_abs() / d) ^ neg).wrapping_sub(neg) as $t
                        })
                        .collect(),
                )
            }

            fn rem_all(v: &[$t], c: $t) -> Option<Vec<$t>> {
                let d = (c != 0).then(|| <$reduced>::new(c.unsigned_abs()))?;
                Some(
                    v.iter()
                        .map(|&x| {
                            let neg = (x >> ($bits - 1)) as $u;
                            ((x.unsigned_abs() % d) ^ neg).wrapping_sub(neg) as $t
                        })
                        .collect(),
                )
            }
        }
    };
}

by_const!(i32, u32, StrengthReducedU32, 32);
by_const!(i64, u64, StrengthReducedU64, 64);

impl ByConst for i128 {
    fn div_all(_: &[i128], _: i128) -> Option<Vec<i128>> {
        None
    }

    fn rem_all(_: &[i128], _: i128) -> Option<Vec<i128>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::ByConst;
    use zepto_storage::rng::XorShift;

    fn check<T>(values: &[T], divisors: &[T], div: fn(T, T) -> T, rem: fn(T, T) -> T)
    where
        T: ByConst + PartialEq + std::fmt::Debug + Default,
    {
        for &c in divisors {
            if c == T::default() {
                assert!(T::div_all(values, c).is_none() && T::rem_all(values, c).is_none());
                continue;
            }
            let want: Vec<T> = values.iter().map(|&x| div(x, c)).collect();
            assert_eq!(T::div_all(values, c), Some(want), "// {c:?}");
            let want: Vec<T> = values.iter().map(|&x| rem(x, c)).collect();
            assert_eq!(T::rem_all(values, c), Some(want), "% {c:?}");
        }
    }

    #[test]
    fn i64_answers_as_a_division_does() {
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut values = vec![i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
        values.extend((0..4000).map(|i| {
            let r = rng.below(u64::MAX) as i64;
            // Whole range, then small magnitudes of both signs, where most keys live.
            if i % 2 == 0 {
                r
            } else {
                r % 100_000
            }
        }));
        let mut divisors = vec![0, 1, -1, 2, -2, 3, 7, -7, 10, 60, 1 << 20, 1_000_000_007, i64::MAX, i64::MIN];
        divisors.extend((0..60).map(|i| {
            let r = rng.below(u64::MAX) as i64;
            if i % 3 == 0 {
                r
            } else {
                r % 5000
            }
        }));
        check(&values, &divisors, i64::wrapping_div, i64::wrapping_rem);
    }

    #[test]
    fn i32_answers_as_a_division_does() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut values = vec![i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX - 1, i32::MAX];
        values.extend((0..4000).map(|_| rng.below(u64::from(u32::MAX)) as u32 as i32));
        let mut divisors = vec![0, 1, -1, 2, -2, 3, 10, -10, 86_400, i32::MAX, i32::MIN];
        divisors.extend((0..40).map(|_| (rng.below(20_000) as i32) - 10_000));
        check(&values, &divisors, i32::wrapping_div, i32::wrapping_rem);
    }
}
