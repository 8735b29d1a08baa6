"""RedisMetaStore: records, expiry, views and leases in Redis or a Redis Cluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .meta import VIEW_CACHE_BYTES, Record
from .redis_client import Lua, RedisConnection, Unreplicated
from .redis_keys import RedisKeys
from .redis_views import RedisViewCache, member

# KEYS: profile; ARGV: record JSON, expires_at ('' = never).
_CREATE = Lua("""
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'expires_at', ARGV[2])
if ARGV[2] ~= '' then redis.call('EXPIREAT', KEYS[1], math.ceil(tonumber(ARGV[2]))) end
return 1
""")
# KEYS: profile, views; ARGV: the new expiry ('' = never). The expiry now (false: no record).
_EXTEND = Lua("""
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local current = redis.call('HGET', KEYS[1], 'expires_at')
if current == '' then return '' end
if ARGV[1] == '' or tonumber(ARGV[1]) > tonumber(current) then
    redis.call('HSET', KEYS[1], 'expires_at', ARGV[1])
    if ARGV[1] == '' then
        redis.call('PERSIST', KEYS[1]); redis.call('PERSIST', KEYS[2])
    else
        local at = math.ceil(tonumber(ARGV[1]))
        redis.call('EXPIREAT', KEYS[1], at)
        if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('EXPIREAT', KEYS[2], at) end
    end
    return ARGV[1]
end
return current
""")
# KEYS: profile, views; ARGV: only if expired at ('' = in any case).
# {-1, its expiry} when the record is there and not expired by then, else {existed, view keys}.
_DELETE = Lua("""
if ARGV[1] ~= '' and redis.call('EXISTS', KEYS[1]) == 1 then
    local at = redis.call('HGET', KEYS[1], 'expires_at')
    if at == '' or tonumber(at) > tonumber(ARGV[1]) then return {-1, at} end
