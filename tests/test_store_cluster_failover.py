"""A Redis Cluster master killed under the app: writes to its slots answer a clear 503 while
the cluster fails over, then work again in the same app (its client finds the promoted
replica), and every upload answered 2xx before the kill is still there, record and views."""

from __future__ import annotations

import gzip
import itertools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.cluster import key_slot

from share.compute.ingest import profile_id
from share.store.redis_keys import RedisKeys

from conftest import RedisClusterProcs, make_app, start_redis_cluster, unique_profile

# Each test bounds how soon a server answers (a 503, a dropped client): run alone (make test).
pytestmark = pytest.mark.latency

OPEN = {"RATE_UPLOADS": "off", "RATE_UPLOAD_BYTES": "off", "RATE_DELETES": "off"}
STORE_TIMEOUT = 2.0
FAILOVER_DEADLINE = 20.0  # seconds: node timeout 1 s, detection and election within a few


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisClusterProcs]:
    """A cluster of this test's own: it kills one of its masters."""
    workdir = tmp_path / "cluster"
    workdir.mkdir()
    found = start_redis_cluster(workdir, node_timeout_ms=1000)
    yield found
    found.stop()


def pid_of(data: bytes) -> str:
    return profile_id(gzip.decompress(data))


def served_by(cluster: RedisClusterProcs, port: int) -> list[tuple[int, int]]:
    return [(r[0], r[1]) for r in cluster.node(port).cluster("slots") if r[2][1] == port]


def test_a_killed_master_fails_over_and_nothing_acknowledged_is_lost(
    cluster: RedisClusterProcs, tmp_path: Path
) -> None:
    keys = RedisKeys()
    app = make_app({"BLOBS": f"file:{tmp_path}/blobs", "META": cluster.url,
                    "STORE_TIMEOUT": STORE_TIMEOUT, **OPEN})  # fmt: skip
    client = app.test_client()
    share = app.extensions["share"]
    acknowledged: dict[str, bytes] = {}
    for i in range(12):
        data = unique_profile(f"before-{i}")
        reply = client.post("/", data=data)
        assert reply.status_code == 201, reply.data
        pid = reply.data.decode().strip().rsplit("/", 1)[1]
        assert pid == pid_of(data)
        top = client.get(f"/api/v1/profiles/{pid}/top")
        assert top.status_code == 200
        acknowledged[pid] = top.data
    computed = share.once.computed
    first = next(iter(acknowledged))
    victim = cluster.master_of(keys.profile(first))
    ranges = served_by(cluster, victim)

    def on_victim(data: bytes) -> bool:
        slot = key_slot(keys.profile(pid_of(data)).encode())
        return any(lo <= slot <= hi for lo, hi in ranges)

    waiting = (unique_profile(f"during-{i}") for i in itertools.count())
    candidates = list(itertools.islice(filter(on_victim, waiting), 200))

    os.kill(cluster.procs[victim].pid, signal.SIGKILL)
    cluster.procs[victim].wait()
    killed = time.monotonic()
    refused, slowest = 0, 0.0
    for data in candidates:  # writes to the dead master's slots, until its replica serves them
        started = time.monotonic()
        reply = client.post("/", data=data)
        took = time.monotonic() - started
        assert reply.status_code in (201, 503), reply.data
        slowest = max(slowest, took)
        assert took < STORE_TIMEOUT + 0.5, f"{took:.1f} s for a {reply.status_code}"
        if reply.status_code == 201:
            acknowledged[pid_of(data)] = b""
            break
        refused += 1
        read = client.get(f"/api/v1/profiles/{first}")  # on the dead master: 503, never 500
        assert read.status_code in (200, 503), read.data
        message = reply.data.decode()
        assert "metadata store" in message and "try again" in message, message
        assert reply.headers["Retry-After"]
        assert time.monotonic() - killed < FAILOVER_DEADLINE, "the cluster never failed over"
        time.sleep(0.1)
    else:
        pytest.fail("no write succeeded after the failover")
    print(f"failover: {refused} writes refused over {time.monotonic() - killed:.1f} s, "
          f"the slowest answer {slowest:.2f} s")  # fmt: skip
    assert refused >= 1  # the failover was seen, as 503s
    assert cluster.master_of(keys.profile(pid_of(data))) != victim

    # The same app, without a restart: writes and reads on every slot.
    for i in range(6):
        fresh = unique_profile(f"after-{i}")
        reply = client.post("/", data=fresh)
        assert reply.status_code == 201, reply.data
        acknowledged[pid_of(fresh)] = b""
    for pid, top in acknowledged.items():
        assert client.get(f"/api/v1/profiles/{pid}").status_code == 200, pid
        assert client.get(f"/{pid}/raw").status_code == 200, pid
        if top:  # a view computed before the kill: still cached, the same answer
            again = client.get(f"/api/v1/profiles/{pid}/top")
            assert again.status_code == 200 and again.data == top
    assert share.once.computed == computed  # no view had to be computed again
