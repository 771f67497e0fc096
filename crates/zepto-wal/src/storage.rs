//! Where segment files live, behind a trait small enough to fake: [`DirStorage`] is a real
//! directory; [`MemStorage`] keeps files in memory, separates what was written from what was
//! made durable by `sync`, and injects failures (a short write, an fsync error, a crash that
//! keeps only the synced bytes plus some prefix of the rest).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A directory of segment files.
pub trait Storage: Send + Sync {
    /// File names, sorted.
    fn list(&self) -> io::Result<Vec<String>>;
    /// The whole of `name`.
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;
    /// Append to `name` (created if missing).
    fn append(&self, name: &str, data: &[u8]) -> io::Result<()>;
    /// Make everything appended to `name` durable (fsync; for a new file also its directory).
    fn sync(&self, name: &str) -> io::Result<()>;
    /// Cut `name` to `len` bytes (replay's explicit repair of a damaged tail) and sync it.
    fn truncate(&self, name: &str, len: u64) -> io::Result<()>;
    /// Delete `name` (durably: the directory is synced).
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Rename `from` to `to` (replacing it) and make the rename durable: with a synced `from`,
    /// this is the atomic publish step of a file written under a temporary name.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Where `name` lives on disk, for readers that open files themselves (`None`: in memory).
    fn path(&self, _name: &str) -> Option<PathBuf> {
        None
    }
}

/// Segment files in a directory on disk.
pub struct DirStorage {
    dir: PathBuf,
    /// The open file appended to last (appends go to one segment at a time).
    open: Mutex<Option<(String, File, bool)>>,
}

impl DirStorage {
    /// The files of directory `dir` (created if missing).
    pub fn open(dir: &Path) -> io::Result<DirStorage> {
        std::fs::create_dir_all(dir)?;
        Ok(DirStorage { dir: dir.to_path_buf(), open: Mutex::new(None) })
    }

    /// Sync the directory holding `name` (and, for a nested name, every directory between it
    /// and the root, in case they were just created).
    fn sync_parents(&self, name: &str) -> io::Result<()> {
        let mut p = self.dir.join(name);
        while p.pop() && p.starts_with(&self.dir) {
            match File::open(&p) {
                Ok(f) => f.sync_all()?,
                // Removed as empty (see `remove`): its parent's sync records that.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            if p == self.dir {
                break;
            }
        }
        Ok(())
    }

    /// Create the directories a nested name needs.
    fn make_parents(&self, name: &str) -> io::Result<()> {
        match Path::new(name).parent() {
            Some(p) if !p.as_os_str().is_empty() => std::fs::create_dir_all(self.dir.join(p)),
            _ => Ok(()),
        }
    }
}

impl Storage for DirStorage {
    fn list(&self) -> io::Result<Vec<String>> {
        let mut v = Vec::new();
        let mut dirs = vec![(self.dir.clone(), String::new())];
        while let Some((dir, prefix)) = dirs.pop() {
            for e in std::fs::read_dir(&dir)? {
                let e = e?;
                let name = format!("{prefix}{}", e.file_name().to_string_lossy());
                let ft = e.file_type()?;
                if ft.is_file() {
                    v.push(name);
                } else if ft.is_dir() {
                    dirs.push((e.path(), format!("{name}/")));
                }
            }
        }
        v.sort();
        Ok(v)
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.dir.join(name))
    }

    fn append(&self, name: &str, data: &[u8]) -> io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.as_ref().is_none_or(|(n, _, _)| n != name) {
            let path = self.dir.join(name);
            let created = !path.exists();
            if created {
                self.make_parents(name)?;
            }
            let f = OpenOptions::new().create(true).append(true).open(&path)?;
            *open = Some((name.to_string(), f, created));
        }
        match open.as_mut() {
            Some((_, f, _)) => f.write_all(data),
            None => Err(io::Error::other("no open segment")),
        }
    }

    fn sync(&self, name: &str) -> io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        match open.as_mut() {
            Some((n, f, created)) if n == name => {
                f.sync_data()?;
                if *created {
                    // A new file is durable only once its directory entry is.
                    let name = n.clone();
                    self.sync_parents(&name)?;
                    *created = false;
                }
                Ok(())
            }
            _ => File::open(self.dir.join(name))?.sync_data(),
        }
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        let f = OpenOptions::new().write(true).open(self.dir.join(name))?;
        f.set_len(len)?;
        f.sync_all()
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.as_ref().is_some_and(|(n, _, _)| n == name) {
            *open = None;
        }
        std::fs::remove_file(self.dir.join(name))?;
        // Directories a nested name leaves empty go too (best effort: a concurrent writer
        // may have just created a file there, which makes remove_dir fail harmlessly).
        let mut p = self.dir.join(name);
        while p.pop() && p.starts_with(&self.dir) && p != self.dir {
            if std::fs::remove_dir(&p).is_err() {
                break;
            }
        }
        self.sync_parents(name)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.as_ref().is_some_and(|(n, _, _)| n == from || n == to) {
            *open = None;
        }
        self.make_parents(to)?;
        std::fs::rename(self.dir.join(from), self.dir.join(to))?;
        self.sync_parents(to)?;
        if Path::new(from).parent() != Path::new(to).parent() {
            self.sync_parents(from)?;
        }
        Ok(())
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        Some(self.dir.join(name))
    }
}

