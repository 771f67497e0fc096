//! Where `COPY` may read and write files on the server.
//!
//! Three rules, checked on the resolved path (symbolic links and `..` followed first):
//! - never inside a protected directory: the server's own data directory, whose WAL segments,
//!   checkpoints and history one `COPY ... TO` could otherwise overwrite, leaving a database
//!   that cannot recover;
//! - only regular files: a device, FIFO or socket is refused (`COPY t FROM '/dev/zero'` would
//!   read until memory runs out; a FIFO would hold a thread forever);
//! - under the root directory, when one is set (`zeptodb serve --copy-root DIR`).
//!
//! Refusals are [`SqlError::File`] errors that name the path and the reason, so the HTTP door
//! answers them with a 4xx, never a 500.

use crate::error::{FileProblem, Result, SqlError};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// The file-access rules of one engine (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct FilePolicy {
    root: Option<PathBuf>,
    protected: Vec<PathBuf>,
}

fn refuse(path: &str, problem: FileProblem, reason: impl Into<String>) -> SqlError {
    SqlError::File { path: path.to_string(), problem, reason: reason.into() }
}

/// An `std::io::Error` met while resolving or opening `path`.
fn io_refusal(path: &str, e: &std::io::Error) -> SqlError {
    match e.kind() {
        std::io::ErrorKind::NotFound => refuse(path, FileProblem::NotFound, "no such file or directory"),
        std::io::ErrorKind::PermissionDenied => {
            refuse(path, FileProblem::Denied, "the server's operating-system user may not open it")
        }
        _ => SqlError::Io(format!("{path}: {e}")),
    }
}

impl FilePolicy {
    /// Files anywhere but under `protected`; with `root`, only under `root`. Each directory
    /// is resolved now (it must exist), so later checks compare resolved paths.
    pub fn new(root: Option<&Path>, protected: &[&Path]) -> std::result::Result<FilePolicy, String> {
        let resolve =
            |p: &Path, what: &str| std::fs::canonicalize(p).map_err(|e| format!("{what} {}: {e}", p.display()));
        let root = root.map(|r| resolve(r, "--copy-root")).transpose()?;
        let protected =
            protected.iter().map(|p| resolve(p, "data directory")).collect::<std::result::Result<_, _>>()?;
        Ok(FilePolicy { root, protected })
    }

    /// `resolved` against the root and the protected directories.
    fn check_place(&self, path: &str, resolved: &Path) -> Result<()> {
        if let Some(p) = self.protected.iter().find(|p| resolved.starts_with(p)) {
            return Err(refuse(
                path,
                FileProblem::Denied,
                format!(
                    "{} is inside the server's data directory {}, which COPY never touches",
                    resolved.display(),
                    p.display()
                ),
            ));
        }
        if let Some(root) = self.root.as_ref().filter(|r| !resolved.starts_with(r)) {
            return Err(refuse(
                path,
                FileProblem::Denied,
                format!("{} is outside the COPY root {} (--copy-root)", resolved.display(), root.display()),
            ));
        }
        Ok(())
    }

    /// Open `path` for COPY FROM: an existing regular file in an allowed place. Returns the
    /// open file, its resolved path and its length in bytes.
    pub fn open_read(&self, path: &str) -> Result<(File, PathBuf, u64)> {
        let resolved = std::fs::canonicalize(path).map_err(|e| io_refusal(path, &e))?;
        self.check_place(path, &resolved)?;
        regular(path, &std::fs::metadata(&resolved).map_err(|e| io_refusal(path, &e))?)?;
        let file = open_options(OpenOptions::new().read(true)).open(&resolved).map_err(|e| io_refusal(path, &e))?;
        // The file itself, as opened, must still be a regular file (the path could have been
        // replaced since it was resolved).
        let meta = file.metadata().map_err(|e| io_refusal(path, &e))?;
        regular(path, &meta)?;
        Ok((file, resolved, meta.len()))
    }

