"""Collections over HTTP on both store pairs: create, add, tokens, retries, bad input, limits,
retention, deletion, selections, blocks against plain merges, the timeline."""

from __future__ import annotations

import gzip
import io
import time
from typing import Any

import pytest

from share.collections.timeline import snap_range

from conftest import CORPUS, make_app, unique_profile

CPU = ["cpu-small", "cpu-labels", "cpu-large", "pprof-tool-diffbase-cpu", "pprof-tool-merged-cpu"]
OPEN = {"RATE_UPLOADS": "off", "RATE_UPLOAD_BYTES": "off", "RATE_DELETES": "off"}


def cpu(name: str) -> bytes:
    return (CORPUS / "go-runtime" / f"{name}.pb.gz").read_bytes()


@pytest.fixture
def app(backend: dict[str, Any]):  # type: ignore[no-untyped-def]
    return make_app({**backend, **OPEN, "COLLECTION_MAX_MEMBERS": 50})


@pytest.fixture
def client(app):  # type: ignore[no-untyped-def]
    return app.test_client()


def create(client: Any, **body: str) -> tuple[str, str]:
    r = client.post("/api/v1/collections", json=body, headers={"Accept": "application/json"})
    assert r.status_code == 201, r.data
    return r.json["id"], r.json["token"]


def add(
    client: Any, cid: str, token: str | None, data: bytes, labels: dict[str, str] | None = None,
    at: float | None = None, **query: str,
) -> Any:  # fmt: skip
    params = [("label", f"{k}={v}") for k, v in (labels or {}).items()]
    if at is not None:
        params.append(("time", f"{at:.3f}"))
    params += list(query.items())
    headers = {"X-Collection-Token": token} if token else {}
    return client.post(f"/c/{cid}", query_string=params, data=data, headers=headers)


def members(client: Any, cid: str, **query: str) -> list[dict[str, Any]]:
    r = client.get(f"/api/v1/collections/{cid}/members", query_string=query)
    assert r.status_code == 200, r.data
    return r.json["members"]


def text(client: Any, path: str, **query: str) -> str:
    r = client.get(path, query_string=query, headers={"Accept": "*/*"})
    assert r.status_code == 200, r.data
    return r.data.decode()


def merged_top(client: Any, pids: list[str], **query: str) -> str:
    """The -top text of the members merged by /api/v1/merge: what a selection must equal."""
    if len(pids) == 1:
        return text(client, f"/{pids[0]}/top", **query)
    r = client.post(
        "/api/v1/merge", json={"profiles": pids}, headers={"Accept": "application/json"}
    )
    assert r.status_code in (200, 201), r.data
    return text(client, f"/{r.json['id']}/top", **query)


# --- create, add, tokens ------------------------------------------------------------------
def test_create_answers_the_link_and_the_token(client: Any) -> None:
    r = client.post("/api/v1/collections", data={"title": "fleet", "retention": "7d"})
    assert r.status_code == 201
    link = r.data.decode()
    assert link.endswith("\n") and "/c/" in link
    token = r.headers["X-Collection-Token"]
    record = client.get(f"/api/v1/collections/{link.strip().rsplit('/', 1)[1]}").json
    assert record["title"] == "fleet" and record["retention_seconds"] == 7 * 86400
    assert record["members"] == 0 and "token" not in record and token not in str(record)


def test_add_needs_the_token_and_stores_nothing_without_it(client: Any) -> None:
    cid, token = create(client)
    data = unique_profile("token-test")
    for wrong in (None, "not-the-token"):
        r = add(client, cid, wrong, data, {"pod": "a"})
        assert r.status_code == 403 and b"token" in r.data
    assert members(client, cid) == []
    r = client.post("/", data=data, headers={"Accept": "application/json"})
    assert r.status_code == 201, "the refused add stored the profile anyway"
    r = add(client, cid, token, cpu("cpu-small"), {"pod": "a"})
    assert r.status_code == 201 and r.headers["X-Member-Added"] == "1"
    (m,) = members(client, cid)
    assert r.data.decode().strip() == m["url"] and m["labels"] == {"pod": "a"}
    assert m["kind"] == "cpu" and m["totals"][1]["type"] == "cpu" and m["totals"][1]["total"] > 0


