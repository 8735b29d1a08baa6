"""Against a running server: the real `go tool pprof` on the page link and on stripped uploads,
and the CLI downloaded with the index page's own line, on a python3 with no packages."""

from __future__ import annotations

import gzip
import html
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from conftest import CORPUS, unavailable

LABELS = CORPUS / "go-runtime/cpu-labels.pb.gz"


@pytest.fixture
def go_env(tmp_path: Path) -> dict[str, str]:
    if shutil.which("go") is None:
        unavailable("go is not installed (make test installs golang-go)")
    return dict(
        os.environ,
        HOME=str(tmp_path),
        PPROF_TMPDIR=str(tmp_path / "pprof"),
        GOCACHE=str(tmp_path / "gocache"),
    )


def pprof(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["go", "tool", "pprof", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.go
def test_go_tool_pprof_reads_the_page_link(live_server: str, go_env: dict[str, str]) -> None:
    link = requests.post(live_server + "/", data=LABELS.read_bytes(), timeout=30).text.strip()
    page, raw = pprof(go_env, "-top", link), pprof(go_env, "-top", f"{link}/raw")
    assert page.returncode == 0, page.stderr
    assert "Fetching profile over HTTP" in page.stderr
    assert page.stdout == raw.stdout and "sort.partition" in page.stdout


@pytest.mark.go
def test_strip_labels_leaves_pprof_no_tags(live_server: str, go_env: dict[str, str]) -> None:
    data = LABELS.read_bytes()
    plain = requests.post(live_server + "/", data=data, timeout=30).text.strip()
    assert "endpoint: Total" in pprof(go_env, "-tags", f"{plain}/raw").stdout
    for query in ("?strip=labels", "?strip=labels;paths;comments;build_ids"):
        link = requests.post(live_server + "/" + query, data=data, timeout=30).text.strip()
        tags = pprof(go_env, "-tags", f"{link}/raw")
        assert tags.returncode == 0 and tags.stdout.strip() == "", tags.stdout
        listing = pprof(go_env, "-raw", f"{link}/raw")
        assert listing.returncode == 0 and "Samples:" in listing.stdout, listing.stderr
    paths = requests.post(live_server + "/?strip=paths", data=data, timeout=30).text.strip()
    files = re.findall(r" (\S+\.(?:go|s)):\d+ s=", pprof(go_env, "-raw", f"{paths}/raw").stdout)
    assert files and not [f for f in files if "/" in f]


def plain_python() -> list[str]:
    """A python3 that sees no installed packages: -I (isolated) -S (no site-packages)."""
    exe = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    return [exe, "-I", "-S"]


def test_the_cli_from_the_index_page_uploads_with_no_server_flag(
    live_server: str, tmp_path: Path
) -> None:
    index = requests.get(live_server + "/", timeout=30).text
    line = html.unescape(re.search(r'<code id="cli-install">(.*?)</code>', index).group(1))
    assert line == f"curl -o pprof-share {live_server}/pprof-share && chmod +x pprof-share"
    subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True, timeout=60)
    script = tmp_path / "pprof-share"
    assert os.access(script, os.X_OK)
    shutil.copy(LABELS, tmp_path / "cpu.pb.gz")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no PPROF_SHARE_SERVER
    result = subprocess.run(
        [*plain_python(), str(script), "upload", "--strip", "labels", "cpu.pb.gz"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    link = result.stdout.strip()
    assert re.fullmatch(re.escape(live_server) + r"/[A-Za-z0-9_-]{16}", link), link
    record = requests.get(link, headers={"Accept": "application/json"}, timeout=30).json()
    assert record["kind"]["name"] == "cpu"
    raw = requests.get(link + "/raw", timeout=30).content
    assert b"/api/users" not in gzip.decompress(raw)  # the labels were stripped
    # An id that starts with '-' (one in 64 do) is the profile, not an option.
    result = subprocess.run(
        [*plain_python(), str(script), "delete", "-JZx8dkX82nVnq_l", "--token", "t"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and "(HTTP 404)" in result.stderr, result.stderr


@pytest.mark.go
@pytest.mark.browser
@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        ("hide=runtime&g=lines&focus=main\\.|sort\\.(Ints|Sort)", "#si=samples"),
        ("diff_base={small}&h=runtime&normalize=1", ""),
    ],
)
def test_the_pages_pprof_command_opens_the_same_view(
    live_server: str, go_env: dict[str, str], page, query: str, fragment: str
) -> None:  # type: ignore[no-untyped-def]
    """The command beside the page, run with -top in place of -http=:, prints what the page's
    own /top text gives for its query: the diff, the filters (shell-quoted), the granularity
    and a sample type that is not the default all travel as pprof's flags."""
    link = requests.post(live_server + "/", data=LABELS.read_bytes(), timeout=30).text.strip()
    small = requests.post(
        live_server + "/", data=(CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes(), timeout=30
    ).text.strip()
    query = query.format(small=small.rsplit("/", 1)[1])
    page.goto(f"{link}?{requests.utils.quote(query, safe='=&')}{fragment}")
    page.wait_for_selector("#viewer[data-state=ready]", timeout=60_000)
    command = shlex.split(page.input_value("#pprof-cmd"))
    assert command[:4] == ["go", "tool", "pprof", "-http=:"] and command[-1] == f"{link}/raw"
    go = pprof(go_env, "-top", "-nodefraction=0", *command[4:])
    assert go.returncode == 0, go.stderr
    si = "&si=samples" if fragment else ""
    ours = requests.get(f"{link}/top?{requests.utils.quote(query, safe='=&')}{si}", timeout=60)
    assert ours.status_code == 200, ours.text
    assert go.stdout == ours.text
    assert "Active filters:" in ours.text and "runtime." not in ours.text
    # "Embed" is the same view's flame graph for an iframe: the same query (and type).
    embed = page.get_attribute("#embed-link", "href")
    assert embed.split("?")[0] == f"{link}/embed"
    want = parse_qs(query + si, keep_blank_values=True)
    assert parse_qs(urlsplit(embed).query, keep_blank_values=True) == want
    page.goto(embed)
    page.wait_for_selector("#embed[data-state=ready]", timeout=60_000)
    assert "hide=runtime" in page.inner_text("#filters")
    assert page.console_errors == []
