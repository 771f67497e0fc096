"""A statement's result, the same class in process and over HTTP: rows as Arrow record batches
(in process over the engine's own memory), or the status line of a statement without rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:
    import numpy
    import pandas
    import polars
    import pyarrow

    from ._native import Tensor


class Result:
    """Rows of a statement. In process, ``to_arrow`` shares the engine's memory; ``to_polars``
    shares fixed-width columns (strings and symbols are re-encoded by Polars); ``to_numpy`` and
    ``column_chunks`` share numeric and timestamp batches without NULLs; ``to_pandas``
    converts (pandas has its own layout). The result also speaks the Arrow PyCapsule protocol,
    so ``pyarrow.table(r)``, ``polars.from_arrow(r)`` and ``duckdb.sql("FROM r")`` read it
    directly."""

    def __init__(self, source: Any, status: Optional[str] = None) -> None:
        """``source``: a native result, or (over HTTP) a ``pyarrow.Table``; ``status``: what a
        statement without rows did (else the source's own)."""
        # `source`: a native result, or (over HTTP) a pyarrow Table.
        self._src = source
        self._status = status if status is not None else getattr(source, "status", None)
        self._table = None

    # The Arrow PyCapsule protocol.
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The rows as an Arrow C stream PyCapsule (the engine's own types)."""
        return self._src.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        """The Arrow schema as a PyCapsule."""
        return self._src.schema.__arrow_c_schema__() if _is_table(self._src) else self._src.__arrow_c_schema__()

    @property
    def columns(self) -> list[str]:
        """Column names, in order."""
        return list(self._src.column_names) if _is_table(self._src) else self._src.columns

    @property
    def num_rows(self) -> int:
        """Rows in the result, over all its batches (0 for a statement without rows)."""
        return self._src.num_rows

    def __len__(self) -> int:
        """:attr:`num_rows`."""
        return self.num_rows

    @property
    def status(self) -> Optional[str]:
        """What a statement without rows did (``CREATE TABLE``, ``INSERT 3``...), else None."""
        return self._status

    def to_arrow(self) -> pyarrow.Table:
        """A ``pyarrow.Table`` (one chunk per engine batch), sharing the engine's memory."""
        if self._table is None:
            import pyarrow as pa

            self._table = self._src if _is_table(self._src) else pa.RecordBatchReader.from_stream(self._src).read_all()
        return self._table

    def to_polars(self) -> polars.DataFrame:
        """A ``polars.DataFrame``, one chunk per batch. Fixed-width columns (numbers,
        TIMESTAMP, DATE, INTERVAL) and their validity are the same Arrow memory; Polars
        re-encodes strings into its own string views and SYMBOL into a Categorical, which
        copies them."""
        import polars as pl

        return pl.from_arrow(self.to_arrow(), rechunk=False)

    def to_pandas(self, **kwargs: Any) -> pandas.DataFrame:
        """A ``pandas.DataFrame`` (SYMBOL columns as categoricals, timestamps as
        ``datetime64[ns]``). A HUGEINT column (``sum`` of BIGINT) is ``int64`` when every value
        fits (NULLs make it float64, as for other integers), Python ints otherwise. Keyword
        arguments go to ``pyarrow.Table.to_pandas``."""
        table = _narrow_hugeint(self.to_arrow())
        df = table.to_pandas(**kwargs)
        for name in _hugeint_columns(table):
            df[name] = [None if v is None else int(v) for v in df[name]]
        return df

    def to_numpy(self) -> dict[str, numpy.ndarray]:
        """Column name → one contiguous ``numpy.ndarray``.

        In process, a numeric, TIMESTAMP (``datetime64[ns]``) or INTERVAL (int64 ns) column that
        comes in one batch and has no NULLs is a read-only view of the engine's memory: nothing
        is copied. Every other column is copied into a new array: one of several batches (a
        contiguous array has to gather them: :meth:`column_chunks` gives a view per batch), one
        with NULLs (NULL as NaN, NaT or None, so integers become float64 and booleans object),
        DATE (int32 days widened to ``datetime64[D]``; :meth:`tensor` is a view of the days),
        BOOLEAN (Arrow packs it in bits), VARCHAR and SYMBOL (Python strings, object dtype).
        A result of a partitioned table has one batch per partition it reads."""
        out = {}
        table = _narrow_hugeint(self.to_arrow())
        for name, col in zip(table.column_names, table.columns):
            if _is_hugeint(col.type):
                import numpy

                out[name] = numpy.array([None if v is None else int(v) for v in col.to_pylist()], dtype=object)
            elif _is_vector(col.type):
                out[name] = _vectors_numpy(col)
            elif col.num_chunks == 1:
                out[name] = col.chunk(0).to_numpy(zero_copy_only=False)
            else:
                out[name] = col.to_numpy()
        return out

    def column_chunks(self, column: Union[str, int]) -> list[numpy.ndarray]:
        """Column ``column`` (name or index) as one ``numpy.ndarray`` per batch, in order, each
        converted as :meth:`to_numpy` converts a one-batch column: a numeric, TIMESTAMP or
        INTERVAL batch without NULLs is a read-only view of the engine's memory, whatever the
        number of batches (``numpy.concatenate`` of the list equals :meth:`to_numpy`'s array)."""
        table = self.to_arrow()
        col = table.column(column)
        return [c.to_numpy(zero_copy_only=False) for c in col.chunks]

    def tensor(self, column: Union[str, int], batch: int = 0) -> Union[Tensor, pyarrow.Array]:
        """Column ``column`` (name or index) of batch ``batch`` as a DLPack view:
        ``numpy.from_dlpack(r.tensor("px"))``, ``torch.from_dlpack(...)``. In process it is the
        engine's memory, read-only (numbers; timestamps as int64 ns, dates as int32 days,
        SYMBOL codes as int32); a column with NULLs is refused (DLPack has no validity). Over
        HTTP it is the received ``pyarrow.Array``, which speaks DLPack itself."""
        i = column if isinstance(column, int) else self.columns.index(column)
        if _is_table(self._src):
            return self._src.column(i).chunk(batch)
        return self._src.tensor(batch, i)

    def fetchall(self) -> list[tuple]:
        """The rows as a list of tuples (a HUGEINT as a Python int)."""
        table = self.to_arrow()
        cols = [_pylist(c) for c in table.columns]
        return list(zip(*cols))

    def fetchone(self) -> Optional[tuple]:
        """The first row as a tuple, or None."""
        rows = self.fetchall()
        return rows[0] if rows else None

    def __repr__(self) -> str:
        if self._status is not None and not self.columns:
            return f"<zeptodb.Result {self._status}>"
        return f"<zeptodb.Result {self.num_rows} rows x {len(self.columns)} columns: {', '.join(self.columns)}>"


def _is_table(x: Any) -> bool:
    return type(x).__name__ == "Table" and type(x).__module__.startswith("pyarrow")


def _is_hugeint(t: Any) -> bool:
    """A HUGEINT column: Arrow ``Decimal128(38, 0)``."""
    import pyarrow

    return pyarrow.types.is_decimal128(t) and t.scale == 0


def _hugeint_columns(table: Any) -> list[str]:
    return [f.name for f in table.schema if _is_hugeint(f.type)]


def _narrow_hugeint(table: Any) -> Any:
    """``table`` with each HUGEINT column whose values all fit in BIGINT as ``int64`` (the
    common case of ``sum``: the type pandas and NumPy users expect); the others stay exact."""
    import pyarrow

    names = _hugeint_columns(table)
    for name in names:
        i = table.column_names.index(name)
        try:
            table = table.set_column(i, name, table.column(i).cast(pyarrow.int64()))
        except pyarrow.ArrowInvalid:
            pass
    return table


def _pylist(col: Any) -> list:
    """A column's values as Python objects (a HUGEINT as an int, not a Decimal)."""
    values = col.to_pylist()
    if _is_hugeint(col.type):
        return [None if v is None else int(v) for v in values]
    return values


def _is_vector(t: Any) -> bool:
    """A FLOAT[n] column: Arrow ``FixedSizeList<Float32, n>``."""
    import pyarrow

    return pyarrow.types.is_fixed_size_list(t)


def _vectors_numpy(col: Any) -> Any:
    """A FLOAT[n] column as a 2-D ``float32`` array of shape (rows, n) (copied); with NULL
    vectors, a 1-D object array holding one ``float32`` array or ``None`` per row."""
    import numpy

    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    n = arr.type.list_size
    if arr.null_count == 0:
        return arr.flatten().to_numpy(zero_copy_only=False).reshape(len(arr), n)
    out = numpy.empty(len(arr), dtype=object)
    for i, v in enumerate(arr.to_pylist()):
        out[i] = None if v is None else numpy.asarray(v, dtype=numpy.float32)
    return out