end
local fields = redis.call('HKEYS', KEYS[2])
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
return {existed, fields}
""")
# KEYS: an expiry shard; ARGV: id, time. Unindex the id if it expires at or before time.
_UNINDEX_DUE = Lua("""
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return 0 end
return redis.call('ZREM', KEYS[1], ARGV[1])
""")
_RENEW = Lua("""
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
""")
_UNLOCK = Lua("""
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
""")


class RedisMetaStore:
    """Records in Redis, standalone or a cluster: one key layout for both (redis_keys).

    - `profile:{<id>}` hash: the record's fields (`record` JSON, `expires_at`), with a Redis
      TTL equal to its expiry; `views:{<id>}` its cached views (redis_views), expiring with
      it; `lock:{<id>}…` its leases. One profile's keys are in one slot.
    - `expiry:{expiry-<n>}` sorted sets: ids scored by expiry, in SHARDS shards by id.

    The record is the truth about a profile's expiry; the index is how prune finds the
    profiles due. It is written where a process that dies between the two steps leaves it
    early or stale, never missing: before the record on create, after it on extend, after
    it on delete. An early or stale entry costs prune one look: delete(only_if_expired_at)
    reads the record, keeps a live one and puts its entry right. The index outlives a record
    that Redis expired until prune, which is how an expired id answers 410 Gone.

    Writes that an answer promises (create, extend, delete) wait for a replica of the node
    that holds the profile (RedisConnection.durable). Keys of deployments before the cluster
    layout (`profile:<id>`, one `expiry` set) are not read: a new layout starts empty.
    """

    def __init__(
        self,
        url: str,
        prefix: str = "pprof-share",
        timeout: float = 5.0,
        view_cache_bytes: int = VIEW_CACHE_BYTES,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.view_cache_bytes = view_cache_bytes
        self.conn = RedisConnection(url, timeout)
        self.keys = RedisKeys(prefix)
        self.failures = self.conn.failures
        self.views = RedisViewCache(self.conn, self.keys, view_cache_bytes)

    @property
    def client(self) -> Any:
        """The redis.Redis or RedisCluster under the store (for tests and the index)."""
        return self.conn.client

    @staticmethod
    def _at(value: float | None) -> str:
        return "" if value is None else repr(float(value))

    def _index(self, pid: str, expires_at: float | str | None) -> None:
        """Put pid's expiry entry right: the time given, or none for never."""
        if expires_at in (None, "", b""):
            self.client.zrem(self.keys.expiry(pid), pid)
        else:
            self.client.zadd(self.keys.expiry(pid), {pid: float(expires_at)})  # type: ignore[arg-type]

    def create(self, record: Record) -> bool:
        pid, key = record.id, self.keys.profile(record.id)
        if record.expires_at is not None:  # first, so prune finds it whatever happens next
            self._index(pid, record.expires_at)
        args = [record.to_json(), self._at(record.expires_at)]
        try:
            created = self.conn.durable(key, lambda p: self.conn.queue(p, _CREATE, [key], args))[0]
        except Unreplicated as exc:
            if exc.replies[0]:  # ours, on one node only: take it back, the client tries again
                self.client.delete(key)
            raise
        if not created:  # someone else's record: its expiry is the one to index
            existing = self.load(pid)
            self._index(pid, None if existing is None else existing.expires_at)
        elif record.expires_at is None:
            self._index(pid, None)  # a stale entry of an earlier life of the id
        return bool(created)

    def load(self, profile_id: str) -> Record | None:
        fields = self.client.hgetall(self.keys.profile(profile_id))
        if not fields:
            return None
        record = Record.from_json(fields[b"record"])
        at = fields.get(b"expires_at", b"")
        record.expires_at = float(at) if at else None
        return record

    def extend_expiry(self, profile_id: str, expires_at: float | None) -> float | None:
        keys = [self.keys.profile(profile_id), self.keys.views(profile_id)]
        args = [self._at(expires_at)]
        result = self.conn.durable(keys[0], lambda p: self.conn.queue(p, _EXTEND, keys, args))[0]
        if result is None:
            raise KeyError(profile_id)
        self._index(profile_id, result)
        return float(result) if result else None

    def expiry_of(self, profile_id: str) -> float | None:
        score = self.client.zscore(self.keys.expiry(profile_id), profile_id)
        if score is not None:
            return float(score)
        record = self.load(profile_id)
        return None if record is None else record.expires_at

    def delete(self, profile_id: str, *, only_if_expired_at: float | None = None) -> bool:
        keys = [self.keys.profile(profile_id), self.keys.views(profile_id)]
        due = self._at(only_if_expired_at)
        failure: Unreplicated | None = None
        try:
            reply = self.conn.durable(keys[0], lambda p: self.conn.queue(p, _DELETE, keys, [due]))
        except Unreplicated as exc:  # removed from the master: finish, then say so
            reply, failure = exc.replies, exc
        existed, detail = reply[0]
        if existed == -1:  # live: its index entry was early
            self._index(profile_id, detail)
            return False
        self.views.forget([member(profile_id, f.decode()) for f in detail])
        shard = self.keys.expiry(profile_id)
        if existed or not due:
            indexed = self.client.zrem(shard, profile_id)
        else:
            indexed = self.conn.call(_UNINDEX_DUE, [shard], [profile_id, due])
        if failure is not None:
            raise failure
        return bool(existed or indexed)

    def expired(self, now: float) -> list[str]:
        pipe = self.client.pipeline(transaction=False)
        for shard in self.keys.expiry_shards():
            pipe.zrangebyscore(shard, "-inf", now, withscores=True)
        found = [(score, pid.decode()) for rows in pipe.execute() for pid, score in rows]
        return [pid for _, pid in sorted(found)]

    def view_get(self, profile_id: str, key: str) -> bytes | None:
        return self.views.get(profile_id, key)

    def view_put(self, profile_id: str, key: str, data: bytes) -> None:
        self.views.put(profile_id, key, data)

    def view_bytes(self) -> int:
        return self.views.total()

    def check(self) -> None:
        self.conn.check()

    def try_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        lease = self.keys.lock(profile_id)
        return bool(self.client.set(lease, token, nx=True, px=int(seconds * 1000)))

    def renew_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        lease = [self.keys.lock(profile_id)]
        return bool(self.conn.call(_RENEW, lease, [token, int(seconds * 1000)]))

    def unlock(self, profile_id: str, token: str) -> None:
        self.conn.call(_UNLOCK, [self.keys.lock(profile_id)], [token])

    def ids(self) -> Iterator[str]:
        head = self.keys.profile("")[:-1]  # `<prefix>:profile:{`
        for key in self.conn.scan(head + "*"):
            yield key.decode()[len(head) : -1]

    def close(self) -> None:
        self.conn.close()
