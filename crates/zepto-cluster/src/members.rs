//! Who is in the cluster: the members of the node's consumer group and the partitions Kafka
//! assigned each, as the group coordinator reports them (`GET /cluster` `members`).
//!
//! Kafka's consumer protocol encodes a member's assignment as bytes the clients agree on
//! (`ConsumerProtocolAssignment`: a version, then per topic its name and partition numbers,
//! then user data, all big-endian); [`assignment`] reads the partitions of one topic from it,
//! refusing (never panicking on) bytes that do not follow it.

pub use zepto_server::cluster::Member;

/// Reads big-endian fields from a byte slice, failing at its end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    fn i16(&mut self) -> Option<i16> {
        self.take(2).and_then(|b| b.try_into().ok()).map(i16::from_be_bytes)
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes)
    }

    /// A non-negative count, no larger than the bytes left could hold at `min` bytes each.
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = usize::try_from(self.i32()?).ok()?;
        (n.saturating_mul(min) <= self.0.len()).then_some(n)
    }
}

/// The partitions of `topic` in a member's assignment bytes, ascending; `None` when the bytes
/// do not follow the consumer protocol.
pub fn assignment(bytes: &[u8], topic: &str) -> Option<Vec<i32>> {
    let mut r = Reader(bytes);
    let _version = r.i16()?;
    let mut out = Vec::new();
    for _ in 0..r.count(6)? {
        let len = usize::try_from(r.i16()?).ok()?;
        let name = r.take(len)?;
        let n = r.count(4)?;
        let parts = (0..n).map(|_| r.i32()).collect::<Option<Vec<i32>>>()?;
        if name == topic.as_bytes() {
            out.extend(parts);
        }
    }
    out.sort_unstable();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(topics: &[(&str, &[i32])]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(1i16.to_be_bytes());
        b.extend((topics.len() as i32).to_be_bytes());
        for (t, ps) in topics {
            b.extend((t.len() as i16).to_be_bytes());
            b.extend(t.as_bytes());
            b.extend((ps.len() as i32).to_be_bytes());
            ps.iter().for_each(|p| b.extend(p.to_be_bytes()));
        }
        b.extend((-1i32).to_be_bytes()); // no user data
        b
    }

    #[test]
    fn assignments_are_read_and_bad_bytes_refused() {
        let b = encode(&[("other", &[0, 1]), ("zepto", &[5, 2, 3])]);
        assert_eq!(assignment(&b, "zepto"), Some(vec![2, 3, 5]));
        assert_eq!(assignment(&b, "none"), Some(vec![]));
        assert_eq!(assignment(&encode(&[]), "zepto"), Some(vec![]));
        // Cut anywhere before the (unread) user data: refused.
        for cut in 0..b.len() - 4 {
            assert_eq!(assignment(&b[..cut], "zepto"), None, "cut at {cut}");
        }
        let mut huge = encode(&[("zepto", &[1])]);
        huge[2..6].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(assignment(&huge, "zepto"), None, "a count past the bytes");
        huge[2..6].copy_from_slice(&(-3i32).to_be_bytes());
        assert_eq!(assignment(&huge, "zepto"), None, "a negative count");
    }
}
