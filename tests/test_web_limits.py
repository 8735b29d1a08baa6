"""Rate limits, trusted proxies and the upload token on real servers: two instances on one
Redis count a client together; X-Forwarded-For counts only from a trusted proxy."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from conftest import new_bucket, start_server, stop, unique_profile

TOKEN = "team-secret-token"


@pytest.fixture(scope="module")
def servers(
    s3_endpoint: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """`proxied` trusts 127.0.0.1 as a proxy and wants the upload token; `direct` trusts no
    proxy. Both: 3 uploads and 3 deletes a minute per client, on one Redis and one bucket."""
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    bucket = new_bucket(s3_endpoint)
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHARE_")}
    base.update(
        SHARE_BLOBS=f"s3://{bucket}/p",
        SHARE_META=redis_url,
        SHARE_PUBLIC_URL="",
        SHARE_RATE_UPLOADS="3/minute",
        SHARE_RATE_DELETES="3/minute",
        SHARE_RATE_UPLOAD_BYTES="4KiB/hour",
    )
    logs = tmp_path_factory.mktemp("limits")
    proxied, p1 = start_server(
        {**base, "SHARE_TRUSTED_PROXIES": "127.0.0.1", "SHARE_UPLOAD_TOKEN": TOKEN},
        logs / "proxied.log",
        workers=1,
    )
    direct, p2 = start_server(base, logs / "direct.log", workers=1)
    yield {"proxied": proxied, "direct": direct}
    stop(p1)
    stop(p2)


def upload(server: str, tag: str, **headers: str) -> requests.Response:
    return requests.post(server, data=unique_profile(tag), headers=headers, timeout=30)


def bearer(**headers: str) -> dict[str, Any]:
    return {"Authorization": f"Bearer {TOKEN}", **headers}


def assert_limited(reply: requests.Response, setting: str) -> None:
    assert reply.status_code == 429, reply.text
    assert 0 < int(reply.headers["Retry-After"]) <= 3600
    assert setting in reply.text and "the limit is" in reply.text
    assert reply.text.count("\n") == 1


def test_upload_limit_is_shared_by_two_instances_and_forwarded_for_counts_only_if_trusted(
    servers,
):
    proxied, direct = servers["proxied"], servers["direct"]
    client = {"X-Forwarded-For": "198.51.100.7"}
    # The proxied instance believes the header: these count for 198.51.100.7 ...
    assert upload(proxied, "a1", **bearer(**client)).status_code == 201
    assert upload(proxied, "a2", **bearer(**client)).status_code == 201
    # ... and so does the other instance, through the same Redis, for its direct client
    # 127.0.0.1 (the header is ignored there): a separate count.
    for tag in ("b1", "b2", "b3"):
        assert upload(direct, tag, **client).status_code == 201
    assert_limited(upload(direct, "b4", **client), "SHARE_RATE_UPLOADS")
    assert_limited(upload(direct, "b5", **{"X-Forwarded-For": "203.0.113.9"}), "RATE_UPLOADS")
    # 127.0.0.1 through the proxied instance without the header: the same, shared count.
    assert_limited(upload(proxied, "b6", **bearer()), "SHARE_RATE_UPLOADS")
    # 198.51.100.7 has one upload left, across instances, only where the proxy is believed.
    assert upload(proxied, "a3", **bearer(**client)).status_code == 201
    assert_limited(upload(proxied, "a4", **bearer(**client)), "SHARE_RATE_UPLOADS")


def test_wrong_delete_tokens_are_rate_limited(servers):
    proxied = servers["proxied"]
    client = {"X-Forwarded-For": "198.51.100.20"}
    made = upload(proxied, "to-delete", **bearer(**client))
    assert made.status_code == 201, made.text
    link = made.text.strip()
    for _ in range(3):
        wrong = requests.delete(link, headers={"X-Delete-Token": "nope", **client}, timeout=10)
        assert wrong.status_code == 403
    assert_limited(
        requests.delete(link, headers={"X-Delete-Token": "nope", **client}, timeout=10),
        "SHARE_RATE_DELETES",
    )
    token = made.headers["X-Delete-Token"]  # the owner, from elsewhere, still can
    other = {"X-Forwarded-For": "198.51.100.21", "X-Delete-Token": token}
    assert requests.delete(link, headers=other, timeout=10).status_code == 204


def test_bytes_per_hour_limit(servers):
    direct = servers["direct"]
    big = unique_profile("bytes-1", base="go-runtime/cpu-small.pb.gz")  # ~7.6 KiB > 4 KiB
    reply = requests.put(f"{direct}/big.pb.gz", data=big, timeout=30)
    # Over the hour's bytes: refused before the body is stored (the upload count may be
    # exhausted by the test before, whichever limit speaks first names itself).
    assert reply.status_code == 429, reply.text
    assert "SHARE_RATE_UPLOAD" in reply.text


def test_upload_token_is_required_when_set_and_reading_stays_open(servers):
    proxied = servers["proxied"]
    client = {"X-Forwarded-For": "198.51.100.30"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = upload(proxied, "token", **client, **headers)
        assert refused.status_code == 401, refused.text
        assert "Authorization: Bearer" in refused.text
    # (Refused attempts count against the client's uploads: a second address uploads.)
    made = upload(proxied, "token", **bearer(**{"X-Forwarded-For": "198.51.100.31"}))
    assert made.status_code == 201, made.text
    link = made.text.strip()
    assert requests.get(link, timeout=10).status_code == 200  # no token needed to read
    assert requests.get(link + "/raw", timeout=10).status_code == 200


def test_links_only_for_allowed_hosts(servers):
    headers = bearer(**{"Host": "evil.example", "X-Forwarded-For": "198.51.100.40"})
    forged = requests.post(
        servers["proxied"], data=unique_profile("host"), headers=headers, timeout=10
    )
    assert forged.status_code == 400, forged.text
    assert "SHARE_ALLOWED_HOSTS" in forged.text and "evil.example" not in forged.headers.get(
        "Location", ""
    )


def test_the_embedded_default_counts_a_client_across_workers_and_instances(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """On local dir + SQLite the counters live in a file beside the records (once they were
    per process, so each gunicorn worker let the whole limit through): two instances, and
    the workers of each, on one store count a client together."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHARE_")}
    base.update(
        SHARE_BLOBS=f"file:{tmp_path}/blobs",
        SHARE_META=f"sqlite:{tmp_path}/meta.sqlite3",
        SHARE_PUBLIC_URL="",
        SHARE_RATE_UPLOADS="4/minute",
        SHARE_RATE_UPLOAD_BYTES="off",
        SHARE_RATE_DELETES="off",
    )
    first, p1 = start_server(base, tmp_path / "first.log", workers=2)
    second, p2 = start_server(base, tmp_path / "second.log", workers=2)
    try:
        made = [
            upload(server, f"e{i}").status_code
            for i, server in enumerate([first] * 2 + [second] * 2)
        ]
        assert made == [201] * 4
        for i in range(6):  # fresh connections, so both workers of each instance are asked
            assert_limited(upload([first, second][i % 2], f"over{i}"), "SHARE_RATE_UPLOADS")
        assert (tmp_path / "meta.sqlite3-limits").exists()
    finally:
        stop(p1)
        stop(p2)


def test_sqlite_limit_storage_counts_lapses_and_clears(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from limits import parse
    from limits.strategies import FixedWindowRateLimiter

    from share.store.sqlite_limits import SqliteLimitStorage, storage_uri

    uri = storage_uri(str(tmp_path / "sub" / "meta.sqlite3"))
    one, other = SqliteLimitStorage(uri), SqliteLimitStorage(uri)  # two processes' views
    assert one.check() and one.get("k") == 0
    assert one.incr("k", 1) == 1 and other.incr("k", 1, amount=5) == 6
    assert other.get("k") == 6 and time.time() < one.get_expiry("k") <= time.time() + 1
    limiter = FixedWindowRateLimiter(other)
    item = parse("2/second")
    assert limiter.hit(item, "c") and limiter.hit(item, "c") and not limiter.hit(item, "c")
    time.sleep(1.05)  # the window lapses: a fresh count
    assert one.get("k") == 0 and limiter.hit(item, "c")
    key = item.key_for("c")
    assert other.get(key) == 1
    one.clear(key)
    assert other.get(key) == 0
    assert one.incr("x", 60) == 1 and one.reset() == 2 and other.get("x") == 0  # k (lapsed), x
