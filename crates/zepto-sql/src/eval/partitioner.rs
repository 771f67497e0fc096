//! Kafka's default partitioner, for `kafka_partition(key, n)`: which partition of a topic a
//! record keyed `key` lands in, so that a cluster node (or a user) can tell where a symbol's
//! rows live. It is the Java client's `Utils.murmur2` (seed `0x9747b28c`, the four-byte
//! little-endian blocks of MurmurHash2, the tail mixed in before the final avalanche), made
//! positive by clearing the sign bit, modulo the partition count; librdkafka's
//! `murmur2_random` partitioner computes the same for non-empty keys.

/// Kafka's `murmur2` of `data`, as the Java client's `Utils.murmur2` (a signed 32-bit value).
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = SEED ^ data.len() as u32;
    let blocks = data.chunks_exact(4);
    let tail = blocks.remainder();
    for b in blocks {
        let mut k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    if !tail.is_empty() {
        for (i, &byte) in tail.iter().enumerate().rev() {
            h ^= u32::from(byte) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition of `partitions` (at least 1) a record keyed `key` lands in.
pub fn kafka_partition(key: &[u8], partitions: i64) -> i64 {
    debug_assert!(partitions >= 1);
    i64::from(murmur2(key) & 0x7fff_ffff) % partitions.max(1)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// The values Kafka's own tests (`UtilsTest.testMurmur2`) expect.
    #[test]
    fn murmur2_matches_kafkas_java_client() {
        let cases: [(&str, i32); 6] = [
            ("21", -973_932_308),
            ("foobar", -790_332_482),
            ("a-little-bit-long-string", -985_981_536),
            ("a-little-bit-longer-string", -1_486_304_829),
            ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
            ("abc", 479_470_107),
        ];
        for (key, want) in cases {
            assert_eq!(murmur2(key.as_bytes()), want, "{key}");
        }
        assert_eq!(kafka_partition(b"abc", 1), 0);
        assert!((0..7).contains(&kafka_partition(b"foobar", 7)));
    }
}
