//! Which database a data directory holds, and which database a backup place belongs to.
//!
//! A backup place is incremental by name: a later backup copies only the history files it
//! lacks (matched by name and size) and names the earlier backup's table files for unchanged
//! tables. Another database's files can have the same names, so its backup into the place
//! would take the files there for its own, or copy over them, and spoil the backup there. So:
//!
//! * A data directory is given an id when it is first opened: the file `database-id` beside
//!   the checkpoints (32 hex digits, [`zepto_storage::rng::fresh_u64`] twice). A restored
//!   backup is a database of its own: the restore copies no id, and its directory gets a new
//!   one when first opened.
//! * A backup place records the id of the database it holds (`backup-of` beside the backup's
//!   checkpoints; in an object store, at the prefix), written once a backup there is
//!   published. A backup of another database into it is refused before anything is written
//!   (`check_place`). A place a version without ids wrote is claimed by its next backup.

use crate::DurableError;
use zepto_wal::Storage;

/// The file of a data directory's id, beside its checkpoints.
const DATABASE: &str = "database-id";

/// The file (or object) of the id of the database a backup place holds.
pub(crate) const PLACE: &str = "backup-of";

/// A database's id: 32 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseId(String);

impl DatabaseId {
    /// The id of the data directory whose checkpoints `storage` holds, made and recorded
    /// (synced) when it has none.
    pub fn of_directory(storage: &dyn Storage) -> Result<DatabaseId, DurableError> {
        let io = |e: std::io::Error| DurableError::Io(format!("the database id file: {e}"));
        let names = storage.list().map_err(io)?;
        if names.iter().any(|n| n == DATABASE) {
            let bytes = storage.read(DATABASE).map_err(io)?;
            return DatabaseId::parse(&bytes)
                .ok_or_else(|| DurableError::Io(format!("{DATABASE} is damaged: it holds no database id")));
        }
        let id = DatabaseId::fresh();
        write(storage, DATABASE, &id).map_err(io)?;
        Ok(id)
    }

    /// A new id.
    fn fresh() -> DatabaseId {
        let (a, b) = (zepto_storage::rng::fresh_u64(), zepto_storage::rng::fresh_u64());
        DatabaseId(format!("{a:016x}{b:016x}"))
    }

    /// The id a file holds (a line of 32 hex digits).
    fn parse(bytes: &[u8]) -> Option<DatabaseId> {
        let text = std::str::from_utf8(bytes).ok()?.trim();
        let hex = text.len() == 32 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        hex.then(|| DatabaseId(text.to_string()))
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for DatabaseId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether database `id` may back up into the place `where_` whose `backup-of` holds `found`
/// (`None`: no such file yet): an error, before anything is written there, when it belongs to
/// another database or its file is damaged.
pub(crate) fn check_place(found: Option<&[u8]>, id: &DatabaseId, where_: &str) -> Result<(), DurableError> {
    let Some(bytes) = found else { return Ok(()) };
    match DatabaseId::parse(bytes) {
        Some(owner) if owner == *id => Ok(()),
        Some(owner) => Err(DurableError::Io(format!(
            "{where_} holds backups of another database (id {owner}; this one is {id}): back up into a new place \
             (a copy restored from a backup is a database of its own)"
        ))),
        None => Err(DurableError::Io(format!("{where_}: its {PLACE} file is damaged (it holds no database id)"))),
    }
}

/// The `backup-of` file of a backup directory whose checkpoints `storage` holds, if any.
pub(crate) fn read_place(storage: &dyn Storage) -> Result<Option<Vec<u8>>, DurableError> {
    let io = |e: std::io::Error| DurableError::Io(format!("the backup's {PLACE} file: {e}"));
    let names = storage.list().map_err(io)?;
    names.iter().any(|n| n == PLACE).then(|| storage.read(PLACE)).transpose().map_err(io)
}

/// Whether the checkpoints `storage` holds are a data directory's (it has a database id): a
/// backup into it would replace that database's checkpoints.
pub(crate) fn is_data_directory(storage: &dyn Storage) -> Result<bool, DurableError> {
    let names = storage.list().map_err(|e| DurableError::Io(format!("listing the backup's checkpoints: {e}")))?;
    Ok(names.iter().any(|n| n == DATABASE))
}

/// Record `id` as the database the backup directory whose checkpoints `storage` holds belongs to.
pub(crate) fn claim_place(storage: &dyn Storage, id: &DatabaseId) -> Result<(), DurableError> {
    write(storage, PLACE, id).map_err(|e| DurableError::Io(format!("the backup's {PLACE} file: {e}")))
}

/// `id` as file `name` of `storage`, in whole ([`write_whole`]).
fn write(storage: &dyn Storage, name: &str, id: &DatabaseId) -> std::io::Result<()> {
    write_whole(storage, name, format!("{id}\n").as_bytes())
}

/// `bytes` as file `name` of `storage`, in whole: written beside it (a leftover of a crashed
/// attempt removed first), synced, then renamed over it.
pub(crate) fn write_whole(storage: &dyn Storage, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = format!("{name}.tmp");
    if storage.list()?.contains(&tmp) {
        storage.remove(&tmp)?;
    }
    storage.append(&tmp, bytes)?;
    storage.sync(&tmp)?;
    storage.rename(&tmp, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_wal::MemStorage;

    /// A directory keeps the id it was first given; another directory gets another.
    #[test]
    fn a_directory_keeps_its_id_and_another_gets_its_own() {
        let (a, b) = (MemStorage::new(), MemStorage::new());
        let id = DatabaseId::of_directory(&a).expect("made");
        assert_eq!(id.as_str().len(), 32);
        assert_eq!(DatabaseId::of_directory(&a).expect("read back"), id);
        assert_ne!(DatabaseId::of_directory(&b).expect("another"), id);
        assert_eq!(a.list().expect("list"), vec![DATABASE.to_string()]);
        a.remove(DATABASE).expect("remove");
        a.append(DATABASE, b"not an id\n").expect("damage");
        let e = DatabaseId::of_directory(&a).expect_err("a damaged id is refused, not replaced");
        assert!(e.to_string().contains("damaged"), "{e}");
    }

    /// A place without an owner, or with this database as owner, takes its backups; one of
    /// another database, or with a damaged file, refuses them.
    #[test]
    fn a_place_takes_backups_of_its_own_database_only() {
        let place = MemStorage::new();
        let (mine, other) = (DatabaseId::fresh(), DatabaseId::fresh());
        check_place(read_place(&place).expect("read").as_deref(), &other, "P").expect("no owner yet");
        claim_place(&place, &mine).expect("claim");
        let found = read_place(&place).expect("read");
        check_place(found.as_deref(), &mine, "P").expect("its own database");
        let e = check_place(found.as_deref(), &other, "P").expect_err("another database");
        assert!(e.to_string().contains("another database") && e.to_string().contains(mine.as_str()), "{e}");
        let e = check_place(Some(b"x"), &mine, "P").expect_err("damaged");
        assert!(e.to_string().contains("damaged"), "{e}");
    }
}
