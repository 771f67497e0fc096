//! `zeptodb._native`: the engine inside Python. The pure-Python package `zeptodb` wraps it
//! (connect, results to pandas/Polars/NumPy, the remote client); this module holds what must
//! be native: the database (`database::Database`), results as Arrow over the engine's own
//! memory (`result::NativeResult`), and the exception
//! classes (`errors`).

mod database;
mod dlpack;
mod errors;
mod interrupt;
mod result;
mod strings;
mod subscriber;

use pyo3::prelude::*;

/// Count allocations per thread, so that a statement's memory limit holds in process too.
#[global_allocator]
static ALLOC: zepto_storage::mem::CountingAlloc = zepto_storage::mem::CountingAlloc;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Freed memory kept for the next query, as the server keeps it (docs/python.md): 10k-row
    // appends spent a third of their time faulting pages back in.
    zepto_storage::mem::retain_freed_memory();
    // The package's own blocks of 32 MiB and up on 2 MiB pages where THP is `madvise`, as the
    // server's (docs/python.md): a 10M-row load 0.76-1.02 s against 1.08-1.16 s without.
    zepto_storage::mem::set_huge_pages(true);
    m.add_class::<database::Database>()?;
    m.add_class::<database::TimestampParam>()?;
    m.add_class::<result::NativeResult>()?;
    m.add_class::<subscriber::NativeSubscriber>()?;
    m.add_class::<dlpack::Tensor>()?;
    m.add_function(wrap_pyfunction!(interrupt::wakeup_fd, m)?)?;
    m.add_function(wrap_pyfunction!(strings::object_strings_as_codes, m)?)?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