#[derive(Debug, Default, Clone)]
struct MemFile {
    data: Vec<u8>,
    /// Bytes made durable by `sync`.
    synced: usize,
}

#[derive(Debug, Default)]
struct MemState {
    files: BTreeMap<String, MemFile>,
    /// Fail the next `sync` calls after this many more succeed.
    syncs_before_failure: Option<usize>,
    /// Write only part of the next append longer than this, then fail it.
    short_write: Option<usize>,
    /// Every append fails part-way, as on a full disk.
    disk_full: bool,
}

/// In-memory segments with fault injection; clones share the same files.
#[derive(Debug, Default, Clone)]
pub struct MemStorage {
    state: Arc<Mutex<MemState>>,
    /// Changing operations (append, sync, truncate, remove, rename) left before every one
    /// fails, as if the process died there; shared with [`MemStorage::sibling`]s.
    budget: Arc<Mutex<Option<usize>>>,
}

impl MemStorage {
    /// No files yet.
    pub fn new() -> MemStorage {
        MemStorage::default()
    }

    /// Another, empty directory sharing this one's operation budget (so a test can stop a
    /// process that writes to two directories at its n-th step, whichever directory it is in).
    pub fn sibling(&self) -> MemStorage {
        MemStorage { state: Arc::default(), budget: self.budget.clone() }
    }

    /// After `n` more changing operations, every one fails (`None`: never).
    pub fn fail_after_ops(&self, n: Option<usize>) {
        *self.budget.lock().unwrap_or_else(|e| e.into_inner()) = n;
    }

    fn spend(&self) -> io::Result<()> {
        let mut b = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        match *b {
            Some(0) => Err(io::Error::other("injected failure: out of operations")),
            Some(n) => {
                *b = Some(n - 1);
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After `n` more successful syncs, every sync fails.
    pub fn fail_sync_after(&self, n: usize) {
        self.lock().syncs_before_failure = Some(n);
    }

    /// While on, every append writes half its bytes and fails with "no space left on device"
    /// (`ErrorKind::StorageFull`), as a full disk does; off again, appends succeed.
    pub fn set_disk_full(&self, full: bool) {
        self.lock().disk_full = full;
    }

    /// The next append of more than `n` bytes writes only its first `n` and fails.
    pub fn short_write_next(&self, n: usize) {
        self.lock().short_write = Some(n);
    }

    /// What a machine crash leaves: every file keeps its synced bytes plus `keep(name, unsynced)`
    /// of the bytes written after the last sync (the OS may have flushed some of them).
    pub fn crash(&self, mut keep: impl FnMut(&str, usize) -> usize) -> MemStorage {
        let s = self.lock();
        let files = s
            .files
            .iter()
            .map(|(n, f)| {
                let extra = keep(n, f.data.len() - f.synced).min(f.data.len() - f.synced);
                let len = f.synced + extra;
                (n.clone(), MemFile { data: f.data[..len].to_vec(), synced: len })
            })
            .collect();
        MemStorage { state: Arc::new(Mutex::new(MemState { files, ..MemState::default() })), budget: Arc::default() }
    }

    /// Flip one bit (tests of corruption detection).
    pub fn corrupt(&self, name: &str, offset: usize) {
        if let Some(f) = self.lock().files.get_mut(name) {
            if let Some(b) = f.data.get_mut(offset) {
                *b ^= 0x10;
            }
        }
    }
}

impl Storage for MemStorage {
    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.lock().files.keys().cloned().collect())
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        self.lock().files.get(name).map(|f| f.data.clone()).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    fn append(&self, name: &str, data: &[u8]) -> io::Result<()> {
        self.spend()?;
        let mut s = self.lock();
        let short = s.short_write.filter(|&n| n < data.len());
        if short.is_some() {
            s.short_write = None;
        }
        let full = s.disk_full;
        let f = s.files.entry(name.to_string()).or_default();
        if full {
            f.data.extend_from_slice(&data[..data.len() / 2]);
            return Err(io::Error::new(io::ErrorKind::StorageFull, "injected: no space left on device"));
        }
        match short {
            Some(n) => {
                f.data.extend_from_slice(&data[..n.min(data.len())]);
                Err(io::Error::new(io::ErrorKind::WriteZero, "injected short write"))
            }
            None => {
                f.data.extend_from_slice(data);
                Ok(())
            }
        }
    }

    fn sync(&self, name: &str) -> io::Result<()> {
        self.spend()?;
        let mut s = self.lock();
        match s.syncs_before_failure {
            Some(0) => return Err(io::Error::other("injected fsync failure")),
            Some(n) => s.syncs_before_failure = Some(n - 1),
            None => {}
        }
        let f = s.files.get_mut(name).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        f.synced = f.data.len();
        Ok(())
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        self.spend()?;
        let mut s = self.lock();
        let f = s.files.get_mut(name).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        f.data.truncate(len as usize);
        f.synced = f.synced.min(f.data.len());
        Ok(())
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.spend()?;
        self.lock().files.remove(name);
        Ok(())
    }

    /// Durable at once (the directory implementation syncs the directory), keeping the file's
    /// synced and unsynced bytes as they were.
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.spend()?;
        let mut s = self.lock();
        let f = s.files.remove(from).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        s.files.insert(to.to_string(), f);
        Ok(())
    }
}
