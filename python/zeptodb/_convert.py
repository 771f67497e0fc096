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


def to_arrow_stream(data: Any, *, encode_strings: bool = False):
    """``data`` as an object with ``__arrow_c_stream__``: pandas through
    ``pyarrow.Table.from_pandas`` (the index dropped), a dict of arrays through
    ``pyarrow.table``, a RecordBatch as a one-batch table; pyarrow and Polars objects as they
    are. A large pandas frame's columns are converted one by one where that is quicker
    (:func:`_pandas_arrow`, the same arrays). With ``encode_strings``, a pandas column of
    Python strings (object dtype) that repeats a few values is sent as an Arrow dictionary
    (:func:`_strings_as_dictionary`): for a table that exists, whose string columns (SYMBOL
    or VARCHAR) read a dictionary as they read strings, not for one made from the data's
    types."""
    mod = type(data).__module__
    if mod.startswith("pandas"):
        return _pandas_arrow(data, encode_strings)
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


# From this many rows on, a pandas frame's columns are converted one by one where that skips
# `from_pandas`'s work (below, its cost is small either way); object columns are judged on
# their first `_SAMPLE_ROWS` rows.
_ENCODE_MIN_ROWS = 16384
_SAMPLE_ROWS = 4096


def _pandas_arrow(df: Any, encode_strings: bool) -> Any:
    """A pandas DataFrame as a ``pyarrow.Table``, the index dropped: what
    ``pyarrow.Table.from_pandas`` gives, some columns made faster (:func:`_column_arrow`)."""
    import pandas
    import pyarrow as pa

    names = [str(name) for name in df.columns]
    plain = isinstance(df.columns, pandas.MultiIndex) or len(set(names)) != len(names)
    if len(df) < _ENCODE_MIN_ROWS or plain:
        return pa.Table.from_pandas(df, preserve_index=False)
    direct = {}
    for name in df.columns:
        arr = _column_arrow(df[name], encode_strings)
        if arr is not None:
            direct[name] = arr
    if not direct:
        return pa.Table.from_pandas(df, preserve_index=False)
    others = [name for name in df.columns if name not in direct]
    rest = pa.Table.from_pandas(df[others], preserve_index=False) if others else None
    return pa.table({str(name): direct[name] if name in direct else rest.column(str(name)) for name in df.columns})


def _column_arrow(series: Any, encode_strings: bool) -> Any:
    """A pandas column as the Arrow array ``from_pandas`` would make of it, where that is
    quicker made here; None to leave it to ``from_pandas``.

    * NumPy numbers and datetimes without NaN or NaT: the array over the same memory.
      ``from_pandas`` looks for NaN and NaT in every row to make them NULL (about 2 ms a
      million rows each, a third of a 1M-row insert); NumPy's check is a tenth of that.
    * Object columns of repeated strings, with ``encode_strings``: a dictionary
      (:func:`_strings_as_dictionary`).
    * ``category`` of strings: a dictionary over the codes (:func:`_categorical_arrow`).
    * pandas' own arrays that make their Arrow array themselves (``str``, nullable numbers):
      that array, as ``from_pandas`` takes it, without the frame around it (0.7 ms)."""
    import numpy
    import pandas
    import pyarrow as pa

    dt = series.dtype
    if isinstance(dt, pandas.CategoricalDtype):
        return _categorical_arrow(series.array)
    if not isinstance(dt, numpy.dtype):
        made = getattr(series.array, "__arrow_array__", None)
        return made() if made is not None else None
    values = series.to_numpy()
    if dt.kind in "iu":
        return pa.array(values)
    # NumPy's min is NaN when any value is, and NaT is the least int64: one reduction each,
    # no array of flags (0.1 against 0.47 ms a million datetimes).
    if dt.kind == "f" and not numpy.isnan(values.min()):
        return pa.array(values)
    if dt.kind == "M" and values.view("i8").min() != numpy.iinfo(numpy.int64).min:
        unit, count = numpy.datetime_data(dt)
        if count == 1 and unit in ("s", "ms", "us", "ns"):
            # Over the int64s: `pyarrow.array` of datetime64 values looks at each for NaT.
            return pa.array(values.view("i8")).view(pa.timestamp(unit))
    if dt == object and encode_strings:
        return _strings_as_dictionary(values)
    return None


def _categorical_arrow(cat: Any) -> Any:
    """A pandas ``Categorical`` of strings as an Arrow dictionary over its codes (NULL where
    the code is -1), or None to leave it to ``from_pandas`` (categories of another type).

    ``from_pandas`` takes 1.5-2 ms a million rows over what is a view of the codes: Arrow's
    check that every code is in range. The engine checks each valid row's key as it reads it,
    so the check is skipped here."""
    import numpy
    import pyarrow as pa

    categories = pa.array(cat.categories.array)
    if not (pa.types.is_string(categories.type) or pa.types.is_large_string(categories.type)):
        return None
    codes = numpy.asarray(cat.codes)
    nulls = codes < 0
    indices = pa.array(codes, mask=nulls if nulls.any() else None)
    return pa.DictionaryArray.from_arrays(indices, categories, ordered=cat.ordered, safe=False)


def _strings_as_dictionary(values: Any) -> Any:
    """An object array of Python strings as an Arrow ``dictionary<int32, string>`` (None, NaN
    and ``pandas.NA`` as NULL, as ``from_pandas`` reads them), or None to leave it to
    ``from_pandas``: values that are not all strings, none at all (``from_pandas`` makes a
    column of only NULLs a null array, which any column takes), or too many distinct ones to
    gain.

    Why: ``from_pandas`` encodes every row's string to UTF-8 (23 ms for 1M rows), and the
    engine then interns each. When rows share their string objects (``read_csv``'s do), a
    native walk over the pointers codes them (``_native.object_strings_as_codes``, about 2
    ms); otherwise ``pandas.factorize`` finds the distinct values by the strings' cached hashes
    (21 ms). Either way only the distinct strings are encoded and interned."""
    import numpy
    import pandas
    import pyarrow as pa

    n = len(values)
    values = numpy.ascontiguousarray(values)
    coded = _native.object_strings_as_codes(values, pandas.NA, n // 8)
    if coded is not None:
        codes, validity, uniques = coded
        buffers = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(codes)]
        indices = pa.Array.from_buffers(pa.int32(), n, buffers)
    else:
        _, seen = pandas.factorize(values[:_SAMPLE_ROWS], use_na_sentinel=True)
        if len(seen) > _SAMPLE_ROWS // 8:
            return None
        codes, uniques = pandas.factorize(values, use_na_sentinel=True)
        uniques = list(uniques)
        if len(uniques) > n // 8 or not all(type(u) is str for u in uniques):
            return None
        codes = codes.astype(numpy.int32)
        nulls = codes < 0
        indices = pa.array(codes, mask=nulls if nulls.any() else None)
    if not uniques:
        return None
    return pa.DictionaryArray.from_arrays(indices, pa.array(uniques, type=pa.string()))


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
