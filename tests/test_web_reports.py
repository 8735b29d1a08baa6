"""The flame graph / top JSON endpoints and the /<id>/top text, through the Flask test client."""

from __future__ import annotations

import gzip

import pytest

from share.analysis.flame import flame

from conftest import CORPUS


@pytest.fixture
def api(client):  # type: ignore[no-untyped-def]
    """The Flask test client of a fresh app."""
    return client


def upload(client, path: str) -> str:  # type: ignore[no-untyped-def]
    reply = client.post(
        "/", data=(CORPUS / path).read_bytes(), headers={"Accept": "application/json"}
    )
    assert reply.status_code in (200, 201), reply.data
    return reply.get_json()["id"]


def test_flamegraph_json_shape(api) -> None:  # type: ignore[no-untyped-def]
    pid = upload(api, "go-runtime/cpu-small.pb.gz")
    doc = api.get(f"/api/v1/profiles/{pid}/flamegraph").get_json()
    assert doc["sample_type"] == {"type": "cpu", "unit": "nanoseconds"}
    assert doc["sample_index"] == doc["default_sample_index"] == 1
    assert doc["sample_types"] == [
        {"type": "samples", "unit": "count"},
        {"type": "cpu", "unit": "nanoseconds"},
    ]
    assert doc["total"] == 3_040_000_000 and doc["unit"] == "nanoseconds"
    assert doc["no_samples"] is False
    nodes = doc["nodes"]
    n = len(nodes["name"])
    assert n > 50 and all(len(nodes[k]) == n for k in ("depth", "value", "self"))
    assert (nodes["name"][0], nodes["depth"][0], nodes["value"][0]) == (0, 0, doc["total"])
    assert doc["names"][0] == "" and len(doc["files"]) == len(doc["names"])
    assert "crypto/sha256.block" in doc["names"]
    assert doc["trimmed"]["budget"] == flame.FLAME_NODE_BUDGET
    assert doc["trimmed"]["node_fraction"] == 0


def test_flamegraph_other_type_and_fraction(api) -> None:  # type: ignore[no-untyped-def]
    pid = upload(api, "go-runtime/heap.pb.gz")
    full = api.get(f"/api/v1/profiles/{pid}/flamegraph?si=alloc_space&nf=0").get_json()
    assert full["sample_type"]["type"] == "alloc_space" and full["sample_index"] == 1
    assert full["trimmed"] == {"nodes": 0, "value": 0, "max": 0, "node_fraction": 0.0, "budget": 0}
    cut = api.get(f"/api/v1/profiles/{pid}/flamegraph?si=1&nf=0.5").get_json()
    assert len(cut["nodes"]["name"]) < len(full["nodes"]["name"])
    assert cut["total"] == full["total"] and cut["nodes"]["value"][0] == full["nodes"]["value"][0]
    assert cut["trimmed"]["node_fraction"] == 0.5 and cut["trimmed"]["budget"] == 0
    small = api.get(f"/api/v1/profiles/{pid}/flamegraph?si=1&budget=10").get_json()
    assert len(small["nodes"]["name"]) == 10 and small["trimmed"]["budget"] == 10
    assert small["total"] == full["total"] and small["trimmed"]["nodes"] > 0
    both = api.get(f"/api/v1/profiles/{pid}/flamegraph?si=1&budget=3&nf=0.5").get_json()
    assert len(both["nodes"]["name"]) == 3


def test_default_budget_beats_the_old_fraction_on_a_deep_profile(api) -> None:  # type: ignore[no-untyped-def]
    # cpu-xl: almost all of its weight lies in frames under 0.1% of the total.
    pid = upload(api, "go-runtime/cpu-xl.pb.gz")
    doc = api.get(f"/api/v1/profiles/{pid}/flamegraph").get_json()
    old = api.get(f"/api/v1/profiles/{pid}/flamegraph?nf=0.001").get_json()
    assert len(doc["nodes"]["name"]) == flame.FLAME_NODE_BUDGET
    assert doc["trimmed"]["value"] < old["trimmed"]["value"]
    assert doc["trimmed"]["max"] <= min(doc["nodes"]["value"])
    assert doc["nodes"]["value"][0] == old["nodes"]["value"][0] == doc["total"]


