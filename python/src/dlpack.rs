//! DLPack views of result columns (`__dlpack__`), so `numpy.from_dlpack`, `torch.from_dlpack`
//! and JAX read a numeric column in place. The structs are DLPack's C ABI (`dlpack.h`, v1.0);
//! a consumer asking for DLPack 1.0 or later (NumPy 2, recent torch) gets the versioned capsule
//! marked read-only, an older one the legacy capsule. The tensor keeps the Arrow buffer (and so
//! the engine's column) alive until the consumer's deleter runs.

use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_schema::DataType;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

/// The legacy managed tensor (capsule "dltensor").
#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

/// The versioned managed tensor of DLPack >= 1.0 (capsule "dltensor_versioned").
#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const CPU: DLDevice = DLDevice { device_type: 1, device_id: 0 };
const READ_ONLY: u64 = 1;
const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";

/// What a managed tensor owns: the buffer it points into, and its shape.
struct Ctx {
    _keep: Buffer,
    shape: [i64; 1],
}

/// A managed tensor of either ABI: what its deleter and context are.
trait Managed {
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)>;
    fn context(&self) -> *mut c_void;
}

impl Managed for DLManagedTensor {
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
    fn context(&self) -> *mut c_void {
        self.manager_ctx
    }
}

impl Managed for DLManagedTensorVersioned {
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
    fn context(&self) -> *mut c_void {
        self.manager_ctx
    }
}

/// The deleter of every tensor made here.
unsafe extern "C" fn delete<T: Managed>(t: *mut T) {
    // SAFETY: `t` and its context were made by `Box::into_raw` in `__dlpack__` and are freed
    // once, here, by the consumer that took the tensor or by the capsule's destructor.
    let t = unsafe { Box::from_raw(t) };
    drop(unsafe { Box::from_raw(t.context().cast::<Ctx>()) });
}

/// A capsule nobody consumed (its name unchanged) still owns its tensor: free it.
///
/// # Safety
/// `cap` is a capsule being destroyed; if it is still named `name`, it holds a `T`.
unsafe fn drop_capsule<T: Managed>(cap: *mut pyo3::ffi::PyObject, name: &CStr) {
    // SAFETY: a consumer renames the capsule ("used_dltensor") when it takes the tensor, and
    // then owns it; otherwise the pointer is the `T` this module put there.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(cap, name.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(cap, name.as_ptr()).cast::<T>();
            if let Some(d) = (*p).deleter() {
                d(p);
            }
        }
    }
}

unsafe extern "C" fn drop_legacy_capsule(cap: *mut pyo3::ffi::PyObject) {
    // SAFETY: called by Python with the capsule being destroyed.
    unsafe { drop_capsule::<DLManagedTensor>(cap, LEGACY) }
}

unsafe extern "C" fn drop_versioned_capsule(cap: *mut pyo3::ffi::PyObject) {
    // SAFETY: as `drop_legacy_capsule`.
    unsafe { drop_capsule::<DLManagedTensorVersioned>(cap, VERSIONED) }
}

/// A one-dimensional numeric column of a result, readable in place through DLPack.
#[pyclass(frozen, module = "zeptodb._native")]
pub struct Tensor {
    values: Buffer,
    len: usize,
    dtype: (u8, u8),
}

impl Tensor {
    /// The values of `a` as a tensor: numbers, timestamps (int64 ns), dates (int32 days) and
    /// SYMBOL codes (int32); no NULLs (DLPack has no validity).
    pub fn of(a: &ArrayRef) -> PyResult<Tensor> {
        if a.null_count() > 0 {
            return Err(PyValueError::new_err(
                "the column has NULLs, which DLPack cannot carry: use to_numpy() (NaN/NaT) or fill them in SQL",
            ));
        }
        let data = a.to_data();
        let (dtype, data) = match a.data_type() {
            DataType::Int32 | DataType::Date32 => ((0, 32), data),
            DataType::Int64 | DataType::Timestamp(..) => ((0, 64), data),
            DataType::Float32 => ((2, 32), data),
            DataType::Float64 => ((2, 64), data),
            DataType::Dictionary(..) => ((0, 32), data), // the keys (codes)
            t => return Err(PyValueError::new_err(format!("a {t} column has no DLPack form (numbers only)"))),
        };
        let buf = data.buffers().first().ok_or_else(|| PyValueError::new_err("no values buffer"))?;
        let width = usize::from(dtype.1 / 8);
        let start = data.offset() * width;
        let values = buf.slice_with_length(start, data.len() * width);
        Ok(Tensor { values, len: data.len(), dtype })
    }

    fn tensor(&self, ctx: &mut Ctx) -> DLTensor {
        DLTensor {
            data: self.values.as_ptr().cast_mut().cast(),
            device: CPU,
            ndim: 1,
            dtype: DLDataType { code: self.dtype.0, bits: self.dtype.1, lanes: 1 },
            shape: ctx.shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        }
    }
}

#[pymethods]
impl Tensor {
    /// Where the data is, as DLPack's `(device_type, device_id)`: `(1, 0)`, the CPU.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (CPU.device_type, CPU.device_id)
    }

    /// A DLPack capsule over the column's memory (read-only; `copy=True` is refused: copy on
    /// the consumer's side).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = stream; // CPU memory: nothing to synchronize
        if dl_device.is_some_and(|d| d != (CPU.device_type, CPU.device_id)) {
            return Err(PyBufferError::new_err("the column is in CPU memory"));
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err("copy=True: the view is never copied here; copy it afterwards"));
        }
        let ctx = Box::into_raw(Box::new(Ctx { _keep: self.values.clone(), shape: [self.len as i64] }));
        // SAFETY: `ctx` is a live Box until a deleter frees it; the tensor points into the
        // buffer the context keeps alive.
        let t = self.tensor(unsafe { &mut *ctx });
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        // SAFETY: each pointer comes from Box::into_raw and is freed exactly once by its
        // deleter (called by the consumer, or by the capsule destructor if never consumed).
        unsafe {
            if versioned {
                let m = Box::into_raw(Box::new(DLManagedTensorVersioned {
                    version: DLPackVersion { major: 1, minor: 0 },
                    manager_ctx: ctx.cast(),
                    deleter: Some(delete::<DLManagedTensorVersioned>),
                    flags: READ_ONLY,
                    dl_tensor: t,
                }));
                let p = NonNull::new_unchecked(m.cast::<c_void>());
                PyCapsule::new_with_pointer_and_destructor(py, p, VERSIONED, Some(drop_versioned_capsule))
            } else {
                let m = Box::into_raw(Box::new(DLManagedTensor {
                    dl_tensor: t,
                    manager_ctx: ctx.cast(),
                    deleter: Some(delete::<DLManagedTensor>),
                }));
                let p = NonNull::new_unchecked(m.cast::<c_void>());
                PyCapsule::new_with_pointer_and_destructor(py, p, LEGACY, Some(drop_legacy_capsule))
            }
        }
    }

    /// Values in the column (the tensor's one dimension).
    fn __len__(&self) -> usize {
        self.len
    }

    /// Address of the first value (to check that views share memory).
    #[getter]
    fn address(&self) -> usize {
        self.values.as_ptr() as usize
    }
}
