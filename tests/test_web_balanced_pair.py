"""Two `pprof-share serve` instances behind HAProxy (README's haproxy.cfg, tests/balanced_pair.py)
on one Redis and one S3 (moto): uploads and views through the balancer reach both, a view asked
for at once through both is computed once, and an instance killed with SIGKILL in the middle of
a stream of uploads loses no upload that was answered 2xx, while the others get an error the
client retries."""

from __future__ import annotations

import gzip
import http.client
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from balanced_pair import COMPUTE_MODULE, Instance, Pair, cmdline, haproxy_exe, start_pair

from conftest import CORPUS, unavailable, unique_profile

ACCESS_LINE = re.compile(r'^(\S+) "(\w+) (\S+)" (\d+) .* id=(\S+)$', flags=re.M)
RATES_OFF = {"SHARE_RATE_UPLOADS": "off", "SHARE_RATE_UPLOAD_BYTES": "off"}
RETRYABLE = {"ConnectionError", "502", "503", "504"}  # what a client may retry after


def served(instance: Instance) -> list[tuple[str, str, str, str, str]]:
    """The instance's access log lines (address, method, path, status, request id), without
    HAProxy's health checks."""
    lines = ACCESS_LINE.findall(instance.log_text())
    return [line for line in lines if line[2] != "/readyz"]


def new_pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    if haproxy_exe() is None:
        unavailable("haproxy is not installed (make test installs it)")
    redis_url = request.getfixturevalue("redis_url")
    s3_endpoint = request.getfixturevalue("s3_endpoint")
    pair = start_pair(redis_url, s3_endpoint, tmp_path, workers=1, extra=RATES_OFF)
    yield pair
    pair.close()


@pytest.fixture(scope="module")
def pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    yield from new_pair(request, tmp_path_factory.mktemp("pair"))


@pytest.fixture
def doomed_pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    """A pair of its own, one of whose instances the test kills."""
    yield from new_pair(request, tmp_path)


