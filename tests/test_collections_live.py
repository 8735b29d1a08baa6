"""Two `pprof-share serve` instances on one Redis and one S3 (moto) adding to one collection at
once: every member counted once, and the blocks either instance builds give the answer a plain
merge of the members gives."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis
import requests

from conftest import _AWS_ENV, new_bucket, start_server, stop, unique_profile


@pytest.fixture
def pair(
    redis_url: str, s3_endpoint: str, tmp_path: Path
) -> Iterator[tuple[str, str]]:  # fmt: skip
    redis.Redis.from_url(redis_url).flushdb()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHARE_")}
    env.update(
        _AWS_ENV, AWS_ENDPOINT_URL=s3_endpoint, SHARE_BLOBS=f"s3://{new_bucket(s3_endpoint)}/p",
        SHARE_META=redis_url, SHARE_PUBLIC_URL="",
    )  # fmt: skip
    a, pa = start_server(dict(env), tmp_path / "a.log", workers=1)
    b, pb = start_server(dict(env), tmp_path / "b.log", workers=1)
    yield a, b
    stop(pa)
    stop(pb)


def test_two_instances_add_to_one_collection_at_once(pair: tuple[str, str]) -> None:
    a, b = pair
    r = requests.post(a + "/api/v1/collections", timeout=30)
    cid, token = r.text.strip().rsplit("/", 1)[1], r.headers["X-Collection-Token"]
    start = (int(time.time()) // 3600 - 1) * 3600
    jobs = [(a if i % 2 else b, i, False) for i in range(24)]

    def add(job: tuple[str, int, bool]) -> str:
        server, i, retry = job
        r = requests.post(
            f"{server}/c/{cid}", data=unique_profile(f"pair{i}", "go-runtime/cpu-small.pb.gz"),
            params={"label": f"pod=p{i % 4}", "time": start + 5 * i},
            headers={"X-Collection-Token": token}, timeout=60,
        )  # fmt: skip
        assert r.status_code == (200 if retry else 201), r.text
        assert r.headers["X-Member-Added"] == ("0" if retry else "1")
        if i % 6 == 5:  # views while adds go on: blocks are built meanwhile
            assert requests.get(f"{server}/c/{cid}/top", timeout=60).status_code == 200
        return r.text.strip().rsplit("/", 1)[1]

    with ThreadPoolExecutor(8) as pool:
        pids = list(pool.map(add, jobs))
        list(pool.map(add, [(b if i % 2 else a, i, True) for i in range(6)]))  # retries
    record = requests.get(f"{a}/api/v1/collections/{cid}", timeout=30).json()
    assert record["members"] == 24 and record["labels"]["pod"] == {f"p{i}": 6 for i in range(4)}
    merged = requests.post(
        b + "/api/v1/merge", json={"profiles": sorted(set(pids))},
        headers={"Accept": "application/json"}, timeout=60,
    ).json()["id"]  # fmt: skip
    expected = requests.get(f"{b}/{merged}/top", timeout=60).text
    for server in (a, b):  # every member merged in (a view may otherwise be answered behind)
        r = requests.get(f"{server}/c/{cid}/top", params={"wait": "1"}, timeout=60)
        assert r.status_code == 200 and int(r.headers["X-Collection-Blocks"]) >= 1
        assert r.text == expected
