"""Views through the compute tier, in-process on both store pairs: computed once, failures
remembered, the view cache bounded."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from share.compute.pool import ComputePool
from share.config import load

from conftest import make_app

CORPUS = Path(__file__).parent / "corpus"


def upload(client: Any, path: str) -> str:
    reply = client.post(
        "/", data=(CORPUS / path).read_bytes(), headers={"Accept": "application/json"}
    )
    assert reply.status_code in (200, 201), reply.data
    return reply.get_json()["id"]


def test_concurrent_first_views_compute_once(backend: dict[str, Any]) -> None:
    app = make_app(backend)
    client = app.test_client()
    pid = upload(client, "go-runtime/cpu-large.pb.gz")
    url = f"/api/v1/profiles/{pid}/flamegraph?si=samples&budget=777"
    with ThreadPoolExecutor(20) as pool:
        replies = list(pool.map(lambda _: app.test_client().get(url), range(20)))
    assert {r.status_code for r in replies} == {200}
    assert len({r.data for r in replies}) == 1
    assert app.extensions["share"].once.computed == 1


def test_a_view_that_ran_out_of_time_is_remembered_not_retried(tmp_path: Path) -> None:
    # 50 ms: far less than cpu-xl's top table takes, and time enough for an idle process to
    # take the job on a loaded machine (at 10 ms the suite once saw "every process is busy").
    slow = ComputePool(load({}, {"ANALYSIS_WORKERS": 1, "ANALYSIS_SECONDS": 0.05}))
    try:
        stores = {"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m.sqlite3"}
        quick = make_app(stores).test_client()  # uploads on the shared pool
        pid = upload(quick, "go-runtime/cpu-xl.pb.gz")
        slow.run({"op": "ping"}, seconds=60)  # started: only the view is held to 0.05 s
        app = make_app({**stores, "COMPUTE": slow})
        client = app.test_client()
        first = client.get(f"/api/v1/profiles/{pid}/top?si=samples")
        assert first.status_code == 503
        assert "longer than 0.05 s (SHARE_ANALYSIS_SECONDS)" in first.get_json()["error"]["message"]
        deadline = time.monotonic() + 10
        while slow.supervisor.started[0] < 2:  # the stopped process was replaced
            assert time.monotonic() < deadline
            time.sleep(0.02)
        started = slow.supervisor.started[0]
        again = client.get(f"/api/v1/profiles/{pid}/top?si=samples")
        assert (
            again.status_code == 503 and "not tried again" in again.get_json()["error"]["message"]
        )
        assert slow.supervisor.started[0] == started  # no new process, no new job
        assert app.extensions["share"].once.computed == 1
        # Another view of the profile is its own question.
        assert quick.get(f"/api/v1/profiles/{pid}/top?si=cpu").status_code == 200
    finally:
        slow.close()


def test_the_view_cache_stays_under_its_cap_over_300_option_values(
    backend: dict[str, Any],
) -> None:
    cap = 30_000  # a few dozen of these flame graphs: the 300 overflow it several times
    app = make_app({**backend, "VIEW_CACHE_BYTES": cap})
    client = app.test_client()
    pid = upload(client, "go-runtime/heap.pb.gz")
    meta = app.extensions["share"].meta
    for budget in range(1, 301):
        assert client.get(f"/api/v1/profiles/{pid}/flamegraph?budget={budget}").status_code == 200
        if budget % 15 == 0:
            assert meta.view_bytes() <= cap
    # Equivalent queries share one entry: the cached answer, not a new computation.
    computed = app.extensions["share"].once.computed
    for query in ("budget=300", "budget=300&si=", "si=inuse_space&budget=300"):
        assert client.get(f"/api/v1/profiles/{pid}/flamegraph?{query}").status_code == 200
    assert app.extensions["share"].once.computed == computed
    # The first ones went to make room: asked again, computed again.
    assert client.get(f"/api/v1/profiles/{pid}/flamegraph?budget=1").status_code == 200
    assert app.extensions["share"].once.computed == computed + 1


@pytest.mark.parametrize("query", ["si=nonsense", "budget=-1", "nf=2"])
def test_bad_options_are_400_before_any_computation(app: Any, query: str) -> None:
    client = app.test_client()
    pid = upload(client, "go-runtime/heap.pb.gz")
    assert client.get(f"/api/v1/profiles/{pid}/flamegraph?{query}").status_code == 400
    assert app.extensions["share"].once.computed == 0
