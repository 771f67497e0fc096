//! On-disk format.
//!
//! Segment file `<first LSN, 20 digits>.wal`:
//! ```text
//! header:  "ZEPTOWAL" (8) | version u32 LE (4) | first LSN u64 LE (8)
//! record:  payload length u32 LE | CRC-32 u32 LE | LSN u64 LE | payload
//! ```
//! The CRC covers the length, the LSN and the payload, so a damaged length or LSN is caught as
//! surely as a damaged payload.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::Lsn;

/// The first bytes of every segment.
pub const MAGIC: [u8; 8] = *b"ZEPTOWAL";
/// The segment format version, after the magic.
pub const VERSION: u32 = 1;
/// Segment header: magic, version, first LSN.
pub const HEADER_LEN: usize = 20;
/// Record frame header: payload length, checksum, LSN.
pub const FRAME_LEN: usize = 16;
/// Largest payload (a batch bigger than this should be split by the caller).
pub const MAX_PAYLOAD: usize = 1 << 30;

/// The file name of the segment whose first record is `first` (sorts in LSN order).
pub fn segment_name(first: Lsn) -> String {
    format!("{first:020}.wal")
}

/// The first LSN a segment name promises, if it is one of ours.
pub fn parse_segment_name(name: &str) -> Option<Lsn> {
    let digits = name.strip_suffix(".wal")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// The header of a segment starting at LSN `first`.
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
    encode_frame_header(lsn, payload, out);
    out.extend_from_slice(payload);
}

/// Append what precedes `payload` in its record's frame (length, checksum, LSN) to `out`: the
/// payload itself may then be written from where it is.
pub fn encode_frame_header(lsn: Lsn, payload: &[u8], out: &mut Vec<u8>) {
    debug_assert!(payload.len() <= MAX_PAYLOAD);
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc(len, lsn, payload).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
}

/// What is at `buf[pos..]`.
#[derive(Debug, PartialEq)]
pub enum Decoded<'a> {
    /// A whole, checked record.
    Record {
        /// Its log sequence number.
        lsn: Lsn,
        /// What the writer logged.
        payload: &'a [u8],
        /// Where the next frame starts.
        next: usize,
    },
    /// The buffer ends inside a frame (a write cut short).
    Truncated,
    /// A complete frame whose checksum does not match.
    BadChecksum,
    /// Nothing more: the buffer ends here.
    End,
}

/// The frame header at the start of `rest`: payload length, checksum and LSN (`None` if
/// `rest` is shorter than a header).
fn frame_header(rest: &[u8]) -> Option<(u32, u32, Lsn)> {
    let len = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?);
    let sum = u32::from_le_bytes(rest.get(4..8)?.try_into().ok()?);
    let lsn = u64::from_le_bytes(rest.get(8..16)?.try_into().ok()?);
    Some((len, sum, lsn))
}

/// The LSN of the frame at `buf[pos..]` and where the next starts, from its header alone (its
/// checksum unchecked: for stepping over records already known good); `None` when the buffer
/// ends inside it.
pub fn frame_at(buf: &[u8], pos: usize) -> Option<(Lsn, usize)> {
    let (len, _, lsn) = frame_header(buf.get(pos..)?)?;
    let next = pos.checked_add(FRAME_LEN + len as usize)?;
    (len as usize <= MAX_PAYLOAD && next <= buf.len()).then_some((lsn, next))
}

/// The frame at `buf[pos..]`, checked.
pub fn decode(buf: &[u8], pos: usize) -> Decoded<'_> {
    let rest = buf.get(pos..).unwrap_or_default();
    if rest.is_empty() {
        return Decoded::End;
    }
    let Some((len, sum, lsn)) = frame_header(rest) else {
        return Decoded::Truncated;
    };
    let end = FRAME_LEN + len as usize;
    if len as usize > MAX_PAYLOAD {
        return Decoded::BadChecksum;
    }
    let Some(payload) = rest.get(FRAME_LEN..end) else {
        return Decoded::Truncated;
    };
    if crc(len, lsn, payload) != sum {
        return Decoded::BadChecksum;
    }
    Decoded::Record { lsn, payload, next: pos + end }
}

/// Is `rest` (a frame the file ends inside, by its length field) a complete record whose length
/// field alone was damaged? True when the checksum is right taking the rest of the file as the
/// payload: a crash that cut a write short cannot produce that.
pub fn complete_with_bad_length(rest: &[u8]) -> bool {
    let (Some((_, sum, lsn)), Some(payload)) = (frame_header(rest), rest.get(FRAME_LEN..)) else {
        return false;
    };
    u32::try_from(payload.len()).is_ok_and(|len| crc(len, lsn, payload) == sum)
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
