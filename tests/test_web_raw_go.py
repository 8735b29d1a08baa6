"""The real `go tool pprof -top` reads every valid corpus profile from its /raw link, and shows
exactly what it shows for the local file."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from conftest import CORPUS, unavailable

pytestmark = pytest.mark.go


def valid_paths() -> list[str]:
    with open(CORPUS / "MANIFEST.tsv", newline="") as f:
        return [r["path"] for r in csv.DictReader(f, delimiter="\t") if r["valid"] == "yes"]


def test_go_tool_pprof_top_reads_every_valid_raw_link(live_server, tmp_path):
    go = shutil.which("go")
    if go is None:
        unavailable("go is not installed (make test installs golang-go)")
    links = {}
    for path in valid_paths():
        reply = requests.put(f"{live_server}/{Path(path).name}", data=(CORPUS / path).read_bytes())
        assert reply.status_code in (200, 201), reply.text
        links[path] = reply.text.strip()
    env = dict(
        os.environ,
        HOME=str(tmp_path),
        PPROF_TMPDIR=str(tmp_path / "pprof"),
        GOCACHE=str(tmp_path / "gocache"),
    )

    def top(source: str) -> subprocess.CompletedProcess[str]:
        command = [go, "tool", "pprof", "-top", source]
        return subprocess.run(
            command, capture_output=True, text=True, errors="replace", env=env, timeout=120
        )

    def both(
        path: str,
    ) -> tuple[str, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
        return path, top(str(CORPUS / path)), top(f"{links[path]}/raw")

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(both, links))
    shown = 0
    for path, local, remote in results:
        assert "Fetching profile over HTTP" in remote.stderr, path
        assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout), (
            path,
            remote.stderr[-500:],
        )
        shown += "Showing nodes accounting for" in remote.stdout
    # Only pprof's own refusals (a profile with no sample types at all) may fail alike.
    assert shown >= len(results) - 2
