"""A record whose blob is lost answers 410 on the page and every view alike, and a re-upload of
the same bytes heals it; on both backend pairs."""

from __future__ import annotations

from typing import Any

import pytest

from share import create_app

from conftest import unique_profile

READS = [
    "/{pid}",
    "/{pid}/raw",
    "/{pid}/top",
    "/api/v1/profiles/{pid}",
    "/api/v1/profiles/{pid}/flamegraph",
    "/api/v1/profiles/{pid}/top",
]


@pytest.fixture
def app(backend: dict[str, Any]) -> Any:
    return create_app(backend)


def test_lost_blob_is_410_everywhere_until_uploaded_again(app):
    client, share = app.test_client(), app.extensions["share"]
    data = unique_profile("lost")
    made = client.post("/", data=data, headers={"Accept": "application/json"})
    assert made.status_code == 201
    pid = made.get_json()["id"]
    for path in READS:  # views computed and cached while the blob was there
        assert client.get(path.format(pid=pid)).status_code == 200, path
    share.blobs.delete(pid)  # the store restored without it, behind the service's back
    share._present.clear()  # (the service trusts a blob it saw for a few seconds)
    for path in READS:
        reply = client.get(path.format(pid=pid))
        assert reply.status_code == 410, (path, reply.status_code)
        assert "the stored profile is missing" in reply.get_data(as_text=True), path
    again = client.post("/", data=data)
    assert again.status_code == 200  # the same profile: its record was kept
    for path in READS:
        assert client.get(path.format(pid=pid)).status_code == 200, path
