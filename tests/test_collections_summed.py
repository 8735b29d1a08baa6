"""A range's flame graph and top table summed from its parts' stack summaries, not merged
(share.analysis.combine.summed): what the merged profile would show, without the merge.

The sum is checked against pprof's merge made by the analysis core (the core's own merge is
checked against `go tool pprof` elsewhere: test_collections_go.py, test_web_merge*.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_collections_blocks import OPEN, create

from share import pprof
from share.analysis.combine import combine, summed
from share.analysis.flame.flame import by_name
from share.analysis.model.tables import tables
from share.analysis.views import options, views

from conftest import CORPUS, make_app, unique_profile

GO = CORPUS / "go-runtime"
LIMITS = pprof.Limits()


def parse(data: bytes) -> Any:
    return pprof.parse(data, max_profile_bytes=1 << 30, limits=LIMITS)


GROUPS = [
    ("cpu-labels.pb.gz", "cpu-large.pb.gz", "cpu-small.pb.gz"),  # inlined frames, labels
    ("heap.pb.gz", "heap-large.pb.gz", "allocs.pb.gz"),  # four sample types
    ("block.pb.gz", "mutex.pb.gz"),
]


@pytest.mark.parametrize("names", GROUPS, ids=lambda g: g[0])
def test_a_sum_of_summaries_shows_what_the_merge_shows(names: tuple[str, ...]) -> None:
    """Every sample type: the top table's JSON equal to the merged profile's, the flame graph
    equal node for node (every node: budget 0)."""
    parsed = [parse((GO / n).read_bytes()) for n in names]
    parts = [summed.of(p) for p in parsed]
    assert summed.summable(parts)
    total = summed.summed(parts)
    merged = parse(combine.merged_profile(parsed, "a range"))
    t = tables(merged)
    for index in range(len(t.sample_types)):
        query = {"sample_index": str(index), "budget": "0"}
        for name in views.SUMMED_VIEWS:
            o = options.parse(name, query, list(t.sample_types), t.default_sample_type)
            assert views.summed_viewable(name, o)
            want = json.loads(views.render(name, [merged], o))
            got = json.loads(views.render_summed(name, total, o))
            if name == "flamegraph":
                want, got = by_name(want), by_name(got)
            assert got == want, (names, index, name)


def test_what_a_sum_cannot_show_is_merged() -> None:
    """Parts a merge refuses, negative values, a diff's base: not summable."""
    cpu, heap = (summed.of(parse((GO / n).read_bytes())) for n in ("cpu-small.pb.gz", "heap.pb.gz"))
    assert summed.summable([cpu, cpu])
    assert not summed.summable([cpu, heap])  # other sample types: the merge says why
    negative = summed.of(parse((GO / "cpu-small.pb.gz").read_bytes()))
    negative.summable = False
    assert not summed.summable([cpu, negative])
    diff = summed.of(parse((GO / "pprof-tool-diffbase-cpu.pb.gz").read_bytes()))
    assert not diff.summable or not summed.summable([cpu, diff])
    # The sum of one part is that part.
    one = summed.summed([cpu])
    assert np.array_equal(one.values.sum(axis=0), cpu.values.sum(axis=0))
    o = {"sample_index": 0, "node_fraction": 0.0, "budget": 50_000, "node_count": 0}
    assert not views.summed_viewable("top", {**o, "focus": "main"})
    assert not views.summed_viewable("peek", o)


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Any, Any, str, list[str], float]:
    app = make_app({"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m.db", **OPEN})
    client = app.test_client()
    cid, token = create(client)
    at = 1_700_000_000.0  # settled windows of 10 s: four members in three of them, and a pod
    pids = []
    for i, when in enumerate((at + 1, at + 2, at + 11, at + 12, at + 21, at + 22)):
        r = client.post(
            f"/c/{cid}",
            query_string=[("label", f"pod=p{i % 2}"), ("time", str(when))],
            data=unique_profile(f"s{i}", f"go-runtime/cpu-{'labels' if i % 3 else 'small'}.pb.gz"),
            headers={"X-Collection-Token": token},
        )
        assert r.status_code == 201, r.data
        pids.append(r.data.decode().strip().rsplit("/", 1)[1])
    return app, client, cid, pids, at


