"""An open selection that many members joined since it was merged is answered as merged so far
(Plan.pending, X-Collection-Pending) while the warm-up merges them in, when that merge is recent;
the answer names exactly what it shows. Few new members, or an old merge, are merged in first,
as before."""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from test_collections_blocks import OPEN, add, create, plain_merge_top, selection, top

from share.collections.behind import (
    BEHIND_DUTY,
    BEHIND_FEW,
    BEHIND_FRESH,
    BEHIND_FROM,
    BEHIND_SECONDS,
    COSTLY_MERGE,
)
from share.collections.blocks import Blocks, digest

from conftest import make_app


class OnAClock(NamedTuple):
    """An app whose clock the test moves (now[0]), with a collection and its token."""

    app: Any
    client: Any
    now: list[float]
    cid: str
    token: str


def on_a_clock(backend: dict[str, Any]) -> OnAClock:
    app = make_app({**backend, **OPEN})
    client, now = app.test_client(), [time.time()]
    app.extensions["share"].clock = lambda: now[0]
    cid, token = create(client)
    return OnAClock(app, client, now, cid, token)


def test_a_view_of_an_open_selection_many_joined_is_answered_as_merged_so_far(
    backend: dict[str, Any],
) -> None:
    app, client, now, cid, token = on_a_clock(backend)
    collections = app.extensions["collections"]
    base = (int(now[0]) // 60 - 1) * 60
    first = [add(client, cid, token, f"sofar{i}", base + 1 + i * 0.01) for i in range(2)]
    merged = selection(client, cid)
    assert merged["members"] == 2 and merged["pending"] == 0
    joined = [
        add(client, cid, token, f"joined{i}", base + 2 + i * 0.01) for i in range(BEHIND_FROM)
    ]

    behind = selection(client, cid)
    assert behind["profile"] == merged["profile"] and behind["built"] == 0
    assert behind["members"] == 2 and behind["pending"] == BEHIND_FROM
    r = client.get(f"/api/v1/collections/{cid}/flamegraph", query_string={"focus": "main"})
    assert r.status_code == 200, r.data
    assert r.headers["X-Collection-Pending"] == str(BEHIND_FROM)
    assert r.headers["X-Collection-Members"] == "2"
    assert r.headers["X-Collection-Profile"].endswith(merged["profile"])
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, first)  # what it says it is
    # The plain flame graph is summed (share.compute.sums), not merged: no merge to wait for,
    # so nothing pending but a 10 s window still filling (windows.cover).
    r = client.get(f"/api/v1/collections/{cid}/flamegraph")
    assert r.status_code == 200, r.data
    assert "X-Collection-Pending" not in r.headers
    assert r.headers["X-Collection-Members"] == str(2 + BEHIND_FROM)

    # The warm-up (its merge of the default selection) merges them in: its last merge was cheap.
    c = collections.load(cid)
    _, warmed = collections.refreshed(c, behind["kind"])
    assert warmed.pending == 0 and warmed.members == 2 + BEHIND_FROM
    caught_up = selection(client, cid)
    assert caught_up["members"] == 2 + BEHIND_FROM and caught_up["pending"] == 0
    assert "X-Collection-Pending" not in client.get(f"/api/v1/collections/{cid}/top").headers
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, first + joined)


def test_few_new_members_or_an_old_merge_are_merged_in_before_the_answer(
    backend: dict[str, Any],
) -> None:
    _, client, now, cid, token = on_a_clock(backend)
    base = (int(now[0]) // 60 - 1) * 60
    pids = [add(client, cid, token, f"few{i}", base + 1 + i * 0.01) for i in range(2)]
    selection(client, cid)
    pids += [add(client, cid, token, f"few{i}", base + 2 + i * 0.01) for i in range(2, 5)]
    few = selection(client, cid)  # 3 new: extended at once
    assert few["members"] == 5 and few["pending"] == 0 and few["extended"] == 1

    pids += [add(client, cid, token, f"old{i}", base + 3 + i * 0.01) for i in range(BEHIND_FROM)]
    now[0] += BEHIND_SECONDS + 1  # the merge they joined is over a minute old
    old = selection(client, cid)
    assert old["members"] == 5 + BEHIND_FROM and old["pending"] == 0
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, pids)


