"""Agent memory (``db.memory``) and the answer cache (``db.cache``), the same classes in process
and over HTTP (SPEC §5). They turn Python arguments into the JSON bodies of the server's
``/api/ai/*`` endpoints and read the JSON answers; the connection only carries them: in process
to the native layer over the database's own engine, remote as HTTP requests.

Arguments become JSON here, once for both doors: embeddings (lists, tuples, NumPy arrays) as
lists of floats, times (``datetime``, ``numpy.datetime64``, pandas ``Timestamp``, ``date``) as
integer nanoseconds since the epoch (naive values are UTC), durations (``timedelta``) as
seconds; arguments left at None are not sent, so the server's defaults apply.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from typing import Any, Callable, Mapping, Optional, Sequence

from . import _native
from ._convert import to_param

# A connection's transport: (op, tenant header, JSON body, memory id, include_embedding) -> the
# JSON answer. `op` is put, get, delete, search, context, cache_store, cache_lookup or stats.
Transport = Callable[[str, Optional[str], Optional[str], Optional[str], bool], str]


def bad_request(message: str) -> Exception:
    """A ``zeptodb.BadRequest`` with the attributes every ZeptoDB error has (``code``
    ``BAD_REQUEST``, as the server and the native layer give it)."""
    e = _native.BadRequest(message)
    e.code, e.line, e.column, e.row = "BAD_REQUEST", None, None, None
    return e


def _embedding(field: str, v: Any) -> Optional[list]:
    """A vector as a list of finite floats: a list, a tuple, or anything with ``tolist`` (NumPy,
    torch) of one dimension."""
    if v is None:
        return None
    if isinstance(v, (str, bytes)) or isinstance(v, Mapping):
        raise TypeError(f"{field} must be a sequence of numbers, not {type(v).__name__}")
    if hasattr(v, "tolist") and not isinstance(v, (list, tuple)):
        shape = getattr(v, "shape", None)
        if shape is not None and len(shape) != 1:
            raise bad_request(f"{field}: must have one dimension, not shape {tuple(shape)}")
        v = v.tolist()
    try:
        out = [float(x) for x in v]
    except TypeError:
        raise TypeError(f"{field} must be a flat sequence of numbers") from None
    for i, x in enumerate(out):
        if not math.isfinite(x):
            # What the server would say, were NaN expressible in JSON.
            raise bad_request(f"{field}: value {i} ({x}) is not a finite REAL")
    return out


def _time(field: str, v: Any) -> Any:
    """A point in time as the server reads it: integer nanoseconds since the epoch (UTC), or
    ISO-8601 text as given."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        raise TypeError(f"{field} must be a time, not bool")
    if isinstance(v, int):
        return v
    if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        v = _dt.datetime(v.year, v.month, v.day)  # midnight UTC
    try:
        p = to_param(v)
    except TypeError:
        raise TypeError(
            f"{field} must be a datetime, numpy.datetime64, pandas Timestamp, date, int nanoseconds or "
            f"ISO-8601 text, not {type(v).__name__}"
        ) from None
    if p is None:
        raise bad_request(f"{field}: NaT is not a time")
    if isinstance(p, _native.TimestampParam):
        return p.ns
    if isinstance(p, int) and not isinstance(p, bool):  # a NumPy integer
        return p
    raise TypeError(f"{field} must be a time, not {type(v).__name__}")


