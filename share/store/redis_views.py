"""RedisViewCache: cached views beside the records, under one byte cap, least recently used out.

A view's bytes live in its profile's `views:{pid}` hash (dropped with the profile, expiring
with it); the accounting that keeps the cap (last use, size, total) is in SHARDS shards
(redis_keys), each holding 1/SHARDS of the cap, the view `<pid>|<key>` in the shard its name
hashes to. So a put is a script on the shard and a script on the profile's slot, never one
script on both, and the order of the steps is the one that errs on the safe side if the
process dies between them: a view is counted before its bytes are stored and its bytes are
removed before it is no longer counted. Cut short, the accounting counts a view that is not
there (the cap errs low: it is evicted in turn, being the oldest), never stores one that is
not counted. A views hash that Redis expired with its profile leaves its sizes counted the
same way. The least recently used order is per shard, so eviction is nearly global LRU; a
view over a shard's share of the cap (16 MiB of the default 256 MiB) is not cached.
"""

from __future__ import annotations

import time
from collections import defaultdict

from .redis_client import Lua, RedisConnection
from .redis_keys import SHARDS, RedisKeys, shard_of

# KEYS: lru, sizes, bytes (one shard); ARGV: member, size, now, cap. Counts the view and
# answers the oldest others whose removal brings the shard under its cap (still counted).
_ACCOUNT = Lua("""
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old then redis.call('DECRBY', KEYS[3], old) end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
local over = redis.call('INCRBY', KEYS[3], ARGV[2]) - tonumber(ARGV[4])
local victims, start = {}, 0
while over > 0 do
    local batch = redis.call('ZRANGE', KEYS[1], start, start + 63)
    if #batch == 0 then break end
    for _, m in ipairs(batch) do
        if m ~= ARGV[1] then
            victims[#victims + 1] = m
            over = over - tonumber(redis.call('HGET', KEYS[2], m) or '0')
            if over <= 0 then break end
        end
    end
    start = start + 64
end
return victims
""")
# KEYS: lru, sizes, bytes (one shard); ARGV: members no longer stored.
_FORGET = Lua("""
for _, m in ipairs(ARGV) do
    local size = redis.call('HGET', KEYS[2], m)
    if size then
        redis.call('HDEL', KEYS[2], m)
        redis.call('DECRBY', KEYS[3], size)
    end
    redis.call('ZREM', KEYS[1], m)
end
if tonumber(redis.call('GET', KEYS[3]) or '0') <= 0 then redis.call('DEL', KEYS[3]) end
return 0
""")
# KEYS: profile, views (one profile); ARGV: field, data. Only beside a record, expiring with it.
_STORE = Lua("""
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
""")


def member(pid: str, key: str) -> str:
    return f"{pid}|{key}"


class RedisViewCache:
    """The view cache of a RedisMetaStore (its connection and keys)."""

    def __init__(self, conn: RedisConnection, keys: RedisKeys, cap: int) -> None:
        self.conn, self.keys = conn, keys
        self.shard_cap = cap // SHARDS

    def get(self, pid: str, key: str) -> bytes | None:
        pipe = self.conn.client.pipeline(transaction=False)
        name = member(pid, key)
        pipe.hget(self.keys.views(pid), key)
        pipe.zadd(self.keys.view_index(name)[0], {name: time.time()}, xx=True)
        data, _ = pipe.execute()
        return data  # type: ignore[no-any-return]

    def put(self, pid: str, key: str, data: bytes) -> None:
        if len(data) > self.shard_cap:
            return
        name = member(pid, key)
        shard = self.keys.view_index(name)
        args = [name, len(data), time.time(), self.shard_cap]
        victims = self.conn.call(_ACCOUNT, shard, args)
        stored = self.conn.call(_STORE, [self.keys.profile(pid), self.keys.views(pid)], [key, data])
        if not stored:  # no record to attach it to
            self.conn.call(_FORGET, shard, [name])
            return
        if victims:
            self.evict([v.decode() if isinstance(v, bytes) else v for v in victims])

    def evict(self, members: list[str]) -> None:
        """Remove these views: their bytes first, then their accounting (one call per
        profile, then one per shard: each in its own slot)."""
        by_pid: dict[str, list[str]] = defaultdict(list)
        for name in members:
            pid, _, key = name.partition("|")
            by_pid[pid].append(key)
        pipe = self.conn.client.pipeline(transaction=False)
        for pid, fields in by_pid.items():
            pipe.hdel(self.keys.views(pid), *fields)
        pipe.execute()
        self.forget(members)

    def forget(self, members: list[str]) -> None:
        """Stop counting views whose bytes are gone (a deleted profile's)."""
        by_shard: dict[int, list[str]] = defaultdict(list)
        for name in members:
            by_shard[shard_of(name)].append(name)
        for n, names in sorted(by_shard.items()):
            self.conn.call(_FORGET, self.keys.view_shard(n), names)

    def total(self) -> int:
        pipe = self.conn.client.pipeline(transaction=False)
        for n in range(SHARDS):
            pipe.get(self.keys.view_shard(n)[2])
        return sum(int(v or 0) for v in pipe.execute())
