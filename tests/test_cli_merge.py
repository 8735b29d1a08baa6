"""`pprof-share merge` against a live `pprof-share serve`, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import requests

from conftest import CORPUS

REPO = Path(__file__).parent.parent
SMALL, LABELS = CORPUS / "go-runtime/cpu-small.pb.gz", CORPUS / "go-runtime/cpu-labels.pb.gz"


def cli(*args: str, server: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PPROF_SHARE_SERVER", None)
    if server:
        env["PPROF_SHARE_SERVER"] = server
    return subprocess.run(
        [sys.executable, "-m", "share.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


def put(server: str, path: Path) -> str:
    reply = requests.put(f"{server}/{path.name}", data=path.read_bytes(), timeout=60)
    assert reply.status_code in (200, 201), reply.text
    return reply.text.strip()


def total(link: str) -> int:
    pid = link.rsplit("/", 1)[1]
    base = link.rsplit("/", 1)[0]
    return requests.get(f"{base}/api/v1/profiles/{pid}/top", timeout=60).json()["total"]


def test_merge_links_prints_the_new_link(live_server) -> None:  # type: ignore[no-untyped-def]
    a, b = put(live_server, SMALL), put(live_server, LABELS)
    done = cli("merge", a, f"{b}/raw")  # the server is the links'
    assert done.returncode == 0, done.stderr
    link = done.stdout.strip()
    assert link.startswith(live_server + "/") and link not in (a, b)
    assert total(link) == 3_040_000_000 + 5_820_000_000
    again = cli("merge", "--json", a.rsplit("/", 1)[1], b, server=live_server)  # an id too
    reply = json.loads(again.stdout)
    assert again.returncode == 0 and reply["url"] == link and reply["deduplicated"] is True


def test_merge_files_and_links_in_order(live_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    files = cli("merge", "--title", "two runs", str(SMALL), str(LABELS), server=live_server)
    assert files.returncode == 0, files.stderr
    assert "pprof-share delete" in files.stderr
    merged = files.stdout.strip()
    record = requests.get(
        f"{live_server}/api/v1/profiles/{merged.rsplit('/', 1)[1]}", timeout=60
    ).json()
    assert record["title"] == "two runs"
    assert total(merged) == 3_040_000_000 + 5_820_000_000
    link = put(live_server, LABELS)
    mixed = cli("merge", link, str(SMALL), server=live_server)
    assert mixed.returncode == 0, mixed.stderr
    assert total(mixed.stdout.strip()) == 3_040_000_000 + 5_820_000_000


def test_merge_failures_are_one_line(live_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    heap = put(live_server, CORPUS / "go-runtime/heap.pb.gz")
    done = cli("merge", put(live_server, SMALL), heap)
    assert done.returncode == 1 and done.stdout == ""
    assert "period type: incompatible types: {cpu nanoseconds 0 0} {space bytes 0 0}" in done.stderr
    junk = tmp_path / "junk.pb.gz"
    junk.write_bytes(b"not a profile")
    done = cli("merge", str(SMALL), str(junk), server=live_server)
    assert done.returncode == 1 and "junk.pb.gz" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    missing = cli("merge", str(SMALL), str(tmp_path / "nope.pb.gz"), server=live_server)
    assert missing.returncode == 1 and "nope.pb.gz" in missing.stderr


def test_merge_command_loads_neither_flask_nor_numpy() -> None:
    code = (
        "import sys; import share.cli.merge; "
        "print(sorted(m for m in ('flask', 'numpy', 'werkzeug') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
