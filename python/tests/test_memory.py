"""Agent memory (`db.memory`) and the answer cache (`db.cache`), each test run twice: in process
and against a real `zeptodb serve` (the `server` fixture), with the same code and the same
expectations, errors included.

The server is shared by the session, so each test works in tenants of its own, and every
embedding has DIM values (the first one stored fixes the table's dimension)."""

import datetime as dt
import json
import math
import time
import uuid

import numpy as np
import pandas as pd
import pytest

import zeptodb

DIM = 4
API_KEY = "test-key-0123456789abcdef"
ONLY_SIMILARITY = {"similarity": 1, "importance": 0, "recency": 0, "access": 0, "pinned": 0}


@pytest.fixture(params=["in_process", "remote"])
def db(request):
    if request.param == "in_process":
        d = zeptodb.connect()
    else:
        d = zeptodb.connect(request.getfixturevalue("server"), api_key=API_KEY)
    yield d
    d.close()


@pytest.fixture
def t():
    """Tenant names of this test alone: t("a"), t("b")."""
    run = uuid.uuid4().hex[:10]
    return lambda name: f"{run}-{name}"


def cos(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_put_get_delete_round_trip(db, t):
    created = dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone.utc)
    mid = db.memory.put(
        "likes tea",
        embedding=np.array([1, 0, 0, 0], dtype=np.float32),
        user_id="u1",
        type="preference",
        metadata={"source": "chat", "n": np.int64(2), "tags": np.array([1, 2])},
        importance=0.9,
        pinned=True,
        created_at=created,
        tenant_id=t("a"),
    )
    assert isinstance(mid, str) and mid
    got = db.memory.get(mid, include_embedding=True, tenant_id=t("a"))
    assert got["memory_id"] == mid and got["tenant_id"] == t("a")
    assert (got["content"], got["user_id"], got["type"], got["namespace"]) == ("likes tea", "u1", "preference", "default")
    assert got["metadata"] == {"source": "chat", "n": 2, "tags": [1, 2]}
    assert got["embedding"] == [1.0, 0.0, 0.0, 0.0]
    assert (got["importance"], got["pinned"], got["token_count"], got["access_count"]) == (0.9, True, 3, 0)
    assert got["created_at"] == "2024-01-02T03:04:05.123456000Z"
    assert "embedding" not in db.memory.get(mid, tenant_id=t("a"))
    # Tuples, lists and float64 arrays are embeddings too; several at once, all or none.
    ids = db.memory.put_many(
        [
            {"content": "a", "embedding": (0, 1, 0, 0)},
            {"content": "b", "embedding": [0.0, 0.0, 1.0, 0.0], "created_at": np.datetime64("2024-05-06T07:08:09", "ns")},
            {"content": "c", "embedding": np.array([0, 0, 0, 1], dtype=np.float64), "ttl_seconds": dt.timedelta(hours=1)},
        ],
        tenant_id=t("a"),
    )
    assert len(ids) == 3 and len(set(ids)) == 3
    assert db.memory.get(ids[1], tenant_id=t("a"))["created_at"] == "2024-05-06T07:08:09.000000000Z"
    assert db.memory.get(ids[2], tenant_id=t("a"))["expires_at"] is not None
    assert db.memory.delete(mid, tenant_id=t("a")) is None
    with pytest.raises(zeptodb.NotFound) as e:
        db.memory.get(mid, tenant_id=t("a"))
    assert e.value.code == "NOT_FOUND"
    with pytest.raises(zeptodb.NotFound):
        db.memory.delete(mid, tenant_id=t("a"))
    with pytest.raises(zeptodb.NotFound):
        db.memory.get("not-an-id", tenant_id=t("a"))
    assert db.memory.stats(t("a"))["memories"] == 3