def test_top_json(api) -> None:  # type: ignore[no-untyped-def]
    pid = upload(api, "go-runtime/cpu-small.pb.gz")
    doc = api.get(f"/api/v1/profiles/{pid}/top?si=cpu").get_json()
    rows = doc["rows"]
    assert set(rows) == {"name", "file", "inline", "flat", "flat_pct", "sum_pct", "cum", "cum_pct"}
    assert all(len(column) == 105 for column in rows.values()) and doc["nodes"] == 105
    assert rows["name"][0] == "crypto/sha256.block" and rows["flat"][0] == 660_000_000
    assert rows["flat_pct"][0] == pytest.approx(21.71, abs=0.01)
    assert rows["sum_pct"][-1] == pytest.approx(100)
    assert rows["cum"][0] >= rows["flat"][0] and rows["file"][0].endswith("sha256block_amd64.s")
    assert len(api.get(f"/api/v1/profiles/{pid}/top?n=3").get_json()["rows"]["name"]) == 3


def test_top_text_is_go_layout(api) -> None:  # type: ignore[no-untyped-def]
    pid = upload(api, "go-runtime/cpu-small.pb.gz")
    reply = api.get(f"/{pid}/top?n=2")
    assert reply.status_code == 200 and reply.mimetype == "text/plain"
    lines = reply.get_data(as_text=True).splitlines()
    assert "Showing top 2 nodes out of 105" in lines
    assert lines[-3] == "      flat  flat%   sum%        cum   cum%"
    assert lines[-2].endswith("  crypto/sha256.block")


@pytest.mark.parametrize(
    "path", ["/api/v1/profiles/{}/flamegraph", "/api/v1/profiles/{}/top", "/{}/top"]
)
def test_views_go_out_gzipped_to_clients_that_take_it(api, path: str) -> None:  # type: ignore[no-untyped-def]
    url = path.format(upload(api, "go-runtime/cpu-xl.pb.gz"))
    plain = api.get(url)
    assert plain.status_code == 200 and "Content-Encoding" not in plain.headers
    packed = api.get(url, headers={"Accept-Encoding": "gzip, deflate, br"})
    assert packed.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.data) == plain.data
    assert len(packed.data) < len(plain.data) / 3
    assert packed.mimetype == plain.mimetype
    for reply in (plain, packed):
        assert "Accept-Encoding" in reply.headers["Vary"]
    refused = api.get(url, headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "Content-Encoding" not in refused.headers and refused.data == plain.data
    anything = api.get(url, headers={"Accept-Encoding": "*"})
    assert anything.headers["Content-Encoding"] == "gzip"


def test_views_are_cached_per_resolved_type(app, api) -> None:  # type: ignore[no-untyped-def]
    pid = upload(api, "go-runtime/cpu-small.pb.gz")
    once = app.extensions["share"].once
    for si in ("cpu", "1", ""):  # the same type by name, index and default
        assert api.get(f"/api/v1/profiles/{pid}/flamegraph?si={si}").status_code == 200
    assert once.computed == 1
    assert api.get(f"/api/v1/profiles/{pid}/flamegraph?si=samples").status_code == 200
    assert once.computed == 2


@pytest.mark.parametrize(
    ("query", "message", "text_query"),
    [
        ("si=wall", "unknown sample type 'wall': this profile has 'samples', 'cpu'", "si=wall"),
        ("si=7", "outside [0..1]", "si=7"),
        ("nf=2", "must be between 0 and 1", "n=-1"),
        ("nf=abc", "is not a number", "n=abc"),
        ("budget=-5", "must be 0 or more", "n=-5"),
    ],
)
def test_bad_parameters_are_400(api, query: str, message: str, text_query: str) -> None:  # type: ignore[no-untyped-def]
    pid = upload(api, "go-runtime/cpu-small.pb.gz")
    reply = api.get(f"/api/v1/profiles/{pid}/flamegraph?{query}")
    assert reply.status_code == 400
    assert message in reply.get_json()["error"]["message"]
    text = api.get(f"/{pid}/top?{text_query}")
    assert text.status_code == 400 and text.mimetype == "text/plain"


def test_unknown_profile_is_404(api) -> None:  # type: ignore[no-untyped-def]
    for url in ("/api/v1/profiles/AAAAAAAAAAAAAAAA/top", "/AAAAAAAAAAAAAAAA/top"):
        assert api.get(url).status_code == 404


def test_profile_without_samples(api) -> None:  # type: ignore[no-untyped-def]
    pid = upload(api, "edge/minimal-empty-profile.pb")
    doc = api.get(f"/api/v1/profiles/{pid}/flamegraph").get_json()
    assert doc["no_samples"] is True and doc["sample_index"] is None
    assert doc["sample_types"] == [] and doc["nodes"]["value"] == [0]
    assert api.get(f"/api/v1/profiles/{pid}/top").get_json()["rows"]["name"] == []
    assert api.get(f"/api/v1/profiles/{pid}/top?si=cpu").status_code == 400
