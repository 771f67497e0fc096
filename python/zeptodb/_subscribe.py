"""Subscriptions: a query's answer over each write as it commits (``db.subscribe``), in this
process from the catalog's change feed, or from a server's ``GET /subscribe`` stream. Both
yield :class:`Change` objects; the query's rules and the event ids are the server's
(docs/http.md, "Subscriptions")."""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from ._result import Result


@dataclass(frozen=True)
class Change:
    """One committed change to the subscribed table.

    ``kind`` is ``"rows"`` (``result`` holds the query's answer over the appended rows that
    passed it), ``"delete"`` or ``"update"`` (``rows`` says how many), or ``"drop"`` (the table
    is gone; nothing follows). Over a materialized view every change of its table is
    ``"rows"``: ``result`` holds the rows new or changed since the last change, ``removed``
    (None when there are none) the rows the answer no longer has, a changed row's old version
    among them. ``id`` resumes a later subscription after this change
    (``subscribe(..., from_id=change.id)``)."""

    kind: str
    id: str
    result: Optional[Result] = None
    rows: int = 0
    removed: Optional[Result] = None


Change.__init__.__doc__ = (
    "A change of ``kind`` with event ``id``: its ``result`` (rows) and ``removed`` rows, or its ``rows`` count."
)


# How long one native wait lasts: Ctrl-C is seen between waits.
_SLICE = 0.2


def local(native: Any, query: str, from_id: Optional[str], timeout: Optional[float]) -> Iterator[Change]:
    """The changes of a subscription in this process; stops after ``timeout`` seconds without
    one (None: waits for ever), or after a drop. Subscribed by the time this returns (a bad
    query raises here): no change committed after the call is missed, however late the
    first ``next``."""
    return _local_changes(native.subscribe(query, from_id), timeout)


def _local_changes(sub: Any, timeout: Optional[float]) -> Iterator[Change]:
    idle_since = time.monotonic()
    while True:
        wait = _SLICE if timeout is None else max(0.0, min(_SLICE, idle_since + timeout - time.monotonic()))
        event = sub.next(wait)
        if event is None:
            if timeout is not None and time.monotonic() - idle_since >= timeout:
                return
            continue
        idle_since = time.monotonic()
        kind, ident, payload = event
        if kind == "end":
            return
        if kind == "rows":
            rows, removed = payload
            yield Change(kind, ident, result=Result(rows), removed=None if removed is None else Result(removed))
        else:
            yield Change(kind, ident, rows=payload)
        if kind == "drop":
            return


def remote(
    url: str, key: Optional[str], query: str, from_id: Optional[str], timeout: Optional[float]
) -> Iterator[Change]:
    """The changes of a subscription on the server at ``url``, read from its event stream in
    Arrow; stops after ``timeout`` seconds without an event (None: waits for ever; the server's
    keep-alives come every 15 s), after a drop, or when the server ends the stream (an
    ``error`` event raises). Subscribed by the time this returns, as :func:`local` is."""
    from ._remote import _raise

    args = {"query": query, "format": "arrow"}
    if from_id is not None:
        args["from"] = from_id
    req = urllib.request.Request(url + "/subscribe?" + urllib.parse.urlencode(args))
    req.add_header("Accept", "text/event-stream")
    if key is not None:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        _raise(e.code, e.read())
    return _remote_changes(resp)


def _remote_changes(resp: Any) -> Iterator[Change]:
    import pyarrow as pa

    with resp:
        for kind, ident, data in _events(resp):
            if kind == "error":
                raise _stream_error(data)
            if kind == "rows":
                def table(b64: str) -> Any:
                    return Result(pa.ipc.open_stream(base64.b64decode(b64)).read_all())

                removed = table(data["removed"]) if "removed" in data else None
                yield Change(kind, ident, result=table(data["arrow"]), removed=removed)
            else:
                yield Change(kind, ident, rows=data.get("rows", 0))
            if kind == "drop":
                return


def _events(resp: Any) -> Iterator[tuple]:
    """Server-Sent Events as (event, id, parsed data); comments skipped."""
    kind, ident, data = None, None, []
    while True:
        try:
            line = resp.readline()
        except TimeoutError:
            return
        if not line:
            return
        line = line.decode("utf-8").rstrip("\n")
        if line == "":
            if kind:
                yield kind, ident, json.loads("\n".join(data))
            kind, ident, data = None, None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(": ")
            if field == "event":
                kind = value
            elif field == "id":
                ident = value
            elif field == "data":
                data.append(value)


def _stream_error(data: dict) -> Exception:
    from . import _native

    err = _native.ResourcesExhausted if data.get("error") == "SLOW_CONSUMER" else _native.Error
    resume = f" (resume from {data['resume_from']})" if data.get("resume_from") else ""
    return err(f"{data.get('error')}: {data.get('message', '')}{resume}")
