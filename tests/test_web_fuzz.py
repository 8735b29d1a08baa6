"""A bounded fuzz on the live server: 2,000 mutations of small corpus profiles (bit flips,
truncations, splices, varint edits), raw and gzipped, uploaded over HTTP. No reply is a 5xx,
and afterwards every stored blob has its record and every record its blob."""

from __future__ import annotations

import gzip
import os
import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from share import config
from share.core import open_share

from conftest import CORPUS, start_server, stop

SEEDS = [
    "go-runtime/heap.pb.gz",
    "go-runtime/mutex.pb.gz",
    "go-runtime/block.pb.gz",
    "go-runtime/goroutine.pb.gz",
    "go-runtime/allocs.pb.gz",
    "go-runtime/threadcreate.pb.gz",
]
MUTATIONS = 2000


def mutate(rng: random.Random, raw: bytes, other: bytes) -> bytes:
    data = bytearray(raw)
    kind = rng.randrange(5)
    if kind == 0:  # bit flips
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # truncation
        del data[rng.randrange(len(data)) :]
    elif kind == 2:  # splice of two profiles
        data = data[: rng.randrange(len(data))] + other[rng.randrange(len(other)) :]
    elif kind == 3:  # a varint made long, huge or unterminated
        i = rng.randrange(len(data))
        data[i:i] = rng.choice([b"\xff" * rng.randint(1, 11), b"\x80\x80\x80\x80\x10", b"\xff"])
    else:  # a byte range duplicated
        i = rng.randrange(len(data))
        data[i:i] = data[i : i + rng.randint(1, 64)]
    return bytes(data)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    data = tmp_path_factory.mktemp("fuzz")
    stores = {"BLOBS": f"file:{data}/blobs", "META": f"sqlite:{data}/meta.sqlite3"}
    env = dict(os.environ, SHARE_PUBLIC_URL="", **{f"SHARE_{k}": v for k, v in stores.items()})
    url, proc = start_server(env, data / "server.log")
    yield url, stores
    stop(proc)


def test_mutated_profiles_never_5xx_and_leave_no_orphans(server):
    url, stores = server
    rng = random.Random(20261201)
    raws = [gzip.decompress((CORPUS / p).read_bytes()) for p in SEEDS]
    bodies = []
    for _ in range(MUTATIONS):
        body = mutate(rng, rng.choice(raws), rng.choice(raws))
        bodies.append(gzip.compress(body, mtime=0) if rng.random() < 0.5 else body)

    def send(chunk: list[bytes]) -> list[int]:
        with requests.Session() as session:
            return [session.post(url, data=b, timeout=60).status_code for b in chunk]

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = [s for part in pool.map(send, [bodies[i::8] for i in range(8)]) for s in part]
    assert len(statuses) == MUTATIONS
    assert not [s for s in statuses if s >= 500]
    assert sum(s in (200, 201) for s in statuses) > 10  # some mutations are still profiles
    assert sum(s == 400 for s in statuses) > MUTATIONS // 4
    settings = config.load({}, stores)
    found = open_share(settings, create=False).fsck()
    assert found.records_without_blobs == [] and found.blobs_without_records == []
