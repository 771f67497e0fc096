//! Reading a whole file into memory on every core. `COPY FROM` a CSV file holds its text while
//! it is decoded; one thread copying 450 MB out of the page cache (and faulting in the fresh
//! buffer) was a fifth of a 10M-row load, ahead of the parallel decode.

use std::fs::File;
use std::io;

/// Files smaller than this are read by the calling thread.
const PARALLEL_BYTES: usize = 32 << 20;

/// The first `len` bytes of `file` (the length seen when it was opened: a file that grows
/// meanwhile cannot outrun a check made on it). Large files are read in one range per core,
/// each into its own part of one buffer; a file that shrank below `len` is an error.
pub fn read_exact_len(file: &File, len: usize) -> io::Result<Vec<u8>> {
    let threads = zepto_storage::par::threads();
    // Zeroed memory from the allocator is mapped lazily: each reader faults in its own range.
    let mut out = vec![0u8; len];
    if len < PARALLEL_BYTES || threads < 2 {
        read_at(file, &mut out, 0)?;
        return Ok(out);
    }
    let part = len.div_ceil(threads);
    let ranges: Vec<(u64, &mut [u8])> =
        out.chunks_mut(part).enumerate().map(|(k, buf)| ((k * part) as u64, buf)).collect();
    let failed = std::sync::Mutex::new(None);
    zepto_storage::par::for_each(ranges, |(offset, buf)| {
        if let Err(e) = read_at(file, buf, offset) {
            failed.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
        }
    });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// All of `buf` from `offset` of `file`, without moving a shared cursor; a file that ends
/// first is `UnexpectedEof`.
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// [`read_at`] where there are no positioned reads: through a handle of its own.
#[cfg(not(unix))]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_the_first_len_bytes_in_ranges_and_refuses_a_short_file() {
        let dir = std::env::temp_dir().join(format!("zepto-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("big.bin");
        // Bytes that differ by position, so a range read at the wrong offset shows.
        let data: Vec<u8> = (0..PARALLEL_BYTES + 12_345).map(|i| (i % 251) as u8).collect();
        std::fs::File::create(&path).and_then(|mut f| f.write_all(&data)).expect("write");
        let f = File::open(&path).expect("open");
        assert_eq!(read_exact_len(&f, data.len()).expect("whole"), data);
        assert_eq!(read_exact_len(&f, 1000).expect("a prefix"), data[..1000]);
        let short = read_exact_len(&f, data.len() + 1).expect_err("past the end");
        assert_eq!(short.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(read_exact_len(&f, 10).expect("a prefix again"), data[..10]);
        assert_eq!(read_exact_len(&f, 0).expect("nothing"), Vec::<u8>::new());
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
