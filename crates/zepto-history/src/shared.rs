//! The cluster's shared storage: where the owner of a Kafka partition keeps that partition's
//! history and snapshots, so that any node taking the partition over reads them (issue
//! "Scale-out"). Reached through `object_store`, the interface the Arrow ecosystem uses for
//! local directories and object stores alike: a directory every node mounts (a path or
//! `file://` URL: NFS, a shared volume, or one machine's disk in tests), or an S3-compatible
//! bucket (`s3://bucket/prefix`, configured by the usual `AWS_*` environment variables:
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT` for stores other
//! than AWS, `AWS_ALLOW_HTTP=true` for one without TLS).
//!
//! Writes are whole objects, published atomically (a staging file renamed into place, one
//! PUT, or a multipart upload completed once every part is in), so a reader never sees half a
//! file. The history reader opens a directory's files
//! through their paths, and reads an object store's by ranges ([`SharedStore::get_range`]:
//! the footer, then only the column chunks a query needs). The calls block: a directory's on the calling thread (local files
//! need no runtime), an object store's on a runtime of the store's own.

use crate::io_err;
use futures::executor::block_on;
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use zepto_storage::StorageError;

/// A shared store (cheap to clone: clones share the client).
#[derive(Clone)]
pub struct SharedStore {
    store: Arc<dyn ObjectStore>,
    /// The directory, for readers that open files themselves (`None`: an object store).
    root: Option<PathBuf>,
    /// The runtime an object store's client runs on (`None`: a directory).
    runtime: Option<Arc<Runtime>>,
    location: String,
}

/// A runtime shut down without waiting when the last store using it goes (never blocking,
/// whatever thread drops it).
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore").field("location", &self.location).finish_non_exhaustive()
    }
}

/// A multipart upload's part: S3 takes 5 MiB to 5 GiB per part and [`MAX_PARTS`] parts, so a
/// file of up to 156 GiB.
pub const PART_BYTES: usize = 16 << 20;

/// Parts of one multipart upload, at most (S3's limit).
pub const MAX_PARTS: u64 = 10_000;

/// Parts of one upload read and not yet stored, at most (memory: this many parts).
pub const PARTS_IN_FLIGHT: usize = 4;

/// Upload the file at `src` to `path` in parts of `part` bytes (see [`SharedStore::put_file`]).
async fn upload(store: Arc<dyn ObjectStore>, path: ObjectPath, src: PathBuf, part: usize) -> object_store::Result<()> {
    let mut up = store.put_multipart(&path).await?;
    let done = match send_parts(up.as_mut(), &src, part).await {
        Ok(()) => up.complete().await.map(drop),
        Err(e) => Err(e),
    };
    let Err(e) = done else { return Ok(()) };
    // The parts stored so far are dropped; if that fails too, both are said.
    match up.abort().await {
        Ok(()) => Err(e),
        Err(a) => Err(object_store::Error::Generic {
            store: "multipart upload",
            source: format!("{e}; aborting the upload failed too, its parts may remain: {a}").into(),
        }),
    }
}

/// Every part of the file at `src` handed to `up`, a few in flight.
async fn send_parts(
    up: &mut dyn object_store::MultipartUpload,
    src: &std::path::Path,
    part: usize,
) -> object_store::Result<()> {
    use futures::stream::{FuturesUnordered, StreamExt};
    use std::io::Read;
    let mut file = std::fs::File::open(src).map_err(local_err)?;
    let mut in_flight = FuturesUnordered::new();
    loop {
        let mut buf = Vec::with_capacity(part);
        (&mut file).take(part as u64).read_to_end(&mut buf).map_err(local_err)?;
        if buf.is_empty() {
            break;
        }
        in_flight.push(up.put_part(PutPayload::from(buf)));
        while in_flight.len() >= PARTS_IN_FLIGHT {
            in_flight.next().await.transpose()?;
        }
    }
    while let Some(done) = in_flight.next().await {
        done?;
    }
    Ok(())
}

/// `path` of `store` written to the file `dest` chunk by chunk (see [`SharedStore::get_file`]).
async fn download(store: Arc<dyn ObjectStore>, path: ObjectPath, dest: PathBuf) -> object_store::Result<bool> {
    use std::io::Write;
    let got = match store.get(&path).await {
        Ok(r) => r,
        Err(object_store::Error::NotFound { .. }) => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut out = std::fs::File::create(&dest).map_err(local_err)?;
    let mut chunks = got.into_stream();
    while let Some(chunk) = chunks.try_next().await? {
        out.write_all(&chunk).map_err(local_err)?;
    }
    out.flush().map_err(local_err)?;
    Ok(true)
}

/// A local file's error as the store's.
fn local_err(source: std::io::Error) -> object_store::Error {
    object_store::Error::Generic { store: "local file", source: Box::new(source) }
}

fn object_path(path: &str) -> Result<ObjectPath, StorageError> {
    ObjectPath::parse(path).map_err(|e| io_err(path, e))
}

impl SharedStore {
    /// The store at `location`: a directory (created if missing), as a path or a `file://`
    /// URL, or an S3-compatible bucket, `s3://bucket[/prefix]` (see the module docs).
    pub fn open(location: &str) -> Result<SharedStore, StorageError> {
        Self::open_with(location, &[])
    }

    /// [`SharedStore::open`], an S3 store's settings from the environment overridden by
    /// `options` (`object_store`'s keys: `aws_endpoint`, `aws_access_key_id`, ...).
    pub fn open_with(location: &str, options: &[(&str, &str)]) -> Result<SharedStore, StorageError> {
        match location.split_once("://") {
            None => Self::directory(location, location),
            Some(("file", dir)) => Self::directory(dir, location),
            Some(("s3", rest)) => Self::s3(rest, location, options),
            Some((scheme, _)) => Err(StorageError::Invalid(format!(
                "shared storage '{location}': a directory (a path or file://) or s3://, not {scheme}://"
            ))),
        }
    }

    fn directory(dir: &str, location: &str) -> Result<SharedStore, StorageError> {
        if dir.is_empty() {
            return Err(StorageError::Invalid("shared storage: an empty path".into()));
        }
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        let root = std::fs::canonicalize(dir).map_err(|e| io_err(dir, e))?;
        let store = LocalFileSystem::new_with_prefix(&root).map_err(|e| io_err(dir, e))?;
        Ok(SharedStore { store: Arc::new(store), root: Some(root), runtime: None, location: location.to_string() })
    }

    fn s3(rest: &str, location: &str, options: &[(&str, &str)]) -> Result<SharedStore, StorageError> {
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(StorageError::Invalid(format!("shared storage '{location}': no bucket")));
        }
        // HTTPS through rustls with ring, as the server's own TLS (a second install is a no-op).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        for (k, v) in options {
            let key = k.parse().map_err(|e| io_err(location, e))?;
            builder = builder.with_config(key, *v);
        }
        let s3 = builder.build().map_err(|e| io_err(location, e))?;
        let prefix = prefix.trim_matches('/');
        let store: Arc<dyn ObjectStore> = match prefix {
            "" => Arc::new(s3),
            p => Arc::new(PrefixStore::new(s3, p)),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("zepto-shared")
            .enable_all()
            .build()
            .map_err(|e| io_err(location, e))?;
        let runtime = Some(Arc::new(Runtime(Some(rt))));
        Ok(SharedStore { store, root: None, runtime, location: location.to_string() })
    }

    /// Run `f` on the store's client to its end: on the store's runtime if it has one, else
    /// here.
    fn block<T: Send + 'static>(
        &self,
        what: &str,
        f: impl FnOnce(Arc<dyn ObjectStore>) -> std::pin::Pin<Box<dyn Future<Output = T> + Send>>,
    ) -> Result<T, StorageError> {
        let fut = f(self.store.clone());
        match self.runtime.as_ref().and_then(|r| r.0.as_ref()) {
            None => Ok(block_on(fut)),
            Some(rt) => block_on(rt.spawn(fut)).map_err(|e| io_err(what, e)),
        }
    }

    /// Where the store is, as given.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Publish `bytes` as `path` (replacing it), atomically.
    pub fn put(&self, path: &str, bytes: Vec<u8>) -> Result<(), StorageError> {
        let p = object_path(path)?;
        let put = self.block(path, |s| Box::pin(async move { s.put(&p, PutPayload::from(bytes)).await.map(drop) }))?;
        put.map_err(|e| io_err(path, e))
    }

    /// Publish the file at `file` as `path` (replacing it), atomically, without holding it in
    /// memory: a file larger than a part goes up as a multipart upload, [`PART_BYTES`] at a
    /// time read from the file with at most [`PARTS_IN_FLIGHT`] in flight, published when it
    /// completes and aborted on any error (S3 takes at most 5 GiB in one PUT).
    pub fn put_file(&self, path: &str, file: &std::path::Path) -> Result<(), StorageError> {
        self.put_file_in_parts(path, file, PART_BYTES)
    }

    fn put_file_in_parts(&self, path: &str, file: &std::path::Path, part: usize) -> Result<(), StorageError> {
        let len = std::fs::metadata(file).map_err(|e| io_err(path, e))?.len();
        if len <= part as u64 {
            return self.put(path, std::fs::read(file).map_err(|e| io_err(path, e))?);
        }
        if len.div_ceil(part as u64) > MAX_PARTS {
            return Err(StorageError::Invalid(format!(
                "{path}: {len} bytes is more than {MAX_PARTS} parts of {part} bytes, the most one upload takes"
            )));
        }
        let (p, src) = (object_path(path)?, file.to_path_buf());
        let up = self.block(path, move |s| Box::pin(async move { upload(s, p, src, part).await }))?;
        up.map_err(|e| io_err(path, e))
    }

    /// `path` written to the file `dest` as it arrives, never whole in memory; `false` (and no
    /// file) when there is no such object.
    pub fn get_file(&self, path: &str, dest: &std::path::Path) -> Result<bool, StorageError> {
        let (p, to) = (object_path(path)?, dest.to_path_buf());
        let got = self.block(path, move |s| Box::pin(async move { download(s, p, to).await }))?;
        got.map_err(|e| io_err(path, e))
    }

    /// The whole of `path`; `None` when there is no such object.
    pub fn get(&self, path: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let p = object_path(path)?;
        let got = self.block(path, |s| {
            Box::pin(async move {
                match s.get(&p).await {
                    Ok(r) => r.bytes().await.map(|b| Some(b.to_vec())),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            })
        })?;
        got.map_err(|e| io_err(path, e))
    }

    /// Where `name` lives on this machine's disk, for readers that open files themselves
    /// (`None` for an object store).
    pub fn local_path(&self, name: &str) -> Option<PathBuf> {
        self.root.as_ref().map(|r| r.join(name))
    }

    /// Bytes `range` of `path`.
    pub fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> Result<bytes::Bytes, StorageError> {
        let p = object_path(path)?;
        let got = self.block(path, |s| Box::pin(async move { s.get_range(&p, range).await }))?;
        got.map_err(|e| io_err(path, e))
    }

    /// The paths of every object under `prefix` (a directory-like prefix), sorted.
    pub fn list(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let p = object_path(prefix)?;
        let listed = self.block(prefix, |s| {
            Box::pin(async move { s.list(Some(&p)).try_collect::<Vec<object_store::ObjectMeta>>().await })
        })?;
        let mut out: Vec<String> =
            listed.map_err(|e| io_err(prefix, e))?.into_iter().map(|m| m.location.to_string()).collect();
        out.sort();
        Ok(out)
    }

    /// Delete `path` (no error when it is gone already).
    pub fn delete(&self, path: &str) -> Result<(), StorageError> {
        let p = object_path(path)?;
        match self.block(path, |s| Box::pin(async move { s.delete(&p).await }))? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(io_err(path, e)),
        }
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
        // A file larger than a part goes up in parts, and reads back whole.
        let file = dir.join("big.bin");
        let bytes: Vec<u8> = (0..1_000_003u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&file, &bytes).expect("written");
        s.put_file_in_parts("t/p0/big.bin", &file, 64 << 10).expect("uploaded in 16 parts");
        assert_eq!(s.get("t/p0/big.bin").expect("read").as_deref(), Some(&bytes[..]));
        s.put_file("t/p0/small.bin", &file).expect("uploaded in one piece");
        assert_eq!(s.get("t/p0/small.bin").expect("read").as_deref(), Some(&bytes[..]));
        assert!(s.put_file("t/p0/none.bin", &dir.join("missing")).is_err());
        // A read that fails mid-upload (a directory is no file to read) fails the upload: no
        // object, and no staging file left beside the others.
        let before: Vec<_> = std::fs::read_dir(dir.join("t/p0")).expect("listed").collect();
        assert!(s.put_file_in_parts("t/p0/broken.bin", &dir, 64).is_err());
        let after: Vec<_> = std::fs::read_dir(dir.join("t/p0")).expect("listed").collect();
        assert_eq!(after.len(), before.len(), "nothing left of the aborted upload");
        let copy = dir.join("copy.bin");
        assert!(s.get_file("t/p0/big.bin", &copy).expect("downloaded"));
        assert_eq!(std::fs::read(&copy).expect("read"), bytes);
        assert!(!s.get_file("t/p0/none.bin", &dir.join("none.bin")).expect("no such object"));
        assert!(!dir.join("none.bin").exists());
        assert_eq!(s.list("t/p0").expect("listed"), vec!["t/p0/a.json", "t/p0/big.bin", "t/p0/small.bin"]);
        assert!(SharedStore::open("gs://bucket/x").is_err());
        assert!(SharedStore::open("s3:///x").is_err(), "no bucket");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
