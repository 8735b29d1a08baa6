"""The real server on the production backend pair: `pprof-share serve` on S3 (moto's server)
and Redis, driven over HTTP, with both stores inspected directly, behind the server's back."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests

from share import pprof
from share.store.redis_keys import RedisKeys

from conftest import BIN, CORPUS, free_port, new_bucket, start_server, stop

PREFIX = "p"
KEYS = RedisKeys()
RECORD_KEYS = "pprof-share:profile:*"
ALL_KEYS = "pprof-share:*"
# The gzip bomb needs no 512 MiB of a shared machine's memory to prove the limit holds.
MAX_PROFILE_BYTES = 64 << 20


def corpus_paths(valid: bool) -> list[str]:
    import csv

    with open(CORPUS / "MANIFEST.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [r["path"] for r in rows if r["valid"] == ("yes" if valid else "no")]


VALID = corpus_paths(valid=True)
INVALID = [
    "invalid/gzip-bomb-1GiB-zeros.gz",
    "invalid/rule-sample-unknown-location.pb.gz",
    "invalid/rule-string-table-0-not-empty.pb.gz",
    "invalid/wire-bad-varint.pb",
    "invalid/gzip-truncated-half.pb.gz",
    "invalid/double-gzip.pb.gz",
    "invalid/legacy/google-pprof/7e3c92482f6f39fc502b822ded792c589849cca8",
    "invalid/legacy/go-runtime/goroutine-debug2.txt",
    "invalid/empty.bin",
]


def profile_bytes(data: bytes) -> bytes:
    """The protobuf inside an upload: every gzip member inflated, raw bytes as they are."""
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


@dataclass
class Live:
    """A running server and our own clients on the very stores it uses."""

    url: str
    bucket: str
    s3: Any = field(repr=False)  # boto3 S3 client, over the wire to moto's server
    redis: Any = field(repr=False)  # redis.Redis on the server's database

    def objects(self) -> list[str]:
        listing = self.s3.list_objects_v2(Bucket=self.bucket)
        return sorted(o["Key"] for o in listing.get("Contents", []))

    def keys(self, pattern: str = RECORD_KEYS) -> list[str]:
        return sorted(k.decode() for k in self.redis.keys(pattern))

    def empty(self) -> None:
        """Back to empty stores; the server holds no state of its own between requests."""
        for key in self.objects():
            self.s3.delete_object(Bucket=self.bucket, Key=key)
        self.redis.flushdb()


def server_env(**settings: str) -> dict[str, str]:
    """This process's environment (AWS_* from the s3_endpoint fixture) without any SHARE_* a
    developer may have set, plus settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHARE_")}
    assert env.get("AWS_ENDPOINT_URL"), "the s3_endpoint fixture sets AWS_ENDPOINT_URL"
    env.update(SHARE_PUBLIC_URL="", **settings)
    return env


