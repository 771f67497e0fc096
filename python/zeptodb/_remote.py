"""The same API against a ZeptoDB server over HTTP (SPEC §2): statements as JSON with their
parameters, results as Arrow IPC streams, inserts as Arrow IPC bodies to ``/write``, agent
memory and the answer cache as the JSON of ``/api/ai/*``. Only the standard library and
pyarrow."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from . import _native
from ._convert import iso_ns, to_arrow_stream, to_param
from ._memory import Cache, Memory, bad_request
from ._result import Result

if TYPE_CHECKING:
    from ._subscribe import Change

ARROW = "application/vnd.apache.arrow.stream"

# The server's stable error codes (SPEC §2) and the exception each raises.
_CLASSES = {
    "SQL_PARSE": _native.SqlError,
    "SQL_PLAN": _native.SqlError,
    "TABLE_NOT_FOUND": _native.SqlError,
    "TABLE_EXISTS": _native.SqlError,
    "COLUMN_NOT_FOUND": _native.SqlError,
    "EXECUTION": _native.SqlError,
    "NOT_SUPPORTED": _native.SqlError,
    "INGEST": _native.IngestError,
    "BAD_REQUEST": _native.IngestError,
    "LIMIT_EXCEEDED": _native.ResourcesExhausted,
    "RESOURCES_EXHAUSTED": _native.ResourcesExhausted,
    "TOO_LARGE": _native.ResourcesExhausted,
    "TIMEOUT": _native.Timeout,
    "CANCELLED": _native.Cancelled,
    "IO": _native.StorageError,
    "DISK_FULL": _native.StorageError,
    "NOT_DURABLE": _native.StorageError,
    "UNAVAILABLE": _native.StorageError,
    "FILE_NOT_FOUND": _native.StorageError,
    "FILE_ACCESS_DENIED": _native.StorageError,
    "BAD_FILE": _native.StorageError,
    "PERMISSION_DENIED": _native.PermissionDenied,
    "UNAUTHENTICATED": _native.PermissionDenied,
    "FORBIDDEN": _native.PermissionDenied,
    "INTERNAL": _native.InternalError,
    "NOT_FOUND": _native.NotFound,
    "QUOTA_EXCEEDED": _native.QuotaExceeded,
}

# `/api/ai/*` answers a malformed request with BAD_REQUEST, raised as in process (elsewhere it
# stays an IngestError, as before the memory layer).
_AI_CLASSES = {**_CLASSES, "BAD_REQUEST": _native.BadRequest}

# The agent-memory operations with a fixed route: method and path.
_AI_ROUTES = {
    "put": ("POST", "/api/ai/memories"),
    "search": ("POST", "/api/ai/memories/search"),
    "context": ("POST", "/api/ai/context"),
    "cache_store": ("POST", "/api/ai/cache/store"),
    "cache_lookup": ("POST", "/api/ai/cache/lookup"),
    "stats": ("GET", "/api/ai/stats"),
}

# pyarrow types → the column types CREATE TABLE takes (for insert(create=True)).
def _sql_type(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int64(t) or pa.types.is_uint32(t) or pa.types.is_uint64(t):
        return "BIGINT"
    if pa.types.is_integer(t):
        return "INTEGER"
    if pa.types.is_float32(t) or pa.types.is_float16(t):
        return "REAL"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_duration(t):
        return "INTERVAL"
    if pa.types.is_dictionary(t):
        return "SYMBOL"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "VARCHAR"
    raise _native.IngestError(f"Arrow type {t} has no ZeptoDB column type")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _placeholders(query: str) -> list:
    """``(start, end, number)`` of each ``?`` / ``$n`` placeholder in ``query``, found as the
    server's lexer finds them: not inside strings, quoted identifiers, comments or identifiers
    (``a$1`` is a name)."""
    out, i, n, anonymous = [], 0, len(query), 0
    while i < n:
        c = query[i]
        if query.startswith("--", i):
            j = query.find("\n", i)
            i = n if j < 0 else j
        elif query.startswith("/*", i):
            j = query.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "'\"":
            i += 1
            while i < n:
                if query[i] == c:
                    if query.startswith(c, i + 1):
                        i += 2
                        continue
                    break
                i += 1
            i += 1
        elif c.isascii() and (c.isalpha() or c == "_") or ord(c) >= 0x80:
            while i < n and (query[i].isascii() and (query[i].isalnum() or query[i] in "_$") or ord(query[i]) >= 0x80):
                i += 1
        elif c == "?":
            anonymous += 1
            out.append((i, i + 1, anonymous))
            i += 1
        elif c == "$" and i + 1 < n and query[i + 1].isascii() and query[i + 1].isdigit():
            j = i + 1
            while j < n and query[j].isascii() and query[j].isdigit():
                j += 1
            out.append((i, j, int(query[i + 1 : j])))
            i = j
        else:
            i += 1
    return out


# Written before a timestamp parameter's placeholder, so the server binds it as in process.
_TYPED = "TIMESTAMP "


def _bind_timestamps(query: str, params: list):
    """JSON parameters carry no TIMESTAMP type (SPEC §2: null, bool, number, string), so a
    timestamp parameter is sent as its text with nine fractional digits and its placeholder
    written ``TIMESTAMP ?``: the server binds that as the literal ``TIMESTAMP '...'``, exactly
    the tokens a :class:`_native.TimestampParam` binds to in process. Returns the query, the JSON
    parameters, and where text was inserted (to put error columns back)."""
    stamps = {k + 1 for k, p in enumerate(params) if isinstance(p, _native.TimestampParam)}
    json_params = [iso_ns(p.ns) if isinstance(p, _native.TimestampParam) else p for p in params]
    if not stamps:
        return query, json_params, []
    parts, inserted, last = [], [], 0
    for start, _end, number in _placeholders(query):
        if number in stamps:
            parts.append(query[last:start])
            parts.append(_TYPED)
            inserted.append(start)
            last = start
    parts.append(query[last:])
    return "".join(parts), json_params, inserted


def _line_column(query: str, offset: int):
    line = query.count("\n", 0, offset) + 1
    return line, offset - (query.rfind("\n", 0, offset) + 1) + 1


def _raise(status: int, body: bytes, fix=None, classes=None):
    try:
        err = json.loads(body.decode("utf-8"))["error"]
    except Exception:
        raise _native.Error(f"HTTP {status}: {body[:200]!r}") from None
    cls = (classes or _CLASSES).get(err.get("code"), _native.Error)
    e = cls(err.get("message", f"HTTP {status}"))
    e.code = err.get("code")
    e.line = err.get("line")
    e.column = err.get("column")
    e.row = err.get("row")
    if fix is not None:
        fix(e)
    raise e


def _unshift(query: str, sent: str, inserted: list):
    """An error's line and column in ``sent`` put back into ``query`` (the text the caller
    wrote), taking out the ``TIMESTAMP `` words :func:`_bind_timestamps` inserted."""

    def fix(e):
        if e.line is None or e.column is None:
            return
        # The error's offset in `sent`, then in `query`.
        lines = sent.split("\n")
        if not 1 <= e.line <= len(lines):
            return
        offset = sum(len(x) + 1 for x in lines[: e.line - 1]) + e.column - 1
        shift = 0
        for k, at in enumerate(inserted):
            if at + (k + 1) * len(_TYPED) <= offset:
                shift += len(_TYPED)
            elif at + k * len(_TYPED) <= offset:
                offset = at + k * len(_TYPED)  # inside an inserted word: its placeholder
        e.line, e.column = _line_column(query, offset - shift)

    return fix


class RemoteConnection:
    """A ZeptoDB server, with the API of :class:`zeptodb.Connection` (made by
    ``zeptodb.connect("http://...")``). Each call is one HTTP request; nothing is held open."""

    def __init__(self, url: str, api_key: Optional[str] = None, timeout: Optional[float] = None) -> None:
        """``url``: the server (``http://host:8123``); ``api_key``: sent as a bearer token;
        ``timeout``: seconds each request may take (None: no limit)."""
        self._url = url.rstrip("/")
        self._key = api_key
        self._timeout = timeout
        self._closed = False
        self._memory = Memory(self._ai)
        self._cache = Cache(self._ai)

    def _request(
        self,
        path: str,
        body: Optional[bytes],
        content_type: str,
        accept: str,
        fix=None,
        *,
        method: Optional[str] = None,
        headers: Optional[dict] = None,
        classes: Optional[dict] = None,
    ):
        if self._closed:
            raise _native.Error("the connection is closed")
        method = method or ("GET" if body is None else "POST")
        req = urllib.request.Request(self._url + path, data=body, method=method)
        if body is not None:
            req.add_header("Content-Type", content_type)
        req.add_header("Accept", accept)
        if self._key is not None:
            req.add_header("Authorization", f"Bearer {self._key}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                return resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            _raise(e.code, e.read(), fix, classes)

    def _ai(
        self, op: str, tenant: Optional[str], body: Optional[str], memory_id: Optional[str], include_embedding: bool
    ) -> str:
        """The memory layer's transport over HTTP: ``/api/ai/*``, the tenant of a request
        without a body in the ``X-Zepto-Tenant-Id`` header."""
        if op in ("get", "delete"):
            method = "GET" if op == "get" else "DELETE"
            path = "/api/ai/memories/" + urllib.parse.quote(memory_id or "", safe="")
            if include_embedding:
                path += "?include_embedding=true"
        else:
            method, path = _AI_ROUTES[op]
        headers = {}
        if tenant is not None:
            if not (tenant.isascii() and tenant.isprintable()):
                # An HTTP header carries printable ASCII only (the server says the same).
                raise bad_request(f"X-Zepto-Tenant-Id: tenant {tenant!r} is not printable ASCII (over HTTP)")
            headers["X-Zepto-Tenant-Id"] = tenant
        data = None if body is None else body.encode("utf-8")
        _, answer = self._request(
            path, data, "application/json", "application/json", method=method, headers=headers, classes=_AI_CLASSES
        )
        return answer.decode("utf-8")

    def sql(self, query: str, params: Optional[Sequence[Any]] = None) -> Result:
        """Run a statement on the server; the result arrives as an Arrow IPC stream."""
        import pyarrow as pa

        payload = {"sql": query}
        fix = None
        if params is not None:
            sent, payload["params"], inserted = _bind_timestamps(query, [to_param(p) for p in params])
            payload["sql"] = sent
            if inserted:
                fix = _unshift(query, sent, inserted)
        headers, body = self._request(
            "/query?format=arrow", json.dumps(payload).encode(), "application/json", ARROW, fix
        )
        status = headers.get("x-zepto-status")
        if status is not None:
            # A statement without rows (DDL, DML): its status line, as in process.
            return Result(pa.table({}), status=status)
        return Result(pa.ipc.open_stream(body).read_all())

    def execute(self, query: str, params: Optional[Sequence[Any]] = None) -> Result:
        """Run a statement (DDL, DML or a query); the same as :meth:`sql`."""
        return self.sql(query, params)

    def subscribe(
        self, query: str, *, from_id: Optional[str] = None, timeout: Optional[float] = None
    ) -> Iterator["Change"]:
        """:meth:`zeptodb.Connection.subscribe` on the server: its ``GET /subscribe`` event
        stream, the rows in Arrow. ``timeout``: stop after that many seconds without an event
        (the server sends a keep-alive every 15 s); None: the connection's ``timeout``."""
        from ._subscribe import remote

        if self._closed:
            raise _native.Error("the connection is closed")
        return remote(self._url, self._key, query, from_id, self._timeout if timeout is None else timeout)

    def insert(self, table: str, data: Any, *, create: bool = False) -> int:
        """Send ``data`` to ``/write?format=arrow`` as one all-or-nothing batch and return the
        rows written. With ``create=True`` a missing table is made first (``CREATE TABLE`` from
        the data's types, its first timestamp column designated), and removed again if the
        write fails while it is still empty."""
        import pyarrow as pa

        reader = pa.RecordBatchReader.from_stream(to_arrow_stream(data))
        created = False
        if create and table not in self.tables():
            ts = [f.name for f in reader.schema if pa.types.is_timestamp(f.type)]
            cols = ", ".join(f"{_quote(f.name)} {_sql_type(f.type)}" for f in reader.schema)
            ddl = f"CREATE TABLE {_quote(table)} ({cols})"
            if ts:
                ddl += f" TIMESTAMP({_quote(ts[0])})"
            try:
                self.sql(ddl)
                created = True
            except _native.SqlError as e:
                if e.code != "TABLE_EXISTS":  # made meanwhile by someone else: write to it
                    raise
        try:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, reader.schema) as w:
                for b in reader:
                    w.write_batch(b)
            path = "/write?" + urllib.parse.urlencode({"table": table, "format": "arrow"})
            _, body = self._request(path, sink.getvalue().to_pybytes(), ARROW, "application/json")
        except BaseException:
            if created:
                self._drop_if_empty(table)
            raise
        return int(json.loads(body.decode("utf-8")).get("rows_written", 0))

    def _drop_if_empty(self, table: str) -> None:
        """Take back a table an insert made, as in process: unless someone wrote to it
        meanwhile, and never masking the insert's own error."""
        try:
            if self.sql(f"SELECT count(*) FROM {_quote(table)}").fetchone() == (0,):
                self.sql(f"DROP TABLE IF EXISTS {_quote(table)}")
        except Exception:
            pass

    def tables(self) -> list[str]:
        """Names of the tables this key may see, sorted."""
        _, body = self._request("/tables", None, "", "application/json")
        return sorted(t["name"] for t in json.loads(body.decode("utf-8"))["tables"])

    @property
    def memory(self) -> Memory:
        """Agent memory on the server (``/api/ai/memories``...): the API of
        :attr:`zeptodb.Connection.memory`. See :class:`zeptodb.Memory`."""
        return self._memory

    @property
    def cache(self) -> Cache:
        """The server's LLM answer cache (``/api/ai/cache/*``): the API of
        :attr:`zeptodb.Connection.cache`. See :class:`zeptodb.Cache`."""
        return self._cache

    @property
    def durable(self) -> Optional[bool]:
        """None: unknown. The server does not say over HTTP whether it keeps its tables in a
        data directory (``serve --data-dir``) or in memory (``--in-memory``)."""
        return None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (later calls raise ``zeptodb.Error``)."""
        return self._closed

    def close(self) -> None:
        """Refuse later calls. There is no connection to shut (each call is one request), and
        the server's tables are not touched; closing twice does nothing."""
        self._closed = True

    def __enter__(self) -> "RemoteConnection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<zeptodb.RemoteConnection {self._url}{' closed' if self._closed else ''}>"
