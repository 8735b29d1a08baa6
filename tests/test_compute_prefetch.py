"""A merge's parts are fetched from the blob store together, before they are decoded: the
cold ones only, on the real stores (a directory, and S3 on moto over the wire); a missing one is
left for the merge to report as any missing profile."""

from __future__ import annotations

import gzip
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from share.compute.cache import footprint
from share.compute.ingest import profile_id
from share.compute.worker import MADE, Worker
from share.errors import NotFound, TooLarge
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
    warm = worker.cache.keys()
    (made,) = [key for key in warm if key.startswith(MADE)]  # the merge's own
    assert worker.cache.bytes() == sum(after.values()) + worker.cache._items[made][1]


def test_a_merge_made_here_is_merged_again_from_its_columns_not_fetched(
    tmp_path: Path, worker: Worker
) -> None:
    """A collection's block is merged into the next larger one by the process that made it:
    from the columns it kept, without fetching or decoding the stored block (here: gone from
    the store), into the same bytes as another process merging the stored block."""
    url = f"file:{tmp_path}/blobs"
    store = locate.blob_store(url)
    names = [
        "go-runtime/cpu-small.pb.gz",
        "go-runtime/cpu-large.pb.gz",
        "go-runtime/cpu-labels.pb.gz",
    ]
    for i, name in enumerate(names):
        store.put(f"id{i}", (CORPUS / name).read_bytes())

    def merge(parts: list[str], comment: str) -> dict:  # type: ignore[type-arg]
        return {**job(url), "op": "merge", "parts": parts, "comment": comment,
                "max_bytes": 1 << 30, "limits": {}}  # fmt: skip

    block = worker.merge(merge(["id0", "id1"], "# block"))
    pid = profile_id(gzip.decompress(block))
    assert MADE + pid in worker.cache
    store.put(pid, block)
    other = Worker({"ANALYSIS_CACHE_BYTES": 1 << 30})
    other.sock = worker.sock
    expected = gzip.decompress(other.merge(merge([pid, "id2"], "# larger")))
    assert pid in other.cache  # that one fetched and decoded the block
    store.delete(pid)
    assert gzip.decompress(worker.merge(merge([pid, "id2"], "# larger"))) == expected
    assert pid not in worker.cache  # this one did neither
    with pytest.raises(TooLarge, match="SHARE_MERGE_MAX_BYTES"):  # its size still counts
        worker.merge({**merge([pid, "id2"], ""), "max_bytes": len(gzip.decompress(block))})
