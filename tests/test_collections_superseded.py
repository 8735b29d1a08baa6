"""Superseded growing profiles go after their grace: an open selection (or a block) extended
as a fleet adds names a new merged profile each time, and the one it named before is removed
from both stores once GRACE_TIMES x SHARE_ANALYSIS_SECONDS have passed, not kept its hour;
within the grace it still answers (a view or merge that found it is reading it), and a view of
the collection after it has gone resolves the selection again. The app's clock is moved by
hand (Share.clock), as test_collections_blocks.py moves it."""

from __future__ import annotations

import time
from typing import Any

from test_collections_blocks import OPEN, add, create, plain_merge_top, selection, top

from share.collections import superseded as superseded_module

from conftest import make_app


def fleet(backend: dict[str, Any]) -> tuple[Any, Any, list[float], float]:
    """(test client, share, the clock's now, the grace) of an app whose clock is now[0]."""
    app = make_app({**backend, **OPEN})
    share = app.extensions["share"]
    now = [time.time()]
    share.clock = lambda: now[0]
    grace = superseded_module.GRACE_TIMES * float(share.settings["ANALYSIS_SECONDS"])
    return app.test_client(), share, now, grace


def test_after_many_extensions_only_the_live_one_and_those_in_their_grace_are_kept(
    backend: dict[str, Any],
) -> None:
    client, share, now, grace = fleet(backend)
    cid, token = create(client)
    step = grace * 2 / 7  # between warm-ups: three and a half extensions a grace
    members: list[str] = []
    named: list[tuple[str, float]] = []  # each profile the selection named, and since when
    for i in range(12):
        now[0] += step
        members.append(add(client, cid, token, f"grow{i}", now[0]))
        found = selection(client, cid)
        assert found["members"] == i + 1 and found["extended"] == (i > 0)
        named.append((found["profile"], now[0]))
    live = named[-1][0]
    # named[0] is the first member itself (a part named as is: never superseded); each later
    # one was superseded when the next was named.
    superseded = [(pid, at) for (pid, _), (_, at) in zip(named[1:-1], named[2:], strict=True)]
    within = {pid for pid, at in superseded if at + grace > now[0]}
    assert len(superseded) == 10 and len(within) == 4
    assert set(share.blobs.keys()) == {*members, live, *within}
    for pid, _ in superseded:
        assert (share.meta.load(pid) is not None) == (pid in within)
    r = client.get(f"/{sorted(within)[0]}/top")  # within its grace it still answers
    assert r.status_code == 200, r.data

    # The adds stop; a grace later the warm-up's last sweep removes the rest, and prune
    # (which removes what has expired) finds nothing else to remove.
    now[0] += grace + 1
    assert client.application.extensions["collections"].blocks.sweep(cid) == len(within)
    assert share.prune() == 0
    assert set(share.blobs.keys()) == {*members, live}
    again = selection(client, cid)
    assert again["profile"] == live and again["built"] == 0
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, members)


def test_a_page_open_on_a_superseded_selection_resolves_it_again(
    backend: dict[str, Any],
) -> None:
    """The collection page asks for every view by its selection (never by the merged
    profile's id): after the profile it was shown has gone, its next view is the selection
    merged as it is now, not a 404."""
    client, share, now, grace = fleet(backend)
    cid, token = create(client)
    members = [add(client, cid, token, f"page{i}", now[0] + i * 0.1) for i in range(3)]
    selection(client, cid)  # the first: the block of the members, a part named as is
    members.append(add(client, cid, token, "page3", now[0] + 1))
    shown = selection(client, cid)["profile"]  # extended: merged for the selection
    merged = {"focus": "main"}  # a view that reads the merged profile (the plain one sums)
    r = client.get(f"/api/v1/collections/{cid}/flamegraph", query_string=merged)
    assert r.status_code == 200 and r.headers["X-Collection-Profile"].endswith(shown)
    for i in range(4, 7):  # the fleet adds; the selection is extended three times
        now[0] += grace / 2 + 1
        members.append(add(client, cid, token, f"page{i}", now[0]))
        selection(client, cid)
    assert share.meta.load(shown) is None and shown not in set(share.blobs.keys())
    r = client.get(f"/api/v1/collections/{cid}/flamegraph", query_string=merged)
    assert r.status_code == 200, r.data
    assert not r.headers["X-Collection-Profile"].endswith(shown)
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, members)
    assert client.get(f"/{shown}/top").status_code == 404  # its own link has gone with it


def test_a_superseded_block_of_a_range_goes_and_the_range_answers_as_a_plain_merge(
    backend: dict[str, Any],
) -> None:
    """A range's growing block, extended as members arrive, supersedes its profile too; the
    smaller block it was first made of (a part it named as is) stays."""
    client, share, now, grace = fleet(backend)
    cid, token = create(client)
    t0 = (int(now[0]) // 60 + 10) * 60  # a minute ahead: its block grows all along
    query = {"from": str(t0 - 60), "to": str(t0 + 120)}
    members = [add(client, cid, token, f"blk{i}", t0 + 1 + i * 0.1) for i in range(2)]
    first = selection(client, cid, **query)
    assert first["blocks"] == 1 and first["parts"] == 1
    blocks = [first["profile"]]  # the minute's block: its one 10 s block, as is
    for i in range(2, 7):
        now[0] += grace * 0.6
        members.append(add(client, cid, token, f"blk{i}", t0 + 1 + i * 0.1))
        grown = selection(client, cid, **query)
        assert grown["extended"] == 1 and grown["parts"] == 1, grown
        blocks.append(grown["profile"])
    # blocks[1] was superseded by blocks[2] (1.2 graces ago when blocks[4] was made), ...
    held = [share.meta.load(pid) is not None for pid in blocks]
    assert held == [True, False, False, True, True, True]
    assert set(share.blobs.keys()) == {*members, blocks[0], *blocks[3:]}
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, members)


def test_a_relative_selection_asked_again_later_supersedes_what_it_named(
    backend: dict[str, Any],
) -> None:
    """`from=now-1m` asked 10 s later starts 10 s later: one selection moved on, whose entry
    is replaced and whose profile before goes after its grace (a dashboard refreshing the last
    hour all day left one merged profile behind per 10 s, each kept its hour)."""
    client, share, now, grace = fleet(backend)
    cid, token = create(client)
    t0 = int(now[0]) // 60 * 60
    now[0] = t0 + 35.0  # from=now-1m starts at t0 - 30
    # The first member's profile is another (a 5-letter tag): without it the merge differs.
    tags_at = (("rel00", -25), ("rel1", -5), ("rel2", 5), ("rel3", 25))
    members = [add(client, cid, token, tag, t0 + dt) for tag, dt in tags_at]
    first = selection(client, cid, **{"from": "now-1m"})
    assert first["members"] == 4 and first["parts"] > 1  # merged for the selection
    now[0] += 10  # from=now-1m now starts at t0 - 20: the first member is out
    members.append(add(client, cid, token, "rel4", t0 + 40))
    second = selection(client, cid, **{"from": "now-1m"})
    assert second["members"] == 4 and second["profile"] != first["profile"]
    assert top(client, f"/c/{cid}/top", **{"from": "now-1m"}) == plain_merge_top(
        client, members[1:]
    )
    now[0] += grace + 1
    assert client.application.extensions["collections"].blocks.sweep(cid) >= 1  # and a block
    assert share.meta.load(first["profile"]) is None
    assert first["profile"] not in set(share.blobs.keys())
    assert share.meta.load(second["profile"]) is not None
