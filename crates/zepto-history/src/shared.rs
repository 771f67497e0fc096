//! The cluster's shared storage: where the owner of a Kafka partition keeps that partition's
//! history and snapshots, so that any node taking the partition over reads them (issue
//! "Scale-out"). Reached through `object_store`, the interface the Arrow ecosystem uses for
//! local directories and S3-compatible stores alike; this build links its local-filesystem
//! store (a directory every node mounts: NFS, a shared volume, or one machine's disk in tests).
//!
//! Writes are whole objects, published atomically (the store writes a staging file and renames
//! it into place), so a reader never sees half a file. The history reader reads shared files
//! through the [`Storage`] interface like local ones; the calls block on the store's futures
//! (local files need no runtime).

use crate::io_err;
use futures::executor::block_on;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use zepto_storage::StorageError;
use zepto_wal::Storage;

/// A shared store (cheap to clone: clones share the client).
#[derive(Clone)]
pub struct SharedStore {
    store: Arc<dyn ObjectStore>,
    /// The directory, for readers that open files themselves.
    root: PathBuf,
    location: String,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore").field("location", &self.location).finish_non_exhaustive()
    }
}

fn object_path(path: &str) -> Result<ObjectPath, StorageError> {
    ObjectPath::parse(path).map_err(|e| io_err(path, e))
}

impl SharedStore {
    /// The store at `location`: a directory (created if missing), as a path or a `file://`
    /// URL. Other schemes (`s3://`, ...) are refused by this build.
    pub fn open(location: &str) -> Result<SharedStore, StorageError> {
        let dir = match location.split_once("://") {
            None => location,
            Some(("file", rest)) => rest,
            Some((scheme, _)) => {
                return Err(StorageError::Invalid(format!(
                    "shared storage '{location}': this build reaches directories (a path or file://), not {scheme}://"
                )))
            }
        };
        if dir.is_empty() {
            return Err(StorageError::Invalid("shared storage: an empty path".into()));
        }
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        let root = std::fs::canonicalize(dir).map_err(|e| io_err(dir, e))?;
        let store = LocalFileSystem::new_with_prefix(&root).map_err(|e| io_err(dir, e))?;
        Ok(SharedStore { store: Arc::new(store), root, location: location.to_string() })
    }

    /// Where the store is, as given.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Publish `bytes` as `path` (replacing it), atomically.
    pub fn put(&self, path: &str, bytes: Vec<u8>) -> Result<(), StorageError> {
        let p = object_path(path)?;
        block_on(self.store.put(&p, PutPayload::from(bytes))).map(drop).map_err(|e| io_err(path, e))
    }

    /// The whole of `path`; `None` when there is no such object.
    pub fn get(&self, path: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let p = object_path(path)?;
        let got = block_on(async {
            match self.store.get(&p).await {
                Ok(r) => r.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        });
        got.map(|b| b.map(|b| b.to_vec())).map_err(|e| io_err(path, e))
    }

    /// The paths of every object under `prefix` (a directory-like prefix), sorted.
    pub fn list(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let p = object_path(prefix)?;
        let metas: Vec<object_store::ObjectMeta> =
            block_on(self.store.list(Some(&p)).try_collect()).map_err(|e| io_err(prefix, e))?;
        let mut out: Vec<String> = metas.into_iter().map(|m| m.location.to_string()).collect();
        out.sort();
        Ok(out)
    }

    /// Delete `path` (no error when it is gone already).
    pub fn delete(&self, path: &str) -> Result<(), StorageError> {
        let p = object_path(path)?;
        match block_on(self.store.delete(&p)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(io_err(path, e)),
        }
    }
}

fn unsupported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("shared storage is written whole ({what} is not offered)"))
}

/// Reading for the history reader; writes go through [`SharedStore::put`].
impl Storage for SharedStore {
    fn list(&self) -> io::Result<Vec<String>> {
        SharedStore::list(self, "").map_err(|e| io::Error::other(e.to_string()))
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        match self.get(name) {
            Ok(Some(b)) => Ok(b),
            Ok(None) => Err(io::Error::new(io::ErrorKind::NotFound, format!("{name}: not in shared storage"))),
            Err(e) => Err(io::Error::other(e.to_string())),
        }
    }

    fn append(&self, _name: &str, _data: &[u8]) -> io::Result<()> {
        Err(unsupported("append"))
    }

    fn sync(&self, _name: &str) -> io::Result<()> {
        Err(unsupported("sync"))
    }

    fn truncate(&self, _name: &str, _len: u64) -> io::Result<()> {
        Err(unsupported("truncate"))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.delete(name).map_err(|e| io::Error::other(e.to_string()))
    }

    fn rename(&self, _from: &str, _to: &str) -> io::Result<()> {
        Err(unsupported("rename"))
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        Some(self.root.join(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_put_listed_read_and_deleted() {
        let dir = std::env::temp_dir().join(format!("zepto-shared-{}", std::process::id()));
        let s = SharedStore::open(dir.to_str().expect("utf-8")).expect("opened");
        s.put("t/p0/b.json", b"two".to_vec()).expect("put");
        s.put("t/p0/a.json", b"one".to_vec()).expect("put");
        s.put("t/p1/a.json", b"other".to_vec()).expect("put");
        assert_eq!(s.list("t/p0").expect("listed"), vec!["t/p0/a.json", "t/p0/b.json"]);
        assert_eq!(s.get("t/p0/b.json").expect("read").as_deref(), Some(&b"two"[..]));
        assert_eq!(s.get("t/p0/none.json").expect("read"), None);
        s.delete("t/p0/b.json").expect("deleted");
        s.delete("t/p0/b.json").expect("deleting twice is no error");
        assert_eq!(s.list("t/p0").expect("listed"), vec!["t/p0/a.json"]);
        assert!(SharedStore::open("s3://bucket/x").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