@pytest.fixture(scope="module")
def s3_redis_server(
    s3_endpoint: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    """`pprof-share serve --workers 2` on a fresh bucket and a flushed Redis database."""
    import boto3
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    bucket = new_bucket(s3_endpoint)
    env = server_env(
        SHARE_BLOBS=f"s3://{bucket}/{PREFIX}",
        SHARE_META=redis_url,
        SHARE_MAX_PROFILE_BYTES=str(MAX_PROFILE_BYTES),
        # These tests read what the stores hold after each request: a precompute still running
        # for an earlier upload would leave its view lease in Redis for the next one to see.
        SHARE_PRECOMPUTE="off",
    )
    url, proc = start_server(env, tmp_path_factory.mktemp("live-s3-redis") / "server.log")
    yield Live(url, bucket, boto3.client("s3", endpoint_url=s3_endpoint), client)
    stop(proc)
    client.close()


@pytest.fixture
def live(s3_redis_server: Live) -> Live:
    """The server, with both stores emptied before each test."""
    s3_redis_server.empty()
    return s3_redis_server


def pid_of(link: str) -> str:
    return link.strip().rsplit("/", 1)[1]


def at_once(*calls: Callable[[], requests.Response]) -> list[requests.Response]:
    """Run calls in threads released together by a barrier; their replies in order."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], requests.Response]) -> requests.Response:
        barrier.wait(timeout=30)
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def test_concurrent_identical_uploads_store_one_copy(live):
    data = (CORPUS / "go-runtime/cpu-labels.pb.gz").read_bytes()
    n = 32
    replies = at_once(*[partial(requests.post, live.url, data=data, timeout=60)] * n)

    assert sorted(r.status_code for r in replies) == [200] * (n - 1) + [201], [
        (r.status_code, r.text) for r in replies if r.status_code not in (200, 201)
    ]
    assert len({r.text for r in replies}) == 1
    link = replies[0].text
    assert link.endswith("\n") and link.count("\n") == 1
    tokens = [r.headers.get("X-Delete-Token") for r in replies]
    assert sum(t is not None for t in tokens) == 1
    assert [r.status_code for r in replies if "X-Delete-Token" in r.headers] == [201]
    pid = pid_of(link)
    assert live.objects() == [f"{PREFIX}/{pid}"]
    assert live.keys() == [KEYS.profile(pid)]
    stored = live.s3.get_object(Bucket=live.bucket, Key=f"{PREFIX}/{pid}")["Body"].read()
    assert profile_bytes(stored) == profile_bytes(data)
    # The one token that was handed out is the one the record checks.
    token = next(t for t in tokens if t is not None)
    assert (
        requests.delete(f"{live.url}/{pid}", headers={"X-Delete-Token": token}).status_code == 204
    )


@pytest.mark.parametrize("path", VALID)
def test_valid_profile_put_then_raw_is_byte_identical(live, path):
    data = (CORPUS / path).read_bytes()
    name = Path(path).name
    reply = requests.put(f"{live.url}/{name}", data=data, timeout=60)  # curl -T FILE HOST/
    assert reply.status_code == 201, reply.text
    assert reply.headers["Content-Type"].startswith("text/plain")
    link = reply.text.strip()
    assert reply.text == link + "\n" and reply.headers["Location"] == link
    assert link.startswith(live.url + "/")
    pid = pid_of(link)

    raw = requests.get(f"{link}/raw", timeout=60)
    assert raw.status_code == 200
    assert raw.content[:2] == b"\x1f\x8b"
    # A legacy format is stored as the protobuf pprof's legacy parser makes of it.
    if path.startswith("legacy/"):
        data = pprof.parse(data, max_profile_bytes=MAX_PROFILE_BYTES).raw
    assert profile_bytes(raw.content) == profile_bytes(data)

    # Behind the server's back: one object holding what /raw served, one record that knows
    # the profile's hash and the name it was uploaded under.
    assert live.objects() == [f"{PREFIX}/{pid}"]
    stored = live.s3.get_object(Bucket=live.bucket, Key=f"{PREFIX}/{pid}")["Body"].read()
    assert stored == raw.content
    assert live.keys() == [KEYS.profile(pid)]
    record = json.loads(live.redis.hget(KEYS.profile(pid), "record"))
    assert record["sha256"] == hashlib.sha256(profile_bytes(data)).hexdigest()
    assert record["title"] == name
    assert record["stored_bytes"] == len(stored)


@pytest.mark.parametrize("path", INVALID)
def test_invalid_file_gets_4xx_line_and_nothing_stored(live, path):
    data = (CORPUS / path).read_bytes()
    reply = requests.put(f"{live.url}/{Path(path).name}", data=data, timeout=60)
    expected = 413 if "bomb" in path else 400
    assert reply.status_code == expected, reply.text
    assert reply.headers["Content-Type"].startswith("text/plain")
    message = reply.text.rstrip("\n")
    assert message and reply.text == message + "\n" and "\n" not in message
    assert "Traceback" not in message and "Internal Server Error" not in message
    if expected == 413:
        assert "64 MiB" in message
    assert live.objects() == []
    assert live.keys(ALL_KEYS) == []


def test_delete_with_token_removes_object_and_record(live):
    data = (CORPUS / "go-runtime/heap.pb.gz").read_bytes()
    reply = requests.post(live.url, data=data, headers={"Accept": "application/json"})
    assert reply.status_code == 201, reply.text
    body = reply.json()
    pid, token = body["id"], body["delete_token"]
    assert live.objects() == [f"{PREFIX}/{pid}"]
    assert live.keys() == [KEYS.profile(pid)]
    assert live.redis.zscore(KEYS.expiry(pid), pid) is not None

    for wrong in ({}, {"X-Delete-Token": token[::-1]}):
        refused = requests.delete(f"{live.url}/{pid}", headers=wrong)
        assert refused.status_code == 403, refused.text
    assert live.objects() == [f"{PREFIX}/{pid}"]
    assert live.keys() == [KEYS.profile(pid)]

    gone = requests.delete(f"{live.url}/{pid}", headers={"X-Delete-Token": token})
    assert gone.status_code == 204, gone.text
    assert live.objects() == []
    assert live.keys(ALL_KEYS) == []  # record, views and the expiry index entry
    assert requests.get(f"{live.url}/{pid}/raw").status_code == 404
    assert (
        requests.delete(f"{live.url}/{pid}", headers={"X-Delete-Token": token}).status_code == 404
    )


@pytest.mark.parametrize("store", ["SHARE_BLOBS", "SHARE_META"])
def test_serve_with_unusable_store_exits_with_one_line(s3_endpoint, redis_url, store):
    missing_bucket = f"pprof-share-missing-{os.getpid()}"
    settings = {"SHARE_BLOBS": f"s3://{new_bucket(s3_endpoint)}/{PREFIX}", "SHARE_META": redis_url}
    if store == "SHARE_BLOBS":
        settings["SHARE_BLOBS"] = f"s3://{missing_bucket}/{PREFIX}"
    else:
        settings["SHARE_META"] = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    try:
        done = subprocess.run(
            [str(BIN / "pprof-share"), "serve", "--port", str(free_port())],
            env=server_env(**settings),
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"pprof-share serve kept running with an unusable {store}")
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert store in lines[0]
    if store == "SHARE_BLOBS":
        assert missing_bucket in lines[0]


def test_upload_racing_delete_is_never_a_500_nor_a_link_without_blob(live):
    data = (CORPUS / "go-runtime/heap.pb.gz").read_bytes()
    for _ in range(20):
        first = requests.post(live.url, data=data, timeout=30)
        assert first.status_code == 201, first.text
        pid, token = pid_of(first.text), first.headers["X-Delete-Token"]
        again_reply, delete_reply = at_once(
            partial(requests.post, live.url, data=data, timeout=30),
            partial(requests.delete, f"{live.url}/{pid}", headers={"X-Delete-Token": token}),
        )
        assert again_reply.status_code in (200, 201, 409), again_reply.text
        assert delete_reply.status_code == 204
        # Whatever the order, the stores agree: a record has its blob, and a blob-less record
        # never answers a fresh upload's link.
        assert bool(live.keys()) == bool(live.objects())
        if again_reply.status_code == 201:
            assert requests.get(f"{live.url}/{pid}/raw").status_code == 200
        live.empty()
