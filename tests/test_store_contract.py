"""One contract suite for the store interfaces, run against every backend on real servers:
the embedded pair, S3 + Redis, and a Redis Cluster (whose blobs are local: S3 is covered)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest

from share.store import blobs, locate, meta
from share.store.meta import Record

from conftest import BACKENDS, CLUSTER_BACKEND, backend_settings


@pytest.fixture(params=[*BACKENDS, CLUSTER_BACKEND])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> dict[str, Any]:
    """conftest's backend pairs, and the metadata store on a Redis Cluster."""
    return backend_settings(request.param, request, tmp_path)


@pytest.fixture
def stores(backend: dict[str, Any]) -> tuple[blobs.BlobStore, meta.MetaStore]:
    blob_store, meta_store = locate.blob_store(backend["BLOBS"]), locate.meta_store(backend["META"])
    blob_store.check()
    meta_store.check()
    return blob_store, meta_store


def make_record(pid: str = "AAAAAAAAAAAAAAAA", expires_at: float | None = None) -> Record:
    return Record(
        id=pid,
        sha256="00" * 32,
        title="cpu.pb.gz",
        size_bytes=10,
        stored_bytes=5,
        created_at=1000.0,
        expires_at=expires_at,
        delete_token_hash="ab" * 32,
        sample_types=[["samples", "count"], ["cpu", "nanoseconds"]],
        default_sample_type="cpu",
        metadata={"period": 10},
    )


def test_blob_roundtrip_and_missing(stores):
    blob_store, _ = stores
    assert not blob_store.exists("k1")
    with pytest.raises(FileNotFoundError):
        blob_store.get("k1")
    blob_store.put("k1", b"\x1f\x8bdata")
    assert blob_store.exists("k1")
    assert blob_store.get("k1") == b"\x1f\x8bdata"
    blob_store.put("k1", b"same key, new bytes")  # idempotent overwrite
    assert blob_store.get("k1") == b"same key, new bytes"
    blob_store.delete("k1")
    blob_store.delete("k1")  # already gone: no error
    assert not blob_store.exists("k1")


def test_record_create_is_insert_once(stores):
    _, meta_store = stores
    record = make_record()
    assert meta_store.load(record.id) is None
    assert meta_store.create(record) is True
    assert meta_store.create(make_record()) is False
    loaded = meta_store.load(record.id)
    assert loaded == record