def test_the_same_add_again_changes_nothing(client: Any) -> None:
    cid, token = create(client)
    at = time.time() - 60
    first = add(client, cid, token, cpu("cpu-small"), {"pod": "a"}, at)
    again = add(client, cid, token, cpu("cpu-small"), {"pod": "a"}, at)
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["X-Member-Added"] == "0" and again.data == first.data
    other = add(client, cid, token, cpu("cpu-small"), {"pod": "b"}, at)
    assert other.headers["X-Member-Added"] == "1"
    assert len(members(client, cid)) == 2


def test_every_upload_idiom_adds(client: Any) -> None:
    cid, token = create(client)
    h = {"X-Collection-Token": token, "X-Labels": "pod=api-1, zone=eu"}
    form = {"file": (io.BytesIO(cpu("cpu-small")), "c.pb.gz"), "label": "run=form"}
    r = client.post(f"/c/{cid}", data=form, headers=h)
    assert r.status_code == 201, r.data
    r = client.put(f"/c/{cid}/heap.pb.gz", data=unique_profile("put"), headers=h)
    assert r.status_code == 201, r.data
    r = client.post(f"/c/{cid}?token={token}&label=pod=q", data=cpu("cpu-labels"))
    assert r.status_code == 201, r.data
    # curl -T without the trailing slash: PUT /c/ID, an add, not a plain upload titled ID
    bare = {"X-Collection-Token": token}
    r = client.put(f"/c/{cid}?label=pod=bare", data=unique_profile("bare put"), headers=bare)
    assert r.status_code == 201 and r.headers["X-Member-Added"] == "1", r.data
    assert client.put(f"/c/{cid}", data=unique_profile("no token")).status_code == 403
    got = sorted(tuple(sorted(m["labels"].items())) for m in members(client, cid))
    assert got == [
        (("pod", "api-1"), ("run", "form"), ("zone", "eu")),
        (("pod", "api-1"), ("zone", "eu")),
        (("pod", "bare"),),
        (("pod", "q"),),
    ]


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({"label": "9pod=x"}, "label key"),
        ({"label": "pod-name=x"}, "label key"),
        ({"label": f"pod={'x' * 257}"}, "over 256"),
        ({"label": "noequals"}, "key=value"),
        ({"time": "yesterday"}, "time="),
        ({"time": "2026-12-01T10:00:00"}, "zone"),
    ],
)
def test_bad_input_is_a_400_naming_it(client: Any, query: dict[str, str], problem: str) -> None:
    cid, token = create(client)
    r = client.post(
        f"/c/{cid}", query_string=query, data=cpu("cpu-small"),
        headers={"X-Collection-Token": token},
    )  # fmt: skip
    assert r.status_code == 400 and problem in r.data.decode(), r.data
    assert members(client, cid) == []


def test_too_many_labels_and_a_broken_profile(client: Any) -> None:
    cid, token = create(client)
    labels = {f"k{i}": "v" for i in range(17)}
    r = add(client, cid, token, cpu("cpu-small"), labels)
    assert r.status_code == 400 and b"at most 16" in r.data
    r = add(client, cid, token, b"not a profile at all", {"pod": "a"})
    assert r.status_code == 400
    assert members(client, cid) == []


def test_past_the_member_limit_a_413_stores_nothing(backend: dict[str, Any]) -> None:
    client = make_app({**backend, **OPEN, "COLLECTION_MAX_MEMBERS": 2}).test_client()
    cid, token = create(client)
    for i in range(2):
        assert add(client, cid, token, unique_profile(f"lim{i}"), {"i": str(i)}).status_code == 201
    r = add(client, cid, token, unique_profile("lim-over"), {"i": "x"})
    assert r.status_code == 413 and b"SHARE_COLLECTION_MAX_MEMBERS" in r.data
    r = client.post("/", data=unique_profile("lim-over"), headers={"Accept": "application/json"})
    assert r.status_code == 201, "the refused member's profile was kept"


