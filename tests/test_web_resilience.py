"""The service when a store stalls, dies or comes back, on real processes: `pprof-share serve`
on its own moto S3 server and redis-server, frozen with SIGSTOP, killed and restarted behind
its back. Store calls time out after SHARE_STORE_TIMEOUT=1 s here."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from conftest import (
    _AWS_ENV,
    new_bucket,
    start_moto,
    start_redis,
    start_server,
    stop,
    unique_profile,
)

# Each test bounds how soon a server answers (a 503, a dropped client): run alone (make test).
pytestmark = pytest.mark.latency

TIMEOUT = 1.0  # SHARE_STORE_TIMEOUT of the servers under test
DEADLINE = TIMEOUT + 2  # the bound for a 503 while a store is frozen
ACCEPTS = {"text": "*/*", "json": "application/json", "html": "text/html"}


@dataclass
class Stores:
    redis_url: str
    redis: subprocess.Popen[bytes]
    redis_dir: Path
    s3: str
    moto: subprocess.Popen[bytes]
    bucket: str

    def env(self, **settings: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SHARE_", "AWS_"))}
        env.update(_AWS_ENV, AWS_ENDPOINT_URL=self.s3)
        env.update(
            SHARE_BLOBS=f"s3://{self.bucket}/p",
            SHARE_META=self.redis_url,
            SHARE_STORE_TIMEOUT=str(TIMEOUT),
            SHARE_PUBLIC_URL="",
        )
        env.update(settings)
        return env


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    """A moto server and a redis-server of this module's own: its tests freeze and kill them."""
    redis_dir = tmp_path_factory.mktemp("frozen-redis")
    url, redis_proc = start_redis(redis_dir)
    endpoint, moto = start_moto()
    saved = {k: os.environ.get(k) for k in (*_AWS_ENV, "AWS_ENDPOINT_URL")}
    os.environ.update(_AWS_ENV)
    bucket = new_bucket(endpoint)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    found = Stores(url, redis_proc, redis_dir, endpoint, moto, bucket)
    yield found
    for proc in (found.redis, found.moto):
        proc.send_signal(signal.SIGCONT)
        stop(proc)