def test_search_ranks_nearest_first(db, t):
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(12, DIM)).astype(np.float32)
    ids = db.memory.put_many([{"content": f"m{i}", "embedding": v} for i, v in enumerate(vecs)], tenant_id=t("a"))
    q = rng.normal(size=DIM)
    got = db.memory.search(q, limit=5, weights=ONLY_SIMILARITY, tenant_id=t("a"), update_access=False)
    want = sorted(range(12), key=lambda i: -cos(q, vecs[i]))[:5]
    assert [m["memory_id"] for m in got] == [ids[i] for i in want]
    for m, i in zip(got, want):
        assert math.isclose(m["similarity"], cos(q, vecs[i]), abs_tol=1e-5)
        assert math.isclose(m["score"], m["similarity"], abs_tol=1e-6)
        assert m["access_count"] == 0 and "embedding" not in m
    # Drop the less similar; count the search as an access; return embeddings.
    cut = got[2]["similarity"]
    some = db.memory.search(q, min_similarity=cut, weights=ONLY_SIMILARITY, include_embedding=True, tenant_id=t("a"))
    assert [m["memory_id"] for m in some] == [m["memory_id"] for m in got[:3]]
    assert all(m["access_count"] == 1 and len(m["embedding"]) == DIM for m in some)
    assert len(db.memory.search(limit=100, tenant_id=t("a"))) == 12, "no query embedding: everything ranks"


def test_filters_by_session_and_creation_time(db, t):
    base = pd.Timestamp("2025-03-01T12:00:00Z")
    records = [
        {
            "content": f"m{i}",
            "embedding": [1.0, i / 10, 0.0, 0.0],
            "session_id": f"s{i % 3}",
            "created_at": base + pd.Timedelta(minutes=i),
        }
        for i in range(10)
    ]
    db.memory.put_many(records, tenant_id=t("a"))

    def contents(**kw):
        return sorted(m["content"] for m in db.memory.search(limit=100, tenant_id=t("a"), update_access=False, **kw))

    assert contents(session_id="s1") == ["m1", "m4", "m7"]
    cut = base + pd.Timedelta(minutes=4)
    want_before = [f"m{i}" for i in range(4)]
    # Strictly before, whichever kind of time says when.
    for when in (cut, cut.to_pydatetime(), cut.tz_localize(None).to_datetime64(), cut.value, cut.isoformat()):
        assert contents(created_before=when) == want_before, when
    assert contents(created_after=cut) == [f"m{i}" for i in range(4, 10)]
    assert contents(created_after=cut, created_before=cut + pd.Timedelta(minutes=2), session_id="s2") == ["m5"]
    ctx = db.memory.context([1, 0, 0, 0], token_budget=1000, session_id="s0", tenant_id=t("a"))
    assert sorted(m["content"] for m in ctx["memories"]) == ["m0", "m3", "m6", "m9"]


def test_tenants_see_nothing_of_each_other(db, t):
    a, b = t("a"), t("b")
    mid = db.memory.put("a's secret", embedding=[1, 0, 0, 0], tenant_id=a)
    db.cache.store("what is a's secret?", "tea", embedding=[1, 0, 0, 0], tenant_id=a)
    assert db.memory.search([1, 0, 0, 0], tenant_id=b) == []
    assert db.memory.search(tenant_id=b) == []
    with pytest.raises(zeptodb.NotFound):
        db.memory.get(mid, tenant_id=b)
    with pytest.raises(zeptodb.NotFound):
        db.memory.delete(mid, tenant_id=b)
    assert db.memory.context([1, 0, 0, 0], token_budget=100, tenant_id=b)["memories"] == []
    assert db.cache.lookup("what is a's secret?", embedding=[1, 0, 0, 0], tenant_id=b)["hit"] is False
    sb = db.memory.stats(b)
    assert (sb["tenant_id"], sb["memories"], sb["cache_entries"], sb["cache_exact_hits"]) == (b, 0, 0, 0)
    # Tenant a still has everything.
    assert db.memory.get(mid, tenant_id=a)["content"] == "a's secret"
    assert db.cache.lookup("What is A's secret?", tenant_id=a)["hit"] is True
    sa = db.memory.stats(a)
    assert (sa["memories"], sa["cache_entries"], sa["embedding_dim"]) == (1, 1, DIM)


def test_context_fits_the_token_budget(db, t):
    items = [("a", 1.0, 40), ("  A ", 0.99, 40), ("big", 0.9, 100), ("small", 0.8, 10), ("tiny", 0.7, 5)]
    db.memory.put_many(
        [{"content": c, "embedding": [x, 1 - x, 0, 0], "token_count": n} for c, x, n in items], tenant_id=t("a")
    )
    c = db.memory.context([1, 0, 0, 0], token_budget=60, weights=ONLY_SIMILARITY, tenant_id=t("a"))
    assert [m["content"] for m in c["memories"]] == ["a", "small", "tiny"]
    assert (c["token_count"], c["token_budget"], c["skipped"], c["duplicates"]) == (55, 60, 1, 1)
    assert all(m["access_count"] == 1 for m in c["memories"]), "a context counts as an access"
    small = db.memory.context(np.array([1, 0, 0, 0]), token_budget=5, candidates=3, tenant_id=t("a"))
    assert small["token_count"] <= 5
    with pytest.raises(zeptodb.BadRequest):
        db.memory.context(token_budget=0, tenant_id=t("a"))


