"""Two `pprof-share serve` instances behind HAProxy, on one Redis and one S3 (moto), with the
haproxy.cfg that README.md gives ("Behind a load balancer"): its addresses replaced, nothing else.

Shared by tests/test_web_balanced_pair.py and bench/fleet.py. Each instance runs in a session
of its own, so that it can be killed as a machine dies: its gunicorn master, its web workers
and its compute processes (which the master starts in sessions of their own) at once.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from share.compute.supervisor import INGEST, MERGE  # an ingest or merge process's last argument

from conftest import _AWS_ENV, BIN, free_port, new_bucket, wait_for_port

README = Path(__file__).resolve().parent.parent / "README.md"
HAPROXY_BLOCK = re.compile(r"```haproxy\n(.*?)```", flags=re.S)
SERVER_LINE = re.compile(r"^(\s*server\s+)\S+\s+\S+(.*)$", flags=re.M)
BIND_LINE = re.compile(r"^(\s*bind\s+)\S+", flags=re.M)
COMPUTE_MODULE = "share.compute.worker"


def haproxy_exe() -> str | None:
    """Debian's haproxy (in /usr/sbin, which a user's PATH may not hold)."""
    return shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")


def readme_haproxy_config() -> str:
    """The one haproxy.cfg block of README.md, as it stands."""
    blocks = HAPROXY_BLOCK.findall(README.read_text())
    assert len(blocks) == 1, f"README.md has {len(blocks)} haproxy blocks, expected one"
    return blocks[0]


def haproxy_config(front_port: int, backend_ports: list[int]) -> str:
    """README's haproxy.cfg listening on front_port, with one server line per backend port
    where README has its server lines (the first one is the pattern: its options are kept)."""
    lines = readme_haproxy_config().splitlines()
    at = [i for i, line in enumerate(lines) if SERVER_LINE.match(line)]
    assert at, "README's haproxy.cfg has no server line"
    head, options = SERVER_LINE.match(lines[at[0]]).groups()  # type: ignore[union-attr]
    servers = [
        f"{head}{chr(97 + i)} 127.0.0.1:{port}{options}" for i, port in enumerate(backend_ports)
    ]
    kept = [line for i, line in enumerate(lines) if i not in at]
    text = "\n".join(kept[: at[0]] + servers + kept[at[0] :]) + "\n"
    assert len(BIND_LINE.findall(text)) == 1, "README's haproxy.cfg must bind one address"
    return BIND_LINE.sub(rf"\g<1>127.0.0.1:{front_port}", text)


def descendants(pid: int) -> list[int]:
    """pid's children, their children, ... (from /proc), pid itself not included."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@dataclass
class Instance:
    """One `pprof-share serve`, the leader of a session of its own."""

    url: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def roles(self) -> dict[str, list[int]]:
        """Its live processes by role: the gunicorn master, web workers, analysis compute
        processes ("compute"), ingest ones and merge ones (each with whatever it runs, e.g.
        Graphviz's dot)."""
        everyone = descendants(self.proc.pid)
        compute = [p for p in everyone if COMPUTE_MODULE in cmdline(p)]
        kinds = {p: (cmdline(p).split()[-1:] + [""])[0] for p in compute}
        ingest = [p for p in compute if kinds[p] == INGEST]
        merge = [p for p in compute if kinds[p] == MERGE]
        analysis = [p for p in compute if p not in ingest and p not in merge]
        roles: dict[str, list[int]] = {"master": [self.proc.pid]}
        for role, pids in (("compute", analysis), (INGEST, ingest), (MERGE, merge)):
            roles[role] = pids + sorted(q for p in pids for q in descendants(p))
        inside = set(roles["compute"] + roles[INGEST] + roles[MERGE])
        roles["web"] = [p for p in everyone if p not in inside]
        return roles

    def kill(self) -> None:
        """SIGKILL to every process of the instance at once, as when its machine dies."""
        everyone = descendants(self.proc.pid)
        sockets = {Path(a).parent for p in everyone for a in cmdline(p).split() if ".sock" in a}
        os.killpg(self.proc.pid, signal.SIGKILL)  # the master and its web workers
        for pid in everyone:  # the compute processes, in sessions of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        for directory in sockets:  # what a killed master could not remove itself
            shutil.rmtree(directory, ignore_errors=True)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start_instances(envs: list[dict[str, str]], workdir: Path, workers: int) -> list[Instance]:
    """One `pprof-share serve` per env, started side by side; each answers /readyz 200 before
    this returns. Our own server not starting is a bug: AssertionError."""
    started = []
    for i, env in enumerate(envs):
        port, log = free_port(), workdir / f"instance-{chr(97 + i)}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(BIN / "pprof-share"), "serve", "--port", str(port), "--workers", str(workers)],
                env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True,
            )  # fmt: skip
        started.append(Instance(f"http://127.0.0.1:{port}", port, proc, log))
    for instance in started:
        ready = wait_for_port(instance.port, instance.proc, timeout=60) and _ready(instance.url)
        if not ready:
            for other in started:
                other.stop()
            raise AssertionError(f"pprof-share serve did not start: {instance.log_text()[-3000:]}")
    return started


