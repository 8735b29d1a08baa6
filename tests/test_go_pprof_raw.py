"""The real `go tool pprof -top` reads every valid corpus profile from its /raw link."""

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

    def top(path: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        command = [go, "tool", "pprof", "-top", f"{links[path]}/raw"]
        return path, subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(top, links))
    failures = [(p, r.stderr[-500:]) for p, r in results if r.returncode != 0]
    assert not failures
    for path, result in results:
        assert "Showing nodes accounting for" in result.stdout, (path, result.stdout[-300:])
