"""A view's plan runs the merges of members it needs side by side, one per merge process
(share.collections.sidebyside): a label selection's first look over several 10 s windows keeps
both merge processes busy at once, and answers as the plain merge of its members."""

from __future__ import annotations

import threading
import time
from typing import Any

from test_collections_blocks import OPEN, add, create, plain_merge_top, selection, top

from share import create_app
from share.compute.pool import ComputePool
from share.config import load

from conftest import make_app


def own_pool(merge_processes: int) -> ComputePool:
    """A compute pool of its own: the tests' shared one has a single merge process."""
    return ComputePool(
        load({}, {"ANALYSIS_WORKERS": 1, "INGEST_WORKERS": 1, "MERGE_WORKERS": merge_processes})
    )


def watched(app: Any) -> dict[str, int]:
    """The most merges of stored profiles in flight at once, counted around the real ones."""
    merges = app.extensions["share"].merges
    real, lock, seen = merges.merge_ids, threading.Lock(), {"now": 0, "most": 0, "all": 0}

    def counted(*args: Any, **kwargs: Any) -> bytes:
        with lock:
            seen["now"] += 1
            seen["all"] += 1
            seen["most"] = max(seen["most"], seen["now"])
        try:
            return real(*args, **kwargs)  # type: ignore[no-any-return]
        finally:
            with lock:
                seen["now"] -= 1

    merges.merge_ids = counted
    return seen


def test_a_label_selections_first_look_merges_its_windows_side_by_side(
    backend: dict[str, Any],
) -> None:
    pool = own_pool(2)
    try:
        side_by_side(create_app({"COMPUTE": pool, "PRECOMPUTE": "off", **backend, **OPEN}))
    finally:
        pool.close()


def side_by_side(app: Any) -> None:
    client = app.test_client()
    cid, token = create(client)
    base = (int(time.time()) // 60 - 2) * 60  # a minute two minutes ago: three 10 s windows
    mine = [
        add(client, cid, token, f"side{w}{k}", base + 10 * w + 1 + k, pod="a")
        for w in range(3)
        for k in range(3)
    ]
    add(client, cid, token, "other", base + 2, pod="b")
    seen = watched(app)
    query = {"from": str(base), "to": str(base + 30), "match": 'pod="a"'}
    found = selection(client, cid, **query)
    assert found["members"] == 9 and found["blocks"] == 3 and found["built"] == 3, found
    assert seen["most"] == 2, seen  # two merge processes: a merge on each at once
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, mine)
    merges = seen["all"]
    again = selection(client, cid, **query)  # all built: the dry run's parts are the plan
    assert again["profile"] == found["profile"] and again["parts"] == 3 and again["built"] == 0
    assert seen["all"] == merges


def test_with_one_merge_process_they_run_one_after_the_other(backend: dict[str, Any]) -> None:
    app = make_app({**backend, **OPEN})  # the shared pool: one merge process
    client = app.test_client()
    cid, token = create(client)
    base = (int(time.time()) // 60 - 2) * 60
    mine = [
        add(client, cid, token, f"one{w}{k}", base + 10 * w + 1 + k, pod="a")
        for w in range(3)
        for k in range(2)
    ]
    seen = watched(app)
    query = {"from": str(base), "to": str(base + 30), "match": 'pod="a"'}
    assert selection(client, cid, **query)["blocks"] == 3
    assert seen["most"] == 1 and seen["all"] == 4, seen  # three blocks, then the selection
    assert top(client, f"/c/{cid}/top", **query) == plain_merge_top(client, mine)