def alive(pid: int) -> bool:
    """Whether pid runs (a zombie, killed but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def upload(url: str, body: bytes, timeout: float = 30) -> requests.Response:
    return requests.post(
        url + "/", data=body, headers={"Accept": "application/json"}, timeout=timeout
    )


def test_uploads_and_views_through_the_balancer_reach_both(pair: Pair) -> None:
    bodies = [unique_profile(f"balanced {i}", "go-runtime/cpu-labels.pb.gz") for i in range(6)]
    ids = []
    for body in bodies:
        r = upload(pair.url, body)
        assert r.status_code == 201, r.text
        assert r.json()["url"] == f"{pair.url}/{r.json()['id']}"  # SHARE_PUBLIC_URL: the balancer
        ids.append(r.json()["id"])
    for pid, body in zip(ids, bodies, strict=True):
        assert requests.get(f"{pair.url}/{pid}/raw", timeout=30).content == body
        assert requests.get(f"{pair.url}/api/v1/profiles/{pid}", timeout=30).json()["id"] == pid
        assert requests.get(f"{pair.url}/{pid}/top", timeout=30).status_code == 200
    for instance in pair.instances:
        paths = [path for _, _, path, _, _ in served(instance)]
        assert any(p == "/" for p in paths), f"no upload reached {instance.url}"
        assert any(p.startswith(tuple(f"/{pid}" for pid in ids)) for p in paths)

    # option forwardfor + SHARE_TRUSTED_PROXIES: the instance sees the client, not HAProxy.
    host, port = pair.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10, source_address=("127.0.0.5", 0))
    conn.request("GET", "/healthz", headers={"X-Request-Id": "from-127-0-0-5"})
    assert conn.getresponse().status == 200
    conn.close()
    seen = [line for i in pair.instances for line in served(i) if line[4] == "from-127-0-0-5"]
    assert [line[0] for line in seen] == ["127.0.0.5"]


def test_each_instance_runs_its_analysis_ingest_and_merge_processes(pair: Pair) -> None:
    """SHARE_ANALYSIS_WORKERS (one per CPU) analysis processes, SHARE_INGEST_WORKERS (1)
    ingest processes and SHARE_MERGE_WORKERS (1) merge processes, all counted in serve's
    start-up line."""
    analysis = os.cpu_count() or 1
    for instance in pair.instances:
        roles = {role: [p for p in pids if COMPUTE_MODULE in cmdline(p)]  # not what they run
                 for role, pids in instance.roles().items()}  # fmt: skip
        assert len(roles["compute"]) == analysis, roles
        assert len(roles["ingest"]) == 1 and len(roles["merge"]) == 1, roles
        kinds = f"{analysis} analysis, 1 ingest, 1 merge"
        assert f"pprof-share: {analysis + 2} compute processes ({kinds})" in instance.log_text()


def view_runs(pair: Pair, name: str, pid: str) -> int:
    """Computations of view name of pid finished by the compute processes of both instances."""
    done = re.compile(rf"compute\[\d+\]: done view {name} {pid}: ok in ")
    return sum(len(done.findall(instance.log_text())) for instance in pair.instances)


def test_a_view_asked_for_through_both_is_computed_once(pair: Pair) -> None:
    r = upload(pair.url, unique_profile("balanced once", "go-runtime/cpu-labels.pb.gz"))
    pid = r.json()["id"]
    # The page's default views are precomputed after the upload: let that settle (a view being
    # computed is waited for, a cached one is not computed again), then ask for another one.
    for view in ("flamegraph", "top", "summary"):
        assert requests.get(f"{pair.url}/api/v1/profiles/{pid}/{view}", timeout=30).ok
    before = view_runs(pair, "flamegraph", pid)
    path = f"/api/v1/profiles/{pid}/flamegraph?si=samples&budget=777"
    start = threading.Barrier(16)

    def ask(_: int) -> tuple[int, str]:
        start.wait()
        reply = requests.get(pair.url + path, timeout=60)
        return reply.status_code, reply.text

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(ask, range(16)))
    assert {status for status, _ in answers} == {200}
    assert len({text for _, text in answers}) == 1
    asked = [sum(p == path for _, _, p, _, _ in served(i)) for i in pair.instances]
    assert sum(asked) == 16 and min(asked) > 0, asked  # both instances were asked
    assert view_runs(pair, "flamegraph", pid) == before + 1


class Stream:
    """Uploads from several client threads; each failure is retried until it succeeds."""

    def __init__(self, url: str, bodies: list[bytes]) -> None:
        self.url, self.todo = url, list(reversed(bodies))
        self.lock = threading.Lock()
        self.stored: list[tuple[str, bytes, float]] = []  # (id, body, when it was sent)
        self.failed: list[tuple[str, float]] = []  # (the first try's error, when it was sent)
        self.completed = 0
        self.stop_at = float("inf")

    def run(self) -> None:
        while True:
            with self.lock:
                if not self.todo or time.monotonic() > self.stop_at:
                    return
                body = self.todo.pop()
            sent, error = time.monotonic(), None
            for _ in range(20):
                try:
                    r = upload(self.url, body)
                    if r.status_code in (200, 201):
                        with self.lock:
                            self.stored.append((r.json()["id"], body, sent))
                            self.completed += 1
                        break
                    error = error or str(r.status_code)
                except requests.ConnectionError:
                    error = error or "ConnectionError"
                time.sleep(0.2)  # the client's back-off before it retries
            else:
                raise AssertionError(f"an upload failed 20 times, first with {error}")
            if error is not None:
                with self.lock:
                    self.failed.append((error, sent))


def stream_bodies(count: int) -> list[bytes]:
    """Distinct profiles, cheaply: a corpus profile's gzip member and a second member of its
    own (Go reads every member), alternately one that fits HAProxy's buffer and one that does
    not (cpu-large, 600 KB)."""
    bases = [(CORPUS / f"go-runtime/{n}.pb.gz").read_bytes() for n in ("cpu-labels", "cpu-large")]
    bodies = []
    for i in range(count):
        extra = f"balanced stream {i}".encode()
        bodies.append(bases[i % 2] + gzip.compress(bytes([0x32, len(extra)]) + extra, mtime=0))
    return bodies


def test_an_instance_killed_mid_stream_loses_no_answered_upload(doomed_pair: Pair) -> None:
    pair, victim = doomed_pair, doomed_pair.instances[1]
    stream = Stream(pair.url, stream_bodies(2000))
    threads = [threading.Thread(target=stream.run) for _ in range(6)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 20
    while stream.completed < 30 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert any(p == "/" for _, _, p, _, _ in served(victim)), "no upload reached the victim"
    roles = victim.roles()
    assert roles["ingest"] and roles["merge"] and roles["compute"], roles
    victim.kill()
    killed = time.monotonic()
    stream.stop_at = killed + 5
    for thread in threads:
        thread.join()
    survivors = [p for pids in roles.values() for p in pids if alive(p)]
    assert not survivors, f"processes of the killed instance survived: {survivors}"

    kinds = Counter(error for error, _ in stream.failed)
    print(f"uploads answered 2xx: {len(stream.stored)}; first tries that failed: {dict(kinds)}")
    assert set(kinds) <= RETRYABLE, kinds
    late = [error for error, sent in stream.failed if sent > killed + 3]
    assert not late, f"uploads sent 3 s after the kill still failed: {late}"
    assert sum(sent > killed + 3 for _, _, sent in stream.stored) > 10

    def read_back(stored: tuple[str, bytes, float]) -> None:
        pid, body, _ = stored
        r = requests.get(f"{pair.url}/{pid}/raw", timeout=30)
        assert r.status_code == 200 and r.content == body, (pid, r.status_code)

    with ThreadPoolExecutor(4) as pool:  # each answered 2xx, the retried ones too
        list(pool.map(read_back, stream.stored))
    assert "Server instances/b is DOWN" in pair.haproxy_log.read_text()
