"""go tool pprof against a live server: diffs of links, merged links, diffs uploaded."""

from __future__ import annotations

import pytest
import requests

from conftest import CORPUS

pytestmark = pytest.mark.go

SMALL, LABELS, LARGE = (
    "go-runtime/cpu-small.pb.gz",
    "go-runtime/cpu-labels.pb.gz",
    "go-runtime/cpu-large.pb.gz",
)


def put(server: str, path: str, data: bytes | None = None) -> str:
    body = data if data is not None else (CORPUS / path).read_bytes()
    reply = requests.put(f"{server}/{path.rsplit('/', 1)[-1]}", data=body, timeout=60)
    assert reply.status_code in (200, 201), reply.text
    return reply.text.strip()


def test_go_tool_pprof_diffs_two_links(live_server, go_pprof) -> None:  # type: ignore[no-untyped-def]
    new, base = put(live_server, LABELS), put(live_server, SMALL)
    for mode in ("diff_base", "base"):
        code, out, err = go_pprof(["-top", f"-{mode}={base}/raw", f"{new}/raw"])
        assert code == 0 and "Showing nodes accounting for" in out, err
        code, out, err = go_pprof(["-top", "-nodefraction=0", f"-{mode}={base}/raw", f"{new}/raw"])
        ours = requests.get(f"{new}/top?{mode}={base}", timeout=60)
        assert code == 0, err
        assert ours.status_code == 200 and ours.text == out


def test_a_merged_link_reads_as_pprofs_own_merge(live_server, go_pprof) -> None:  # type: ignore[no-untyped-def]
    links = [put(live_server, p) for p in (SMALL, LABELS, LARGE)]
    ids = [link.rsplit("/", 1)[1] for link in links]
    reply = requests.post(
        f"{live_server}/api/v1/merge",
        json={"profiles": links},
        headers={"Accept": "application/json"},
        timeout=60,
    )
    assert reply.status_code in (200, 201), reply.text
    merged = reply.json()["url"]
    comment = f"# pprof-share: merged from 3 profiles: {', '.join(ids)}"
    assert reply.json()["metadata"]["comments"] == [comment]
    raws = [f"{link}/raw" for link in links]
    theirs = go_pprof(["-raw", f"-add_comment={comment}", *raws])
    ours = go_pprof(["-raw", f"{merged}/raw"])
    assert theirs[0] == ours[0] == 0, (theirs[2], ours[2])
    assert ours[1] == theirs[1]
    top = go_pprof(["-top", "-nodefraction=0", *raws])
    assert requests.get(f"{merged}/top", timeout=60).text == top[1]


def test_a_diff_pprof_wrote_shows_as_the_live_diff(live_server, go_pprof, tmp_path) -> None:  # type: ignore[no-untyped-def]
    new, base = put(live_server, LABELS), put(live_server, SMALL)
    out = tmp_path / "diff.pb.gz"
    code, _, err = go_pprof(["-proto", "-output", str(out), f"-diff_base={base}/raw", f"{new}/raw"])
    assert code == 0, err
    stored = put(live_server, "diff.pb.gz", out.read_bytes())
    assert requests.get(f"{stored}/top", timeout=60).text == (
        requests.get(f"{new}/top?diff_base={base}", timeout=60).text
    )
    api = live_server + "/api/v1/profiles/"
    uploaded = requests.get(api + stored.rsplit("/", 1)[1] + "/flamegraph", timeout=60).json()
    live = requests.get(
        api + new.rsplit("/", 1)[1] + f"/flamegraph?diff_base={base}", timeout=60
    ).json()
    assert uploaded["diff"] is True and uploaded["diff_mode"] == "labels"
    for key in ("total", "before_total", "after_total", "width_total"):
        assert uploaded[key] == live[key]


def test_incompatible_links_get_pprofs_reason(live_server, go_pprof) -> None:  # type: ignore[no-untyped-def]
    """CPU with heap, Go heap with Node heap: the 400 carries what go tool pprof says."""
    for new, base in (
        (SMALL, "go-runtime/heap.pb.gz"),
        ("go-runtime/heap.pb.gz", "nodejs/heap.pb.gz"),
    ):
        a, b = put(live_server, new), put(live_server, base)
        code, _, err = go_pprof(["-top", f"-diff_base={b}/raw", f"{a}/raw"])
        reason = err.strip().splitlines()[-1]
        assert code != 0 and "incompatible types" in reason
        reply = requests.get(f"{a}/top?diff_base={b}", timeout=60)
        assert reply.status_code == 400 and reason in reply.text
        code, _, err = go_pprof(["-top", f"{a}/raw", f"{b}/raw"])
        reason = err.strip().splitlines()[-1].removeprefix("problem fetching source profiles: ")
        merged = requests.post(f"{live_server}/api/v1/merge", json={"profiles": [a, b]}, timeout=60)
        assert (
            code != 0 and merged.status_code == 400 and reason in merged.json()["error"]["message"]
        )
