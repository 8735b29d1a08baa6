"""A collection's selections against the real `go tool pprof` (Go 1.19), on a running server:
the views of a range, a label selector (each operator) and a kind equal pprof's on the selected
members' own files, a base selection equals -diff_base, and `go tool pprof <collection link>`
reads the merged selection."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from conftest import CORPUS, unavailable, unique_profile

CPU = ["cpu-small", "cpu-labels", "cpu-large", "pprof-tool-diffbase-cpu", "pprof-tool-merged-cpu"]

pytestmark = pytest.mark.go


@pytest.fixture(scope="module")
def go_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if shutil.which("go") is None:
        unavailable("go is not installed (make test installs golang-go)")
    home = tmp_path_factory.mktemp("go-collections")
    return dict(
        os.environ, HOME=str(home), PPROF_TMPDIR=str(home / "pprof"), GOCACHE=str(home / "c"),
        PPROF_BINARY_PATH=str(home / "no-binaries"),
    )  # fmt: skip


def pprof(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["go", "tool", "pprof", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def fleet(live_server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Five CPU profiles on two pods and versions a minute apart, two heap profiles."""
    r = requests.post(live_server + "/api/v1/collections", data={"title": "go"}, timeout=30)
    link, token = r.text.strip(), r.headers["X-Collection-Token"]
    start = (int(time.time()) // 3600 - 2) * 3600
    files = tmp_path_factory.mktemp("members")
    members = []
    datas = [(CORPUS / f"go-runtime/{n}.pb.gz").read_bytes() for n in CPU]
    datas += [unique_profile("go-heap-0"), unique_profile("go-heap-1")]
    for i, data in enumerate(datas):
        labels = {"pod": f"api-{i % 2}", "version": f"v{i}"}
        r = requests.post(
            link, data=data, timeout=30,
            params=[("label", f"{k}={v}") for k, v in labels.items()] + [("time", start + 60 * i)],
            headers={"X-Collection-Token": token},
        )  # fmt: skip
        assert r.status_code in (200, 201), r.text  # 200: stored before, by another test
        path = files / f"m{i}.pb.gz"
        path.write_bytes(requests.get(r.text.strip() + "/raw", timeout=30).content)
        members.append(
            {
                "path": str(path),
                "time": start + 60 * i,
                "kind": "heap" if i >= 5 else "cpu",
                **labels,
            }
        )  # noqa: E501
    return {"link": link, "members": members, "start": start}


def chosen(fleet: dict[str, Any], kind: str = "cpu", **where: Any) -> list[str]:
    out = []
    for m in fleet["members"]:
        if m["kind"] == kind and all(test(m) for test in where.values()):
            out.append(m["path"])
    return out


def ours(fleet: dict[str, Any], view: str, **query: str) -> str:
    r = requests.get(f"{fleet['link']}/{view}", params=query, timeout=60)
    assert r.status_code == 200, r.text
    return r.text


def test_top_of_each_selection_is_pprof_s(fleet: dict[str, Any], go_env: dict[str, str]) -> None:
    t0 = fleet["start"]
    cases = [
        ({}, chosen(fleet)),
        (
            {"from": str(t0 + 60), "to": str(t0 + 240)},
            chosen(fleet, t=lambda m: t0 + 60 <= m["time"] < t0 + 240),
        ),  # noqa: E501
        ({"match": 'pod="api-1"'}, chosen(fleet, p=lambda m: m["pod"] == "api-1")),
        ({"match": 'pod!="api-1"'}, chosen(fleet, p=lambda m: m["pod"] != "api-1")),
        ({"match": 'version=~"v[13]"'}, chosen(fleet, v=lambda m: m["version"] in ("v1", "v3"))),
        (
            {"match": 'version!~"v[13]",pod="api-0"'},
            chosen(fleet, v=lambda m: m["version"] not in ("v1", "v3") and m["pod"] == "api-0"),
        ),  # noqa: E501
        ({"kind": "heap"}, chosen(fleet, "heap")),
    ]
    for query, files in cases:
        assert files, query
        expected = pprof(go_env, "-top", "-nodefraction=0", *files)
        assert ours(fleet, "top", **query) == expected, query


def test_peek_and_tags_of_a_selection(fleet: dict[str, Any], go_env: dict[str, str]) -> None:
    files = chosen(fleet, p=lambda m: m["pod"] == "api-0")
    query = {"match": 'pod="api-0"'}
    assert ours(fleet, "tags", **query) == pprof(go_env, "-tags", *files)
    got = ours(fleet, "peek", peek="sort\\.Sort$", **query)
    assert got == pprof(go_env, "-peek=sort\\.Sort$", *files)


def test_a_base_selection_is_pprof_s_diff_base(
    fleet: dict[str, Any], go_env: dict[str, str], tmp_path: Path
) -> None:
    """Go's -diff_base takes one source (a repeated flag keeps the last): the base selection
    equals -diff_base of its members merged by `go tool pprof -proto`."""
    head = chosen(fleet, p=lambda m: m["pod"] == "api-1")
    base = chosen(fleet, p=lambda m: m["pod"] == "api-0")
    merged = tmp_path / "base.pb.gz"
    done = subprocess.run(
        ["go", "tool", "pprof", "-proto", *base], capture_output=True, env=go_env, timeout=120
    )
    merged.write_bytes(done.stdout)
    expected = pprof(go_env, "-top", "-nodefraction=0", f"-diff_base={merged}", *head)
    got = ours(fleet, "top", match='pod="api-1"', base_match='pod="api-0"')
    assert got == expected


def test_go_tool_pprof_reads_the_collection_link(
    fleet: dict[str, Any], go_env: dict[str, str], tmp_path: Path
) -> None:
    link = f"{fleet['link']}?match=pod%3D%22api-1%22"
    got = pprof(go_env, "-top", "-nodefraction=0", link)
    files = chosen(fleet, p=lambda m: m["pod"] == "api-1")
    assert got == pprof(go_env, "-top", "-nodefraction=0", *files)
