"""pprof-share on a real Redis Cluster: every command and script its flows send stays in one
hash slot (watched with MONITOR on every master), the collection index's contract on each
backend, rate limits counted in one slot per client, and the settings that name a cluster."""

from __future__ import annotations

import gzip
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import key_slot

from share.config import ConfigError, load
from share.errors import StoreUnavailable
from share.store import locate
from share.store.collections.index import Collection, Member
from share.store.guard import guard
from share.store.meta import Record
from share.store.redis_client import Unreplicated, cluster_nodes
from share.store.redis_keys import RedisKeys

from conftest import CLUSTER_BACKEND, CORPUS, RedisClusterProcs, make_app, unique_profile

OPEN = {"RATE_UPLOADS": "off", "RATE_UPLOAD_BYTES": "off", "RATE_DELETES": "off"}
# Commands that name no key (COMMAND GETKEYS refuses them).
KEYLESS = {
    "HELLO", "PING", "INFO", "CLUSTER", "COMMAND", "ECHO", "WAIT", "SCRIPT", "CLIENT", "SELECT",
    "READONLY", "READWRITE", "FLUSHALL", "FLUSHDB", "SCAN", "DBSIZE", "AUTH", "MULTI", "EXEC",
}  # fmt: skip
# Commands each flow sends at least once: a flow that never ran would pass unnoticed.
FLOW_COMMANDS = ("EVALSHA", "EVAL", "WAIT", "SET", "HGETALL", "ZADD", "SADD", "HDEL", "SCAN")
_QUOTED = re.compile(rb'"((?:\\.|[^"\\])*)"')
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b"}


def unquote(text: bytes) -> bytes:
    """One argument of a MONITOR line, as sent (sdscatrepr's escapes undone)."""
    out, i = bytearray(), 0
    while i < len(text):
        if text[i : i + 1] == b"\\":
            nxt = text[i + 1 : i + 2]
            if nxt == b"x":
                out += bytes([int(text[i + 2 : i + 4], 16)])
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt)
            i += 2
            continue
        out += text[i : i + 1]
        i += 1
    return bytes(out)


