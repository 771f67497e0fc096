//! The distances a graph ranks by: one type per metric, so a walk's inner loop calls its kernel
//! directly (inlined into the walk, no call through a pointer per distance).
//!
//! A cosine graph holds unit vectors in half precision ([`crate::half`]): its distance is one
//! dot product of 16-bit values, reading half the memory of f32. L2 and inner-product graphs
//! keep f32, whose range their values may need. The AVX2 kernels are chosen at run time.

use crate::half;
use zepto_storage::vector;

/// A metric over stored vectors of one element type (smaller is nearer).
pub(crate) trait Kernel: Send + Sync + 'static {
    /// What one value of a stored vector is.
    type Elem: Copy + Send + Sync + 'static;
    /// The distance between two vectors of the graph's dimension.
    fn distance(a: &[Self::Elem], b: &[Self::Elem]) -> f32;
}

/// `1 - a·b` of unit vectors in half precision (`i16` bit patterns): the cosine distance.
pub(crate) struct CosineHalf;

impl Kernel for CosineHalf {
    type Elem = i16;
    #[inline]
    fn distance(a: &[i16], b: &[i16]) -> f32 {
        1.0 - half::dot(a, b)
    }
}

/// The squared Euclidean distance (orders as the distance does).
pub(crate) struct SquaredL2;

impl Kernel for SquaredL2 {
    type Elem = f32;
    #[inline]
    fn distance(a: &[f32], b: &[f32]) -> f32 {
        vector::l2_squared(a, b) as f32
    }
}

/// `1 - a·b`: the negative inner product, shifted so that equal unit vectors are 0 apart.
pub(crate) struct InnerProduct;

impl Kernel for InnerProduct {
    type Elem = f32;
    #[inline]
    fn distance(a: &[f32], b: &[f32]) -> f32 {
        (1.0 - vector::dot(a, b)) as f32
    }
}
