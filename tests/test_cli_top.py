"""`pprof-share top FILE|LINK` as a whole process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import requests

from conftest import BIN, CORPUS, unavailable

PROFILE = CORPUS / "go-runtime/heap.pb.gz"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "pprof-share"), "top", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.go
def test_file_matches_go_tool_pprof(tmp_path) -> None:  # type: ignore[no-untyped-def]
    if shutil.which("go") is None:
        unavailable("go is not installed (make test installs golang-go)")
    env = {**os.environ, "HOME": str(tmp_path), "GOCACHE": str(tmp_path / "cache")}
    for extra in ([], ["-sample_index=alloc_space", "-nodecount=4"]):
        go = subprocess.run(
            ["go", "tool", "pprof", "-top", "-nodefraction=0", *extra, str(PROFILE)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert go.returncode == 0, go.stderr
        ours = run(str(PROFILE), *extra)
        assert ours.returncode == 0 and ours.stderr == ""
        assert ours.stdout == go.stdout


def test_link_is_fetched_raw(live_server: str) -> None:
    reply = requests.post(live_server, data=PROFILE.read_bytes(), timeout=30)
    assert reply.status_code in (200, 201)
    link = reply.text.strip()
    by_link = run(link, "--sample-index", "inuse_space")
    by_file = run(str(PROFILE), "--sample-index", "inuse_space")
    assert by_link.returncode == 0, by_link.stderr
    assert by_link.stdout == by_file.stdout and "Type: inuse_space" in by_link.stdout
    gone = run(live_server + "/AAAAAAAAAAAAAAAA")
    assert gone.returncode == 1 and "no profile with id AAAAAAAAAAAAAAAA" in gone.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nonexistent.pb.gz"], "No such file or directory"),
        ([str(CORPUS / "invalid/image.png")], "PNG"),
        ([str(PROFILE), "--sample-index", "cpu"], "'alloc_objects', 'alloc_space'"),
    ],
)
def test_problems_are_one_line(args: list[str], message: str) -> None:
    done = run(*args)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr


def _modules_after_top(*names: str) -> list[str]:
    code = (
        "import json, sys; from share import cli; cli.main(['top', sys.argv[1]]); "
        f"print(json.dumps(sorted(m for m in {names!r} if m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(PROFILE)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_top_path_imports_no_storage_or_server_libraries() -> None:
    assert _modules_after_top("boto3", "botocore", "redis", "gunicorn") == []


def test_top_path_imports_no_flask() -> None:
    assert _modules_after_top("flask", "jinja2", "werkzeug") == []
