"""Diff views and merges over HTTP (Flask test client): parameters, answers, limits, refusals."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from share import create_app, pprof

from conftest import CORPUS

SMALL, LABELS, HEAP = (
    "go-runtime/cpu-small.pb.gz",
    "go-runtime/cpu-labels.pb.gz",
    "go-runtime/heap.pb.gz",
)
JSON = {"Accept": "application/json"}


def form(*files: tuple[str, bytes]) -> dict[str, Any]:
    """A multipart form with each (name, bytes) as a field 'file'."""
    return {"file": [(io.BytesIO(data), name) for name, data in files]}


def corpus(path: str) -> tuple[str, bytes]:
    return Path(path).name, (CORPUS / path).read_bytes()


def upload(client: Any, path: str) -> str:
    reply = client.post("/", data=(CORPUS / path).read_bytes(), headers=JSON)
    assert reply.status_code in (200, 201), reply.data
    return reply.get_json()["id"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_app(tmp_path: Path, clock: Clock):  # type: ignore[no-untyped-def]
    def make(**settings: Any) -> Any:
        stores = {"BLOBS": f"file:{tmp_path}/blobs", "META": f"sqlite:{tmp_path}/meta.sqlite3"}
        return create_app({**stores, "CLOCK": clock, "PRECOMPUTE": "off", **settings}).test_client()

    return make


@pytest.fixture
def web(make_app):  # type: ignore[no-untyped-def]
    return make_app()


def test_every_view_takes_a_base_by_id_or_link(web) -> None:  # type: ignore[no-untyped-def]
    new, base = upload(web, LABELS), upload(web, SMALL)
    text = web.get(f"/{new}/top?diff_base={base}")
    assert text.status_code == 200 and b"Total samples = 3.04s" in text.data
    link = web.get(f"/{new}/top?diff_base=http://elsewhere:8000/{base}/raw")
    assert link.data == text.data
    flame = web.get(f"/api/v1/profiles/{new}/flamegraph?diff_base={base}").get_json()
    assert flame["diff"] is True and flame["before_total"] == 3_040_000_000
    top = web.get(f"/api/v1/profiles/{new}/top?base={base}&normalize=1").get_json()
    assert top["diff_mode"] == "base" and top["normalize"] is True
    plain = web.get(f"/api/v1/profiles/{new}/top").get_json()
    assert plain["diff"] is False and plain["total"] == 5_820_000_000


def test_a_diff_is_computed_once_per_base_and_mode(make_app) -> None:  # type: ignore[no-untyped-def]
    web = make_app()
    once = web.application.extensions["share"].once
    new, base = upload(web, LABELS), upload(web, SMALL)
    for ref in (base, f"http://x/{base}", f"localhost:8000/{base}/top"):
        assert web.get(f"/{new}/top?diff_base={ref}").status_code == 200
    assert once.computed == 2  # the -top text and pprof's warnings of the same diff
    assert web.get(f"/{new}/top?base={base}").status_code == 200
    assert once.computed == 4


def test_bases_must_exist_and_be_live(web, clock) -> None:  # type: ignore[no-untyped-def]
    new = upload(web, LABELS)
    missing = web.get(f"/{new}/top?diff_base=AAAAAAAAAAAAAAAA")
    assert missing.status_code == 404 and b"AAAAAAAAAAAAAAAA" in missing.data
    short = web.post("/?expires=1h", data=(CORPUS / SMALL).read_bytes(), headers=JSON)
    base = short.get_json()["id"]
    assert web.get(f"/{new}/top?diff_base={base}").status_code == 200
    clock.now += 7200
    assert web.get(f"/{new}/top?diff_base={base}").status_code == 410


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("diff_base={b}&base={b}", "-base and -diff_base flags cannot both be specified"),
        ("normalize=1", "must have base profile to normalize by"),
        ("diff_base=nonsense", "is neither a profile id nor a link"),
    ],
)
def test_bad_diff_parameters_are_400(web, query: str, message: str) -> None:  # type: ignore[no-untyped-def]
    new, base = upload(web, LABELS), upload(web, SMALL)
    reply = web.get(f"/api/v1/profiles/{new}/flamegraph?" + query.format(b=base))
    assert reply.status_code == 400 and message in reply.get_json()["error"]["message"]


def test_incompatible_profiles_are_a_400_with_pprofs_reason(web) -> None:  # type: ignore[no-untyped-def]
    cpu, heap = upload(web, SMALL), upload(web, HEAP)
    reason = "period type: incompatible types: {cpu nanoseconds 0 0} {space bytes 0 0}"
    for path in (
        f"/{cpu}/top",
        f"/api/v1/profiles/{cpu}/top",
        f"/api/v1/profiles/{cpu}/flamegraph",
    ):
        reply = web.get(f"{path}?diff_base={heap}")
        assert reply.status_code == 400 and reason.encode() in reply.data
    merge = web.post("/api/v1/merge", json={"profiles": [cpu, heap]})
    assert merge.status_code == 400 and reason in merge.get_json()["error"]["message"]


def test_merge_of_links_is_a_new_upload(web) -> None:  # type: ignore[no-untyped-def]
    a, b = upload(web, SMALL), upload(web, LABELS)
    reply = web.post("/api/v1/merge", json={"profiles": [a, f"http://h/{b}/raw"]})
    assert reply.status_code == 201 and reply.mimetype == "text/plain"
    link = reply.data.decode()
    assert link.endswith("\n") and link.count("\n") == 1 and reply.headers["X-Delete-Token"]
    merged = link.strip().rsplit("/", 1)[1]
    again = web.post("/api/v1/merge", json={"profiles": [a, b]}, headers=JSON)
    body = again.get_json()
    assert again.status_code == 200 and body["id"] == merged and body["deduplicated"] is True
    assert "delete_token" not in body and "X-Delete-Token" not in again.headers
    assert body["title"] == f"merge of {a}, {b}"
    assert body["metadata"]["comments"] == [f"# pprof-share: merged from 2 profiles: {a}, {b}"]
    top = web.get(f"/api/v1/profiles/{merged}/top").get_json()
    assert top["total"] == 3_040_000_000 + 5_820_000_000
    raw = pprof.parse(web.get(f"/{merged}/raw").data, max_profile_bytes=1 << 30)
    assert raw.n_samples == body["n_samples"]
    titled = web.post(
        "/api/v1/merge", json={"profiles": [b, a], "title": "fleet", "expires": "1h"}, headers=JSON
    )
    assert titled.status_code == 201 and titled.get_json()["title"] == "fleet"
    assert titled.get_json()["expires_at"] is not None


def test_merge_of_files_answers_as_an_upload(web) -> None:  # type: ignore[no-untyped-def]
    reply = web.post("/?merge=1", data=form(corpus(SMALL), corpus(LABELS)), headers=JSON)
    body = reply.get_json()
    assert reply.status_code == 201 and body["delete_token"]
    assert body["title"] == "merge of cpu-small.pb.gz, cpu-labels.pb.gz"
    durations = [
        pprof.parse(data, max_profile_bytes=1 << 30).message.duration_nanos
        for data in (corpus(SMALL)[1], corpus(LABELS)[1])
    ]
    assert body["metadata"]["duration_nanos"] == sum(durations)


def test_merge_refusals_name_the_problem(web) -> None:  # type: ignore[no-untyped-def]
    a = upload(web, SMALL)
    cases = [
        (web.post("/api/v1/merge", data="nope"), 400, '{"profiles"'),
        (web.post("/api/v1/merge", json={"profiles": "x"}), 400, '{"profiles"'),
        (web.post("/api/v1/merge", json={"profiles": []}), 400, "nothing to merge"),
        (web.post("/api/v1/merge", json={"profiles": [a, "zz"]}), 400, "neither a profile id"),
        (web.post("/api/v1/merge", json={"profiles": [a, "B" * 16]}), 404, "B" * 16),
        (web.post("/?merge=1", data=b"raw"), 400, "-F file=@a.pb.gz"),
    ]
    bad = form(corpus(SMALL), ("b.pb.gz", gzip.compress(b"junk")))
    cases.append((web.post("/?merge=1", data=bad), 400, "b.pb.gz: "))
    for reply, code, text in cases:
        assert reply.status_code == code, reply.data
        body = reply.get_json(silent=True)
        assert text in (body["error"]["message"] if body else reply.data.decode())


def test_merge_and_diff_limits_are_settings(make_app) -> None:  # type: ignore[no-untyped-def]
    web = make_app(MERGE_MAX_PROFILES=2)
    a, b, c = (upload(web, p) for p in (SMALL, LABELS, "go-runtime/cpu-large.pb.gz"))
    assert web.post("/api/v1/merge", json={"profiles": [a, b]}).status_code == 201
    over = web.post("/api/v1/merge", json={"profiles": [a, b, c]})
    assert (
        over.status_code == 413
        and "SHARE_MERGE_MAX_PROFILES" in over.get_json()["error"]["message"]
    )
    diff = web.get(f"/{a}/top?diff_base={b},{c}")
    assert diff.status_code == 413 and b"a diff of 3 profiles" in diff.data
    small = make_app(MERGE_MAX_BYTES=40_000)  # cpu-small is 30 kB decompressed, cpu-labels 30 kB
    reply = small.post("/api/v1/merge", json={"profiles": [a, b]})
    assert (
        reply.status_code == 413 and "SHARE_MERGE_MAX_BYTES" in reply.get_json()["error"]["message"]
    )
    files = form(corpus(SMALL), corpus(LABELS))
    assert small.post("/?merge=1", data=files).status_code == 413
    assert small.get(f"/{a}/top?diff_base={b}").status_code == 413


@pytest.mark.parametrize(
    "refine",
    ["focus=main", "hide=runtime&granularity=lines", "tagfocus=endpoint=users", "show_from=main"],
)
def test_a_filtered_diff_keeps_both_sides(web, refine: str) -> None:  # type: ignore[no-untyped-def]
    """With pprof's filters a diff still gives each side (the page draws and colours by them):
    each side is that profile refined alone, as the filters keep or reshape stacks one sample
    at a time, and pprof's signed values are after less before."""
    new, base = upload(web, LABELS), upload(web, SMALL)
    api = f"/api/v1/profiles/{new}"
    fg = web.get(f"{api}/flamegraph?diff_base={base}&{refine}").get_json()
    nodes = fg["nodes"]
    assert fg["diff"] and fg["filters"]
    for value, before, after in zip(nodes["value"], nodes["before"], nodes["after"], strict=True):
        assert value == after - before
    assert nodes["after"][0] > 0
    # The base (cpu-small) has no labels: a tag filter leaves it nothing.
    assert (nodes["before"][0] > 0) == ("tagfocus" not in refine)
    assert fg["width_total"] == nodes["before"][0] + nodes["after"][0]
    top = web.get(f"{api}/top?diff_base={base}&{refine}").get_json()
    rows = top["rows"]
    plain = {
        side: web.get(f"/api/v1/profiles/{pid}/top?{refine}").get_json()["rows"]
        for side, pid in (("before", base), ("after", new))
    }
    for side, own in plain.items():
        flat = dict(zip(own["name"], own["flat"], strict=True))
        cum = dict(zip(own["name"], own["cum"], strict=True))
        for i, name in enumerate(rows["name"]):
            assert rows[f"{side}_flat"][i] == flat.get(name, 0), (side, name)
            assert rows[f"{side}_cum"][i] == cum.get(name, 0), (side, name)
    diffs = [rows["after_flat"][i] - rows["before_flat"][i] for i in range(len(rows["name"]))]
    assert rows["flat"] == diffs
    assert top["before_total"] == fg["before_total"] and top["after_total"] == fg["after_total"]


