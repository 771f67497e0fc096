//! The startup check of the history directory against the recovered catalog.
//!
//! Tiering publishes its files before it logs them, so a crash in between leaves files no
//! table names: they are deleted here (as are temporary files and the files of dropped tables
//! or of retention). A file a table names but that is missing or has another length means the
//! history was damaged: the start is refused with the file's name rather than answering
//! queries with rows missing.

use crate::io_err;
use std::collections::HashMap;
use zepto_storage::{Catalog, StorageError};
use zepto_wal::Storage;

/// What the startup sweep found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Swept {
    /// Files named by tables, all present.
    pub files: usize,
    /// Rows in those files.
    pub rows: u64,
    /// Unnamed files deleted.
    pub removed: Vec<String>,
}

/// Check the history against the catalog at startup: every file a table names must be there,
/// and files no table names (a tiering cut short, or dropped data) are deleted.
pub fn sweep(storage: &dyn Storage, catalog: &Catalog) -> Result<Swept, StorageError> {
    let mut named: HashMap<String, u64> = HashMap::new();
    let mut out = Swept::default();
    for name in catalog.table_names() {
        let t = catalog.snapshot(&name)?;
        for f in &t.history().files {
            out.files += 1;
            out.rows += f.rows;
            // Files in the cluster's shared storage are not this directory's to check or delete.
            if f.shared_path().is_none() {
                named.insert(f.path.clone(), f.bytes);
            }
        }
    }
    let present = storage.list().map_err(|e| io_err("directory", e))?;
    let mut seen = 0usize;
    for p in present {
        match named.get(&p) {
            Some(&want) => {
                let have = match storage.path(&p) {
                    Some(path) => std::fs::metadata(&path).map(|m| m.len()).map_err(|e| io_err(&p, e))?,
                    None => storage.read(&p).map(|b| b.len() as u64).map_err(|e| io_err(&p, e))?,
                };
                if have != want {
                    return Err(StorageError::History(format!(
                        "history file {p} has {have} bytes, the catalog recorded {want}: it is damaged"
                    )));
                }
                seen += 1;
            }
            None => {
                storage.remove(&p).map_err(|e| io_err(&p, e))?;
                out.removed.push(p);
            }
        }
    }
    if seen != named.len() {
        let present: std::collections::HashSet<String> =
            storage.list().map_err(|e| io_err("directory", e))?.into_iter().collect();
        let mut missing: Vec<&String> = named.keys().filter(|k| !present.contains(*k)).collect();
        missing.sort();
        return Err(StorageError::History(format!(
            "history file {} is missing ({} missing in all)",
            missing.first().map_or("?", |s| s.as_str()),
            missing.len()
        )));
    }
    Ok(out)
}
