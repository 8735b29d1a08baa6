"""Expiry and delete tokens on both backend pairs, with a clock the tests control."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import make_app

CORPUS = Path(__file__).parent / "corpus"
HEAP = (CORPUS / "go-runtime/heap.pb.gz").read_bytes()
CPU = (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes()


class Clock:
    """Epoch seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def lifecycle_app(backend: dict[str, Any], clock: Clock) -> Any:
    return make_app({**backend, "CLOCK": clock})


def is_empty(app: Any, pid: str) -> bool:
    """Neither store holds anything of the profile."""
    share = app.extensions["share"]
    return (
        share.meta.load(pid) is None
        and share.meta.expiry_of(pid) is None
        and not share.blobs.exists(pid)
        and share.meta.view_get(pid, "any") is None
    )


def post(client: Any, data: bytes, **kwargs: Any) -> Any:
    headers = {"Accept": "application/json", **kwargs.pop("headers", {})}
    return client.post("/", data=data, headers=headers, **kwargs)


@pytest.mark.parametrize(
    ("how", "seconds"),
    [
        ({"headers": {"Expires-In": "1h"}}, 3600),
        ({"query_string": {"expires": "7d"}}, 7 * 86400),
    ],
)
def test_expiry_choice_is_answered_with_x_expires(lifecycle_app, clock, how, seconds):
    reply = post(lifecycle_app.test_client(), HEAP, **how)
    expected = datetime.fromtimestamp(clock.now + seconds).astimezone()
    assert datetime.fromisoformat(reply.headers["X-Expires"]) == expected
    assert reply.get_json()["expires_at"] == reply.headers["X-Expires"]


def test_form_field_expiry_and_never(lifecycle_app):
    from io import BytesIO

    client = lifecycle_app.test_client()
    reply = client.post("/", data={"file": (BytesIO(HEAP), "h.pb.gz"), "expires": "never"})
    assert reply.status_code == 201
    assert "X-Expires" not in reply.headers


def test_bad_expiry_is_400_and_nothing_stored(lifecycle_app):
    client = lifecycle_app.test_client()
    reply = client.post("/?expires=soon", data=HEAP)
    assert reply.status_code == 400 and "expires" in reply.text
    assert client.get("/api/v1/profiles/" + "A" * 16).status_code == 404


def test_expiry_is_capped_by_the_operator(backend, clock):
    app = make_app({**backend, "CLOCK": clock, "MAX_EXPIRY": "7d"})
    reply = post(app.test_client(), HEAP, headers={"Expires-In": "never"})
    expected = datetime.fromtimestamp(clock.now + 7 * 86400).astimezone()
    assert datetime.fromisoformat(reply.headers["X-Expires"]) == expected


def test_expired_profile_is_410_and_purged_from_both_stores(lifecycle_app, clock):
    client = lifecycle_app.test_client()
    body = post(client, HEAP, headers={"Expires-In": "1h"}).get_json()
    pid = body["id"]
    assert client.get(f"/{pid}/raw").status_code == 200
    clock.now += 3599
    assert client.get(f"/api/v1/profiles/{pid}").status_code == 200
    clock.now += 2
    for path in (f"/{pid}", f"/{pid}/raw", f"/api/v1/profiles/{pid}"):
        assert client.get(path).status_code in (410, 404)
    assert client.get(f"/{pid}/raw").status_code == 404  # purged by the first 410
    assert is_empty(lifecycle_app, pid)


def test_first_access_after_expiry_says_gone(lifecycle_app, clock):
    client = lifecycle_app.test_client()
    pid = post(client, HEAP, headers={"Expires-In": "1h"}).get_json()["id"]
    clock.now += 7200
    reply = client.get(f"/{pid}/raw")
    assert reply.status_code == 410 and "expired" in reply.text


def test_prune_removes_only_expired_profiles(lifecycle_app, clock):
    client = lifecycle_app.test_client()
    short = post(client, HEAP, headers={"Expires-In": "1h"}).get_json()["id"]
    long = post(client, CPU, headers={"Expires-In": "30d"}).get_json()["id"]
    share = lifecycle_app.extensions["share"]
    assert share.prune() == 0
    clock.now += 2 * 3600
    assert share.prune() == 1
    assert is_empty(lifecycle_app, short)
    assert client.get(f"/{long}/raw").status_code == 200


def test_reupload_extends_expiry_to_the_later(lifecycle_app, clock):
    client = lifecycle_app.test_client()
    first = post(client, HEAP, headers={"Expires-In": "1h"})
    again = post(client, HEAP, headers={"Expires-In": "7d"})
    assert again.status_code == 200
    body = again.get_json()
    assert body["deduplicated"] is True and "delete_token" not in body
    assert "X-Delete-Token" not in again.headers
    assert again.headers["X-Expires"] > first.headers["X-Expires"]
    shorter = post(client, HEAP, headers={"Expires-In": "1h"})
    assert shorter.headers["X-Expires"] == again.headers["X-Expires"]
    clock.now += 2 * 86400
    assert client.get(f"/{body['id']}/raw").status_code == 200


def test_reupload_after_expiry_is_a_new_profile(lifecycle_app, clock):
    client = lifecycle_app.test_client()
    post(client, HEAP, headers={"Expires-In": "1h"})
    clock.now += 7200
    reply = post(client, HEAP, headers={"Expires-In": "1h"})
    assert reply.status_code == 201 and reply.get_json()["delete_token"]


def test_delete_with_the_token(lifecycle_app):
    client = lifecycle_app.test_client()
    body = post(client, HEAP).get_json()
    pid, token = body["id"], body["delete_token"]
    assert len(token) >= 22  # >= 128 random bits, URL-safe
    share = lifecycle_app.extensions["share"]
    assert token not in share.meta.load(pid).to_json()  # only its hash is stored
    for bad in ({}, {"X-Delete-Token": "wrong"}, {"X-Delete-Token": token[:-1]}):
        reply = client.delete(f"/{pid}", headers=bad)
        assert reply.status_code == 403
        assert client.get(f"/{pid}/raw").status_code == 200
    assert client.delete(f"/{pid}", headers={"X-Delete-Token": token}).status_code == 204
    assert is_empty(lifecycle_app, pid)
    assert client.get(f"/{pid}/raw").status_code == 404
    assert client.delete(f"/{pid}", headers={"X-Delete-Token": token}).status_code == 404


def test_delete_tokens_never_look_like_an_option() -> None:
    from share.core import new_token

    tokens = [new_token() for _ in range(3000)]  # ~47 would start with "-" if unchecked
    assert not any(t.startswith("-") for t in tokens) and len(set(tokens)) == len(tokens)
