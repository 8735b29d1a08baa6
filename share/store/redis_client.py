"""RedisConnection: one client for a standalone Redis or a Redis Cluster, and durable writes.

`redis://`, `rediss://` and `unix://` open a redis.Redis; `redis-cluster://[USER:PASSWORD@]
HOST:PORT[,HOST:PORT…]` a redis.cluster.RedisCluster that discovers the cluster from any of
the nodes named and follows it through failovers (MOVED, refused connections and CLUSTERDOWN
make it read the topology again, so a promoted replica is found without a restart). The
client is opened on first use, so an app can be built while its store is down.

Durable writes: Redis replicates asynchronously, so a master that dies right after answering
may take the write with it. durable() runs the writes that an answer promises (a record
created, extended or deleted; a collection created, added to or deleted) on the connection of
the node that owns their slot, followed by `WAIT 1` on that same connection (WAIT counts the
writes of its own connection). A write no replica acknowledged in time is a failure
(Unreplicated, a 503: the client tries again), so nothing answered 2xx lives on one node only,
as long as the node has a replica. A node without one (none configured, or its replica lost
and not yet back) acknowledges alone: durability is then the master's own, as Redis gives it.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from hashlib import sha1
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException
from redis.retry import Retry

CLUSTER_SCHEME = "redis-cluster://"
REPLICAS_SECONDS = 5.0  # how long a node's count of connected replicas is believed


class Unreplicated(redis.RedisError):
    """No replica acknowledged a write within the wait: it may not survive a failover. The
    writes were made on the master: `replies` are theirs."""

    def __init__(self, message: str, replies: list[Any]) -> None:
        super().__init__(message)
        self.replies = replies


@dataclass
class Lua:
    """A script, run by its SHA1 (loaded once per node, again on a promoted replica)."""

    text: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        self.sha = sha1(self.text.encode()).hexdigest()


def cluster_nodes(url: str) -> tuple[list[tuple[str, int]], dict[str, str]]:
    """redis-cluster://[USER:PASSWORD@]HOST:PORT,… -> ([(host, port)…], credentials)."""
    netloc = url.removeprefix(CLUSTER_SCHEME).partition("/")[0].partition("?")[0]
    auth, _, hosts = netloc.rpartition("@")
    credentials: dict[str, str] = {}
    if auth:
        user, _, password = auth.partition(":")
        credentials = {k: v for k, v in (("username", user), ("password", password)) if v}
    nodes = []
    for item in filter(None, hosts.split(",")):
        if item.startswith("["):  # [::1]:7000
            host, _, port = item[1:].partition("]")
            port = port.removeprefix(":")
        else:
            host, _, port = item.partition(":")
        nodes.append((host, int(port or 6379)))
    if not nodes:
        raise ValueError("redis-cluster:// URL names no node (HOST:PORT[,HOST:PORT…])")
    return nodes, credentials


