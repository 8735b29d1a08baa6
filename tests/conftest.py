"""Fixtures: the app on each backend pair, real redis-server and S3 (moto server) processes,
a live `pprof-share serve`, and a headless Chromium page.

Services are started by the tests themselves on free ports. A service that cannot start is a
skip on a developer's machine and a failure under CI=true.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).parent / "corpus"
ARTIFACTS = Path(__file__).parent / "artifacts"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
BIN = Path(sys.executable).parent


def unavailable(reason: str) -> None:
    """Skip locally; under CI a missing service fails the run."""
    if IN_CI:
        pytest.fail(f"required service unavailable under CI=true: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def manifest() -> list[dict[str, str]]:
    """Rows of the corpus MANIFEST.tsv (path, valid, sample_types, n_samples, note, ...)."""
    with open(CORPUS / "MANIFEST.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


# --- real services ---------------------------------------------------------------------------
def start_redis(workdir: Path, port: int | None = None) -> tuple[str, subprocess.Popen[bytes]]:
    """redis-server on a free port (or the one given, to restart it), keeping nothing on disk:
    (URL, process)."""
    exe = shutil.which("redis-server")
    if exe is None:
        unavailable("redis-server is not installed (make test installs it)")
    port = port or free_port()
    proc = subprocess.Popen(
        [
            exe,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not wait_for_port(port, proc):
        stop(proc)
        unavailable("redis-server did not start")
    return f"redis://127.0.0.1:{port}/0", proc


class RedisClusterProcs:
    """Six redis-server processes made one Redis Cluster: three masters, a replica each."""

    def __init__(self, workdir: Path, ports: list[int], procs: dict[int, Any]) -> None:
        self.workdir, self.ports, self.procs = workdir, ports, procs
        self.url = "redis-cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports[:3])

    def node(self, port: int) -> Any:
        import redis

        return redis.Redis(port=port, socket_timeout=5)

    def client(self) -> Any:
        """A RedisCluster on it (for tests that look behind the store's back)."""
        from redis.cluster import ClusterNode, RedisCluster

        return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p) for p in self.ports])

    def live_ports(self) -> list[int]:
        return [p for p, proc in self.procs.items() if proc.poll() is None]

    def masters(self) -> list[int]:
        live = self.live_ports()
        return [p for p in live if self.node(p).info("replication")["role"] == "master"]

    def master_of(self, key: str) -> int:
        """The port of the live master that serves key's slot."""
        from redis.cluster import key_slot

        slot = key_slot(key.encode())
        for start, end, master, *_ in self.node(self.masters()[0]).cluster("slots"):
            if start <= slot <= end:
                return int(master[1])
        raise AssertionError(f"no master serves slot {slot}")

    def flush(self) -> None:
        for port in self.masters():
            self.node(port).flushall()

    def healthy(self) -> bool:
        """Every live node says cluster_state:ok, every master has its replica in sync."""
        try:
            for port in self.live_ports():
                node = self.node(port)
                if node.cluster("info")["cluster_state"] != "ok":
                    return False
                info = node.info("replication")
                if info["role"] == "master" and info["connected_slaves"] < 1:
                    return False
                if info["role"] == "slave" and info["master_link_status"] != "up":
                    return False
        except Exception:  # noqa: BLE001 - a node still starting
            return False
        return True

    def wait_healthy(self, timeout: float = 20) -> bool:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def stop(self) -> None:
        """Every node at once (nothing is kept on disk: no need to wait for a clean exit)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs.values():
            proc.wait()


def start_redis_cluster(workdir: Path, node_timeout_ms: int = 1000) -> RedisClusterProcs:
    """A Redis Cluster of our own (six redis-server on free ports, `redis-cli --cluster
    create` with a replica per master), keeping nothing on disk but its nodes.conf files."""
    exe, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if exe is None or cli is None:
        unavailable("redis-server / redis-cli are not installed (make test installs them)")
    ports: list[int] = []
    while len(ports) < 12:  # a client port and a cluster bus port per node
        port = free_port()
        if port not in ports:
            ports.append(port)
    procs: dict[int, Any] = {}
    for port, bus in zip(ports[:6], ports[6:], strict=True):
        procs[port] = subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
             "--cluster-port", str(bus), "--cluster-config-file", f"nodes-{port}.conf",
             "--cluster-node-timeout", str(node_timeout_ms), "--repl-diskless-sync-delay", "0",
             "--save", "", "--appendonly", "no",
             "--dir", str(workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    cluster = RedisClusterProcs(workdir, ports[:6], procs)
    if not all(wait_for_port(port, proc) for port, proc in procs.items()):
        cluster.stop()
        unavailable("redis-server did not start in cluster mode")
    create = subprocess.run(
        [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports[:6]),
         "--cluster-replicas", "1", "--cluster-yes"],
        capture_output=True, timeout=60,
    )  # fmt: skip
    if create.returncode != 0 or not cluster.wait_healthy():
        cluster.stop()
        unavailable(f"redis-cli --cluster create failed: {create.stdout[-500:]!r}")
    return cluster


def start_moto() -> tuple[str, subprocess.Popen[bytes]]:
    """moto's S3-compatible HTTP server in its own process: (endpoint, process)."""
    exe = BIN / "moto_server"
    if not exe.exists():
        unavailable("moto_server is not installed (pip install 'moto[server]')")
    port = free_port()
    proc = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not wait_for_port(port, proc, timeout=30):
        stop(proc)
        unavailable("moto_server did not start")
    return f"http://127.0.0.1:{port}", proc


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of our own on a free port, keeping nothing on disk."""
    url, proc = start_redis(tmp_path_factory.mktemp("redis"))
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterProcs]:
    """A Redis Cluster of our own for the session (tests that kill nodes start their own)."""
    cluster = start_redis_cluster(tmp_path_factory.mktemp("redis-cluster"))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3-compatible HTTP server in its own process; reached by boto3 over the wire."""
    endpoint, proc = start_moto()
    saved = {k: os.environ.get(k) for k in _AWS_ENV}
    os.environ.update(_AWS_ENV, AWS_ENDPOINT_URL=endpoint)
    yield endpoint
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    os.environ.pop("AWS_ENDPOINT_URL", None)
    stop(proc)


