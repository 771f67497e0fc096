//! The records appended but not yet written. Small records are framed into one buffer, so a
//! group commit of many is one write; a large payload handed over by value stays in its own
//! vector and is written from there. A 480 MB batch was copied whole into the buffer (fresh
//! pages, each faulted in) before it was written.

use crate::format::{encode, encode_frame_header};
use crate::Lsn;
use std::borrow::Cow;

/// A payload this large, handed over by value, is written from its own vector.
const OWN_PIECE: usize = 1 << 20;

/// Framed records in write order, as pieces to write one after another. The last piece is
/// always the buffer small records go into (maybe empty).
#[derive(Default)]
pub(crate) struct Pending {
    pieces: Vec<Vec<u8>>,
    len: usize,
}

impl Pending {
    /// Frame record `lsn` at the end.
    pub(crate) fn push(&mut self, lsn: Lsn, payload: Cow<'_, [u8]>) {
        if self.pieces.is_empty() {
            self.pieces.push(Vec::new());
        }
        let tail = self.pieces.len() - 1;
        let tail_was = self.pieces[tail].len();
        let mut own = 0;
        match payload {
            Cow::Owned(v) if v.len() >= OWN_PIECE => {
                encode_frame_header(lsn, &v, &mut self.pieces[tail]);
                own = v.len();
                self.pieces.push(v);
                self.pieces.push(Vec::new());
            }
            p => encode(lsn, &p, &mut self.pieces[tail]),
        }
        self.len += self.pieces[tail].len() - tail_was + own;
    }

    /// Bytes framed.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes to write, in order (no piece empty).
    pub(crate) fn pieces(&self) -> impl Iterator<Item = &[u8]> {
        self.pieces.iter().filter(|p| !p.is_empty()).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_the_records_framed_one_after_another() {
        let big = vec![7u8; OWN_PIECE];
        let mut p = Pending::default();
        let mut want = Vec::new();
        p.push(1, Cow::Borrowed(b"small"));
        encode(1, b"small", &mut want);
        p.push(2, Cow::Owned(big.clone()));
        encode(2, &big, &mut want);
        p.push(3, Cow::Owned(b"owned but small".to_vec()));
        encode(3, b"owned but small", &mut want);
        assert_eq!(p.len(), want.len());
        assert_eq!(p.pieces().count(), 3, "the large payload is a piece of its own");
        assert_eq!(p.pieces().collect::<Vec<_>>().concat(), want);
        assert!(Pending::default().is_empty() && Pending::default().pieces().next().is_none());
    }
}
