//! On-disk format.
//!
//! Segment file `<first LSN, 20 digits>.wal`:
//! ```text
//! header:  "ZEPTOWAL" (8) | version u32 LE (4) | first LSN u64 LE (8)
//! record:  payload length u32 LE | CRC-32 u32 LE | LSN u64 LE | payload
//! ```
//! The CRC covers the length, the LSN and the payload, so a damaged length or LSN is caught as
//! surely as a damaged payload.

use crate::Lsn;

pub const MAGIC: [u8; 8] = *b"ZEPTOWAL";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 20;
pub const FRAME_LEN: usize = 16;
/// Largest payload (a batch bigger than this should be split by the caller).
pub const MAX_PAYLOAD: usize = 1 << 30;

pub fn segment_name(first: Lsn) -> String {
    format!("{first:020}.wal")
}

/// The first LSN a segment name promises, if it is one of ours.
pub fn parse_segment_name(name: &str) -> Option<Lsn> {
    let digits = name.strip_suffix(".wal")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

pub fn header(first: Lsn) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..20].copy_from_slice(&first.to_le_bytes());
    h
}

fn crc(len: u32, lsn: Lsn, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(&lsn.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// Append one framed record to `out`.
pub fn encode(lsn: Lsn, payload: &[u8], out: &mut Vec<u8>) {
    debug_assert!(payload.len() <= MAX_PAYLOAD);
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc(len, lsn, payload).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(payload);
}

/// What is at `buf[pos..]`.
#[derive(Debug, PartialEq)]
pub enum Decoded<'a> {
    Record {
        lsn: Lsn,
        payload: &'a [u8],
        next: usize,
    },
    /// The buffer ends inside a frame (a write cut short).
    Truncated,
    /// A complete frame whose checksum does not match.
    BadChecksum,
    End,
}

pub fn decode(buf: &[u8], pos: usize) -> Decoded<'_> {
    let rest = &buf[pos.min(buf.len())..];
    if rest.is_empty() {
        return Decoded::End;
    }
    if rest.len() < FRAME_LEN {
        return Decoded::Truncated;
    }
    let word = |i: usize| u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
    let len = word(0);
    let sum = word(4);
    let mut lsn_bytes = [0u8; 8];
    lsn_bytes.copy_from_slice(&rest[8..16]);
    let lsn = u64::from_le_bytes(lsn_bytes);
    let end = FRAME_LEN + len as usize;
    if len as usize > MAX_PAYLOAD {
        return Decoded::BadChecksum;
    }
    if rest.len() < end {
        return Decoded::Truncated;
    }
    let payload = &rest[FRAME_LEN..end];
    if crc(len, lsn, payload) != sum {
        return Decoded::BadChecksum;
    }
    Decoded::Record { lsn, payload, next: pos + end }
}

/// Is `rest` (a frame the file ends inside, by its length field) a complete record whose length
/// field alone was damaged? True when the checksum is right taking the rest of the file as the
/// payload: a crash that cut a write short cannot produce that.
pub fn complete_with_bad_length(rest: &[u8]) -> bool {
    if rest.len() < FRAME_LEN {
        return false;
    }
    let sum = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    let mut lsn_bytes = [0u8; 8];
    lsn_bytes.copy_from_slice(&rest[8..16]);
    let payload = &rest[FRAME_LEN..];
    u32::try_from(payload.len()).is_ok_and(|len| crc(len, u64::from_le_bytes(lsn_bytes), payload) == sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_detect_damage() {
        let mut buf = Vec::new();
        encode(7, b"hello", &mut buf);
        encode(8, b"", &mut buf);
        let Decoded::Record { lsn, payload, next } = decode(&buf, 0) else { panic!("record") };
        assert_eq!((lsn, payload), (7, &b"hello"[..]));
        assert!(matches!(decode(&buf, next), Decoded::Record { lsn: 8, .. }));
        assert_eq!(decode(&buf, buf.len()), Decoded::End);
        for cut in 1..21 {
            assert_eq!(decode(&buf[..cut], 0), Decoded::Truncated, "cut at {cut}");
        }
        for i in 0..21 {
            let mut bad = buf.clone();
            bad[i] ^= 0x40;
            assert!(!matches!(decode(&bad, 0), Decoded::Record { lsn: 7, payload: b"hello", .. }), "flip at {i}");
        }
        assert_eq!(parse_segment_name(&segment_name(42)), Some(42));
        assert_eq!(parse_segment_name("42.wal"), None);
    }
}
