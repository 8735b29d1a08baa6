"""Diffs with pprof's filters: the refine parameters apply to the combination as pprof applies
them, so `/ID/top?diff_base=B&focus=…` is `go tool pprof -top -diff_base=B -focus=… ID` and
peek, tags and dot take a base too."""

from __future__ import annotations

import pytest

from conftest import CORPUS

pytestmark = pytest.mark.go

NEW, BASE = "go-runtime/cpu-labels.pb.gz", "go-runtime/cpu-small.pb.gz"
CASES = [
    ("top", "diff_base", "focus=sort", ["-top", "-focus=sort"]),
    ("top", "base", "hide=runtime&granularity=lines", ["-top", "-hide=runtime", "-lines"]),
    ("top", "diff_base", "tagfocus=endpoint=/api/users", ["-top", "-tagfocus=endpoint=/api/users"]),
    ("peek", "diff_base", "peek=sort.pdqsort$", ["-peek=sort.pdqsort$"]),
    ("tags", "diff_base", "focus=sort", ["-tags", "-focus=sort"]),
    ("dot", "diff_base", "nodecount=12", ["-dot", "-nodecount=12"]),
]


@pytest.mark.parametrize(("view", "mode", "query", "flags"), CASES)
def test_a_filtered_diff_is_pprofs(client, go_pool, view, mode, query, flags) -> None:  # type: ignore[no-untyped-def]
    ids = []
    for path in (NEW, BASE):
        reply = client.post(
            "/", data=(CORPUS / path).read_bytes(), headers={"Accept": "application/json"}
        )
        ids.append(reply.get_json()["id"])
    nodefraction = ["-nodefraction=0"] if view == "top" else []
    go = go_pool.run([*flags, *nodefraction, f"-{mode}={CORPUS / BASE}", str(CORPUS / NEW)])
    assert go.returncode == 0, go.stderr
    ours = client.get(f"/{ids[0]}/{view}?{mode}={ids[1]}&{query}")
    assert ours.status_code == 200, ours.data
    if view == "dot":  # pprof's edge order between equal, opposite weights varies by run
        assert sorted(ours.data.splitlines()) == sorted(go.stdout.splitlines())
    else:
        assert ours.data.decode() == go.stdout.decode()
