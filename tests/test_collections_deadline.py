"""A collection view that merges for longer than SHARE_COLLECTION_VIEW_SECONDS answers 503 with
Retry-After while its merges go on; asked again, it finds them (nothing is merged twice)."""

from __future__ import annotations

import threading
import time
from typing import Any

from test_collections_blocks import OPEN, add, create, plain_merge_top, selection, top

from conftest import make_app, unique_profile


def test_a_view_past_its_wait_is_a_503_and_its_merge_is_kept(backend: dict[str, Any]) -> None:
    app = make_app({**backend, **OPEN})
    client, share = app.test_client(), app.extensions["share"]
    cid, token = create(client)
    at = (int(time.time()) // 60 - 1) * 60 + 1  # one settled 10 s window
    pids = [add(client, cid, token, f"late{i}", at + i * 0.01) for i in range(3)]

    share.settings["COLLECTION_VIEW_SECONDS"] = 0.001  # less than any merge takes
    # focus=: a view that reads the merge (the plain top table sums the members instead)
    query = {"to": str(at + 5), "focus": "main"}
    r = client.get(f"/api/v1/collections/{cid}/top", query_string=query)
    assert r.status_code == 503, r.data
    assert r.headers["Retry-After"] == "5"
    assert b"still being merged" in r.data

    share.settings["COLLECTION_VIEW_SECONDS"] = 30.0
    again = selection(client, cid, to=str(at + 5))
    assert again["members"] == 3 and again["built"] == 0  # the first ask's merge, kept
    assert top(client, f"/c/{cid}/top", to=str(at + 5)) == plain_merge_top(client, pids)


def test_asks_of_one_selection_past_their_wait_share_one_resolve(backend: dict[str, Any]) -> None:
    """The page asks again every 5 s, and asks for its flame graph and top together: each ask
    past its wait joins the resolve running for the selection, not a new one waiting behind it."""
    app = make_app({**backend, **OPEN})
    client, share = app.test_client(), app.extensions["share"]
    cid, token = create(client)
    at = (int(time.time()) // 60 - 1) * 60 + 1
    for i in range(4):  # large members: their merge outlasts the three asks below
        r = client.post(
            f"/c/{cid}",
            query_string={"time": f"{at + i * 0.01:.3f}"},
            data=unique_profile(f"big{i}", "go-runtime/cpu-large.pb.gz"),
            headers={"X-Collection-Token": token},
        )
        assert r.status_code == 201, r.data

    share.settings["COLLECTION_VIEW_SECONDS"] = 0.001
    for view in ("top", "flamegraph", "top"):  # with focus=, they read the merge
        query = {"to": str(at + 5), "focus": "main"}
        r = client.get(f"/api/v1/collections/{cid}/{view}", query_string=query)
        assert r.status_code == 503, r.data
    resolving = [t for t in threading.enumerate() if t.name == f"resolve {cid}"]
    assert len(resolving) == 1
    resolving[0].join(60)

    share.settings["COLLECTION_VIEW_SECONDS"] = 30.0
    again = selection(client, cid, to=str(at + 5))
    assert again["members"] == 4 and again["built"] == 0