def _seconds(field: str, v: Any) -> Optional[float]:
    """A duration in seconds: a number, a ``timedelta`` (pandas ``Timedelta`` too) or a
    ``numpy.timedelta64``."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise TypeError(f"{field} must be seconds, not bool")
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    if type(v).__module__ == "numpy" and type(v).__name__ == "timedelta64":
        import numpy as np

        return float(v / np.timedelta64(1, "ns")) / 1e9
    try:
        return float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{field} must be seconds (a number or a timedelta), not {type(v).__name__}") from None


def _json_default(o: Any) -> Any:
    """What ``json`` cannot write by itself, in metadata: NumPy scalars and arrays, times."""
    if type(o).__module__ == "numpy":
        return o.tolist() if hasattr(o, "tolist") else o.item()
    if isinstance(o, (_dt.datetime, _dt.date)):
        return o.isoformat()
    raise TypeError(f"{type(o).__name__} is not JSON (metadata is any JSON value)")


def _body(fields: Mapping[str, Any]) -> str:
    """The JSON text of ``fields``, leaving out those that are None."""
    try:
        return json.dumps({k: v for k, v in fields.items() if v is not None}, allow_nan=False, default=_json_default)
    except ValueError as e:  # NaN or infinity: not JSON
        raise bad_request(f"body: {e} (NaN and infinity are not JSON)") from None


# The fields of a put that are converted; any other is sent as it is (and the server refuses
# one it does not know, naming it).
def _put_fields(r: Mapping[str, Any]) -> dict:
    out = dict(r)
    out["embedding"] = _embedding("embedding", r.get("embedding"))
    for f in ("expires_at", "created_at"):
        out[f] = _time(f, r.get(f))
    out["ttl_seconds"] = _seconds("ttl_seconds", r.get("ttl_seconds"))
    return {k: v for k, v in out.items() if v is not None}


def _call(
    send: Transport,
    op: str,
    body: Optional[Mapping[str, Any]] = None,
    *,
    tenant: Optional[str] = None,
    memory_id: Optional[str] = None,
    include_embedding: bool = False,
) -> Any:
    """Send one operation through the connection's transport and read its JSON answer."""
    text = None if body is None else _body(body)
    return json.loads(send(op, tenant, text, memory_id, include_embedding))


def _id(memory_id: Any) -> str:
    if not isinstance(memory_id, str):
        raise TypeError(f"memory_id must be a str, not {type(memory_id).__name__}")
    return memory_id