def test_a_costly_merge_is_not_made_again_for_a_few_members_until_it_has_served_a_while(
    backend: dict[str, Any], monkeypatch: Any
) -> None:
    """An open selection whose extension took a second (as a fleet's whole collection's does)
    is answered behind for BEHIND_DUTY seconds once BEHIND_FEW join it, then merged with them;
    a first merge from blocks is not what an extension costs, and one add alone is merged in
    at once."""
    app, client, now, cid, token = on_a_clock(backend)
    base = (int(now[0]) // 60 - 1) * 60
    merged_as = Blocks.merged

    def slow_merge(self: Blocks, c: Any, parts: list[str], *args: Any, **kwargs: Any) -> str:
        now[0] += 1.0 if len(parts) > 1 else 0.0  # a merge takes a second on the app's clock
        return merged_as(self, c, parts, *args, **kwargs)

    monkeypatch.setattr(Blocks, "merged", slow_merge)
    first = [add(client, cid, token, f"dear{i}", base + 1 + i * 0.01) for i in range(2)]
    merged = selection(client, cid)  # its blocks built, a second
    assert merged["members"] == 2 and merged["pending"] == 0
    some = [add(client, cid, token, f"ds{i}", base + 2 + i * 0.01) for i in range(BEHIND_FEW)]
    merged = selection(client, cid)  # extended (a second): that is the cost from now on
    assert merged["members"] == 2 + BEHIND_FEW and merged["pending"] == 0 and merged["extended"]
    held = 2 + BEHIND_FEW
    joined = [add(client, cid, token, f"dj{i}", base + 3 + i * 0.01) for i in range(BEHIND_FEW)]

    now[0] += BEHIND_DUTY - 0.5  # asked BEHIND_DUTY - 0.5 s after it was made
    behind = selection(client, cid)
    assert behind["profile"] == merged["profile"] and behind["built"] == 0
    assert behind["members"] == held and behind["pending"] == BEHIND_FEW
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, first + some)
    collections = app.extensions["collections"]
    pid, warmed = collections.refreshed(collections.load(cid), behind["kind"])  # nor the warm-up
    assert pid == merged["profile"] and warmed.pending == BEHIND_FEW

    # It has served its while (BEHIND_DUTY times its merge's second), well within
    # BEHIND_SECONDS: merged in before the answer.
    now[0] += 1.0
    whole = selection(client, cid)
    assert whole["members"] == held + BEHIND_FEW and whole["pending"] == 0 and whole["extended"]
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, first + some + joined)
    one = add(client, cid, token, "dj-one", base + 4)  # someone's add: merged in at once
    alone = selection(client, cid)
    assert alone["members"] == held + BEHIND_FEW + 1 and alone["pending"] == 0
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, first + some + joined + [one])


def test_a_merge_made_lately_serves_views_as_it_is_when_several_join(
    backend: dict[str, Any], monkeypatch: Any
) -> None:
    """A growing entry extended less than BEHIND_FRESH ago, however cheaply, answers a view as
    it is once BEHIND_FEW join it (a fleet's views would extend it again and again); one built
    from blocks does not hold back the next members, and BEHIND_FRESH later they are merged in."""
    _, client, now, cid, token = on_a_clock(backend)
    base = (int(now[0]) // 60 - 1) * 60
    merged_as = Blocks.merged
    cheap = COSTLY_MERGE / 5  # well under a costly merge: the duty rule does not apply

    def timed_merge(self: Blocks, c: Any, parts: list[str], *args: Any, **kwargs: Any) -> str:
        now[0] += cheap if len(parts) > 1 else 0.0
        return merged_as(self, c, parts, *args, **kwargs)

    monkeypatch.setattr(Blocks, "merged", timed_merge)
    first = [add(client, cid, token, f"fr{i}", base + 1 + i * 0.01) for i in range(2)]
    assert selection(client, cid)["members"] == 2  # built from blocks
    some = [add(client, cid, token, f"fs{i}", base + 2 + i * 0.01) for i in range(BEHIND_FEW)]
    extended = selection(client, cid)  # not held back by a build from blocks
    assert extended["pending"] == 0 and extended["extended"] == 1
    joined = [add(client, cid, token, f"fj{i}", base + 3 + i * 0.01) for i in range(BEHIND_FEW)]

    now[0] += BEHIND_FRESH - 1
    behind = selection(client, cid)
    assert behind["profile"] == extended["profile"] and behind["built"] == 0
    assert behind["members"] == 2 + BEHIND_FEW and behind["pending"] == BEHIND_FEW
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, first + some)

    now[0] += 1.5
    caught_up = selection(client, cid)
    assert caught_up["pending"] == 0 and caught_up["extended"] == 1
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, first + some + joined)
    few = [add(client, cid, token, f"ff{i}", base + 4 + i * 0.01) for i in range(BEHIND_FEW - 1)]
    at_once = selection(client, cid)  # fewer than BEHIND_FEW: merged in at once, as ever
    assert at_once["pending"] == 0 and at_once["members"] == 2 + 3 * BEHIND_FEW - 1
    assert top(client, f"/c/{cid}/top") == plain_merge_top(client, first + some + joined + few)