class RedisConnection:
    """A Redis or a Redis Cluster as one client (opened on first use), its failures, scripts,
    and writes that wait for a replica."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self.url = url
        self.cluster = url.startswith(CLUSTER_SCHEME)
        # A cluster call is tried twice (the second after reading the topology again, which is
        # how a failover is followed), so each try gets half the timeout.
        self.timeout = timeout / 2 if self.cluster else timeout
        self.wait_ms = max(1, int(min(500.0, self.timeout * 250)))
        self.failures: tuple[type[Exception], ...] = (redis.RedisError, RedisClusterException)
        self._client: Any = None
        self._lock = threading.Lock()
        self._replicas: dict[str, tuple[float, int]] = {}

    @property
    def client(self) -> Any:
        """redis.Redis or redis.cluster.RedisCluster."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._open()
        return self._client

    def _open(self) -> Any:
        options: dict[str, Any] = {
            "socket_timeout": self.timeout,
            "socket_connect_timeout": self.timeout,
        }
        if not self.cluster:
            # A dropped connection (Redis restarted) is retried once at once on a fresh one; a
            # timeout is not retried, so a frozen Redis costs one timeout, not several.
            retry = Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,))
            return redis.Redis.from_url(self.url, retry=retry, **options)
        from redis.cluster import ClusterNode, RedisCluster

        nodes, credentials = cluster_nodes(self.url)
        return RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in nodes],
            retry=Retry(NoBackoff(), 1),
            require_full_coverage=False,  # the slots that are served stay usable
            **credentials,
            **options,
        )

    def call(self, script: Lua, keys: list[str], args: list[Any], client: Any = None) -> Any:
        """Run a script (all its keys in one slot) on client (default: the store's)."""
        client = self.client if client is None else client
        try:
            return client.evalsha(script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            return client.eval(script.text, len(keys), *keys, *args)

    @staticmethod
    def queue(pipe: Any, script: Lua, keys: list[str], args: list[Any]) -> None:
        """Queue a script in a pipeline (by its text: a pipeline cannot load it on NOSCRIPT)."""
        pipe.eval(script.text, len(keys), *keys, *args)

    def durable(self, key: str, writes: Callable[[Any], None]) -> list[Any]:
        """writes(pipe) queues commands of key's slot; they run on the node that owns it, then
        WAIT for one replica when the node has any. Their replies; Unreplicated when no
        replica acknowledged (the writes are made on the master, and may be lost)."""
        for attempt in range(2):
            try:
                return self._durable_once(key, writes)
            except (redis.exceptions.AskError, redis.exceptions.TryAgainError,
                    redis.exceptions.ClusterDownError):  # fmt: skip
                self.rediscover()  # refused before running (MOVED, ...): safe to send again
                if attempt:
                    raise
            except Unreplicated:
                raise
            except self.failures:
                self.rediscover()
                raise
        raise AssertionError("unreachable")

    def _durable_once(self, key: str, writes: Callable[[Any], None]) -> list[Any]:
        node = self._node(key)
        expect = self._replica_count(node)
        pipe = node.pipeline(transaction=False)
        writes(pipe)
        queued = len(pipe)
        if expect:
            pipe.execute_command("WAIT", 1, self.wait_ms)
        replies = list(pipe.execute())
        if expect and int(replies[queued]) < 1 and self._replica_count(node, fresh=True):
            raise Unreplicated(
                f"no replica of the node owning {key!r} acknowledged the write within "
                f"{self.wait_ms} ms",
                replies[:queued],
            )
        return replies[:queued]

    def _node(self, key: str) -> Any:
        """A redis.Redis on the node that owns key's slot (standalone: the client itself)."""
        if not self.cluster:
            return self.client
        client = self.client
        return client.get_redis_connection(client.get_node_from_key(key))

    def _replica_count(self, node: Any, fresh: bool = False) -> int:
        """The node's connected replicas, as it said within REPLICAS_SECONDS."""
        kwargs = node.connection_pool.connection_kwargs
        name = f"{kwargs.get('host')}:{kwargs.get('port')}:{kwargs.get('path')}"
        now = time.monotonic()
        known = self._replicas.get(name)
        if fresh or known is None or now - known[0] > REPLICAS_SECONDS:
            count = int(node.info("replication").get("connected_slaves", 0))
            self._replicas[name] = known = (now, count)
        return known[1]

    def rediscover(self) -> None:
        """Read the cluster's topology again (after a failover); nothing to do standalone."""
        if self.cluster and self._client is not None:
            with contextlib.suppress(*self.failures):  # failing over: the next call retries
                self._client.nodes_manager.initialize()

    def scan(self, match: str) -> Any:
        """Every key matching, on every master."""
        return self.client.scan_iter(match=match, count=1000)

    def check(self) -> None:
        """OSError naming the store when it cannot be used (on a cluster: every master)."""
        try:
            if self.cluster:
                self.client.ping(target_nodes=self.client.PRIMARIES)
            else:
                self.client.ping()
        except (ValueError, *self.failures) as exc:  # ValueError: a malformed URL
            shown = re.sub(r"(?<=://)[^/@]*@", "", self.url)  # as locate.label shows it
            raise OSError(f"redis at {shown}: {exc}") from None

    def close(self) -> None:
        """Drop every connection (before a fork); a new client is opened when next used."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
            if not self.cluster:
                client.connection_pool.disconnect()
