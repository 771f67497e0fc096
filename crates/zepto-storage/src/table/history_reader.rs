//! The reader of a table's Parquet history, as the table holds it (`Table::history_reader`):
//! a trait here, implemented by `zepto-history`, so that storage does not depend on Parquet.

use super::Table;
use crate::error::StorageError;
use crate::history::{HistoryChunk, HistoryPlan, HistoryRows, HistoryUnit};

/// Reads history files for queries.
pub trait HistoryReader: Send + Sync + std::fmt::Debug {
    /// What a scan of `table`'s history over `[lo, hi]` (and, when `keys` is given, a
    /// partition key among `keys`) must decode, in file then row-group order: files and row
    /// groups whose statistics exclude the range or the keys are left out.
    fn units(&self, table: &Table, keys: Option<&[String]>, lo: i64, hi: i64)
        -> Result<Vec<HistoryUnit>, StorageError>;

    /// Decode schema columns `columns` of one unit. The chunk holds the whole row group: rows
    /// outside the scan's range or keys too; the caller cuts them.
    fn read_unit(&self, table: &Table, columns: &[usize], unit: &HistoryUnit) -> Result<HistoryChunk, StorageError>;

    /// Every unit of [`HistoryReader::units`] decoded, on up to one thread per core.
    fn read(
        &self,
        table: &Table,
        columns: &[usize],
        keys: Option<&[String]>,
        lo: i64,
        hi: i64,
    ) -> Result<HistoryRows, StorageError> {
        let units = self.units(table, keys, lo, hi)?;
        let chunks = crate::par::try_map(&units, |u| self.read_unit(table, columns, u))?;
        Ok(HistoryRows { chunks })
    }

    /// What [`HistoryReader::read`] would read, from file metadata only.
    fn plan(&self, table: &Table, keys: Option<&[String]>, lo: i64, hi: i64) -> Result<HistoryPlan, StorageError>;
}