def test_retention_prunes_old_members(client: Any) -> None:
    cid, token = create(client, retention="1h")
    now = time.time()
    add(client, cid, token, cpu("cpu-small"), {"pod": "old"}, now - 7200)
    add(client, cid, token, cpu("cpu-labels"), {"pod": "new"}, now - 60)
    assert [m["labels"]["pod"] for m in members(client, cid)] == ["new"]


def test_delete_removes_what_it_stored_alone(client: Any) -> None:
    mine = client.post("/", data=cpu("cpu-large"), headers={"Accept": "application/json"}).json
    cid, token = create(client)
    add(client, cid, token, cpu("cpu-large"), {"pod": "a"})  # stored before: not its own
    own = add(client, cid, token, cpu("cpu-small"), {"pod": "b"}).data.decode().strip()
    assert client.get(f"/c/{cid}/top").status_code == 200  # a merged selection is stored too
    assert client.delete(f"/c/{cid}", headers={"X-Collection-Token": "nope"}).status_code == 403
    r = client.delete(f"/c/{cid}", headers={"X-Collection-Token": token})
    assert r.status_code == 200
    assert client.get(f"/api/v1/collections/{cid}").status_code == 404
    assert client.get(own + "/raw").status_code == 404
    assert client.get(f"/{mine['id']}/raw").status_code == 200


