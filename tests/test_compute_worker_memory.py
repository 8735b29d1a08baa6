"""A compute process frees the profiles its warm cache lets go as it goes: their analysis
holds reference cycles, which Python's automatic collections, run by counts of objects rather
than bytes, left to pile up past SHARE_ANALYSIS_MEMORY (a view process ran out in
bench/fleet.py). The Worker answers jobs here, in this process, over a socket pair, with
automatic collection off, so only the worker's own collection can free them."""

from __future__ import annotations

import gc
import socket
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from share.analysis.model.tables import tables
from share.compute import protocol
from share.compute.cache import ProfileCache
from share.compute.worker import Worker
from share.store import locate

from conftest import CORPUS

PROFILES = ["go-runtime/cpu-small.pb.gz", "go-runtime/heap.pb.gz"]


@pytest.fixture
def no_automatic_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def view(w: Worker, url: str, pid: str) -> dict:  # type: ignore[type-arg]
    """One flame graph job answered by w, as a web worker sends it."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        job = {"op": "view", "name": "flamegraph", "pid": pid, "blobs": url,
               "max_profile_bytes": 1 << 30, "options": {"sample_index": None,
               "node_fraction": 0.0, "budget": 1000}}  # fmt: skip
        protocol.send(ours, job)
        assert w.answer(theirs)
        while True:  # "started", progress, then the answer
            reply = protocol.recv(ours)
            if "ok" in reply or "error" in reply:
                return reply  # type: ignore[no-any-return]


def test_a_profile_the_cache_let_go_is_freed_by_the_next_job(
    tmp_path: Path, no_automatic_gc: None
) -> None:
    url = f"file:{tmp_path}/blobs"
    store = locate.blob_store(url)
    for i, name in enumerate(PROFILES):
        store.put(f"id{i}", (CORPUS / name).read_bytes())
    w = Worker({"ANALYSIS_CACHE_BYTES": 1})  # holds one profile: the one in use
    assert "ok" in view(w, url, "id0")
    first = weakref.ref(tables(w.cache.get("id0")))
    assert first() is not None
    assert "ok" in view(w, url, "id1")
    assert w.cache.keys() == ["id1"]
    assert first() is None, "the evicted profile's analysis is still in memory"


def test_the_cache_keeps_its_cap_by_a_running_total() -> None:
    """The cache's bytes are the sum of what it keeps, through puts, resizes, replacements
    and evictions (kept as a running total: a fleet's collection keeps thousands of vectors,
    and summing them at every put cost a merge process more with every member)."""
    cache = ProfileCache(100)
    for i in range(50):
        cache.put(f"k{i}", i, 7 + i % 5)
        if i % 3 == 0:
            cache.resize(f"k{i}", 11)
        if i % 7 == 0:
            cache.put(f"k{i}", "again", 3)
        assert cache.bytes() == sum(size for _, size in cache._items.values()) <= 100
    assert cache.get("k0") is None and cache.get("k48") == 48
    cache.put("big", None, 500)  # past the cap alone: kept, the rest let go
    assert cache.keys() == ["big"] and cache.bytes() == 500