def test_a_range_over_a_growing_block_many_joined_is_answered_with_the_block_so_far(
    backend: dict[str, Any],
) -> None:
    """A range over the minute filling now: its block, merged recently, is used as it is while
    32 more members join it; the answer says so, and a minute later the view extends it."""
    _, client, now, cid, token = on_a_clock(backend)
    t0 = int(now[0]) // 60 * 60
    now[0] = t0 + 30.0
    query = {"from": str(t0), "to": str(t0 + 60)}
    first = [add(client, cid, token, f"min{i}", t0 + 1 + i * 0.01) for i in range(2)]
    merged = selection(client, cid, **query)
    assert merged["members"] == 2 and merged["pending"] == 0
    joined = [add(client, cid, token, f"join{i}", t0 + 3 + i * 0.01) for i in range(BEHIND_FROM)]

    behind = selection(client, cid, **query)
    assert behind["profile"] == merged["profile"] and behind["built"] == 0
    assert behind["members"] == 2 and behind["pending"] == BEHIND_FROM
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, first)

    now[0] += BEHIND_SECONDS + 1
    whole = selection(client, cid, **query)
    assert whole["members"] == 2 + BEHIND_FROM and whole["pending"] == 0
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, first + joined)


def test_a_view_does_not_wait_for_a_growing_block_someone_else_is_merging(
    backend: dict[str, Any],
) -> None:
    """A range over a recent window whose block another view or the warm-up is merging now
    (its lease held) is answered at once without the members that merge would add (pending):
    with the block as it was, or without the window when it has none yet. `wait=1` waits."""
    app, client, now, cid, token = on_a_clock(backend)
    t0 = int(now[0]) // 60 * 60
    now[0] = t0 + 30.0
    query = {"from": str(t0), "to": str(t0 + 20)}  # two 10 s windows, both recent
    early = [add(client, cid, token, f"early{i}", t0 + 1 + i * 0.01) for i in range(2)]
    later = [add(client, cid, token, f"later{i}", t0 + 11 + i * 0.01) for i in range(2)]
    merged = selection(client, cid, **query)
    assert merged["members"] == 4 and merged["pending"] == 0
    one = add(client, cid, token, "one", t0 + 12)  # alone: merged in at once, as a rule
    kind, selector = merged["kind"], digest([""])[:12]
    share = app.extensions["share"]
    with share.leases.hold(f"collection:{cid}:b|{kind}|{selector}|10|{t0 + 10}"):
        behind = selection(client, cid, **query)  # the later window's block is being merged
        assert behind["members"] == 4 and behind["pending"] == 1
        assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, early + later)
        fresh = [add(client, cid, token, f"fresh{i}", t0 + 21 + i * 0.01) for i in range(2)]
        wider = {"from": str(t0), "to": str(t0 + 30)}
        with share.leases.hold(f"collection:{cid}:b|{kind}|{selector}|10|{t0 + 20}"):
            none_yet = selection(client, cid, **wider)  # a window with no block yet: left out
            assert none_yet["members"] == 4 and none_yet["pending"] == 3
    waited = selection(client, cid, wait="1", **wider)
    assert waited["members"] == 7 and waited["pending"] == 0
    assert top(client, f"/c/{cid}/top", **wider) == plain_merge_top(
        client, early + later + [one] + fresh
    )