def by_path(doc: dict[str, Any]) -> dict[tuple[str, ...], tuple[int, int, int, int]]:
    """Each node of a flame graph document by its frame path: (before, after, their selfs)."""
    names, nodes = doc["names"], doc["nodes"]
    out, path = {}, []
    for i, depth in enumerate(nodes["depth"]):
        del path[max(depth - 1, 0) :]
        if depth:
            path.append(names[nodes["name"][i]])
        sides = ("before", "after", "before_self", "after_self")
        out[tuple(path)] = tuple(nodes[k][i] for k in sides)
    return out


@pytest.mark.parametrize("refine", ["", "&hide=runtime"])
def test_zoom_into_a_diff_lays_out_its_subtree_with_both_sides(web, refine: str) -> None:  # type: ignore[no-untyped-def]
    """A zoomed diff is the whole diff's subtree under the path, node for node (with no budget
    to cut either), and with a budget it reaches deeper than the whole diff does."""
    new, base = upload(web, LABELS), upload(web, SMALL)
    api = f"/api/v1/profiles/{new}/flamegraph?diff_base={base}{refine}"
    whole = web.get(f"{api}&budget=0").get_json()
    paths = by_path(whole)
    deepest = max(paths, key=len)
    frames = list(deepest[:2])
    query = f"&zoom={json.dumps(frames)}"
    zoomed = web.get(f"{api}&budget=0{query}").get_json()
    assert zoomed["diff"] and zoomed["zoom"] == {"path": frames, "found": True}
    assert zoomed["before_total"] == whole["before_total"]
    under = {p: v for p, v in paths.items() if p[: len(frames)] == tuple(frames)}
    mine = {p: v for p, v in by_path(zoomed).items() if len(p) >= len(frames)}
    assert mine == under and len(mine) > 1
    nodes = zoomed["nodes"]
    assert nodes["value"] == [a - b for a, b in zip(nodes["after"], nodes["before"], strict=True)]
    # The chain above: the root and the first frame weigh what they weigh in the whole diff.
    assert by_path(zoomed)[()][:2] == paths[()][:2]
    assert by_path(zoomed)[tuple(frames[:1])][:2] == paths[tuple(frames[:1])][:2]
    small = web.get(f"{api}&budget=5").get_json()
    deep = web.get(f"{api}&budget=5{query}").get_json()
    assert max(deep["nodes"]["depth"]) > max(small["nodes"]["depth"])
    assert len(deep["nodes"]["depth"]) <= 1 + len(frames) + 5  # root, path, 5 under its end
    missing = web.get(f'{api}&zoom=["no.such.frame"]').get_json()
    assert missing["zoom"]["found"] is False and missing["nodes"]["depth"] == [0]
