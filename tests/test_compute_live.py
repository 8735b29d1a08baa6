"""The compute tier under a real `pprof-share serve` (gunicorn, 2 workers), on both store pairs:
hostile regexes, amplifying uploads, a stampede of first views, a compute process killed."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from share.pprof._proto import profile_pb2

from conftest import CORPUS, backend_settings, start_server, stop

LIMIT_SECONDS = 10


def many_samples(n: int) -> bytes:
    """n one-frame samples in a few KB of gzip: ~6 bytes each once inflated."""
    p = profile_pb2.Profile(string_table=["", "samples", "count", "f"])
    p.sample_type.add(type=1, unit=2)
    p.function.add(id=1, name=3)
    p.location.add(id=1).line.add(function_id=1)
    sample = b"\x12\x04\x08\x01\x10\x01"  # field 2: location_id 1, value 1
    return gzip.compress(p.SerializeToString() + sample * n, 9)


def hostile_regex_profile() -> bytes:
    """drop_frames (a+)+b and one function named a*32: google/pprof accepts it, and a
    backtracking engine never finishes matching it (91 bytes as reported)."""
    p = profile_pb2.Profile(string_table=["", "samples", "count", "a" * 32, "(a+)+b"])
    p.sample_type.add(type=1, unit=2)
    p.function.add(id=1, name=3)
    p.location.add(id=1).line.add(function_id=1)
    p.sample.add(location_id=[1], value=[1])
    p.drop_frames = 4
    return p.SerializeToString()


@pytest.fixture(scope="module", params=["local", "s3+redis"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """One server per store pair for the module (each test uses profiles of its own)."""
    tmp_path = tmp_path_factory.mktemp("compute-live")
    stores = backend_settings(request.param, request, tmp_path)
    env = {**os.environ, **{f"SHARE_{k}": v for k, v in stores.items()}}
    env.update(SHARE_ANALYSIS_SECONDS=str(LIMIT_SECONDS), SHARE_ANALYSIS_WORKERS="1")
    log = tmp_path / "server.log"
    url, proc = start_server(env, log, workers=2)
    yield {"url": url, "proc": proc, "log": log}
    stop(proc)


def call(url: str, data: bytes | None = None, timeout: float = 60) -> tuple[int, bytes, float]:
    """(status, body, seconds) of a GET, or a POST of data, errors included."""
    request = urllib.request.Request(url, data=data, headers={"Accept": "application/json"})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, reply.read(), time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), time.monotonic() - started


def upload(server: dict[str, Any], data: bytes) -> str:
    status, body, _ = call(server["url"] + "/", data)
    assert status in (200, 201), body
    return json.loads(body)["id"]


def web_workers(master: int) -> list[int]:
    """gunicorn's workers: the master's children but the instance's compute processes."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            compute = b"share.compute" in Path(f"/proc/{entry}/cmdline").read_bytes()
            if int(stat.rsplit(")", 1)[1].split()[1]) == master and not compute:
                found.append(int(entry))
    return found


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_a_backtracking_drop_frames_is_answered_in_time(server: dict[str, Any]) -> None:
    pid = upload(server, hostile_regex_profile())
    for path in (f"/api/v1/profiles/{pid}/flamegraph", f"/api/v1/profiles/{pid}/top"):
        status, body, seconds = call(server["url"] + path)
        assert status == 200 and seconds < LIMIT_SECONDS, body
        assert json.loads(body)["total"] == 1  # RE2 matched it: the frame is not dropped
    status, body, _ = call(f"{server['url']}/{pid}/top")
    assert status == 200 and b"aaaaaaaa" in body
    ordinary = upload(server, (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes())
    assert call(f"{server['url']}/api/v1/profiles/{ordinary}/flamegraph")[0] == 200
    assert "WORKER TIMEOUT" not in server["log"].read_text()


def test_an_amplifying_upload_is_refused_in_time_and_web_workers_stay_flat(
    server: dict[str, Any],
) -> None:
    deadline = time.monotonic() + 20
    while len(workers := web_workers(server["proc"].pid)) < 2:
        assert time.monotonic() < deadline, "gunicorn did not start its two workers"
        time.sleep(0.1)
    call(server["url"] + "/")  # both workers warmed up by a first request or two
    before = {w: rss_mib(w) for w in workers}
    attack = many_samples(8_000_000)
    assert len(attack) < 100_000
    status, body, seconds = call(server["url"] + "/", attack)
    assert status == 413 and seconds < LIMIT_SECONDS, body
    assert "8,000,000 samples, over the limit of 4,000,000 (SHARE_MAX_SAMPLES)" in body.decode()
    growth = max(rss_mib(w) - before[w] for w in workers)
    assert growth < 100, f"a web worker grew by {growth:.0f} MiB"


@pytest.mark.latency
def test_twenty_first_views_compute_once_and_the_index_stays_quick(
    server: dict[str, Any],
) -> None:
    pid = upload(server, (CORPUS / "go-runtime/cpu-xl.pb.gz").read_bytes())
    # The page's own first view: the precompute after the upload races the twenty, and still
    # the flame graph is computed once in all.
    url = f"{server['url']}/api/v1/profiles/{pid}/flamegraph"
    index_times: list[float] = []
    stop_polling = threading.Event()

    def poll_index() -> None:
        while not stop_polling.is_set():
            index_times.append(call(server["url"] + "/")[2])
            time.sleep(0.05)

    poller = threading.Thread(target=poll_index)
    poller.start()
    try:
        with ThreadPoolExecutor(20) as pool:
            replies = list(pool.map(lambda _: call(url), range(20)))
    finally:
        stop_polling.set()
        poller.join()
    assert {status for status, _, _ in replies} == {200}
    assert len({body for _, body, _ in replies}) == 1
    done = re.findall(rf"done view flamegraph {pid}: ok", server["log"].read_text())
    assert len(done) == 1, server["log"].read_text()[-2000:]
    assert index_times and max(index_times) < 0.5, sorted(index_times)[-3:]


def test_a_compute_process_killed_mid_job_is_a_503_and_the_retry_works(
    server: dict[str, Any],
) -> None:
    pid = upload(server, (CORPUS / "google-pprof-testdata/large.cpu").read_bytes())
    # A view nobody precomputes (the precompute's own run on the ingest process, whose death
    # a visitor waiting on its lease outlives, is not the job this kills), asked once the
    # precompute is done, so the log's next "start view top" is this request's.
    precomputed = rf"done view summary {pid}"
    deadline = time.monotonic() + 30
    while not re.search(precomputed, server["log"].read_text()):
        assert time.monotonic() < deadline, "the precompute never ended"
        time.sleep(0.01)
    url = f"{server['url']}/api/v1/profiles/{pid}/top?nf=0.0001"
    started = re.compile(rf"compute\[(\d+)\]: start view top {pid}")
    result: list[Any] = []
    log_at = len(server["log"].read_text())
    request = threading.Thread(target=lambda: result.append(call(url)))
    request.start()
    deadline = time.monotonic() + 30
    while not (found := started.search(server["log"].read_text(), log_at)):
        assert time.monotonic() < deadline, "the view never started"
        time.sleep(0.01)
    victim = int(found.group(1))
    os.kill(victim, signal.SIGKILL)
    request.join()
    status, body, _ = result[0]
    assert status == 503, body
    assert "compute process died during the analysis" in body.decode()
    status, body, _ = call(url)
    assert status == 200 and json.loads(body)["rows"]["name"]
    assert f"compute process {victim} ended" in server["log"].read_text()