def test_wait_merges_the_pending_members_in_and_a_base_says_what_it_lacks(
    backend: dict[str, Any],
) -> None:
    """`wait=1` (what the page asks once it has shown a selection answered behind) merges
    every member in before the answer; a base answered behind says so as the selection does."""
    _, client, now, cid, token = on_a_clock(backend)
    base = (int(now[0]) // 60 - 1) * 60
    first = [add(client, cid, token, f"w{i}", base + 1 + i * 0.01, pod="b") for i in range(2)]
    assert selection(client, cid, match='pod="b"')["members"] == 2
    joined = [
        add(client, cid, token, f"wj{i}", base + 2 + i * 0.01, pod="b") for i in range(BEHIND_FROM)
    ]

    # The base (pod "b", open) is behind; the selection (pod "a": none yet) is not asked here.
    compared = selection(client, cid, base_match='pod="b"')
    assert compared["base_members"] == 2 and compared["base_pending"] == BEHIND_FROM
    r = client.get(f"/api/v1/collections/{cid}/top", query_string={"base_match": 'pod="b"'})
    assert r.status_code == 200, r.data
    assert r.headers["X-Collection-Base-Pending"] == str(BEHIND_FROM)
    assert "X-Collection-Pending" not in r.headers

    behind = selection(client, cid, match='pod="b"')
    assert behind["members"] == 2 and behind["pending"] == BEHIND_FROM
    waited = selection(client, cid, match='pod="b"', wait="1")
    assert waited["members"] == 2 + BEHIND_FROM and waited["pending"] == 0
    assert waited["profile"] != behind["profile"]
    # What the wait merged is the selection's current merge: the next plain view has it.
    after = selection(client, cid, match='pod="b"')
    assert after["profile"] == waited["profile"] and after["pending"] == 0
    assert top(client, f"/c/{cid}/top", match='pod="b"') == plain_merge_top(client, first + joined)
    assert selection(client, cid, base_match='pod="b"', wait="1")["base_pending"] == 0

    r = client.get(f"/api/v1/collections/{cid}/selection", query_string={"wait": "soon"})
    assert r.status_code == 400 and b"wait='soon'" in r.data


def test_a_fleets_window_filling_now_is_left_pending_not_merged_by_each_view(
    backend: dict[str, Any],
) -> None:
    """BEHIND_FROM members in the 10 s window filling now, never merged: a view of a range
    over it and an earlier window is answered with the earlier one, these pending (the warm-up
    merges the window once it is complete); a range of that window alone merges it."""
    _, client, now, cid, token = on_a_clock(backend)
    t0 = int(now[0]) // 60 * 60
    now[0] = t0 + 25.0
    earlier = [add(client, cid, token, f"early{i}", t0 + 1 + i * 0.01) for i in range(2)]
    filling = [
        add(client, cid, token, f"filling{i}", t0 + 20 + i * 0.01) for i in range(BEHIND_FROM)
    ]
    query = {"from": str(t0), "to": str(t0 + 30)}
    behind = selection(client, cid, **query)
    assert behind["members"] == 2 and behind["pending"] == BEHIND_FROM
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, earlier)
    waited = selection(client, cid, wait="1", **query)
    assert waited["members"] == 2 + BEHIND_FROM and waited["pending"] == 0

    alone = {"from": str(t0 + 40), "to": str(t0 + 50)}
    late = [add(client, cid, token, f"only{i}", t0 + 41 + i * 0.01) for i in range(BEHIND_FROM)]
    now[0] = t0 + 45.0
    whole = selection(client, cid, **alone)
    assert whole["members"] == BEHIND_FROM and whole["pending"] == 0
    assert top(client, f"/c/{cid}/top", **alone) == plain_merge_top(client, late)
    assert top(client, f"/c/{cid}/top", wait="1", **query) == plain_merge_top(
        client, earlier + filling
    )
