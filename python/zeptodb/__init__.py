"""ZeptoDB in Python: the engine in this process (in memory, or durable in a directory), or a
server over HTTP, behind one API.

    import zeptodb
    db = zeptodb.connect()                          # in process, in memory
    db = zeptodb.connect("path/to/dir")             # in process, durable (WAL + checkpoints)
    db = zeptodb.connect("http://127.0.0.1:8123")   # a server, same API
    db.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE)")
    db.insert("t", df)                               # pandas, Polars, pyarrow, dict of arrays
    r = db.sql("SELECT sym, avg(px) FROM t WHERE ts > ? GROUP BY sym", [start])
    r.to_arrow(); r.to_polars(); r.to_pandas(); r.to_numpy()
    mid = db.memory.put("likes tea", embedding=vec, user_id="u1")   # agent memory
    db.memory.search(query_vec, user_id="u1", limit=5)
    db.cache.lookup("What is VWAP?", embedding=prompt_vec)           # LLM answer cache

In process, results reach Arrow, Polars and NumPy without copying: fixed-width columns and
timestamps are views of the engine's memory, SYMBOL columns are dictionary arrays over the
table's codes, and a view stays valid as long as it lives (after the result, the connection
and the table are gone, and whatever is written later).
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar, Union

from . import _native
from ._convert import to_arrow_stream, to_param
from ._memory import Cache, Memory, Transport
from ._native import (
    BadRequest,
    Cancelled,
    Error,
    IngestError,
    InternalError,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    ResourcesExhausted,
    SqlError,
    StorageError,
    Timeout,
)
from ._remote import RemoteConnection
from ._result import Result
from . import _subscribe
from ._subscribe import Change

__version__: str = _native.__version__

__all__ = [
    "Change",
    "connect",
    "Connection",
    "RemoteConnection",
    "Result",
    "Memory",
    "Cache",
    "Error",
    "SqlError",
    "IngestError",
    "ResourcesExhausted",
    "Timeout",
    "Cancelled",
    "StorageError",
    "PermissionDenied",
    "InternalError",
    "BadRequest",
    "NotFound",
    "QuotaExceeded",
]

T = TypeVar("T")


def _interruptible(call: Callable[[bool], T]) -> T:
    """``call(main)`` where Ctrl-C cancels it: on the main thread, Python's signal handler
    writes to the wakeup fd even while the engine holds this thread, and a native watcher
    reading it cancels the work (python/src/interrupt.rs); ``main`` says that fd is set."""
    if threading.current_thread() is not threading.main_thread():
        return call(False)
    try:
        old = signal.set_wakeup_fd(_native.wakeup_fd(), warn_on_full_buffer=False)
    except (ValueError, OSError):  # not the main interpreter, or no socket pair
        return call(False)
    try:
        return call(True)
    finally:
        signal.set_wakeup_fd(old)


def connect(
    target: Optional[Union[str, os.PathLike]] = None,
    *,
    api_key: Optional[str] = None,
    sync: Optional[str] = None,
    timeout: Optional[float] = None,
    query_timeout: Optional[float] = None,
    query_memory_mb: Optional[int] = None,
) -> Union[Connection, RemoteConnection]:
    """Open a database.

    - ``connect()`` or ``connect(":memory:")``: in this process, in memory.
    - ``connect("dir")``: in this process, durable in ``dir`` (created if missing), with the
      write-ahead log, checkpoints and Parquet history of ``zeptodb serve --data-dir``.
      ``sync`` is ``"always"`` (the default: nothing acknowledged is lost), ``"interval=<ms>"``
      or ``"none"``. One process opens a directory at a time.
    - ``connect("http://host:8123")``: a server; ``api_key`` is sent as a bearer token and
      ``timeout`` bounds each request (seconds).

    In process, ``query_timeout`` (seconds) and ``query_memory_mb`` limit every statement as
    ``zeptodb serve --query-timeout --query-memory-mb`` do (``zeptodb.Timeout`` and
    ``zeptodb.ResourcesExhausted``); a server applies its own.
    """
    if target is None or target == ":memory:":
        return Connection(_native.Database(None, None, query_timeout, query_memory_mb))
    text = os.fspath(target)
    if isinstance(text, str) and text.startswith(("http://", "https://")):
        if query_timeout is not None or query_memory_mb is not None:
            raise ValueError("query limits of a server are the server's (serve --query-timeout)")
        return RemoteConnection(text, api_key=api_key, timeout=timeout)
    if api_key is not None:
        raise ValueError("api_key is for a server URL; a directory is opened in this process")
    return Connection(_native.Database(text, sync, query_timeout, query_memory_mb))


def _in_process_transport(native: _native.Database) -> Transport:
    """The memory layer's transport in process: the native layer takes the server's JSON."""

    def send(op: str, tenant: Optional[str], body: Optional[str], memory_id: Optional[str], embedding: bool) -> str:
        return _interruptible(lambda main: native.ai(op, tenant, body, memory_id, embedding, main))

    return send


class Connection:
    """A database in this process. Safe to share between threads: statements release the GIL
    while the engine runs them."""

    def __init__(self, native: _native.Database) -> None:
        """Wrap an open native database (use :func:`connect`)."""
        self._db = native
        # The layer's transport holds the native database, not this object: a connection
        # referred to by its own members would be freed (with its tables) only when Python's
        # cycle collector next ran, not when the last reference to it goes.
        self._ai = _in_process_transport(native)
        self._memory = Memory(self._ai)
        self._cache = Cache(self._ai)

    def sql(self, query: str, params: Optional[Sequence[Any]] = None) -> Result:
        """Run a statement and return its result. ``params`` fill ``?`` (or ``$1``, ``$2``...)
        placeholders: None, bool, int, float, str, ``datetime``/``date``, ``numpy.datetime64``
        and pandas ``Timestamp`` (nanoseconds kept). A parameter is a value, never SQL."""
        bound = None if params is None else [to_param(p) for p in params]
        return Result(_interruptible(lambda main: self._db.sql(query, bound, main)))

    def execute(self, query: str, params: Optional[Sequence[Any]] = None) -> Result:
        """Run a statement (DDL, DML or a query); the same as :meth:`sql`."""
        return self.sql(query, params)

    def subscribe(
        self, query: str, *, from_id: Optional[str] = None, timeout: Optional[float] = None
    ) -> Iterator[Change]:
        """Iterate over ``query``'s answer as writes commit to its table, from any thread of
        this process: one :class:`Change` per committed append that gives rows, delete,
        update or drop (``for change in db.subscribe("SELECT * FROM trades WHERE sym = 'A'"):
        change.result.to_pandas()``). The query reads one table row by row (a select list
        and a ``WHERE``); others raise ``SqlError``. ``from_id``: resume after that change's
        ``id`` (nothing missed or repeated while the database still holds what followed it).
        ``timeout``: stop after that many seconds without a change (None: never; Ctrl-C stops
        it). A subscriber that falls too far behind gets ``ResourcesExhausted``."""
        return _subscribe.local(self._db, query, from_id, timeout)

    def insert(self, table: str, data: Any, *, create: bool = False) -> int:
        """Append ``data`` to ``table``, all or nothing, and return the rows written.

        ``data``: a pandas or Polars DataFrame, a pyarrow Table or RecordBatch, anything with
        ``__arrow_c_stream__``, or a dict of column name to array. Columns are matched by name
        and cast as ``/write?format=arrow`` casts them; table columns the data lacks are NULL.
        With ``create=True`` a missing table is made from the data's types (its first
        timestamp column designated)."""
        return self._db.insert(table, to_arrow_stream(data, encode_strings=not create), create)

    def tables(self) -> list[str]:
        """Names of the tables, sorted."""
        return self._db.tables()

    @property
    def memory(self) -> Memory:
        """Agent memory over this database (table ``ai_memories``): put, get, delete, search,
        context, stats. See :class:`zeptodb.Memory`."""
        return self._memory

    @property
    def cache(self) -> Cache:
        """The LLM answer cache over this database (table ``ai_cache``): store, lookup. See
        :class:`zeptodb.Cache`."""
        return self._cache

    @property
    def durable(self) -> bool:
        """Whether the tables are kept in a data directory."""
        return self._db.durable

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (later calls raise ``zeptodb.Error``)."""
        return self._db.closed

    def close(self) -> None:
        """Checkpoint (when durable) and close: later calls raise ``zeptodb.Error``."""
        self._db.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("durable" if self.durable else "in memory")
        return f"<zeptodb.Connection {state}>"
