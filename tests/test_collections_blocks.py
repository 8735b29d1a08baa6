"""A collection's blocks as a fleet fills them: a window still filling is extended with the
members added since, not merged anew; an open selection (no to=) likewise; whatever was
extended answers what a plain merge of the members answers; a late member or a pruned one
makes the block whole again; relative times round to 10 s; blocks that are still growing are
stored for an hour at most, and keep the collection's expiry once their window has settled."""

from __future__ import annotations

import time
from typing import Any

import pytest

from share.collections import blocks as blocks_module
from share.collections import warming as warming_module
from share.collections import windows
from share.collections.selection import parse_time

from conftest import make_app, unique_profile

OPEN = {"RATE_UPLOADS": "off", "RATE_UPLOAD_BYTES": "off", "RATE_DELETES": "off"}
BASES = ["go-runtime/cpu-small.pb.gz", "go-runtime/cpu-labels.pb.gz"]


@pytest.fixture
def client(backend: dict[str, Any]):  # type: ignore[no-untyped-def]
    return make_app({**backend, **OPEN}).test_client()


def create(client: Any, **body: str) -> tuple[str, str]:
    r = client.post("/api/v1/collections", json=body, headers={"Accept": "application/json"})
    assert r.status_code == 201, r.data
    return r.json["id"], r.json["token"]


def add(client: Any, cid: str, token: str, tag: str, at: float, pod: str = "a") -> str:
    r = client.post(
        f"/c/{cid}",
        query_string=[("label", f"pod={pod}"), ("time", f"{at:.3f}")],
        data=unique_profile(tag, BASES[len(tag) % 2]),
        headers={"X-Collection-Token": token},
    )
    assert r.status_code == 201, r.data
    return r.data.decode().strip().rsplit("/", 1)[1]


def top(client: Any, path: str, **query: str) -> str:
    r = client.get(path, query_string=query, headers={"Accept": "*/*"})
    assert r.status_code == 200, r.data
    return r.data.decode()


def plain_merge_top(client: Any, pids: list[str]) -> str:
    r = client.post(
        "/api/v1/merge", json={"profiles": pids}, headers={"Accept": "application/json"}
    )
    assert r.status_code in (200, 201), r.data
    return top(client, f"/{r.json['id']}/top")


def selection(client: Any, cid: str, **query: str) -> dict[str, Any]:
    r = client.get(f"/api/v1/collections/{cid}/selection", query_string=query)
    assert r.status_code == 200, r.data
    return r.json  # type: ignore[no-any-return]


def test_an_open_selection_is_extended_with_the_members_added_since(client: Any) -> None:
    cid, token = create(client)
    base = (int(time.time()) // 60 - 1) * 60  # every member in one 10 s window, in the past
    pids = [add(client, cid, token, f"open{i}", base + 1 + i) for i in range(3)]
    first = selection(client, cid)
    assert first["members"] == 3 and first["extended"] == 0
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, pids)
    again = selection(client, cid)
    assert again["profile"] == first["profile"] and again["built"] == 0  # nothing new: as it was
    pids += [add(client, cid, token, f"open{i}", base + 1 + i) for i in range(3, 5)]
    grown = selection(client, cid)
    assert grown["members"] == 5 and grown["extended"] == 1 and grown["parts"] == 3
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, pids)
    # A member earlier than those the selection holds, added after them (a fleet's adds
    # arrive out of time order): extended too, merged after them, the same values.
    pids.append(add(client, cid, token, "early", base + 0.5))
    late = selection(client, cid)
    assert late["members"] == 6 and late["extended"] == 1 and late["parts"] == 2
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, pids)
    # One indexed after the selection (and its block) were merged but stamped as added before
    # them (adds racing): what they hold is no longer known, so they are merged anew.
    collections = client.application.extensions["collections"]
    first_added = min(m.added_at for m in collections.index.members(cid))
    raced = add(client, cid, token, "raced", base + 0.7)
    (member,) = [m for m in collections.index.members(cid) if m.pid == raced]
    collections.index.remove(cid, [member.key])
    member.added_at = first_added - 0.001
    collections.index.add(cid, member, 100)
    pids.append(raced)
    whole = selection(client, cid)
    assert whole["members"] == 7 and whole["extended"] == 0
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, pids)


def test_a_block_still_filling_is_extended_and_answers_as_a_plain_merge(client: Any) -> None:
    cid, token = create(client)
    t0 = (int(time.time()) // 60 - 30) * 60  # a whole minute, half an hour ago
    query = {"from": str(t0 - 60), "to": str(t0 + 120)}  # the minute is a block of it
    pids = [add(client, cid, token, f"fill{i}", t0 + 1 + i) for i in range(3)]
    first = selection(client, cid, **query)
    assert first["blocks"] == 1 and first["built"] >= 1 and first["extended"] == 0
    pids += [add(client, cid, token, f"fill{i}", t0 + 20 + i) for i in range(3, 5)]
    grown = selection(client, cid, **query)
    assert grown["extended"] >= 1, grown
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, pids)
    # One into the middle of what the block holds, added last: the block is extended too.
    pids.append(add(client, cid, token, "middle", t0 + 2.5))
    middle = selection(client, cid, **query)
    assert middle["extended"] >= 1 and middle["built"] >= 1
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, pids)


