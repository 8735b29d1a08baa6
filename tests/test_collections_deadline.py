"""A collection view that merges for longer than SHARE_COLLECTION_VIEW_SECONDS answers 503 with
Retry-After while its merges go on; asked again, it finds them (nothing is merged twice)."""

from __future__ import annotations

import time
from typing import Any

from test_collections_blocks import OPEN, add, create, plain_merge_top, selection, top

from conftest import make_app


def test_a_view_past_its_wait_is_a_503_and_its_merge_is_kept(backend: dict[str, Any]) -> None:
    app = make_app({**backend, **OPEN})
    client, share = app.test_client(), app.extensions["share"]
    cid, token = create(client)
    at = (int(time.time()) // 60 - 1) * 60 + 1  # one settled 10 s window
    pids = [add(client, cid, token, f"late{i}", at + i * 0.01) for i in range(3)]

    share.settings["COLLECTION_VIEW_SECONDS"] = 0.001  # less than any merge takes
    r = client.get(f"/api/v1/collections/{cid}/top", query_string={"to": str(at + 5)})
    assert r.status_code == 503, r.data
    assert r.headers["Retry-After"] == "5"
    assert b"still being merged" in r.data

    share.settings["COLLECTION_VIEW_SECONDS"] = 30.0
    again = selection(client, cid, to=str(at + 5))
    assert again["members"] == 3 and again["built"] == 0  # the first ask's merge, kept
    assert top(client, f"/c/{cid}/top", to=str(at + 5)) == plain_merge_top(client, pids)