def _ready(url: str, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=5) as reply:
                if reply.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    return False


def start_haproxy(config: str, port: int, workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """haproxy in the foreground on config (already listening on port): (process, its log)."""
    exe = haproxy_exe()
    assert exe is not None, "haproxy is not installed"
    cfg, log = workdir / "haproxy.cfg", workdir / "haproxy.log"
    cfg.write_text(config)
    check = subprocess.run([exe, "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert check.returncode == 0, f"haproxy refuses README's config: {check.stderr}{check.stdout}"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [exe, "-db", "-f", str(cfg)], stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    if not wait_for_port(port, proc, timeout=10):
        proc.kill()
        proc.wait()
        raise AssertionError(f"haproxy did not start: {log.read_text()}")
    return proc, log


@dataclass
class Pair:
    """HAProxy at url, in front of the instances."""

    url: str
    instances: list[Instance]
    haproxy: subprocess.Popen[bytes]
    haproxy_log: Path
    env: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        for instance in self.instances:
            instance.stop()
        self.haproxy.terminate()
        try:
            self.haproxy.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.haproxy.kill()
            self.haproxy.wait()


def instance_env(redis_url: str, s3_endpoint: str, bucket: str, public_url: str) -> dict[str, str]:
    """The settings README gives each instance: one Redis, one bucket, the balancer's URL as
    the links' base, the balancer as the one trusted proxy (here on loopback)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHARE_")}
    env.update(
        _AWS_ENV, AWS_ENDPOINT_URL=s3_endpoint, SHARE_META=redis_url,
        SHARE_BLOBS=f"s3://{bucket}/profiles", SHARE_PUBLIC_URL=public_url,
        SHARE_TRUSTED_PROXIES="127.0.0.1",
    )  # fmt: skip
    return env


def start_pair(
    redis_url: str,
    s3_endpoint: str,
    workdir: Path,
    workers: int = 1,
    count: int = 2,
    extra: dict[str, str] | None = None,
) -> Pair:
    """count instances on one Redis and a new bucket, HAProxy with README's config in front."""
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    front = free_port()
    env = instance_env(redis_url, s3_endpoint, new_bucket(s3_endpoint), f"http://127.0.0.1:{front}")
    env.update(extra or {})
    envs = []
    for i in range(count):  # each its own metrics directory, as on its own machine
        own = workdir / f"metrics-{chr(97 + i)}"
        own.mkdir(exist_ok=True)
        envs.append({**env, "PROMETHEUS_MULTIPROC_DIR": str(own)})
    instances = start_instances(envs, workdir, workers)
    try:
        config = haproxy_config(front, [i.port for i in instances])
        haproxy, log = start_haproxy(config, front, workdir)
    except BaseException:
        for instance in instances:
            instance.stop()
        raise
    return Pair(f"http://127.0.0.1:{front}", instances, haproxy, log, env)