def test_cache_exact_and_semantic(db, t):
    a = t("a")
    eid = db.cache.store("What is the VWAP?", "volume-weighted average price", embedding=[1, 0, 0, 0],
                         metadata={"model": "m1"}, tenant_id=a)
    hit = db.cache.lookup("  what IS\tthe\n vwap?  ", tenant_id=a)
    assert (hit["hit"], hit["kind"], hit["score"]) == (True, "exact", 1.0)
    assert hit["entry"]["entry_id"] == eid and hit["entry"]["response"] == "volume-weighted average price"
    assert hit["entry"]["metadata"] == {"model": "m1"} and hit["entry"]["hits"] == 1
    near = np.array([0.99, 0.1, 0, 0])
    sem = db.cache.lookup("volume weighted price?", embedding=near, tenant_id=a)
    assert (sem["hit"], sem["kind"]) == (True, "semantic")
    assert math.isclose(sem["score"], cos(near, [1, 0, 0, 0]), abs_tol=1e-5)
    far = [0.7, 0.7, 0, 0]
    miss = db.cache.lookup("volume weighted price?", embedding=far, tenant_id=a)
    assert miss["hit"] is False and "entry" not in miss
    assert math.isclose(miss["score"], cos(far, [1, 0, 0, 0]), abs_tol=1e-5), "the best similarity seen"
    assert db.cache.lookup("volume weighted price?", embedding=far, semantic_threshold=0.7, tenant_id=a)["hit"]
    assert db.cache.lookup("something else", tenant_id=a) == {"hit": False}
    s = db.memory.stats(a)
    assert (s["cache_exact_hits"], s["cache_semantic_hits"], s["cache_misses"], s["cache_hits"]) == (1, 2, 2, 3)
    # Storing the same prompt again replaces the entry.
    db.cache.store("what is the vwap?", "VWAP", embedding=[1, 0, 0, 0], tenant_id=a)
    assert db.cache.lookup("What is the VWAP?", tenant_id=a)["entry"]["response"] == "VWAP"
    assert db.memory.stats(a)["cache_entries"] == 1