    /// Where COPY TO may write `path`: a regular file (or a new name) in an existing directory
    /// in an allowed place, resolved through links. Nothing is created.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf> {
        let p = Path::new(path);
        let name = p.file_name().ok_or_else(|| refuse(path, FileProblem::Malformed, "not a file name"))?;
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let dir = std::fs::canonicalize(dir).map_err(|e| io_refusal(path, &e))?;
        let mut resolved = dir.join(name);
        match std::fs::symlink_metadata(&resolved) {
            Ok(m) if m.file_type().is_symlink() => {
                resolved = std::fs::canonicalize(&resolved).map_err(|e| io_refusal(path, &e))?;
                regular(path, &std::fs::metadata(&resolved).map_err(|e| io_refusal(path, &e))?)?;
            }
            Ok(m) => regular(path, &m)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_refusal(path, &e)),
        }
        self.check_place(path, &resolved)?;
        Ok(resolved)
    }

    /// Where `BACKUP TO` may write the directory `path`: an existing directory, or a new name
    /// in one, in an allowed place (never inside the data directory), resolved through links.
    pub fn resolve_dir(&self, path: &str) -> Result<PathBuf> {
        let p = Path::new(path);
        let resolved = if p.is_dir() {
            std::fs::canonicalize(p).map_err(|e| io_refusal(path, &e))?
        } else {
            let name = p.file_name().ok_or_else(|| refuse(path, FileProblem::Malformed, "not a directory name"))?;
            let parent = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            std::fs::canonicalize(parent).map_err(|e| io_refusal(path, &e))?.join(name)
        };
        self.check_place(path, &resolved)?;
        Ok(resolved)
    }

    /// Open `path` for COPY TO, creating or truncating it ([`FilePolicy::resolve_write`]).
    pub fn open_write(&self, path: &str) -> Result<(File, PathBuf)> {
        let resolved = self.resolve_write(path)?;
        let file = open_options(OpenOptions::new().write(true).create(true).truncate(true))
            .open(&resolved)
            .map_err(|e| io_refusal(path, &e))?;
        regular(path, &file.metadata().map_err(|e| io_refusal(path, &e))?)?;
        Ok((file, resolved))
    }
}

/// Never follow a link at the last step, never wait on a FIFO while opening.
fn open_options(o: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
    }
    #[cfg(not(unix))]
    {
        o
    }
}

fn regular(path: &str, m: &std::fs::Metadata) -> Result<()> {
    if m.is_file() {
        return Ok(());
    }
    let what = if m.is_dir() { "a directory" } else { "a device, FIFO or socket" };
    Err(refuse(path, FileProblem::Denied, format!("{what}, not a regular file")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zepto-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("tmp dir");
        d
    }

    #[test]
    fn protected_directories_are_out_of_reach() {
        let d = tmp("protected");
        let data = d.join("data");
        std::fs::create_dir_all(data.join("wal")).expect("data dir");
        std::fs::write(data.join("wal/000001.log"), b"wal").expect("segment");
        let policy = FilePolicy::new(None, &[&data]).expect("policy");
        let seg = data.join("wal/000001.log");
        for e in [
            policy.open_write(seg.to_str().expect("utf8")).expect_err("write"),
            policy.open_read(seg.to_str().expect("utf8")).expect_err("read"),
            // Through `..` and through a link, too.
            policy.open_write(&format!("{}/../data/wal/000001.log", data.display())).expect_err("dots"),
        ] {
            assert_eq!(e.code(), "FILE_ACCESS_DENIED", "{e}");
            assert!(e.to_string().contains("data directory"), "{e}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&seg, d.join("link.csv")).expect("link");
            let e = policy.open_write(d.join("link.csv").to_str().expect("utf8")).expect_err("link");
            assert_eq!(e.code(), "FILE_ACCESS_DENIED", "{e}");
        }
        assert_eq!(std::fs::read(&seg).expect("segment"), b"wal", "the segment is untouched");
        let ok = d.join("out.csv");
        policy.open_write(ok.to_str().expect("utf8")).expect("outside the data dir");
    }

    #[test]
    fn only_regular_files_under_the_root() {
        let d = tmp("root");
        let policy = FilePolicy::new(Some(&d), &[]).expect("policy");
        let e = policy.open_read("/dev/zero").expect_err("device");
        assert_eq!(e.code(), "FILE_ACCESS_DENIED", "{e}");
        let open = FilePolicy::default();
        let e = open.open_read("/dev/zero").expect_err("device");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = open.open_read(&format!("{}/missing.csv", d.display())).expect_err("missing");
        assert_eq!(e.code(), "FILE_NOT_FOUND", "{e}");
        std::fs::write(d.join("in.csv"), b"a\n1\n").expect("file");
        let (_, _, len) = policy.open_read(d.join("in.csv").to_str().expect("utf8")).expect("inside the root");
        assert_eq!(len, 4);
        let e = policy.open_write("/tmp/../etc/zepto-nope.csv").expect_err("outside");
        assert!(e.to_string().contains("outside the COPY root"), "{e}");
    }
}