def test_concurrent_creates_make_one_record(stores):
    _, meta_store = stores
    results: list[bool] = []
    barrier = threading.Barrier(16)

    def create() -> None:
        barrier.wait()
        results.append(meta_store.create(make_record("BBBBBBBBBBBBBBBB")))

    threads = [threading.Thread(target=create) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 15 + [True]


def test_extend_expiry_keeps_the_later(stores):
    _, meta_store = stores
    now = time.time()
    meta_store.create(make_record(expires_at=now + 100))
    assert meta_store.extend_expiry("AAAAAAAAAAAAAAAA", now + 50) == pytest.approx(now + 100)
    assert meta_store.extend_expiry("AAAAAAAAAAAAAAAA", now + 500) == pytest.approx(now + 500)
    assert meta_store.load("AAAAAAAAAAAAAAAA").expires_at == pytest.approx(now + 500)
    assert meta_store.extend_expiry("AAAAAAAAAAAAAAAA", None) is None  # never is the latest
    assert meta_store.extend_expiry("AAAAAAAAAAAAAAAA", now + 10) is None
    assert meta_store.expired(now + 10**9) == []
    with pytest.raises(KeyError):
        meta_store.extend_expiry("CCCCCCCCCCCCCCCC", None)


def test_expired_index_and_conditional_delete(stores):
    _, meta_store = stores
    now = time.time()
    meta_store.create(make_record("AAAAAAAAAAAAAAAA", expires_at=now + 60))
    meta_store.create(make_record("BBBBBBBBBBBBBBBB", expires_at=now + 3600))
    meta_store.create(make_record("CCCCCCCCCCCCCCCC", expires_at=None))
    assert meta_store.expired(now) == []
    assert meta_store.expired(now + 120) == ["AAAAAAAAAAAAAAAA"]
    assert meta_store.expiry_of("AAAAAAAAAAAAAAAA") == pytest.approx(now + 60)
    # Not yet expired at `now`: a conditional delete must leave it.
    assert meta_store.delete("AAAAAAAAAAAAAAAA", only_if_expired_at=now) is False
    assert meta_store.delete("CCCCCCCCCCCCCCCC", only_if_expired_at=now + 10**9) is False
    assert meta_store.delete("AAAAAAAAAAAAAAAA", only_if_expired_at=now + 120) is True
    assert meta_store.load("AAAAAAAAAAAAAAAA") is None
    assert meta_store.expired(now + 10**9) == ["BBBBBBBBBBBBBBBB"]
    assert meta_store.delete("CCCCCCCCCCCCCCCC") is True
    assert meta_store.delete("CCCCCCCCCCCCCCCC") is False


def test_views_are_dropped_with_the_profile(stores):
    _, meta_store = stores
    meta_store.view_put("AAAAAAAAAAAAAAAA", "top:cpu", b"nothing to attach to")
    assert meta_store.view_get("AAAAAAAAAAAAAAAA", "top:cpu") is None
    meta_store.create(make_record())
    meta_store.view_put("AAAAAAAAAAAAAAAA", "top:cpu", b"\x00binary\xff")
    assert meta_store.view_get("AAAAAAAAAAAAAAAA", "top:cpu") == b"\x00binary\xff"
    assert meta_store.view_get("AAAAAAAAAAAAAAAA", "top:alloc") is None
    meta_store.delete("AAAAAAAAAAAAAAAA")
    assert meta_store.view_get("AAAAAAAAAAAAAAAA", "top:cpu") is None


def test_redis_ttl_agrees_with_expiry_index(backend):
    if backend["META"].startswith("sqlite:"):
        pytest.skip("Redis keys and TTLs")
    store = locate.meta_store(backend["META"])
    at = time.time() + 3600
    store.create(make_record(expires_at=at))
    store.view_put("AAAAAAAAAAAAAAAA", "flame", b"x")
    record_key, views_key = (
        store.keys.profile("AAAAAAAAAAAAAAAA"),
        store.keys.views("AAAAAAAAAAAAAAAA"),
    )
    expiry = store.keys.expiry("AAAAAAAAAAAAAAAA")
    assert store.client.zscore(expiry, "AAAAAAAAAAAAAAAA") == pytest.approx(at)
    assert abs(store.client.expiretime(record_key) - at) <= 1
    assert abs(store.client.expiretime(views_key) - at) <= 1
    store.extend_expiry("AAAAAAAAAAAAAAAA", at + 7200)
    assert abs(store.client.expiretime(record_key) - (at + 7200)) <= 1
    assert abs(store.client.expiretime(views_key) - (at + 7200)) <= 1
    store.extend_expiry("AAAAAAAAAAAAAAAA", None)
    assert store.client.ttl(record_key) == -1
    assert store.client.zscore(expiry, "AAAAAAAAAAAAAAAA") is None
    assert all(k.startswith(b"pprof-share:") for k in store.client.scan_iter())


def test_an_early_or_stale_expiry_entry_is_put_right_not_obeyed(backend):
    """A process that died between the index and the record leaves the index early: prune
    finds the profile, its conditional delete reads the record and keeps it."""
    if backend["META"].startswith("sqlite:"):
        pytest.skip("the Redis store's index is apart from its records")
    store = locate.meta_store(backend["META"])
    now = time.time()
    store.create(make_record(expires_at=now + 3600))
    store.create(make_record("BBBBBBBBBBBBBBBB", expires_at=None))
    for pid in ("AAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBB"):  # as if cut short
        store.client.zadd(store.keys.expiry(pid), {pid: now - 10})
    assert store.expired(now) == ["AAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBB"]
    assert not store.delete("AAAAAAAAAAAAAAAA", only_if_expired_at=now)
    assert not store.delete("BBBBBBBBBBBBBBBB", only_if_expired_at=now)
    assert store.expired(now) == [] and store.load("BBBBBBBBBBBBBBBB") is not None
    assert store.expiry_of("AAAAAAAAAAAAAAAA") == pytest.approx(now + 3600)


def test_lease_is_exclusive_until_released_or_lapsed(stores):
    _, meta_store = stores
    assert meta_store.try_lock("AAAAAAAAAAAAAAAA", "one", 30) is True
    assert meta_store.try_lock("AAAAAAAAAAAAAAAA", "two", 30) is False
    assert meta_store.try_lock("BBBBBBBBBBBBBBBB", "two", 30) is True  # per profile
    meta_store.unlock("AAAAAAAAAAAAAAAA", "two")  # not the holder: no effect
    assert meta_store.try_lock("AAAAAAAAAAAAAAAA", "three", 30) is False
    meta_store.unlock("AAAAAAAAAAAAAAAA", "one")
    assert meta_store.try_lock("AAAAAAAAAAAAAAAA", "three", 0.05) is True
    time.sleep(0.2)  # a crashed holder's lease lapses
    assert meta_store.try_lock("AAAAAAAAAAAAAAAA", "four", 30) is True


def test_a_held_lease_is_renewed_only_by_its_holder(stores):
    _, meta_store = stores
    assert meta_store.try_lock("AAAAAAAAAAAAAAAA", "one", 0.3) is True
    assert meta_store.renew_lock("AAAAAAAAAAAAAAAA", "two", 30) is False  # not the holder
    assert meta_store.renew_lock("AAAAAAAAAAAAAAAA", "one", 30) is True
    time.sleep(0.5)  # past the first length: renewed, so still held
    assert meta_store.try_lock("AAAAAAAAAAAAAAAA", "two", 30) is False
    meta_store.unlock("AAAAAAAAAAAAAAAA", "one")
    assert meta_store.renew_lock("AAAAAAAAAAAAAAAA", "one", 30) is False  # given back


def test_cached_views_stay_under_the_cap_least_recently_used_first(backend):
    """2,000 distinct views of 100 bytes into a 20,000-byte cache: the total stays under it,
    the newest stay, and a profile's deletion gives its share back."""
    meta_store = locate.meta_store(backend["META"], view_cache_bytes=20_000)
    pids = ["AAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBB"]
    for pid in pids:
        meta_store.create(make_record(pid))
    for i in range(2000):
        meta_store.view_put(pids[i % 2], f"flamegraph:budget={i}", bytes([i % 251]) * 100)
        assert meta_store.view_bytes() <= 20_000
    assert meta_store.view_bytes() >= 19_000  # full, not emptied
    assert meta_store.view_get(pids[1], "flamegraph:budget=1999") == bytes([1999 % 251]) * 100
    assert meta_store.view_get(pids[0], "flamegraph:budget=0") is None  # the oldest went
    kept = sum(meta_store.view_get(pids[i % 2], f"flamegraph:budget={i}") is not None
               for i in range(2000))  # fmt: skip
    assert 190 <= kept <= 200
    meta_store.view_put(pids[0], "too-big", b"x" * 20_001)  # bigger than the cache: not kept
    assert meta_store.view_get(pids[0], "too-big") is None
    meta_store.delete(pids[0])
    assert meta_store.view_bytes() <= 10_000  # only B's views are left


def test_listing_ids_and_keys(stores):
    blob_store, meta_store = stores
    assert sorted(meta_store.ids()) == [] and sorted(blob_store.keys()) == []
    for pid in ("AAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBB"):
        meta_store.create(make_record(pid))
    meta_store.view_put("AAAAAAAAAAAAAAAA", "top", b"v")  # views and leases are not records
    meta_store.try_lock("CCCCCCCCCCCCCCCC", "t", 30)
    blob_store.put("k1", b"1")
    blob_store.put("k2", b"2")
    assert sorted(meta_store.ids()) == ["AAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBB"]
    assert sorted(blob_store.keys()) == ["k1", "k2"]
    blob_store.delete("k1")
    assert sorted(blob_store.keys()) == ["k2"]


def test_leases_are_renewed_while_held_and_lapse_when_the_holder_is_gone(stores):
    """share.store.lease on each backend: a holder that outlives the lease's length keeps it;
    one that stops renewing (a killed process) loses it within the length."""
    from share.store.lease import Busy, Leases

    _, meta_store = stores
    leases = Leases(meta_store, seconds=0.6, wait=0.2, renew_every=0.15)
    with leases.hold("AAAAAAAAAAAAAAAA") as lease:
        time.sleep(1.0)
        assert lease.held()
        with pytest.raises(Busy), Leases(meta_store, wait=0.2).hold("AAAAAAAAAAAAAAAA"):
            pass
    # A holder that never renews (as if killed): the next taker waits at most the length.
    assert meta_store.try_lock("BBBBBBBBBBBBBBBB", "dead", 0.6)
    started = time.monotonic()
    with Leases(meta_store, wait=5).hold("BBBBBBBBBBBBBBBB"):
        assert time.monotonic() - started < 1.0


def test_a_taker_waiting_for_a_lease_says_so_to_its_holder(stores):
    """Leases.wanted on each backend: true while a taker waits (unless it asked not to say
    so, as background work does), false again once it has taken the lease."""
    from share.store.lease import Busy, Leases

    _, meta_store = stores
    leases = Leases(meta_store, seconds=3, wait=5)
    got: list[str] = []

    def take(want: bool, wait: float) -> None:
        with (
            contextlib.suppress(Busy),
            Leases(meta_store, wait=wait).hold("AAAAAAAAAAAAAAAA", want=want),
        ):
            got.append("taken")

    with leases.hold("AAAAAAAAAAAAAAAA") as lease:
        assert not leases.wanted(lease)
        quiet = threading.Thread(target=take, args=(False, 0.6))
        quiet.start()
        time.sleep(0.3)
        assert not leases.wanted(lease)  # a taker that does not say so
        quiet.join()
        waiting = threading.Thread(target=take, args=(True, 5))
        waiting.start()
        deadline = time.monotonic() + 4
        while not leases.wanted(lease) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert leases.wanted(lease)
    waiting.join()
    assert got == ["taken"]
    with leases.hold("AAAAAAAAAAAAAAAA") as again:
        assert not leases.wanted(again)


def test_a_stalled_store_fails_within_its_timeout(backend):
    """Every call gives up after the timeout as StoreUnavailable naming the store (the live
    tests freeze real servers; here SQLite's lock is held by another connection)."""
    import sqlite3

    from share.errors import StoreUnavailable
    from share.store.guard import guard

    if not backend["META"].startswith("sqlite:"):
        pytest.skip("the S3 + Redis pair is frozen for real in test_web_resilience.py")
    path = backend["META"].removeprefix("sqlite:")
    store = guard(
        locate.meta_store(backend["META"], timeout=0.3), "metadata store", backend["META"]
    )
    store.check()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"the metadata store \(sqlite:.*\) is not"):
            store.create(make_record())
        assert time.monotonic() - started < 1.0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.create(make_record()) is True  # recovered, with no restart