def test_bad_input_raises_and_stores_nothing(db, t):
    a, b = t("a"), t("b")
    db.memory.put("first", embedding=[1, 0, 0, 0], tenant_id=a)

    def refused(fn, exc=zeptodb.BadRequest, *words):
        with pytest.raises(exc) as e:
            fn()
        for w in words:
            assert w in str(e.value), (w, str(e.value))
        return e.value

    e = refused(lambda: db.memory.put("x", embedding=[1, 2, 3], tenant_id=a), zeptodb.BadRequest, "embedding", "FLOAT[4]")
    assert isinstance(e, ValueError) and isinstance(e, zeptodb.Error) and e.code == "BAD_REQUEST"
    refused(lambda: db.memory.put("x", embedding=np.array([1, math.nan, 0, 0]), tenant_id=a), zeptodb.BadRequest, "finite")
    refused(lambda: db.memory.put("x", embedding=np.ones((2, 2)), tenant_id=a), zeptodb.BadRequest, "dimension")
    refused(lambda: db.memory.put("x", embedding=[0, 0, 0, 0], tenant_id=a), zeptodb.BadRequest, "zeros")
    refused(lambda: db.memory.put("x", importance=2, tenant_id=a), zeptodb.BadRequest, "importance")
    refused(lambda: db.memory.put("x", importance=math.inf, tenant_id=a), zeptodb.BadRequest)
    refused(lambda: db.memory.put("x", ttl_seconds=5, expires_at=dt.datetime(2100, 1, 1), tenant_id=a),
            zeptodb.BadRequest, "ttl_seconds")
    refused(lambda: db.memory.put("x", expires_at=pd.NaT, tenant_id=a), zeptodb.BadRequest, "NaT")
    refused(lambda: db.memory.put("x", namespace="", tenant_id=a), zeptodb.BadRequest, "namespace")
    refused(lambda: db.memory.search([1, 0, 0, 0], weights={"similarty": 1}, tenant_id=a), zeptodb.BadRequest)
    refused(lambda: db.memory.search([1, 0], tenant_id=a), zeptodb.BadRequest, "query_embedding")
    refused(lambda: db.memory.search(limit=0, tenant_id=a), zeptodb.BadRequest, "limit")
    # A batch with one bad record stores none of it, and the error names the record.
    refused(lambda: db.memory.put_many([{"content": "ok"}, {"contnet": "typo"}], tenant_id=a),
            zeptodb.BadRequest, "memories[1].contnet")
    # A record naming another tenant than its batch; the header and the body disagreeing.
    refused(lambda: db.memory.put_many([{"content": "x", "tenant_id": b}], tenant_id=a), zeptodb.BadRequest, "tenant_id")
    refused(lambda: db._ai("search", a, json.dumps({"tenant_id": b}), None, False), zeptodb.BadRequest, "conflicts")
    # Another tenant's record is not found (its existence is not revealed).
    mine = db.memory.put("mine", embedding=[0, 1, 0, 0], tenant_id=b)
    refused(lambda: db.memory.get(mine, tenant_id=a), zeptodb.NotFound)
    with pytest.raises(TypeError):
        db.memory.get(5, tenant_id=a)
    with pytest.raises(TypeError):
        db.memory.put("x", created_at=1.5, tenant_id=a)
    assert [m["content"] for m in db.memory.search(limit=100, tenant_id=a)] == ["first"]
    assert db.memory.stats(a)["memories"] == 1
    db.cache.store("p", "r", embedding=[1, 0, 0, 0], tenant_id=a)
    refused(lambda: db.cache.store("q", "r", embedding=[1, 0], tenant_id=a), zeptodb.BadRequest, "embedding")
    refused(lambda: db.cache.lookup("q", embedding=[1, 0], tenant_id=a), zeptodb.BadRequest, "embedding")
    assert db.memory.stats(a)["cache_entries"] == 1


def test_expired_memories_are_hidden(db, t):
    keep = db.memory.put("keep", embedding=[1, 0, 0, 0], tenant_id=t("a"))
    gone = db.memory.put("gone", embedding=[1, 0, 0, 0], ttl_seconds=dt.timedelta(milliseconds=200), tenant_id=t("a"))
    assert len(db.memory.search(tenant_id=t("a"))) == 2
    time.sleep(0.3)
    assert [m["memory_id"] for m in db.memory.search(tenant_id=t("a"))] == [keep]
    with pytest.raises(zeptodb.NotFound):
        db.memory.get(gone, tenant_id=t("a"))
    s = db.memory.stats(t("a"))
    # Expired, or already swept (a server sweeps every minute): either way not live.
    assert s["memories"] - s["expired"] == 1


def test_a_durable_database_keeps_its_memories(tmp_path):
    d = zeptodb.connect(tmp_path / "db")
    mid = d.memory.put("remember me", embedding=np.array([0.6, 0.8, 0, 0]), pinned=True, tenant_id="t")
    d.memory.put("and me", embedding=[0, 0, 1, 0], tenant_id="t")
    d.cache.store("Hello?", "hi", embedding=[1, 0, 0, 0], tenant_id="t")
    before = d.memory.get(mid, include_embedding=True, tenant_id="t")
    d.close()
    again = zeptodb.connect(tmp_path / "db")
    assert again.memory.get(mid, include_embedding=True, tenant_id="t") == before
    got = again.memory.search([0.6, 0.8, 0, 0], limit=1, weights=ONLY_SIMILARITY, tenant_id="t")
    assert [m["memory_id"] for m in got] == [mid]
    assert again.cache.lookup("hello?", tenant_id="t")["entry"]["response"] == "hi"
    s = again.memory.stats("t")
    assert (s["memories"], s["pinned"], s["cache_entries"], s["embedding_dim"]) == (2, 1, 1, DIM)
    # Ordinary tables: SQL reads them too.
    assert again.sql("SELECT count(*) FROM ai_memories WHERE tenant_id = 't'").fetchone() == (2,)
    again.close()
    with pytest.raises(zeptodb.Error):
        again.memory.stats("t")
