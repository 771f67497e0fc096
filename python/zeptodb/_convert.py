"""Python values to what the engine takes: statement parameters, and data to insert as an
Arrow C stream (columnar, never row by row)."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from . import _native

_EPOCH = _dt.datetime(1970, 1, 1)


def iso_ns(ns: int) -> str:
    """Nanoseconds since the epoch as a timestamp literal with all nine digits."""
    secs, frac = divmod(int(ns), 1_000_000_000)
    day = _EPOCH + _dt.timedelta(seconds=secs)
    return f"{day:%Y-%m-%d %H:%M:%S}.{frac:09d}"


def _datetime_ns(v: _dt.datetime) -> int:
    if v.tzinfo is not None:
        v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    delta = v - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def to_param(v: Any):
    """A statement parameter: None, bool, int, float and str as they are; timestamps (datetime,
    pandas Timestamp, numpy datetime64) as a :class:`_native.TimestampParam` of nanoseconds
    since the epoch, which binds as a TIMESTAMP with its nanoseconds (naive values are UTC,
    aware ones converted to UTC; NaT is NULL); dates as ``YYYY-MM-DD``; NumPy scalars as their
    Python value."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, _native.TimestampParam):
        return v
    mod = type(v).__module__
    if mod.startswith("pandas") and type(v).__name__ == "NaTType":
        return None
    if mod.startswith("pandas") and hasattr(v, "value") and type(v).__name__ == "Timestamp":
        # `value` is nanoseconds since the epoch in UTC, aware or not.
        return _native.TimestampParam(int(v.value))
    if isinstance(v, _dt.datetime):
        return _native.TimestampParam(_datetime_ns(v))
    if isinstance(v, _dt.date):
        return v.isoformat()
    if mod == "numpy":
        import numpy as np

        if isinstance(v, np.datetime64):
            if np.isnat(v):
                return None
            ns = v.astype("datetime64[ns]")
            if ns.astype(v.dtype) != v:  # outside 1677-2262, or finer than a nanosecond
                raise ValueError(f"{v!r} is not a timestamp in nanoseconds (1677-09-21 to 2262-04-11)")
            return _native.TimestampParam(int(ns.astype("int64")))
        if isinstance(v, np.generic):
            return v.item()
    raise TypeError(f"cannot bind a {type(v).__name__} as a parameter")


def to_arrow_stream(data: Any):
    """``data`` as an object with ``__arrow_c_stream__``: pandas through
    ``pyarrow.Table.from_pandas`` (the index dropped), a dict of arrays through
    ``pyarrow.table``, a RecordBatch as a one-batch table; pyarrow and Polars objects as they
    are."""
    mod = type(data).__module__
    if mod.startswith("pandas"):
        import pyarrow as pa

        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, dict):
        import pyarrow as pa

        return pa.table({k: _vectors_arrow(v) for k, v in data.items()})
    if mod.startswith("pyarrow") and type(data).__name__ == "RecordBatch":
        import pyarrow as pa

        return pa.Table.from_batches([data])
    if hasattr(data, "__arrow_c_stream__"):
        return data
    if mod.startswith("polars") and hasattr(data, "to_arrow"):
        return data.to_arrow()
    raise TypeError(
        f"cannot insert a {type(data).__name__}: give a pandas or Polars DataFrame, a pyarrow "
        "Table or RecordBatch, an object with __arrow_c_stream__, or a dict of arrays"
    )


def _vectors_arrow(v: Any) -> Any:
    """A 2-D NumPy array (rows x n) as a ``FixedSizeList<Float32, n>`` array: what a FLOAT[n]
    column reads. Anything else is returned as it is (lists of lists already read as
    vectors)."""
    if type(v).__module__ == "numpy" and getattr(v, "ndim", 1) == 2:
        import numpy
        import pyarrow as pa

        flat = pa.array(numpy.ascontiguousarray(v, dtype=numpy.float32).reshape(-1))
        return pa.FixedSizeListArray.from_arrays(flat, v.shape[1])
    return v