def test_a_block_built_while_a_view_waited_is_extended_not_merged_anew(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view that found no block (another one was building it) and waited for the block's
    lease extends what it finds there, rather than merging every member it found before."""
    cid, token = create(client)
    t0 = (int(time.time()) // 60 - 30) * 60
    query = {"from": str(t0), "to": str(t0 + 10)}  # one 10 s window: a block of members
    pids = [add(client, cid, token, f"wait{i}", t0 + 1 + i) for i in range(3)]
    assert selection(client, cid, **query)["built"] == 1
    pids += [add(client, cid, token, f"wait{i}", t0 + 1 + i) for i in range(3, 5)]
    found_before = []
    real = blocks_module.Blocks.extension

    def before_the_wait_nothing(self: Any, entry: Any, members: Any, *most: Any) -> Any:
        found_before.append(len(members))
        return None if len(found_before) == 1 else real(self, entry, members, *most)

    monkeypatch.setattr(blocks_module.Blocks, "extension", before_the_wait_nothing)
    grown = selection(client, cid, **query)
    assert found_before[0] == found_before[-1] == 5  # before the lease, and under it
    assert grown["extended"] == 1 and grown["members"] == 5
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, pids)


def test_relative_times_round_down_to_ten_seconds() -> None:
    now = 1_800_000_007.25
    assert parse_time("now-1h", "from", now) == 1_799_996_400
    assert parse_time("now-90s", "from", now) == 1_799_999_910
    assert parse_time("now", "to", now) == now  # the present stays exact
    assert parse_time("1799999999.5", "from", now) == 1_799_999_999.5  # given times too


def test_growing_blocks_are_kept_an_hour_and_settled_ones_as_members(tmp_path: Any) -> None:
    app = make_app({"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m", **OPEN})
    client = app.test_client()
    cid, token = create(client, expires="30d")
    now = time.time()
    for i in range(3):  # filling now
        add(client, cid, token, f"now{i}", now - 5 + i)
    old = (int(now) // 60 - 60) * 60
    for i in range(3):  # a minute an hour ago
        add(client, cid, token, f"old{i}", old + 1 + i)

    def expires_in(pid: str) -> float:
        r = client.get(f"/api/v1/profiles/{pid}")
        assert r.status_code == 200, r.data
        record = app.extensions["share"].meta.load(pid)
        return float(record.expires_at) - time.time()

    growing = selection(client, cid, **{"from": str(int(now) - 30)})["profile"]
    assert 0 < expires_in(growing) <= blocks_module.GROWING_SECONDS
    settled = selection(client, cid, **{"from": str(old), "to": str(old + 60)})["profile"]
    assert expires_in(settled) > 29 * 86400
    # A block stored while its window filled, found once the window has settled, keeps the
    # collection's expiry from then on.
    t0 = int(now - 5) // 10 * 10
    for i in range(3):
        add(client, cid, token, f"window{i}", t0 + 1 + i)
    query = {"from": str(t0), "to": str(t0 + 10)}
    block = selection(client, cid, **query)
    assert block["blocks"] == 1 and block["parts"] == 1
    assert 0 < expires_in(block["profile"]) <= blocks_module.GROWING_SECONDS
    share = app.extensions["share"]
    share.clock = lambda: time.time() + 2 * blocks_module.SETTLED_AFTER
    again = selection(client, cid, **query)
    assert again["profile"] == block["profile"] and again["built"] == 0
    assert expires_in(block["profile"]) > 29 * 86400


def test_more_new_members_than_one_merge_takes_still_extend(tmp_path: Any) -> None:
    """A warm-up that fell behind: more new members than one merge takes (here 2) are merged
    onto the block in chunks, not merged anew at every level under it; past EXTEND_MOST
    merges' worth, anew."""
    stores = {"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m", **OPEN}
    client = make_app({**stores, "MERGE_MAX_PROFILES": 2}).test_client()
    plain = make_app(stores).test_client()  # the same stores, merges of any size
    cid, token = create(client)
    base = (int(time.time()) // 60 - 1) * 60
    pids = [add(client, cid, token, f"behind{i}", base + 1 + i * 0.1) for i in range(2)]
    assert selection(client, cid)["extended"] == 0
    pids += [add(client, cid, token, f"behind{i}", base + 1 + i * 0.1) for i in range(2, 7)]
    grown = selection(client, cid)
    assert grown["members"] == 7 and grown["extended"] == 1 and grown["parts"] == 6
    assert top(client, f"/c/{cid}/top") == plain_merge_top(plain, pids)
    many = blocks_module.EXTEND_MOST * 2 + 1
    pids += [add(client, cid, token, f"behind{i}", base + 1 + i * 0.1) for i in range(7, 7 + many)]
    whole = selection(client, cid, wait="1")  # extended just now: a view would be behind
    assert whole["members"] == 7 + many and whole["extended"] == 0
    assert top(client, f"/c/{cid}/top") == plain_merge_top(plain, pids)


def test_a_minute_of_the_whole_collection_reads_new_members_from_its_10s_blocks(
    tmp_path: Any,
) -> None:
    """More new members than one merge takes (here 2): the whole collection's minute is merged
    from its 10 s blocks (which the warm-up builds anyway), not extended with each member; a
    label selection's minute, whose 10 s blocks nothing else builds, is extended."""
    stores = {"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m", **OPEN}
    client = make_app({**stores, "MERGE_MAX_PROFILES": 2}).test_client()
    plain = make_app(stores).test_client()
    cid, token = create(client)
    t0 = (int(time.time()) // 60 - 30) * 60  # a whole minute, half an hour ago
    minute = {"from": str(t0), "to": str(t0 + 60)}
    labelled = {**minute, "match": 'pod="a"'}
    pids = [add(client, cid, token, f"min{i}", t0 + 1 + i) for i in range(2)]
    assert selection(client, cid, **minute)["blocks"] == 1
    assert selection(client, cid, **labelled)["blocks"] == 1
    pids += [add(client, cid, token, f"min{i}", t0 + 20 + i) for i in range(2, 5)]
    whole = selection(client, cid, **minute)
    assert whole["members"] == 5 and whole["extended"] == 0 and whole["built"] == 2, whole
    assert top(client, f"/c/{cid}/top", **minute) == plain_merge_top(plain, pids)
    series = selection(client, cid, **labelled)
    assert series["members"] == 5 and series["extended"] == 1, series
    assert top(client, f"/c/{cid}/top", **labelled) == plain_merge_top(plain, pids)


def test_the_warm_up_builds_the_blocks_of_windows_that_filled(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a burst of adds the warm-up of a collection past windows.MOST_MEMBERS (summed
    from its blocks) extends the collection's default selection with the new members, and
    builds the blocks of the windows that filled (the last ten minutes'), so that a range
    dragged over them merges the blocks it finds, building none."""
    monkeypatch.setattr(windows, "MOST_MEMBERS", 1)
    app = make_app(
        {"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m", "PRECOMPUTE": "on", **OPEN}
    )
    client = app.test_client()
    index = app.extensions["collections"].index
    cid, token = create(client)
    t0 = (int(time.time()) // 60 - 2) * 60  # the minute before last: filled

    def built(start: int, res: int = 60) -> None:
        key = f"b|cpu|{blocks_module.digest([''])[:12]}|{res}|{start}"
        deadline = time.monotonic() + 30
        while index.entry_get(cid, key) is None:
            assert time.monotonic() < deadline, f"the warm-up built no block {key}"
            time.sleep(0.1)

    for k in range(2):  # the first warm-up merges the default selection from blocks
        add(client, cid, token, f"before{k}", t0 - 58 + k)
    built(t0 - 60)
    for k in range(12):  # the next one extends it with these: two in each 10 s of the minute
        add(client, cid, token, f"filled{k}", t0 + 10 * (k // 2) + 2 + 5 * (k % 2))
    built(t0)
    found = selection(client, cid, **{"kind": "cpu", "from": str(t0 + 10), "to": str(t0 + 50)})
    assert found["members"] == 8 and found["blocks"] == 4 and found["built"] == 0, found
    whole = selection(client, cid, **{"kind": "cpu", "from": str(t0), "to": str(t0 + 60)})
    assert whole["parts"] == 1 and whole["built"] == 0, whole


def test_one_warm_up_of_a_collection_runs_at_a_time_across_workers(tmp_path: Any) -> None:
    """While another worker's warm-up holds the collection's lease this one's waits, and runs
    once it is free: its adds are warmed up, not dropped."""
    app = make_app(
        {"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m", "PRECOMPUTE": "on", **OPEN}
    )
    client = app.test_client()
    warming = app.extensions["collections"].warming
    meta = app.extensions["share"].meta
    cid, token = create(client)
    lease = warming._key(cid)
    assert meta.try_lock(lease, "another worker", 60)
    add(client, cid, token, "while held", time.time() - 30)
    time.sleep(warming_module.WARM_DELAY * 2.5)
    assert warming.runs == 0
    meta.unlock(lease, "another worker")
    deadline = time.monotonic() + 30
    while warming.runs == 0:
        assert time.monotonic() < deadline, "the warm-up never ran"
        time.sleep(0.1)
    assert not meta.try_lock(lease, "a third", 60)  # held a while after it ran