# --- selections -----------------------------------------------------------------------------
@pytest.fixture
def fleet(client: Any) -> tuple[str, list[dict[str, Any]]]:
    """Five CPU profiles and two heap profiles, a minute apart, on two pods."""
    cid, token = create(client)
    start = (int(time.time()) // 3600 - 2) * 3600
    for i, name in enumerate(CPU):
        add(client, cid, token, cpu(name), {"pod": f"api-{i % 2}", "v": f"v{i}"}, start + 60 * i)
    for i in range(2):
        add(client, cid, token, unique_profile(f"heap{i}"), {"pod": "api-0"}, start + 30 + 60 * i)
    return cid, members(client, cid)


def test_selection_by_range_match_and_kind(client: Any, fleet: Any) -> None:
    cid, all_members = fleet
    cpus = [m for m in all_members if m["kind"] == "cpu"]
    t = [m["time_unix"] for m in cpus]
    cases = [
        ({}, cpus),
        ({"from": str(t[1]), "to": str(t[3])}, cpus[1:3]),
        ({"match": 'pod="api-1"'}, [m for m in cpus if m["labels"]["pod"] == "api-1"]),
        ({"match": 'pod!="api-1"'}, [m for m in cpus if m["labels"]["pod"] != "api-1"]),
        ({"match": 'v=~"v[0-2]"'}, cpus[:3]),
        ({"match": 'v!~"v[0-2]", pod="api-0"'}, [cpus[4]]),
    ]
    for query, expected in cases:
        got = text(client, f"/c/{cid}/top", **query)
        assert got == merged_top(client, [m["id"] for m in expected]), query
    heaps = [m["id"] for m in all_members if m["kind"] == "heap"]
    assert text(client, f"/c/{cid}/top", kind="heap") == merged_top(client, heaps)


def test_a_selection_of_nothing_and_bad_selectors(client: Any, fleet: Any) -> None:
    cid, _ = fleet
    r = client.get(f"/c/{cid}/top", query_string={"match": 'pod="nobody"'})
    assert r.status_code == 404 and b"no members" in r.data
    for bad, problem in [
        ('pod="x', "closing"),
        ("pod=x", "quoted"),
        ('pod=~"(["', "match"),
        ('pod~"x"', "=, !=, =~ or !~"),
    ]:
        r = client.get(f"/c/{cid}/top", query_string={"match": bad})
        assert r.status_code == 400 and problem in r.data.decode(), (bad, r.data)
    r = client.get(f"/c/{cid}/top", query_string={"from": "10", "to": "5"})
    assert r.status_code == 400


def test_a_base_selection_is_a_diff(client: Any, fleet: Any) -> None:
    cid, all_members = fleet
    cpus = [m for m in all_members if m["kind"] == "cpu"]
    got = text(client, f"/c/{cid}/top", match='pod="api-1"', base_match='pod="api-0"')
    bases = [m["id"] for m in cpus if m["labels"]["pod"] == "api-0"]
    json_reply = {"Accept": "application/json"}
    base = client.post("/api/v1/merge", json={"profiles": bases}, headers=json_reply).json["id"]
    sides = [m["id"] for m in cpus if m["labels"]["pod"] == "api-1"]
    head = client.post(
        "/api/v1/merge", json={"profiles": sides}, headers={"Accept": "application/json"}
    ).json["id"]  # noqa: E501
    assert got == text(client, f"/{head}/top", diff_base=base)


def test_the_link_answers_go_s_client_with_the_merged_profile(client: Any, fleet: Any) -> None:
    cid, all_members = fleet
    raw = client.get(f"/c/{cid}", query_string={"match": 'pod="api-1"'}, headers={"Accept": ""})
    assert raw.status_code == 200 and raw.data[:2] == b"\x1f\x8b"
    r = client.post("/", data=raw.data, headers={"Accept": "application/json"})
    assert r.status_code in (200, 201)
    assert text(client, f"/{r.json['id']}/top") == text(
        client, f"/c/{cid}/top", match='pod="api-1"'
    )
    record = client.get(f"/c/{cid}", headers={"Accept": "application/json"}).json
    assert record["kinds"] == {"cpu": 5, "heap": 2} and record["labels"]["pod"] == {
        "api-0": 5,
        "api-1": 2,
    }  # noqa: E501
    assert "collection: 5 members of kind cpu" in text(client, f"/c/{cid}")


# --- blocks -----------------------------------------------------------------------------------
def test_answers_from_blocks_equal_answers_from_members(client: Any) -> None:
    """Twelve members 20 s apart over four minutes: whole minutes are blocks, the edges loose;
    a member added late into a built block's minute is in the next answer."""
    cid, token = create(client)
    start = (int(time.time()) // 3600 - 3) * 3600
    pids = []
    for i in range(12):
        r = add(client, cid, token, cpu(CPU[i % 5]), {"pod": f"p{i % 3}"}, start + 10 + 20 * i)
        pids.append(r.data.decode().strip().rsplit("/", 1)[1])
    for query, chosen in [
        ({}, pids),
        ({"from": str(start + 20), "to": str(start + 200)}, pids[1:10]),
        ({"match": 'pod!="p1"'}, [p for i, p in enumerate(pids) if i % 3 != 1]),
    ]:
        r = client.get(f"/c/{cid}/top", query_string=query)
        assert r.status_code == 200
        assert int(r.headers["X-Collection-Blocks"]) >= 1, query
        assert r.data.decode() == merged_top(client, chosen), query
    late = add(
        client,
        cid,
        token,
        unique_profile("late", "go-runtime/cpu-small.pb.gz"),
        {"pod": "p1"},
        start + 75,
    )  # noqa: E501
    pids.append(late.data.decode().strip().rsplit("/", 1)[1])
    assert text(client, f"/c/{cid}/top") == merged_top(client, pids)


# --- the timeline ---------------------------------------------------------------------------
def test_timeline_series_and_cores(client: Any) -> None:
    cid, token = create(client)
    start = (int(time.time()) // 3600 - 1) * 3600
    add(client, cid, token, cpu("cpu-small"), {"pod": "a"}, start)
    add(client, cid, token, cpu("cpu-labels"), {"pod": "a"}, start + 60)
    add(client, cid, token, cpu("cpu-large"), {"pod": "b"}, start + 60)
    doc = client.get(
        f"/api/v1/collections/{cid}/timeline", query_string={"group_by": "pod", "step": "60"}
    ).json  # noqa: E501
    assert doc["kind"] == "cpu" and doc["rate"] and doc["y_unit"] == "cores" and doc["step"] == 60
    by = {s["name"]: s for s in doc["series"]}
    assert set(by) == {"a", "b"} and by["a"]["times"] == [start, start + 60]
    ms = {m["id"]: m for m in members(client, cid)}
    for series in doc["series"]:
        for value, pid in zip(series["values"], series["ids"], strict=True):
            m = ms[pid]
            assert value == pytest.approx(m["totals"][1]["total"] / m["duration_nanos"])
    r = client.get(f"/api/v1/collections/{cid}/timeline", query_string={"step": "0"})
    assert r.status_code == 400


def test_a_range_dragged_on_the_timeline_is_merged_from_blocks_alone(client: Any) -> None:
    """The timeline's steps are whole multiples of the blocks' 10 s: a drag's edges fall on
    block boundaries, so no member is merged loose (as at a range's edges typed by hand)."""
    cid, token = create(client)
    start = (int(time.time()) // 3600 - 1) * 3600
    for k in range(16):  # two members in every 10 s, 3 s and 7 s into it
        add(
            client,
            cid,
            token,
            unique_profile(f"drag {k}"),
            {"pod": "a"},
            start + 10 * (k // 2) + 3 + 4 * (k % 2),
        )
    doc = client.get(f"/api/v1/collections/{cid}/timeline").json
    step = doc["step"]
    assert step % 10 == 0, step
    frm, to = snap_range(start + 13.4, start + 57.9, step)
    found = client.get(
        f"/api/v1/collections/{cid}/selection", query_string={"from": frm, "to": to}
    ).json
    assert found["members"] == 8 and found["parts"] == found["blocks"], found
    by_hand = client.get(  # edges inside windows: their members are merged loose
        f"/api/v1/collections/{cid}/selection", query_string={"from": start + 13, "to": start + 57}
    ).json
    assert by_hand["parts"] > by_hand["blocks"], by_hand


def test_a_member_s_record_and_raw_are_its_own(client: Any) -> None:
    cid, token = create(client)
    r = add(client, cid, token, cpu("cpu-small"), {"pod": "a"})
    raw = client.get(r.data.decode().strip() + "/raw").data
    assert gzip.decompress(raw) == gzip.decompress(cpu("cpu-small"))


def test_a_member_deleted_with_its_own_token_drops_out(client: Any) -> None:
    cid, token = create(client)
    start = (int(time.time()) // 3600 - 1) * 3600
    keep = add(client, cid, token, cpu("cpu-small"), {"pod": "a"}, start + 1)
    gone = add(client, cid, token, cpu("cpu-labels"), {"pod": "a"}, start + 2)
    r = client.delete(
        gone.data.decode().strip(), headers={"X-Delete-Token": gone.headers["X-Delete-Token"]}
    )  # noqa: E501
    assert r.status_code in (200, 204)
    assert text(client, f"/c/{cid}/top") == merged_top(
        client, [keep.data.decode().strip().rsplit("/", 1)[1]]
    )  # noqa: E501
    assert len(members(client, cid)) == 1


def test_the_record_s_first_kind_is_the_one_views_show(client: Any) -> None:
    """With as many heap as cpu members, the page's kind list and the views agree."""
    cid, token = create(client)
    add(client, cid, token, unique_profile("tie-heap"), {"pod": "a"}, time.time() - 120)
    add(client, cid, token, cpu("cpu-small"), {"pod": "a"}, time.time() - 60)
    kinds = list(client.get(f"/api/v1/collections/{cid}").json["kinds"])
    shown = client.get(f"/c/{cid}/top").headers["X-Collection-Kind"]
    assert kinds == ["cpu", "heap"] and shown == kinds[0]