class Memory:
    """Agent memory: records of text with an embedding and metadata, per tenant, searched by
    meaning, time and filters, and assembled into a context under a token budget. Stored in the
    table ``ai_memories`` (queryable with SQL; durable with the database). The first embedding
    stored fixes the dimension. Reached as ``db.memory``; the same in process and over HTTP.

    Every method takes ``tenant_id`` (default: the tenant ``default``); a tenant never sees
    another's records. Errors: ``zeptodb.BadRequest`` (also a ``ValueError``: a bad field, a
    wrong dimension), ``zeptodb.NotFound``, ``zeptodb.QuotaExceeded``; nothing of a refused
    request is stored."""

    def __init__(self, transport: Transport) -> None:
        """``transport``: the connection's way to the layer (made by the connection)."""
        self._send = transport

    def put(
        self,
        content: str,
        *,
        embedding: Any = None,
        namespace: Optional[str] = None,
        user_id: Optional[str] = None,
        session_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        type: Optional[str] = None,
        metadata: Any = None,
        token_count: Optional[int] = None,
        importance: Optional[float] = None,
        pinned: Optional[bool] = None,
        expires_at: Any = None,
        ttl_seconds: Any = None,
        created_at: Any = None,
        tenant_id: Optional[str] = None,
    ) -> str:
        """Store one memory and return its id.

        ``embedding``: the client's embedding of ``content`` (list, tuple or NumPy array; the
        first memory stored must have one, and its length is the table's dimension).
        ``metadata``: any JSON value. ``token_count`` is estimated (a token per 4 bytes) when
        not given; ``importance`` is 0 to 1 (default 0.5); a ``pinned`` memory ranks higher
        and is never evicted. ``expires_at`` (a time) or ``ttl_seconds`` (seconds or a
        ``timedelta``) make it expire; ``created_at`` (default now) imports history."""
        record = {
            "content": content,
            "embedding": embedding,
            "namespace": namespace,
            "user_id": user_id,
            "session_id": session_id,
            "agent_id": agent_id,
            "type": type,
            "metadata": metadata,
            "token_count": token_count,
            "importance": importance,
            "pinned": pinned,
            "expires_at": expires_at,
            "ttl_seconds": ttl_seconds,
            "created_at": created_at,
            "tenant_id": tenant_id,
        }
        return _call(self._send, "put", _put_fields(record))["memory_id"]

    def put_many(self, records: Sequence[Mapping[str, Any]], tenant_id: Optional[str] = None) -> list[str]:
        """Store several memories, all or none, and return their ids in order. Each record is a
        dict of :meth:`put`'s arguments (``content`` and the rest); ``tenant_id`` applies to
        records that name none (one naming another tenant is refused)."""
        if isinstance(records, Mapping) or not isinstance(records, Sequence):
            raise TypeError("records must be a list of dicts")
        items = []
        for i, r in enumerate(records):
            if not isinstance(r, Mapping):
                raise TypeError(f"records[{i}] must be a dict, not {type(r).__name__}")
            items.append(_put_fields(r))
        return _call(self._send, "put", {"memories": items, "tenant_id": tenant_id})["memory_ids"]

    def get(self, memory_id: str, *, include_embedding: bool = False, tenant_id: Optional[str] = None) -> dict:
        """One unexpired memory of the tenant as a dict (``memory_id``, ``content``,
        ``metadata``, ``created_at`` as ISO-8601 text, ...; ``embedding`` as a list of floats
        when ``include_embedding``). ``zeptodb.NotFound`` if there is none (or it is another
        tenant's)."""
        return _call(self._send, "get", tenant=tenant_id, memory_id=_id(memory_id), include_embedding=bool(include_embedding))

    def delete(self, memory_id: str, *, tenant_id: Optional[str] = None) -> None:
        """Delete one memory of the tenant; ``zeptodb.NotFound`` if there is none."""
        _call(self._send, "delete", tenant=tenant_id, memory_id=_id(memory_id))

    def search(
        self,
        query_embedding: Any = None,
        *,
        limit: int = 10,
        tenant_id: Optional[str] = None,
        namespace: Optional[str] = None,
        user_id: Optional[str] = None,
        session_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        type: Optional[str] = None,
        created_before: Any = None,
        created_after: Any = None,
        min_similarity: Optional[float] = None,
        weights: Optional[Mapping[str, float]] = None,
        half_life_seconds: Any = None,
        include_embedding: bool = False,
        update_access: bool = True,
    ) -> list[dict]:
        """The best ``limit`` (at most 1,000) memories of the tenant, best first, each a dict as
        :meth:`get` gives it plus its ``score`` (and ``similarity`` with a query embedding).

        Every filter given must match exactly; ``created_before`` (strictly) and
        ``created_after`` (at or after) bound the creation time. The score is
        ``similarity·w_s + importance·w_i + recency·w_r + access·w_a + pinned·w_p`` with
        ``weights`` (keys ``similarity``, ``importance``, ``recency``, ``access``, ``pinned``;
        defaults 1, 0.3, 0.2, 0.1, 0.3) and recency halving every ``half_life_seconds``
        (default 7 days). With ``update_access`` the search counts as an access of each
        result."""
        body = {
            "query_embedding": _embedding("query_embedding", query_embedding),
            "limit": limit,
            "tenant_id": tenant_id,
            "namespace": namespace,
            "user_id": user_id,
            "session_id": session_id,
            "agent_id": agent_id,
            "type": type,
            "created_before": _time("created_before", created_before),
            "created_after": _time("created_after", created_after),
            "min_similarity": min_similarity,
            "weights": weights,
            "half_life_seconds": _seconds("half_life_seconds", half_life_seconds),
            "include_embedding": bool(include_embedding),
            "update_access": bool(update_access),
        }
        return _call(self._send, "search", body)["matches"]

    def context(
        self,
        query_embedding: Any = None,
        *,
        token_budget: int,
        candidates: Optional[int] = None,
        tenant_id: Optional[str] = None,
        namespace: Optional[str] = None,
        user_id: Optional[str] = None,
        session_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        type: Optional[str] = None,
        created_before: Any = None,
        created_after: Any = None,
        min_similarity: Optional[float] = None,
        weights: Optional[Mapping[str, float]] = None,
        half_life_seconds: Any = None,
    ) -> dict:
        """Memories for a prompt: the best ``candidates`` (default 200) ranked as by
        :meth:`search`, one per distinct content, as many as fit ``token_budget`` (one that
        does not fit is skipped and the next tried). Returns ``{"memories": [...],
        "token_count", "token_budget", "skipped", "duplicates"}``; each returned memory counts
        an access."""
        body = {
            "query_embedding": _embedding("query_embedding", query_embedding),
            "token_budget": token_budget,
            "candidates": candidates,
            "tenant_id": tenant_id,
            "namespace": namespace,
            "user_id": user_id,
            "session_id": session_id,
            "agent_id": agent_id,
            "type": type,
            "created_before": _time("created_before", created_before),
            "created_after": _time("created_after", created_after),
            "min_similarity": min_similarity,
            "weights": weights,
            "half_life_seconds": _seconds("half_life_seconds", half_life_seconds),
        }
        return _call(self._send, "context", body)

    def stats(self, tenant_id: Optional[str] = None) -> dict:
        """The tenant's counts: ``memories``, ``pinned``, ``expired``, ``tokens``,
        ``cache_entries``, ``cache_hits``, exact and semantic hits and misses (since the
        database was opened, in process; since the server started, remote),
        ``embedding_dim`` and the quotas."""
        return _call(self._send, "stats", tenant=tenant_id)

    def __repr__(self) -> str:
        return "<zeptodb.Memory>"


