"""`pprof-share collect` against real Go programs serving net/http/pprof (tests/gotarget, built
here with `go build`, standard library only) and a live `pprof-share serve`: two targets, two
rounds; a target down, reported and retried while the other is collected; Ctrl-C finishing the
round in flight. The CLI runs as a real subprocess."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from share.cli import collect

from conftest import free_port, stop, unavailable

pytestmark = pytest.mark.go

REPO = Path(__file__).parent.parent
GOTARGET = Path(__file__).parent / "gotarget"
ROUND = re.compile(r"round (\d+): (\d+) added, (\d+) failed(?:, (\d+) waiting)?, took [\d.]+s")


@pytest.fixture(scope="module")
def gotarget(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/gotarget compiled: no module downloads (GOPROXY=off, a go.mod without requires)."""
    go = shutil.which("go")
    if go is None:
        unavailable("go is not installed (make test installs golang-go)")
    work = tmp_path_factory.mktemp("gotarget")
    for source in GOTARGET.iterdir():
        shutil.copy(source, work)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOCACHE=str(work / "cache"))
    subprocess.run([go, "build", "-o", "gotarget", "."], cwd=work, env=env, check=True)
    return work / "gotarget"


def start_target(binary: Path, addr: str = "127.0.0.1:0") -> tuple[str, subprocess.Popen[bytes]]:
    """One gotarget process: (its host:port, process)."""
    proc = subprocess.Popen([str(binary), "-addr", addr], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().strip()  # printed once it listens
    proc.stdout.close()  # the only line it prints
    assert re.fullmatch(r"127\.0\.0\.1:\d+", line), line
    return line, proc


@pytest.fixture(scope="module")
def targets(gotarget: Path) -> Iterator[list[str]]:
    """Two Go programs serving net/http/pprof: their host:port."""
    started = [start_target(gotarget) for _ in range(2)]
    yield [addr for addr, _ in started]
    for _, proc in started:
        stop(proc)


def new_collection(server: str) -> tuple[str, str, str]:
    """(link, id, token) of a new collection."""
    request = urllib.request.Request(
        f"{server}/api/v1/collections", data=b"{}", method="POST",
        headers={"Accept": "application/json", "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        reply = json.loads(response.read())
    return reply["url"], reply["id"], reply["token"]


def members(server: str, cid: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{server}/api/v1/collections/{cid}/members", timeout=30) as r:
        return json.loads(r.read())["members"]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "share.cli", "collect", *args]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PPROF_SHARE")}


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args), capture_output=True, text=True, cwd=REPO, env=env(), timeout=timeout
    )


def rounds(stdout: str) -> list[tuple[int, int, int, int]]:
    """(round, added, failed, waiting) of each line; every line is a round's."""
    found = [ROUND.fullmatch(line) for line in stdout.splitlines()]
    assert all(found), stdout
    return [(int(m[1]), int(m[2]), int(m[3]), int(m[4] or 0)) for m in found if m]


def test_two_targets_two_rounds(live_server: str, targets: list[str]) -> None:
    link, cid, token = new_collection(live_server)
    started = time.time()
    result = run(
        "--collection", link, "--token", token, "--every", "1s", "--profile", "cpu=1s",
        "--profile", "heap", "--rounds", "2", "--label", "env=ci", *targets,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert rounds(result.stdout) == [(1, 4, 0, 0), (2, 4, 0, 0)]
    assert result.stderr.splitlines()[0].startswith(
        f"pprof-share: collecting cpu=1s, heap from 2 targets every 1s into {link}"
    )
    found = members(live_server, cid)
    per = Counter((m["labels"]["instance"], m["kind"]) for m in found)
    assert per == {(t, k): 2 for t in targets for k in ("cpu", "heap")}
    assert all(m["labels"] == {"instance": m["labels"]["instance"], "env": "ci"} for m in found)
    assert all(started - 5 <= m["time_unix"] <= time.time() + 5 for m in found)
    cpu = [m for m in found if m["kind"] == "cpu"]
    assert all(m["duration_nanos"] >= 0.9e9 for m in cpu)  # seconds=1 reached the target
    busy = sum(t["total"] for m in cpu for t in m["totals"] if t["type"] == "cpu")
    assert busy > 0  # the targets' busy loop was sampled


def test_a_target_down_is_reported_retried_and_the_other_collected(
    live_server: str, targets: list[str], gotarget: Path
) -> None:
    link, cid, token = new_collection(live_server)
    down = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        command(
            "--collection", link, "--token", token, "--every", "0.4s", "--profile", "heap",
            "--rounds", "6", targets[0], f"http://{down}/",
        ),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env(),
    )  # fmt: skip
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert rounds(first) == [(1, 1, 1, 0)]
    back, back_proc = start_target(gotarget, down)  # the target comes back
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        stop(back_proc)
    assert proc.returncode == 0, err
    lines = rounds(first + out)
    assert [n for n, *_ in lines] == [1, 2, 3, 4, 5, 6]
    assert all(added >= 1 for _, added, _, _ in lines)  # the other target, every round
    refused = f"pprof-share: {down} heap: cannot reach http://{down}/debug/pprof/heap: "
    assert f"{refused}Connection refused; next try in 0.4s" in err.splitlines()
    assert f"pprof-share: {down} heap: back after " in err
    per = Counter(m["labels"]["instance"] for m in members(live_server, cid))
    assert per[targets[0]] == 6 and 1 <= per[back] <= 5


def test_backoff_doubles_while_a_target_stays_down(live_server: str, targets: list[str]) -> None:
    link, _, token = new_collection(live_server)
    down = f"127.0.0.1:{free_port()}"
    result = run(
        "--collection", link, "--token", token, "--every", "0.2s", "--profile", "heap",
        "--rounds", "8", targets[0], down,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # Tried in rounds 1, 2, 4 and 8: the next round, then every 2nd, then every 4th.
    failed = [n for n, _, failed, _ in rounds(result.stdout) if failed]
    waiting = [n for n, _, _, waiting in rounds(result.stdout) if waiting]
    assert failed == [1, 2, 4, 8] and waiting == [3, 5, 6, 7]
    tries = [line for line in result.stderr.splitlines() if down in line]
    assert [line.rsplit(" ", 1)[1] for line in tries] == ["0.2s", "0.4s", "0.8s", "1.6s"]


@pytest.fixture
def not_pprof() -> Iterator[str]:
    """A web server that answers every path with a page, not a profile: its host:port."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            body = b"<html>hello</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_target_that_serves_no_profile_backs_off(
    live_server: str, targets: list[str], not_pprof: str
) -> None:
    link, cid, token = new_collection(live_server)
    result = run("--collection", link, "--token", token, "--every", "0.2s", "--profile", "heap",
                 "--rounds", "3", targets[0], not_pprof)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert rounds(result.stdout) == [(1, 1, 1, 0), (2, 1, 1, 0), (3, 1, 0, 1)]
    refused = [line for line in result.stderr.splitlines() if not_pprof in line]
    assert len(refused) == 2 and all("not added: " in line for line in refused)
    assert "(HTTP 400); next try in 0.2s" in refused[0]  # the server's own words, then when
    assert {m["labels"]["instance"] for m in members(live_server, cid)} == {targets[0]}


def test_ctrl_c_finishes_the_round_in_flight_and_exits_0(
    live_server: str, targets: list[str]
) -> None:
    link, cid, token = new_collection(live_server)
    proc = subprocess.Popen(
        command("--collection", link, "--token", token, "--every", "1s", "--profile", "cpu=2s",
                *targets),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env(),
    )  # fmt: skip
    assert proc.stderr is not None
    assert "collecting" in proc.stderr.readline()  # the first round starts now
    time.sleep(0.7)
    proc.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert time.monotonic() - interrupted >= 0.8  # it waited for the 2 s profiles
    assert rounds(out) == [(1, 2, 0, 0)]
    assert "stopping after this round" in err and "Traceback" not in err
    assert len(members(live_server, cid)) == 2


def test_ctrl_c_between_rounds_exits_at_once(live_server: str, targets: list[str]) -> None:
    link, _, token = new_collection(live_server)
    proc = subprocess.Popen(
        command("--collection", link, "--token", token, "--every", "30s", "--profile", "heap",
                targets[0]),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env(),
    )  # fmt: skip
    assert proc.stdout is not None
    assert rounds(proc.stdout.readline()) == [(1, 1, 0, 0)]
    proc.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out == "", err
    assert time.monotonic() - interrupted < 5


def test_a_wrong_token_stops_the_run(live_server: str, targets: list[str]) -> None:
    link, cid, _ = new_collection(live_server)
    result = run("--collection", link, "--token", "wrong", "--every", "0.2s", "--profile",
                 "heap", *targets)  # fmt: skip
    assert result.returncode == 1
    assert rounds(result.stdout) == [(1, 0, 2, 0)]  # no --rounds: the refusal ends it
    errors = [line for line in result.stderr.splitlines() if "collecting" not in line]
    assert errors == [
        "pprof-share: wrong or missing collection token (send it in the X-Collection-Token "
        "header) (HTTP 403)"
    ]
    assert members(live_server, cid) == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--profile", "trace"), "--profile 'trace': the profiles are cpu, heap, allocs"),
        (("--profile", "goroutine=5s"), "goroutine is a snapshot; give it no duration"),
        (("--profile", "cpu=1.5s"), "net/http/pprof takes whole seconds"),
        (("--profile", "heap", "--profile", "heap=5s"), "--profile heap is given twice"),
        (("--every", "soon"), "--every 'soon': give a duration such as 10s"),
        (("--label", "instance=x"), "instance is each target's host:port"),
        (("--label", "x"), "label 'x': give key=value"),
        (("--rounds", "-1"), "--rounds: give a number of rounds"),
        (("--token", ""), "no collection token: give --token or set $PPROF_SHARE_COLLECTION"),
        (("127.0.0.1:6060",), "target 127.0.0.1:6060 is given twice"),
        (("ftp://x",), "target 'ftp://x': give host:port or an http:// URL"),
    ],
)
def test_bad_arguments_are_one_line(args: tuple[str, ...], says: str) -> None:
    """Refused before anything is fetched: the server given is not even listening."""
    server = f"http://127.0.0.1:{free_port()}"
    token = () if "--token" in args else ("--token", "t")
    result = run("--collection", f"{server}/c/AAAAAAAAAAAA", *token, *args, "127.0.0.1:6060")
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0], lines


def test_a_collection_that_does_not_exist_is_one_line(live_server: str) -> None:
    result = run("--collection", f"{live_server}/c/AAAAAAAAAAAA", "--token", "t", "x:1")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"pprof-share: {live_server}/api/v1/collections/AAAAAAAAAAAA: no collection with id "
        "AAAAAAAAAAAA (HTTP 404)"
    ]


@pytest.mark.parametrize(
    ("text", "instance", "root"),
    [
        ("127.0.0.1:6060", "127.0.0.1:6060", "http://127.0.0.1:6060/debug/pprof"),
        ("http://api-1:8080/", "api-1:8080", "http://api-1:8080/debug/pprof"),
        ("https://api.example.com", "api.example.com:443", "https://api.example.com/debug/pprof"),
        ("http://h:81/admin/debug/pprof/", "h:81", "http://h:81/admin/debug/pprof"),
        ("http://h:81/admin", "h:81", "http://h:81/admin/debug/pprof"),
        ("[::1]:6060", "[::1]:6060", "http://[::1]:6060/debug/pprof"),
    ],
)
def test_targets(text: str, instance: str, root: str) -> None:
    assert collect.parse_target(text) == collect.Target(instance, root)


def test_profiles() -> None:
    assert collect.parse_profile("cpu", 10).path() == "/profile?seconds=5"  # half of --every
    assert collect.parse_profile("cpu=2s", 10).path() == "/profile?seconds=2"
    assert collect.parse_profile("heap", 10).path() == "/heap"
    assert collect.parse_profile("mutex=1m", 10).path() == "/mutex?seconds=60"
    assert collect.parse_seconds("500ms", "--every") == 0.5
