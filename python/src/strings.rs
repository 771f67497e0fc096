//! A NumPy object array of Python strings as dictionary codes, for `db.insert` of a pandas
//! column of strings (object dtype, what `read_csv` makes before pandas 3).
//!
//! Why here: pyarrow's `from_pandas` encodes every row's string to UTF-8 (23 ms a million
//! rows), and `pandas.factorize` hashes every row (13 ms). A `read_csv` column holds one
//! string object per distinct value, shared by its rows, so the rows' pointers repeat: a small
//! table of pointers seen gives most rows their code without touching the string, and only a
//! new pointer is hashed (its cached hash) and compared with the strings of that hash.
//!
//! Only exact `str` objects are read (a subclass could run Python code in `__hash__` or
//! `__eq__`, which could change the array under the walk), with None, float NaN and
//! `pandas.NA` as NULL; anything else, or too many distinct pointers to gain, and the caller
//! is told to convert the column another way.

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use std::collections::HashMap;

/// Slots of the table of pointers seen (a power of two).
const SEEN_SLOTS: usize = 4096;

/// The code a NULL object (None, `pandas.NA`, a NaN float) has in the table of pointers seen.
const NULL_SEEN: u32 = u32::MAX;

/// Rows after which the walk gives up if more of them missed the pointer table than one in
/// eight (rows mostly of their own objects: `pandas.factorize` is quicker for those).
const JUDGE_ROWS: usize = 4096;

/// What [`object_strings_as_codes`] makes: each row's code (little-endian `int32`), the
/// validity bitmap (Arrow's layout) when a row is NULL, and the distinct strings in code order.
type Coded<'py> = (Bound<'py, PyBytes>, Option<Bound<'py, PyBytes>>, Bound<'py, PyList>);

/// The rows of `values` (a 1-D C-contiguous NumPy array of dtype object) as dictionary codes
/// (module docs); `na` is `pandas.NA`. `None` when the column is not all exact strings and
/// NULLs, or its rows seldom share their objects, or it has more distinct strings than
/// `max_distinct`.
#[pyfunction]
pub fn object_strings_as_codes<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    na: &Bound<'py, PyAny>,
    max_distinct: usize,
) -> PyResult<Option<Coded<'py>>> {
    let (addr, n) = object_array(values)?;
    let mut walk = Walk::new(py, na.as_ptr());
    // Each row's code as the little-endian `int32` Arrow reads, written once.
    let mut codes: Vec<u8> = Vec::with_capacity(n * 4);
    let mut nulls = Vec::new();
    for i in 0..n {
        // SAFETY: `object_array` checked that `addr` holds `n` object pointers, C-contiguous;
        // `values` keeps the array alive, and the GIL, held throughout, keeps anyone from
        // changing it: only exact strings' hashes and comparisons run, no Python code.
        let o = unsafe { *(addr as *const *mut ffi::PyObject).add(i) };
        match walk.code(o) {
            Row::Code(c) => codes.extend_from_slice(&c.to_le_bytes()),
            Row::Null => {
                nulls.push(i);
                codes.extend_from_slice(&0u32.to_le_bytes());
            }
            Row::Other => return Ok(None),
        }
        let give_up = i + 1 == JUDGE_ROWS && walk.misses * 8 > JUDGE_ROWS;
        if give_up || walk.strings.len() > max_distinct {
            return Ok(None);
        }
    }
    let validity = (!nulls.is_empty()).then(|| {
        let mut bits = vec![0xFFu8; n.div_ceil(8)];
        nulls.iter().for_each(|&i| bits[i / 8] &= !(1 << (i % 8)));
        PyBytes::new(py, &bits)
    });
    Ok(Some((PyBytes::new(py, &codes), validity, PyList::new(py, walk.strings)?)))
}