class Cache:
    """An answer cache for LLM calls: a lookup finds an entry whose prompt is the same after
    normalization (case and white space), else, given an embedding, the most similar stored
    prompt at or above the threshold (cosine, default 0.92). Stored in the table ``ai_cache``.
    Reached as ``db.cache``; the same in process and over HTTP; errors as :class:`Memory`."""

    def __init__(self, transport: Transport) -> None:
        """``transport``: the connection's way to the layer (made by the connection)."""
        self._send = transport

    def store(
        self,
        prompt: str,
        response: str,
        *,
        embedding: Any = None,
        metadata: Any = None,
        expires_at: Any = None,
        ttl_seconds: Any = None,
        tenant_id: Optional[str] = None,
    ) -> str:
        """Cache ``response`` for ``prompt`` (replacing an entry of the same normalized prompt)
        and return the entry's id. ``embedding`` (of the prompt) enables semantic lookups; the
        first entry stored must have one, and its length fixes the cache's dimension."""
        body = {
            "prompt": prompt,
            "response": response,
            "embedding": _embedding("embedding", embedding),
            "metadata": metadata,
            "expires_at": _time("expires_at", expires_at),
            "ttl_seconds": _seconds("ttl_seconds", ttl_seconds),
            "tenant_id": tenant_id,
        }
        return _call(self._send, "cache_store", body)["entry_id"]

    def lookup(
        self,
        prompt: str,
        *,
        embedding: Any = None,
        semantic_threshold: Optional[float] = None,
        tenant_id: Optional[str] = None,
    ) -> dict:
        """``{"hit": True, "kind": "exact" | "semantic", "score", "entry": {...}}`` or
        ``{"hit": False}`` (with ``score``, the best similarity seen, after a semantic miss).
        ``entry`` has ``entry_id``, ``prompt``, ``response``, ``metadata``, ``created_at``,
        ``expires_at`` and ``hits``."""
        body = {
            "prompt": prompt,
            "embedding": _embedding("embedding", embedding),
            "semantic_threshold": semantic_threshold,
            "tenant_id": tenant_id,
        }
        return _call(self._send, "cache_lookup", body)

    def __repr__(self) -> str:
        return "<zeptodb.Cache>"