class Monitor:
    """MONITOR on some nodes: every command they ran, in order, with who ran it (a client's
    address, or `lua` for the commands of the script just before)."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.lines: dict[int, list[tuple[str, list[bytes]]]] = {p: [] for p in ports}
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._marker = f"monitor-end-{time.monotonic_ns()}".encode()
        self._ended: dict[int, threading.Event] = {p: threading.Event() for p in ports}

    def __enter__(self) -> Monitor:
        for port in self.ports:
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(b"MONITOR\r\n")
            stream = sock.makefile("rb")
            assert stream.readline() == b"+OK\r\n"
            thread = threading.Thread(target=self._read, args=(port, stream), daemon=True)
            thread.start()
            self._socks.append(sock)
            self._threads.append(thread)
        return self

    def _read(self, port: int, stream: Any) -> None:
        for raw in stream:
            head, _, rest = raw.partition(b"] ")
            who = head.partition(b"[")[2].partition(b" ")[2].decode()
            args = [unquote(a) for a in _QUOTED.findall(rest)]
            if args == [b"ECHO", self._marker]:
                self._ended[port].set()
                return
            self.lines[port].append((who, args))

    def __exit__(self, *exc: object) -> None:
        for port in self.ports:
            redis.Redis(port=port).echo(self._marker)
        for port in self.ports:
            assert self._ended[port].wait(30), f"MONITOR on {port} never saw the end marker"
        for sock in self._socks:
            sock.close()

    def groups(self) -> Iterator[tuple[int, list[list[bytes]]]]:
        """(port, [a client's command, then the commands its script ran, if any])."""
        for port, lines in self.lines.items():
            group: list[list[bytes]] = []
            for who, args in lines:
                if who == "lua" and group:
                    group.append(args)
                    continue
                if group:
                    yield port, group
                group = [args]
            if group:
                yield port, group


def keys_of(
    conn: redis.Connection, args: list[bytes], known: dict[tuple[bytes, ...], list]
) -> list:
    """The keys a command names, as the server reads them (COMMAND GETKEYS)."""
    if args[0].upper().decode() in KEYLESS:
        return []
    if tuple(args) not in known:
        conn.send_command("COMMAND", "GETKEYS", *args)
        try:
            known[tuple(args)] = list(conn.read_response())
        except redis.ResponseError as exc:
            raise AssertionError(f"COMMAND GETKEYS {args!r}: {exc}") from None
    return known[tuple(args)]


def spans(monitor: Monitor) -> tuple[list[str], dict[str, int]]:
    """The commands or scripts whose keys are in more than one slot; counts by command."""
    conn = redis.Connection(port=monitor.ports[0])
    known: dict[tuple[bytes, ...], list] = {}
    problems, seen = [], {}
    for port, group in monitor.groups():
        slots = set()
        for args in group:
            name = args[0].upper().decode()
            seen[name] = seen.get(name, 0) + 1
            slots |= {key_slot(k) for k in keys_of(conn, args, known)}
        if len(slots) > 1:
            problems.append(f"{port}: {[a[:4] for a in group]} spans slots {sorted(slots)}")
    conn.disconnect()
    return problems, seen


def test_every_flow_keeps_each_command_and_script_in_one_slot(
    redis_cluster: RedisClusterProcs, tmp_path: Path
) -> None:
    """Upload, view, upload again, collections (create, add, select, delete), delete, prune,
    fsck, rate limits and view eviction, on the cluster: each command and each script (its
    own commands included, which Redis does not check for keys it was not given) is in one
    slot, and every flow ran (a cluster refuses cross-slot commands, so a flow that ran is a
    check too)."""
    redis_cluster.flush()
    settings = {"BLOBS": f"file:{tmp_path}/blobs", "META": redis_cluster.url,
                "RATE_UPLOADS": "100/hour", "RATE_UPLOAD_BYTES": "100MiB/hour",
                "RATE_DELETES": "100/hour"}  # fmt: skip
    app = make_app(settings)
    client = app.test_client()
    share = app.extensions["share"]
    json = {"Accept": "application/json"}
    with Monitor(redis_cluster.masters()) as monitor:
        made = client.post("/", data=unique_profile("slots-1"), headers=json)
        assert made.status_code == 201, made.data
        pid, token = made.json["id"], made.json["delete_token"]
        assert client.post("/", data=unique_profile("slots-1")).status_code == 200  # extend
        for path in ("top", "flamegraph", "progress"):
            assert client.get(f"/api/v1/profiles/{pid}/{path}").status_code == 200
        created = client.post("/api/v1/collections", json={"title": "fleet"}, headers=json)
        cid, ctoken = created.json["id"], created.json["token"]
        cpu = (CORPUS / "go-runtime" / "cpu-small.pb.gz").read_bytes()
        for i, data in enumerate((cpu, unique_profile("slots-2", "go-runtime/cpu-small.pb.gz"))):
            added = client.post(f"/c/{cid}", data=data, query_string={"label": f"pod=p{i}"},
                                headers={"X-Collection-Token": ctoken})  # fmt: skip
            assert added.status_code == 201, added.data
        assert client.get(f"/c/{cid}/top", headers={"Accept": "*/*"}).status_code == 200
        assert client.get(f"/api/v1/collections/{cid}/members").status_code == 200
        assert client.get(f"/api/v1/collections/{cid}/timeline").status_code == 200
        assert client.delete(f"/{pid}", headers={"X-Delete-Token": token}).status_code == 204
        assert client.delete(f"/c/{cid}", headers={"X-Collection-Token": ctoken}).status_code == 200
        share.prune()
        share.fsck()
        app.extensions["collections"].prune()
        # The store's own paths the app took rarely: eviction, an expired record, leases.
        store = locate.meta_store(redis_cluster.url, view_cache_bytes=16 * 250)
        now = time.time()
        store.create(record("CCCCCCCCCCCCCCCC", now + 60))
        store.create(record("DDDDDDDDDDDDDDDD", now - 1))  # Redis expires it at once
        for i in range(40):
            store.view_put("CCCCCCCCCCCCCCCC", f"v{i}", b"x" * 100)
        kept = [store.view_get("CCCCCCCCCCCCCCCC", f"v{i}") for i in range(40)]
        assert store.view_bytes() <= 16 * 250 and kept.count(None) > 0  # some were evicted
        assert store.delete("CCCCCCCCCCCCCCCC", only_if_expired_at=now) is False
        assert store.delete("DDDDDDDDDDDDDDDD", only_if_expired_at=now) is True
        for name in ("CCCCCCCCCCCCCCCC:view:0123", "collection:abcdefabcdef:s|x"):
            assert store.try_lock(name, "t", 5) and store.renew_lock(name, "t", 5)
            store.unlock(name, "t")
    problems, seen = spans(monitor)
    assert problems == []
    for name in FLOW_COMMANDS:
        assert seen.get(name), f"no {name} seen: a flow did not run ({sorted(seen)})"


def test_the_slot_check_sees_a_script_that_spans_slots(redis_cluster: RedisClusterProcs) -> None:
    """Redis runs a script that writes a key it was not given, in another slot of the same
    node: only the watch on what it ran finds it."""
    port = redis_cluster.masters()[0]
    served = [(r[0], r[1]) for r in redis_cluster.node(port).cluster("slots") if r[2][1] == port]
    mine = [k for k in (f"probe-{i}" for i in range(200))
            if any(lo <= key_slot(k.encode()) <= hi for lo, hi in served)]  # fmt: skip
    a, b = mine[0], next(k for k in mine if key_slot(k.encode()) != key_slot(mine[0].encode()))
    script = "redis.call('SET', KEYS[1], 1); return redis.call('SET', ARGV[1], 2)"
    with Monitor([port]) as monitor:
        assert redis_cluster.node(port).eval(script, 1, a, b)
    problems, _ = spans(monitor)
    assert len(problems) == 1 and "spans slots" in problems[0]


def record(pid: str, expires_at: float | None) -> Record:
    return Record(id=pid, sha256="00" * 32, title="t", size_bytes=1, stored_bytes=1,
                  created_at=1.0, expires_at=expires_at, delete_token_hash="ab")  # fmt: skip


def test_leases_and_indexes_land_in_the_slot_of_what_they_belong_to() -> None:
    keys = RedisKeys()
    pid, cid = "Jb3xXv0q1k2LmN_-", "aZ09-_bcdefg"
    profile = key_slot(keys.profile(pid).encode())
    for key in (keys.views(pid), keys.memberof(pid), keys.lock(pid),
                keys.lock(f"{pid}:view:0123456789abcdef")):  # fmt: skip
        assert key_slot(key.encode()) == profile, key
    collection = key_slot(keys.collection(cid, "record").encode())
    for key in (keys.collection(cid, "members"), keys.lock(f"collection:{cid}:s|abc")):
        assert key_slot(key.encode()) == collection, key
    view = keys.view_index(f"{pid}|top")
    assert len({key_slot(k.encode()) for k in view}) == 1
    shards = {key_slot(k.encode()) for k in keys.expiry_shards() + keys.collection_expiry_shards()}
    assert len(shards) == 32  # spread: no one slot every upload writes


# --- the collection index's contract, on each backend -----------------------------------
@pytest.fixture(params=["sqlite", "redis", CLUSTER_BACKEND])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        url = f"sqlite:{tmp_path}/meta.sqlite3"
    elif request.param == "redis":
        url = request.getfixturevalue("redis_url")
        redis.Redis.from_url(url).flushdb()
    else:
        cluster = request.getfixturevalue("redis_cluster")
        cluster.flush()
        url = cluster.url
    return locate.collection_index(url, locate.meta_store(url))


def member(pid: str, at: float, pod: str) -> Member:
    return Member(pid=pid, time=at, labels={"pod": pod}, kind="cpu", added_at=at)


def test_collection_index_contract(index: Any) -> None:
    now = time.time()
    c = Collection(id="aZ09-_bcdefg", title="fleet", created_at=now, expires_at=now + 3600,
                   expires="3600s", retention_seconds=None, token_hash="ab")  # fmt: skip
    forever = Collection(id="forever00000", title="", created_at=now, expires_at=None,
                         expires=None, retention_seconds=None, token_hash="cd")  # fmt: skip
    index.create(c)
    index.create(forever)
    assert index.load(c.id) == c and index.load("nothing00000") is None
    first, second = member("AAAAAAAAAAAAAAAA", 100.0, "a"), member("BBBBBBBBBBBBBBBB", 200.0, "b")
    assert index.add(c.id, first, 3) == "added"
    assert index.add(c.id, first, 3) == "exists"
    assert index.add(c.id, second, 3) == "added"
    assert index.add(c.id, member("AAAAAAAAAAAAAAAA", 300.0, "a"), 3) == "added"
    assert index.add(c.id, member("CCCCCCCCCCCCCCCC", 400.0, "c"), 3) == "full"
    assert index.count(c.id) == 3
    assert [m.time for m in index.members(c.id)] == [100.0, 200.0, 300.0]
    assert [m.pid for m in index.members(c.id, 150.0, 300.0)] == ["BBBBBBBBBBBBBBBB"]
    assert index.add(forever.id, first, 3) == "added"
    assert index.holders("AAAAAAAAAAAAAAAA") == {c.id, forever.id}
    again = member("AAAAAAAAAAAAAAAA", 300.0, "a")
    assert [m.key for m in index.members(c.id)] == [first.key, second.key, again.key]
    assert index.remove_profile(c.id, "AAAAAAAAAAAAAAAA") == 2
    assert index.holders("AAAAAAAAAAAAAAAA") == {forever.id}
    # The index decoded the removed members before (ParsedMembers): it lists them no more.
    assert [m.pid for m in index.members(c.id)] == ["BBBBBBBBBBBBBBBB"]
    assert [m.pid for m in index.members(c.id, 0.0, 1000.0)] == ["BBBBBBBBBBBBBBBB"]
    index.entry_put(c.id, "s|x", {"pid": "DDDDDDDDDDDDDDDD"})
    assert index.entry_get(c.id, "s|x") == {"pid": "DDDDDDDDDDDDDDDD"}
    assert index.entries(c.id) == [{"pid": "DDDDDDDDDDDDDDDD"}]
    index.touch(c.id, now, now + 7200)
    moved = index.load(c.id)
    assert moved.last_add_at == now and moved.expires_at == now + 7200
    assert index.expired(now + 3600) == []
    assert index.expired(now + 7200) == [c.id]
    assert [m.pid for m in index.delete(c.id)] == ["BBBBBBBBBBBBBBBB"]
    assert index.load(c.id) is None and index.expired(now + 10**9) == []
    assert index.holders("BBBBBBBBBBBBBBBB") == set()


# --- rate limits on the cluster ------------------------------------------------------------
def test_rate_limits_count_on_the_cluster_each_client_in_one_slot(
    redis_cluster: RedisClusterProcs, tmp_path: Path
) -> None:
    redis_cluster.flush()
    app = make_app({"BLOBS": f"file:{tmp_path}/blobs", "META": redis_cluster.url,
                    "RATE_UPLOADS": "3/hour", "RATE_UPLOAD_BYTES": "6KiB/hour",
                    "RATE_DELETES": "off"})  # fmt: skip
    client = app.test_client()
    small = [unique_profile(f"limit-{i}") for i in range(4)]
    assert sum(len(d) for d in small) < 6 * 1024  # under the bytes limit: uploads speak first

    def post(data: bytes, address: str) -> Any:
        return client.post("/", data=data, environ_base={"REMOTE_ADDR": address})

    for data in small[:3]:
        assert post(data, "198.51.100.1").status_code == 201
    refused = post(small[3], "198.51.100.1")
    assert refused.status_code == 429 and "SHARE_RATE_UPLOADS" in refused.data.decode()
    assert post(small[3], "198.51.100.2").status_code == 201  # another client: its own count
    big = unique_profile("limit-big", base="go-runtime/cpu-small.pb.gz")
    assert len(big) > 6 * 1024
    refused = post(big, "198.51.100.3")
    assert refused.status_code == 429 and "SHARE_RATE_UPLOAD_BYTES" in refused.data.decode()
    counters: dict[str, list[bytes]] = {}
    for key in redis_cluster.client().scan_iter(match="LIMITS*"):
        counters.setdefault(key.decode().partition("{")[2].partition("}")[0], []).append(key)
    assert set(counters) == {"198.51.100.1", "198.51.100.2", "198.51.100.3"}
    assert len(counters["198.51.100.3"]) == 2  # its uploads and its bytes: one slot
    assert all(len({key_slot(k) for k in keys}) == 1 for keys in counters.values())


def test_every_failure_of_a_cluster_is_a_store_failure() -> None:
    """What RedisCluster raises while a cluster fails over (and an unreplicated write) is in
    the store's `failures`, which the guard turns into a 503 (test_store_cluster_failover.py
    sees them for real)."""
    from redis import exceptions as e

    failures = locate.meta_store("redis-cluster://127.0.0.1:7000").failures
    for kind in (e.ClusterDownError, e.MasterDownError, e.TryAgainError, e.MovedError,
                 e.AskError, e.ConnectionError, e.TimeoutError, e.ClusterError,
                 e.SlotNotCoveredError, e.RedisClusterException, Unreplicated):  # fmt: skip
        assert issubclass(kind, failures), kind


def test_a_write_no_replica_acknowledged_is_a_503_and_taken_back(
    redis_cluster: RedisClusterProcs,
) -> None:
    """The replica is there but does not answer (stopped): WAIT gets no acknowledgement, the
    create is a StoreUnavailable (503) and the record is not left on the master alone."""
    redis_cluster.flush()
    store = guard(locate.meta_store(redis_cluster.url), "metadata store", redis_cluster.url)
    pid = "EEEEEEEEEEEEEEEE"
    master = redis_cluster.master_of(RedisKeys().profile(pid))
    replica = redis_cluster.procs[redis_cluster.node(master).info("replication")["slave0"]["port"]]
    replica.send_signal(signal.SIGSTOP)
    try:
        with pytest.raises(StoreUnavailable, match="metadata store"):
            store.create(record(pid, None))
        assert store.load(pid) is None
    finally:
        replica.send_signal(signal.SIGCONT)
    assert redis_cluster.wait_healthy()
    assert store.create(record(pid, None)) is True


# --- settings ------------------------------------------------------------------------------
def test_a_cluster_setting_is_accepted_read_and_checked() -> None:
    assert load({}, {"META": "redis-cluster://10.0.0.1:7000,10.0.0.2:7000"})
    with pytest.raises(ConfigError, match="redis-cluster://HOST:PORT"):
        load({}, {"META": "cluster://10.0.0.1:7000"})
    nodes, auth = cluster_nodes("redis-cluster://u:s3cret@a:7000,b,[::1]:7001/")
    assert nodes == [("a", 7000), ("b", 6379), ("::1", 7001)]
    assert auth == {"username": "u", "password": "s3cret"}
    nothing = socket.socket()
    nothing.bind(("127.0.0.1", 0))
    port = nothing.getsockname()[1]
    nothing.close()
    store = locate.meta_store(f"redis-cluster://u:s3cret@127.0.0.1:{port}", timeout=1)
    started = time.monotonic()
    with pytest.raises(OSError, match=rf"redis at redis-cluster://127\.0\.0\.1:{port}: ") as err:
        store.check()
    assert "s3cret" not in str(err.value) and time.monotonic() - started < 5
    with pytest.raises(OSError, match="names no node"):
        locate.meta_store("redis-cluster://").check()


def test_records_on_the_cluster_read_back_through_the_app(
    redis_cluster: RedisClusterProcs, tmp_path: Path
) -> None:
    """open_share and the readiness check on a cluster: the upload is in the record's slot."""
    redis_cluster.flush()
    app = make_app({"BLOBS": f"file:{tmp_path}/blobs", "META": redis_cluster.url, **OPEN})
    client = app.test_client()
    data = unique_profile("read-back")
    made = client.post("/", data=data, headers={"Accept": "application/json"})
    assert made.status_code == 201
    pid = made.json["id"]
    assert gzip.decompress(client.get(f"/{pid}/raw").data) == gzip.decompress(data)
    assert client.get(f"/api/v1/profiles/{pid}").json["id"] == pid
    assert client.get("/readyz").status_code == 200
    assert redis_cluster.client().exists(RedisKeys().profile(pid))