def merged_view(client: Any, pids: list[str], name: str, **query: str) -> Any:
    json_please = {"Accept": "application/json"}
    r = client.post("/api/v1/merge", json={"profiles": pids}, headers=json_please)
    assert r.status_code in (200, 201), r.data
    got = client.get(f"/api/v1/profiles/{r.json['id']}/{name}", query_string=query)
    assert got.status_code == 200, got.data
    return got.json


def test_a_range_is_summed_not_merged_and_equals_its_merge(fleet: Any) -> None:
    app, client, cid, pids, at = fleet
    share = app.extensions["share"]
    stored = set(share.blobs.keys())
    query = {"from": str(at), "to": str(at + 25), "budget": "0"}  # edges cut the last window
    top = client.get(f"/api/v1/collections/{cid}/top", query_string=query)
    assert top.status_code == 200, top.data
    assert int(top.headers["X-Collection-Summed"]) >= 2
    assert "X-Collection-Profile" not in top.headers
    assert top.headers["X-Collection-Members"] == "6"
    # Two settled 10 s windows and the two members of the cut one: no pre-merged block.
    assert (top.headers["X-Collection-Windows"], top.headers["X-Collection-Blocks"]) == ("2", "0")
    flame = client.get(f"/api/v1/collections/{cid}/flamegraph", query_string=query)
    assert flame.status_code == 200 and "X-Collection-Summed" in flame.headers
    # Summed in windows (share.collections.windows): nothing merged, nothing stored.
    made = set(share.blobs.keys()) - stored
    assert made == set()
    doc = client.get(
        f"/api/v1/collections/{cid}/selection", query_string={**query, "summed": "1"}
    ).json
    assert doc["profile"] is None and doc["summed"] == 4 and doc["members"] == 6
    assert doc["windows"] == 2 and doc["blocks"] == 0, doc
    assert set(share.blobs.keys()) - stored == made
    assert top.json == merged_view(client, pids, "top", budget="0")
    assert by_name(flame.json) == by_name(merged_view(client, pids, "flamegraph", budget="0"))
    # A label selection too; and a view with pprof's options reads the merge, as before.
    pod = {**query, "match": 'pod="p1"'}
    r = client.get(f"/api/v1/collections/{cid}/top", query_string=pod)
    assert r.status_code == 200 and r.json == merged_view(client, pids[1::2], "top")
    focused = client.get(f"/api/v1/collections/{cid}/top", query_string={**query, "focus": "main"})
    assert focused.status_code == 200 and "X-Collection-Profile" in focused.headers


def test_the_snapshot_link_merges_the_selection_and_leads_to_it(fleet: Any) -> None:
    _, client, cid, pids, at = fleet
    query = {"from": str(at), "to": str(at + 25), "si": "cpu", "focus": "main"}
    r = client.get(f"/c/{cid}/snapshot", query_string=query)
    assert r.status_code == 303, r.data
    path, _, options_asked = r.headers["Location"].rpartition("?")
    assert options_asked == "si=cpu&focus=main"
    pid = path.rsplit("/", 1)[1]
    raw = client.get(f"/c/{cid}/raw", query_string={"from": str(at), "to": str(at + 25)})
    got = client.get(f"/{pid}/raw")
    assert gzip.decompress(got.data) == gzip.decompress(raw.data)  # the selection's merge
    embed = client.get(f"/c/{cid}/snapshot/embed", query_string=query)
    assert embed.status_code == 303
    assert embed.headers["Location"].endswith(f"/{pid}/embed?si=cpu&focus=main")
    assert client.get(f"/c/{cid}/snapshot/nothing").status_code == 404
