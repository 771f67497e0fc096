//! Reading the live log back, read-only: the records after an LSN, for a subscriber that
//! resumes from a position the change feed no longer holds (zepto-durable's `read_since`).
//!
//! Unlike [`crate::replay`] it never cuts or moves a segment: the log is being written while
//! it reads. It reads only records up to an LSN the writer has finished (`upto`), so a frame
//! the writer is still appending is never seen; damage before `upto` is an error.

use crate::format::{decode, frame_at, Decoded, HEADER_LEN};
use crate::reader::segments;
use crate::{Lsn, Storage, WalError};

/// What [`read_since`] found.
#[derive(Debug, PartialEq)]
pub enum Since {
    /// The records were read: every one after `after`, through `through` (the last one
    /// handed over; stops early once `max_bytes` of payload were handed over).
    Read {
        /// The last LSN read.
        through: Lsn,
    },
    /// The log no longer holds the record after `after` (a checkpoint removed its segment):
    /// the oldest it holds is `oldest`.
    Gone {
        /// The first LSN the log still holds.
        oldest: Lsn,
    },
}

/// The first LSN of the oldest segment (`None`: there is none).
pub fn oldest(storage: &dyn Storage) -> Result<Option<Lsn>, WalError> {
    Ok(segments(storage)?.first().map(|(l, _)| *l))
}

/// Hand each record with an LSN in `(after, upto]` to `f`, in order, stopping after the
/// record that takes the payload handed over past `max_bytes` (see the module docs). Records
/// at or before `after` are stepped over by their frame headers, without their checksums.
pub fn read_since(
    storage: &dyn Storage,
    after: Lsn,
    upto: Lsn,
    max_bytes: usize,
    mut f: impl FnMut(Lsn, &[u8]),
) -> Result<Since, WalError> {
    let segments = segments(storage)?;
    let Some(&(oldest, _)) = segments.first() else {
        return Ok(if after >= upto { Since::Read { through: after } } else { Since::Gone { oldest: upto + 1 } });
    };
    if oldest > after + 1 && after < upto {
        return Ok(Since::Gone { oldest });
    }
    let (mut through, mut bytes) = (after, 0usize);
    for (k, (first, name)) in segments.iter().enumerate() {
        let next_first = segments.get(k + 1).map(|(l, _)| *l);
        if next_first.is_some_and(|n| n <= after + 1) || *first > upto {
            continue;
        }
        let buf = storage.read(name)?;
        let mut pos = HEADER_LEN;
        while through < upto {
            if let Some((lsn, next)) = frame_at(&buf, pos).filter(|(lsn, _)| *lsn <= after) {
                debug_assert!(lsn <= after);
                pos = next;
                continue;
            }
            let Decoded::Record { lsn, payload, next } = decode(&buf, pos) else {
                break;
            };
            if lsn > after {
                if lsn != through + 1 {
                    return Err(WalError::Corrupt {
                        file: name.clone(),
                        offset: pos as u64,
                        reason: format!("record has LSN {lsn}, expected {}", through + 1),
                    });
                }
                f(lsn, payload);
                through = lsn;
                bytes += payload.len();
                if bytes >= max_bytes {
                    return Ok(Since::Read { through });
                }
            }
            pos = next;
        }
        if through >= upto {
            break;
        }
    }
    if through < upto {
        return Err(WalError::Corrupt {
            file: String::new(),
            offset: through,
            reason: format!("the log ends at LSN {through}, before LSN {upto} it has written"),
        });
    }
    Ok(Since::Read { through })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;
    use crate::writer::{SyncMode, Wal};
    use std::sync::Arc;

    fn read(st: &MemStorage, after: Lsn, upto: Lsn, max: usize) -> (Vec<(Lsn, Vec<u8>)>, Since) {
        let mut out = Vec::new();
        let s = read_since(st, after, upto, max, |l, p| out.push((l, p.to_vec()))).expect("read");
        (out, s)
    }

    /// Records after an LSN come back in order across segments, up to `upto` and in pages of
    /// `max_bytes`; a removed segment is told as gone, with the oldest LSN still held.
    #[test]
    fn reads_the_records_after_an_lsn_without_touching_the_log() {
        let st = Arc::new(MemStorage::new());
        let wal = Wal::open(st.clone(), SyncMode::Always, 1).expect("open");
        for i in 1..=10u8 {
            wal.append(&[i; 5]).expect("append");
            if i % 4 == 0 {
                wal.rotate().expect("rotate");
            }
        }
        let files = st.list().expect("list");
        let (got, s) = read(&st, 2, 9, usize::MAX);
        assert_eq!(s, Since::Read { through: 9 });
        assert_eq!(got.iter().map(|(l, _)| *l).collect::<Vec<_>>(), (3..=9).collect::<Vec<_>>());
        assert!(got.iter().all(|(l, p)| p == &vec![*l as u8; 5]));
        let (got, s) = read(&st, 0, 10, 12);
        assert_eq!((got.len(), s), (3, Since::Read { through: 3 }), "stops after the record passing the bound");
        assert_eq!(read(&st, 10, 10, usize::MAX), (Vec::new(), Since::Read { through: 10 }));
        assert_eq!(st.list().expect("list"), files, "nothing was changed");
        wal.remove_through(8).expect("remove");
        assert_eq!(read(&st, 3, 10, usize::MAX).1, Since::Gone { oldest: 9 });
        assert_eq!(read(&st, 8, 10, usize::MAX).0.len(), 2);
    }
}