@pytest.fixture(scope="module")
def server(stores: Stores, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url, proc = start_server(stores.env(), tmp_path_factory.mktemp("resilient") / "server.log")
    yield url
    stop(proc)


@pytest.fixture
def frozen() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes put here are stopped by the test and always continued afterwards."""
    stopped: list[subprocess.Popen[bytes]] = []
    yield stopped
    for proc in stopped:
        proc.send_signal(signal.SIGCONT)


def timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def post(server: str, data: bytes, accept: str = "*/*") -> requests.Response:
    return requests.post(server, data=data, headers={"Accept": accept}, timeout=30)


def index_times(server: str, stop_at: threading.Event) -> list[float]:
    """GET / over and over until stop_at is set: how long each took."""
    times: list[float] = []
    while not stop_at.is_set():
        reply, took = timed(lambda: requests.get(server + "/", timeout=10))
        assert reply.status_code == 200
        times.append(took)
        time.sleep(0.05)
    return times


def frozen_store_answers_503(server: str, proc: Any, kind: str, store: str, frozen: list) -> None:
    """With proc frozen: uploads (in each format) and /raw answer 503 naming the store within
    DEADLINE, while GET / stays quick; continued, everything works again."""
    stored = post(server, unique_profile(f"before-{kind}"))
    assert stored.status_code == 201, stored.text
    link = stored.text.strip()
    proc.send_signal(signal.SIGSTOP)
    frozen.append(proc)
    stop_at = threading.Event()
    with ThreadPoolExecutor(max_workers=6) as pool:
        pages = pool.submit(index_times, server, stop_at)
        time.sleep(0.2)
        uploads = {
            name: pool.submit(timed, lambda a=accept, n=name: post(server, unique_profile(n), a))
            for name, accept in ACCEPTS.items()
        }
        raw = pool.submit(timed, lambda: requests.get(link + "/raw", timeout=30))
        results = {name: future.result() for name, future in uploads.items()}
        raw_reply, raw_took = raw.result()
        stop_at.set()
        page_times = pages.result()
    for name, (reply, took) in results.items():
        assert reply.status_code == 503, (name, reply.text)
        assert took < DEADLINE, (name, took)
        assert reply.headers.get("Retry-After"), name
        assert reply.headers.get("X-Request-Id"), name
    line = results["text"][0].text
    assert line.count("\n") == 1 and line.endswith("\n")
    assert f"the {kind} ({store}) is not answering; nothing was stored, try again" in line
    assert results["json"][0].json()["error"]["message"] == line.strip()
    assert (
        results["json"][0].json()["error"]["request_id"]
        == (results["json"][0].headers["X-Request-Id"])
    )
    assert "not answering" in results["html"][0].text
    assert results["html"][0].headers["Content-Type"].startswith("text/html")
    assert raw_reply.status_code == 503 and raw_took < DEADLINE, raw_reply.text
    assert f"the {kind} ({store}) is not answering" in raw_reply.text
    assert page_times and max(page_times) < 0.5, page_times
    ready = requests.get(server + "/readyz", timeout=30)
    assert ready.status_code == 503 and store in ready.text

    proc.send_signal(signal.SIGCONT)
    frozen.remove(proc)
    again = post(server, unique_profile(f"after-{kind}"))
    assert again.status_code == 201, again.text
    assert requests.get(again.text.strip() + "/raw", timeout=30).status_code == 200
    assert requests.get(link + "/raw", timeout=30).status_code == 200
    assert requests.get(server + "/readyz", timeout=30).status_code == 200


def test_frozen_s3_answers_503_then_recovers(server, stores, frozen):
    store = f"s3://{stores.bucket}/p"
    frozen_store_answers_503(server, stores.moto, "blob store", store, frozen)
    # Nothing half-stored: every record has its blob (a blob without record may remain).
    import boto3
    import redis

    s3 = boto3.client("s3", endpoint_url=stores.s3, **_aws())
    blobs = {o["Key"][2:] for o in s3.list_objects_v2(Bucket=stores.bucket).get("Contents", [])}
    records = {
        k.decode().rsplit(":", 1)[1].strip("{}")
        for k in redis.Redis.from_url(stores.redis_url).keys("pprof-share:profile:*")
    }
    assert records <= blobs
    metrics = requests.get(server + "/metrics", timeout=10).text
    assert 'share_store_errors_total{store="blob store"}' in metrics


def _aws() -> dict[str, str]:
    return {
        "aws_access_key_id": _AWS_ENV["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": _AWS_ENV["AWS_SECRET_ACCESS_KEY"],
        "region_name": _AWS_ENV["AWS_DEFAULT_REGION"],
    }


def test_frozen_redis_answers_503_then_recovers(server, stores, frozen):
    frozen_store_answers_503(server, stores.redis, "metadata store", stores.redis_url, frozen)


def test_redis_killed_and_restarted_recovers_without_restarting_the_service(server, stores):
    port = int(stores.redis_url.rsplit(":", 1)[1].split("/")[0])
    stores.redis.kill()
    stores.redis.wait()
    reply, took = timed(lambda: post(server, unique_profile("while-dead")))
    assert reply.status_code == 503 and took < DEADLINE, reply.text
    assert "metadata store" in reply.text and "nothing was stored" in reply.text
    _, stores.redis = start_redis(stores.redis_dir, port=port)
    deadline = time.monotonic() + 10
    while (reply := post(server, unique_profile("after-restart"))).status_code == 503:
        assert time.monotonic() < deadline, reply.text
        time.sleep(0.2)
    assert reply.status_code == 201, reply.text
    assert requests.get(reply.text.strip(), timeout=10).status_code == 200


def test_kill_9_of_a_worker_holding_a_lease_frees_it_within_seconds(stores, tmp_path, frozen):
    """A worker stalled inside an upload (S3 frozen, a long store timeout) holds the profile's
    lease; kill -9 it, and the same profile uploads within 10 s."""
    import redis

    env = stores.env(SHARE_STORE_TIMEOUT="60")
    url, proc = start_server(env, tmp_path / "server.log", workers=1)
    client = redis.Redis.from_url(stores.redis_url)
    try:
        data = unique_profile("lease-holder")
        stores.moto.send_signal(signal.SIGSTOP)
        frozen.append(stores.moto)
        stalled = threading.Thread(target=lambda: _quietly(post, url, data), daemon=True)
        stalled.start()
        deadline = time.monotonic() + 10
        while not client.keys("pprof-share:lock:*"):
            assert time.monotonic() < deadline, "the upload never took its lease"
            time.sleep(0.05)
        children = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=True
        ).stdout.split()
        # The master's children: its gunicorn worker, and the instance's compute processes.
        workers = [
            c for c in children if b"share.compute" not in Path(f"/proc/{c}/cmdline").read_bytes()
        ]
        assert len(workers) == 1
        os.kill(int(workers[0]), signal.SIGKILL)
        killed_at = time.monotonic()
        stores.moto.send_signal(signal.SIGCONT)
        frozen.remove(stores.moto)
        while True:
            try:
                reply = post(url, data)
            except requests.ConnectionError:  # gunicorn is starting the next worker
                reply = None
            if reply is not None and reply.status_code in (200, 201):
                break
            assert time.monotonic() - killed_at < 10, reply and reply.text
            time.sleep(0.1)
        assert time.monotonic() - killed_at < 10
        assert requests.get(reply.text.strip() + "/raw", timeout=10).status_code == 200
    finally:
        stop(proc)
        client.close()


def _quietly(call: Any, *args: Any) -> None:
    with contextlib.suppress(requests.RequestException):
        call(*args)