_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def new_bucket(endpoint: str) -> str:
    import boto3

    name = f"pprof-share-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


# --- the app on each backend pair ----------------------------------------------------------
BACKENDS = ["local", "s3+redis"]
# The store contract suites run on a Redis Cluster too (the app's tests do not: they would
# repeat what the contract shows, at the cost of minutes).
CLUSTER_BACKEND = "file+redis-cluster"


def backend_settings(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Settings for one backend pair, on fresh, empty stores."""
    if kind == "local":
        return {"BLOBS": f"file:{tmp_path}/blobs", "META": f"sqlite:{tmp_path}/meta.sqlite3"}
    if kind == CLUSTER_BACKEND:
        cluster = request.getfixturevalue("redis_cluster")
        cluster.flush()
        return {"BLOBS": f"file:{tmp_path}/blobs", "META": cluster.url}
    endpoint = request.getfixturevalue("s3_endpoint")
    url = request.getfixturevalue("redis_url")
    import redis

    redis.Redis.from_url(url).flushdb()
    return {"BLOBS": f"s3://{new_bucket(endpoint)}/profiles", "META": url}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Settings of each backend pair in turn: local dir + SQLite, then S3 + Redis."""
    return backend_settings(request.param, request, tmp_path)


_POOL: list[Any] = []


def shared_pool() -> Any:
    """One ComputePool for every in-process app of the run: apps differ in stores and limits,
    which jobs carry, so sharing it only saves starting compute processes per test. Its
    processes read S3 with the environment they started with: a pool started before moto's
    endpoint was in the environment is replaced once it is (merges fetch blobs from S3)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if _POOL and _POOL[0].started_with != endpoint:
        _POOL.pop().close()
    if not _POOL:
        from share.compute.pool import ComputePool
        from share.config import load

        pool = ComputePool(load({}, {"ANALYSIS_WORKERS": 2}))
        pool.started_with = endpoint
        _POOL.append(pool)
    return _POOL[0]


@pytest.fixture(scope="session", autouse=True)
def _close_shared_pool() -> Iterator[None]:
    yield
    if _POOL:
        _POOL.pop().close()


def make_app(config: dict[str, Any]):  # type: ignore[no-untyped-def]
    """create_app(config) on the shared compute pool."""
    from share import create_app

    # Off unless a test asks: tests count the computations they cause (test_precompute.py
    # and the live servers' tests run it as it is deployed, on).
    return create_app({"COMPUTE": shared_pool(), "PRECOMPUTE": "off", **config})


@pytest.fixture
def app(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The app on the embedded default stores in a fresh tmp dir."""
    return make_app({"BLOBS": f"file:{tmp_path}/blobs", "META": f"sqlite:{tmp_path}/meta.sqlite3"})


@pytest.fixture
def client(app):  # type: ignore[no-untyped-def]
    return app.test_client()


# --- a real server ---------------------------------------------------------------------------
RATE_SETTINGS = ("SHARE_RATE_UPLOADS", "SHARE_RATE_UPLOAD_BYTES", "SHARE_RATE_DELETES")


def start_server(
    env: dict[str, str], log: Path, workers: int = 2
) -> tuple[str, subprocess.Popen[bytes]]:
    """`pprof-share serve` with env on a free port, stderr to log: (base URL, process).
    Our own server not starting is a bug, so a failure, never a skip."""
    port = free_port()
    for name in RATE_SETTINGS:  # the suite uploads far faster than any client should
        env.setdefault(name, "off")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(BIN / "pprof-share"), "serve", "--port", str(port), "--workers", str(workers)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    if not wait_for_port(port, proc, timeout=30):
        stop(proc)
        pytest.fail(f"pprof-share serve did not start: {log.read_text()}")
    return f"http://127.0.0.1:{port}", proc


def http_status(url: str) -> int:
    """The status a GET of url answers, errors included."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def server_error(server: str, data: bytes) -> str:
    """The message the server itself gives a JSON client for this upload (which must fail)."""
    request = urllib.request.Request(
        server + "/", data=data, headers={"Accept": "application/json"}, method="POST"
    )
    try:
        urllib.request.urlopen(request, timeout=30).close()
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read())["error"]["message"]
    raise AssertionError("the upload was accepted")


def local_server(
    tmp_path_factory: pytest.TempPathFactory, name: str, **settings: str
) -> Iterator[str]:
    """`pprof-share serve` in a subprocess on a free port, on local stores in a tmp dir of
    its own, with SHARE_<settings>: a fixture's body (yield from it)."""
    data = tmp_path_factory.mktemp(name)
    env = dict(
        os.environ,
        SHARE_BLOBS=f"file:{data}/blobs",
        SHARE_META=f"sqlite:{data}/meta.sqlite3",
        SHARE_PUBLIC_URL="",
        **{f"SHARE_{k}": v for k, v in settings.items()},
    )
    url, proc = start_server(env, data / "server.log")
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`pprof-share serve` in a subprocess on a free port, on local stores in a tmp dir."""
    yield from local_server(tmp_path_factory, "live")


# --- go tool pprof ---------------------------------------------------------------------------
class GoPool:
    """`go tool pprof` runs, two at a time for the whole session (the machine has 2 cores)."""

    def __init__(self, home: Path) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.env = {
            **os.environ,
            "HOME": str(home),
            "GOCACHE": str(home / "cache"),
            "GOFLAGS": "",
            # No local binaries to symbolize with: the profile's own symbols only, as on a server.
            "PPROF_BINARY_PATH": str(home / "no-binaries"),
            "PPROF_TMPDIR": str(home / "pprof"),
        }
        self.pool = ThreadPoolExecutor(max_workers=2)

    def run(self, args: list[str], stdin: bytes | None = None) -> Any:
        """The CompletedProcess of `go tool pprof ARGS` (stdout, stderr as bytes)."""
        return subprocess.run(
            ["go", "tool", "pprof", *args], input=stdin, capture_output=True, env=self.env,
            timeout=600,
        )  # fmt: skip

    def submit(self, args: list[str], stdin: bytes | None = None) -> Any:
        """A Future of the CompletedProcess."""
        return self.pool.submit(self.run, args, stdin)


@pytest.fixture(scope="session")
def go_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GoPool]:
    """The session's one pool of `go tool pprof` processes (skips when go is missing)."""
    if shutil.which("go") is None:
        unavailable("go is not installed (make test installs golang-go)")
    pool = GoPool(tmp_path_factory.mktemp("go-home"))
    yield pool
    pool.pool.shutdown(cancel_futures=True)


# --- a browser -------------------------------------------------------------------------------
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():  # type: ignore[no-untyped-def]
    """Headless Debian Chromium driven by Playwright (no downloaded browser build)."""
    if not os.path.exists(CHROMIUM):
        unavailable(f"{CHROMIUM} is not installed (make test installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    """A fresh page; console errors and page errors are collected in page.console_errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.console_errors = errors
    ARTIFACTS.mkdir(exist_ok=True)
    yield page
    context.close()


# --- go tool pprof -----------------------------------------------------------------------------
class GoPprof:
    """`go tool pprof` with the given arguments, two runs at a time, each command once per
    session: start() queues commands so they run while the tests compute their side."""

    def __init__(self, go: str, env: dict[str, str]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.go, self.env = go, env
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.futures: dict[tuple[str, ...], Any] = {}

    def _run(self, args: tuple[str, ...]) -> tuple[int, str, str]:
        done = subprocess.run(
            [self.go, "tool", "pprof", *args], capture_output=True, env=self.env, timeout=300
        )
        out, err = (x.decode("utf-8", "replace") for x in (done.stdout, done.stderr))
        return done.returncode, out, err

    def start(self, *commands: list[str]) -> None:
        for args in commands:
            key = tuple(args)
            if key not in self.futures:
                self.futures[key] = self.pool.submit(self._run, key)

    def __call__(self, args: list[str]) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of `go tool pprof ARGS`."""
        self.start(args)
        return self.futures[tuple(args)].result()


@pytest.fixture(scope="session")
def go_pprof(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GoPprof]:
    """One pool of `go tool pprof` processes for the session's parity tests."""
    go = shutil.which("go")
    if go is None:
        unavailable("go is not installed (make test installs golang-go)")
    home = tmp_path_factory.mktemp("go-pprof")
    env = {
        **os.environ,
        "HOME": str(home),
        "GOCACHE": str(home / "cache"),
        "GOFLAGS": "",
        # No local binaries to symbolize with: the profile's own symbols only, as on a server.
        "PPROF_BINARY_PATH": str(home / "no-binaries"),
        "PPROF_TMPDIR": str(home / "pprof"),
    }
    runner = GoPprof(go, env)
    yield runner
    runner.pool.shutdown(cancel_futures=True)


# --- profiles made to order -----------------------------------------------------------------
class StringTable:
    """A profile's string table as a test builds it: s("text") appends text and returns its
    index; s.strings is the table ("" first, or the strings it started from)."""

    def __init__(self, start: Sequence[str] = ("",)) -> None:
        self.strings = list(start)

    def __call__(self, text: str) -> int:
        self.strings.append(text)
        return len(self.strings) - 1


def unique_profile(tag: str, base: str = "go-runtime/heap.pb.gz") -> bytes:
    """A valid profile of its own (a new id) for each tag: the corpus profile with one more,
    unreferenced entry in its string table (field 6), gzip-compressed."""
    import gzip

    raw = gzip.decompress((CORPUS / base).read_bytes())
    extra = tag.encode()
    assert len(extra) < 128
    return gzip.compress(raw + bytes([0x32, len(extra)]) + extra, mtime=0)