/// The address and length of `values` if it is a 1-D C-contiguous NumPy object array.
fn object_array(values: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    let bad = || PyValueError::new_err("a 1-D contiguous NumPy array of dtype object");
    let iface = values.getattr("__array_interface__")?;
    let iface = iface.cast::<PyDict>().map_err(|_| bad())?;
    let get = |k: &str| iface.get_item(k)?.ok_or_else(bad);
    if get("typestr")?.extract::<String>()? != "|O" {
        return Err(bad());
    }
    let shape = get("shape")?;
    let shape = shape.cast::<PyTuple>().map_err(|_| bad())?;
    let n: usize = match shape.len() {
        1 => shape.get_item(0)?.extract()?,
        _ => return Err(bad()),
    };
    let strides = get("strides")?;
    if !strides.is_none() && strides.extract::<(isize,)>()? != (std::mem::size_of::<usize>() as isize,) {
        return Err(bad());
    }
    let (addr, _read_only): (usize, bool) = get("data")?.extract()?;
    if addr == 0 && n > 0 {
        return Err(bad());
    }
    Ok((addr, n))
}

/// One row's reading.
enum Row {
    Code(u32),
    Null,
    Other,
}

/// The walk's state: the pointers seen, and the distinct strings by hash.
struct Walk<'py> {
    py: Python<'py>,
    na: *mut ffi::PyObject,
    /// Pointer and code of an object seen, at the pointer's slot (0: free).
    seen: Vec<(usize, u32)>,
    /// Codes of the distinct strings by their hash.
    by_hash: HashMap<ffi::Py_hash_t, Vec<u32>>,
    strings: Vec<Bound<'py, PyAny>>,
    misses: usize,
}

impl<'py> Walk<'py> {
    fn new(py: Python<'py>, na: *mut ffi::PyObject) -> Self {
        Walk { py, na, seen: vec![(0, 0); SEEN_SLOTS], by_hash: HashMap::new(), strings: Vec::new(), misses: 0 }
    }

    /// The code of object `o` (a live object of the array).
    fn code(&mut self, o: *mut ffi::PyObject) -> Row {
        if o.is_null() {
            return Row::Other;
        }
        let slot = ((o as usize) >> 4) & (SEEN_SLOTS - 1);
        if let Some(&(p, c)) = self.seen.get(slot) {
            if p == o as usize {
                return if c == NULL_SEEN { Row::Null } else { Row::Code(c) };
            }
        }
        self.misses += 1;
        let row = self.look_up(o);
        let seen = match row {
            Row::Code(c) => c,
            Row::Null => NULL_SEEN,
            Row::Other => return row,
        };
        if let Some(s) = self.seen.get_mut(slot) {
            *s = (o as usize, seen);
        }
        row
    }

    /// [`Walk::code`] of an object not in the pointer table.
    fn look_up(&mut self, o: *mut ffi::PyObject) -> Row {
        if self.strings.len() >= NULL_SEEN as usize {
            return Row::Other;
        }
        // SAFETY: `o` is a live object (the array holds it) and the GIL is held; these calls
        // read its type and, for exact floats and strings, run C code only.
        unsafe {
            if o == ffi::Py_None() || o == self.na {
                return Row::Null;
            }
            if ffi::PyFloat_CheckExact(o) != 0 {
                return if ffi::PyFloat_AsDouble(o).is_nan() { Row::Null } else { Row::Other };
            }
            if ffi::PyUnicode_CheckExact(o) == 0 {
                return Row::Other;
            }
            let h = ffi::PyObject_Hash(o);
            if h == -1 {
                ffi::PyErr_Clear();
                return Row::Other;
            }
            let same = self.by_hash.entry(h).or_default();
            for &c in same.iter() {
                let Some(s) = self.strings.get(c as usize) else { return Row::Other };
                match ffi::PyObject_RichCompareBool(o, s.as_ptr(), ffi::Py_EQ) {
                    1 => return Row::Code(c),
                    0 => {}
                    _ => {
                        ffi::PyErr_Clear();
                        return Row::Other;
                    }
                }
            }
            let Ok(code) = u32::try_from(self.strings.len()) else { return Row::Other };
            same.push(code);
            self.strings.push(Bound::from_borrowed_ptr(self.py, o));
            Row::Code(code)
        }
    }
}
