"""A merge's parts are fetched from the blob store together, before they are decoded: the
cold ones only, on the real stores (a directory, and S3 on moto over the wire); a missing one is
left for the merge to report as any missing profile."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from share.compute.cache import footprint
from share.compute.worker import Worker
from share.errors import NotFound
from share.store import locate

from conftest import _AWS_ENV, CORPUS, new_bucket

PARTS = ["go-runtime/cpu-small.pb.gz", "go-runtime/heap.pb.gz", "go-runtime/mutex.pb.gz"]


@pytest.fixture(params=["local", "s3"])
def blobs_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return f"file:{tmp_path}/blobs"
    endpoint = request.getfixturevalue("s3_endpoint")
    os.environ.update(_AWS_ENV, AWS_ENDPOINT_URL=endpoint)
    return f"s3://{new_bucket(endpoint)}/p"


@pytest.fixture
def worker() -> Iterator[Worker]:
    """A compute process's Worker in this process; its progress goes to a socket pair."""
    w = Worker({"ANALYSIS_CACHE_BYTES": 1 << 30})
    w.sock, peer = socket.socketpair()
    with w.sock, peer:
        yield w


def job(url: str) -> dict:  # type: ignore[type-arg]
    return {"blobs": url, "max_profile_bytes": 1 << 30}


def test_cold_parts_are_fetched_together_and_warm_ones_are_not(
    blobs_url: str, worker: Worker
) -> None:
    store = locate.blob_store(blobs_url)
    data = {f"id{i}": (CORPUS / name).read_bytes() for i, name in enumerate(PARTS)}
    for key, blob in data.items():
        store.put(key, blob)
    w = worker
    w.profile("id0", job(blobs_url))  # warm now
    fetched = w.prefetch(["id0", "id1", "id2", "id1", "gone"], job(blobs_url))
    assert fetched == {"id1": data["id1"], "id2": data["id2"]}
    assert w.prefetch(["id0", "id1"], job(blobs_url)) == {}  # one cold part: no pool


def test_a_merge_with_a_missing_part_says_which(tmp_path: Path, worker: Worker) -> None:
    url = f"file:{tmp_path}/blobs"
    store = locate.blob_store(url)
    for i, name in enumerate(PARTS[:2]):
        store.put(f"id{i}", (CORPUS / name).read_bytes())
    merge = {**job(url), "op": "merge", "parts": ["id0", "id1", "gone"], "comment": "",
             "max_bytes": 1 << 30, "limits": {}}  # fmt: skip
    with pytest.raises(NotFound, match="gone"):
        worker.merge(merge)


def test_a_merge_counts_the_columns_it_keeps_warm_against_the_cache_cap(
    tmp_path: Path, worker: Worker
) -> None:
    """A merged part keeps its merge columns warm with it (about as much again as its decoded
    message and tables): the cache counts them, so a merge process holds its cap, not twice it."""
    url = f"file:{tmp_path}/blobs"
    store = locate.blob_store(url)
    cpus = ["go-runtime/cpu-small.pb.gz", "go-runtime/cpu-large.pb.gz"]
    for i, name in enumerate(cpus):
        store.put(f"id{i}", (CORPUS / name).read_bytes())
    decoded = {f"id{i}": footprint(worker.profile(f"id{i}", job(url))) for i in range(2)}
    merge = {**job(url), "op": "merge", "parts": list(decoded), "comment": "",
             "max_bytes": 1 << 30, "limits": {}}  # fmt: skip
    worker.merge(merge)
    after = {pid: footprint(worker.cache.get(pid)) for pid in decoded}
    assert all(after[pid] > decoded[pid] for pid in decoded)
    assert worker.cache.bytes() == sum(after.values())
