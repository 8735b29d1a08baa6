"""RedisCollectionIndex: collections in the production Redis (or Redis Cluster), beside
RedisMetaStore's records, on its connection and key layout (share.store.redis_keys)."""

from __future__ import annotations

import math
from typing import Any

import orjson

from ..redis_client import Lua, RedisConnection
from ..redis_keys import RedisKeys
from .index import Added, Collection, Member
from .parsed import ParsedMembers

_CHUNK = 5000  # fields per HMGET: a 36 000-member hour is eight round trips
_PARTS = ("record", "members", "data", "entries")

# KEYS: members, data; ARGV: member key, time, member JSON, max members.
_ADD = Lua("""
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 'exists' end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 'full' end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 'added'
""")


class RedisCollectionIndex:
    """Key layout (under the metadata store's prefix; every command is in one slot):

    - `c:{<cid>}:record`   string: the Collection as JSON
    - `c:{<cid>}:members`  sorted set: member keys scored by time
    - `c:{<cid>}:data`     hash: member key -> Member JSON
    - `c:{<cid>}:entries`  hash: entry key -> JSON (blocks, resolved selections)
    - `memberof:{<pid>}`   set: the collections that have the profile as a member (in the
                           profile's slot)
    - `c-expiry:{c-expiry-<n>}`  sorted sets: collection ids scored by expiry, sharded by id

    The collection's keys carry its expiry as a TTL (moved by every add). Steps in several
    slots go in the order that is safe to cut short: `memberof` is written before the member
    and removed after it (a profile is never thought free while a collection holds it); the
    expiry entry is written before the record and removed after it, and an entry that is
    early (the process died mid-way) is put right by expired(), which reads the record.
    Creating, adding to (the member, its `memberof`, the expiry it moves) and deleting a
    collection wait for a replica (RedisConnection.durable).
    """

    def __init__(self, conn: RedisConnection, keys: RedisKeys) -> None:
        self.conn, self.keys = conn, keys
        self.failures = conn.failures
        self.parsed = ParsedMembers()

    @property
    def client(self) -> Any:
        return self.conn.client

    def _key(self, cid: str, part: str) -> str:
        return self.keys.collection(cid, part)

    def _keys(self, cid: str) -> list[str]:
        return [self._key(cid, p) for p in _PARTS]

    def _index(self, cid: str, expires_at: float | None) -> None:
        if expires_at is None:
            self.client.zrem(self.keys.collection_expiry(cid), cid)
        else:
            self.client.zadd(self.keys.collection_expiry(cid), {cid: expires_at})

    def create(self, collection: Collection) -> None:
        cid, key = collection.id, self._key(collection.id, "record")
        if collection.expires_at is not None:
            self._index(cid, collection.expires_at)

        def write(pipe: Any) -> None:
            pipe.set(key, collection.to_json())
            if collection.expires_at is not None:
                pipe.expireat(key, math.ceil(collection.expires_at))

        self.conn.durable(key, write)

    def load(self, cid: str) -> Collection | None:
        text = self.client.get(self._key(cid, "record"))
        return Collection.from_json(text) if text else None

    def touch(self, cid: str, last_add_at: float, expires_at: float | None) -> None:
        c = self.load(cid)
        if c is None:
            return
        c.last_add_at = max(c.last_add_at or 0.0, last_add_at)
        if c.expires_at is not None:
            c.expires_at = None if expires_at is None else max(c.expires_at, expires_at)
            if c.expires_at is not None:
                self._index(cid, c.expires_at)  # later: before the keys are
        expires_at = c.expires_at

        def write(pipe: Any) -> None:
            pipe.set(self._key(cid, "record"), c.to_json())
            for key in self._keys(cid):
                if expires_at is None:
                    pipe.persist(key)
                else:
                    pipe.expireat(key, math.ceil(expires_at))

        self.conn.durable(self._key(cid, "record"), write)  # the expiry the add promised
        if c.expires_at is None:
            self._index(cid, None)

    def add(self, cid: str, member: Member, max_members: int) -> Added:
        # Before the member: the profile counts as held from now on (holders()).
        memberof = self.keys.memberof(member.pid)
        self.conn.durable(memberof, lambda pipe: pipe.sadd(memberof, cid))
        keys = [self._key(cid, "members"), self._key(cid, "data")]
        args = [member.key, member.time, member.to_json(), max_members]
        outcome = self.conn.durable(keys[0], lambda p: self.conn.queue(p, _ADD, keys, args))[0]
        return outcome.decode() if isinstance(outcome, bytes) else outcome  # type: ignore[no-any-return]

    def members(
        self, cid: str, start: float | None = None, end: float | None = None
    ) -> list[Member]:
        low = "-inf" if start is None else start
        high = "+inf" if end is None else f"({end}"
        keys = self.client.zrangebyscore(self._key(cid, "members"), low, high)

        def fetch(missing: list[Any]) -> list[bytes | None]:
            datas: list[bytes | None] = []
            for i in range(0, len(missing), _CHUNK):
                datas.extend(self.client.hmget(self._key(cid, "data"), missing[i : i + _CHUNK]))
            return datas

        return self.parsed.members(cid, keys, fetch, whole=start is None and end is None)

    def count(self, cid: str) -> int:
        return int(self.client.zcard(self._key(cid, "members")))

    def remove(self, cid: str, keys: list[str]) -> int:
        if not keys:
            return 0
        pipe = self.client.pipeline(transaction=False)
        pipe.zrem(self._key(cid, "members"), *keys)
        pipe.hdel(self._key(cid, "data"), *keys)
        return int(pipe.execute()[0])

    def remove_profile(self, cid: str, pid: str) -> int:
        """Member keys hold the profile id between bars (index.member_key)."""
        needle = f"|{pid}|".encode()
        keys = [k for k in self.client.zrange(self._key(cid, "members"), 0, -1) if needle in k]
        removed = self.remove(cid, keys)
        self.client.srem(self.keys.memberof(pid), cid)  # after the members
        return removed

    def holders(self, pid: str) -> set[str]:
        found = self.client.smembers(self.keys.memberof(pid))
        live = {c.decode() if isinstance(c, bytes) else c for c in found}
        return {cid for cid in live if self.client.exists(self._key(cid, "record"))}

    def entry_get(self, cid: str, key: str) -> dict[str, Any] | None:
        data = self.client.hget(self._key(cid, "entries"), key)
        return orjson.loads(data) if data else None

    def entry_put(self, cid: str, key: str, value: dict[str, Any]) -> None:
        ttl = self.client.ttl(self._key(cid, "record"))
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(self._key(cid, "entries"), key, orjson.dumps(value))
        if ttl and ttl > 0:
            pipe.expire(self._key(cid, "entries"), ttl)
        pipe.execute()

    def entries(self, cid: str) -> list[dict[str, Any]]:
        return [orjson.loads(v) for v in self.client.hvals(self._key(cid, "entries"))]

    def delete(self, cid: str) -> list[Member]:
        members = self.members(cid)
        keys = self._keys(cid)
        self.conn.durable(keys[0], lambda pipe: pipe.delete(*keys))
        self.parsed.forget(cid)
        self._index(cid, None)  # after the record: prune finds what is left
        pipe = self.client.pipeline(transaction=False)  # each in its profile's slot
        for pid in {m.pid for m in members}:
            pipe.srem(self.keys.memberof(pid), cid)
        pipe.execute()
        return members

    def expired(self, now: float) -> list[str]:
        pipe = self.client.pipeline(transaction=False)
        for shard in self.keys.collection_expiry_shards():
            pipe.zrangebyscore(shard, "-inf", now, withscores=True)
        found = sorted((score, cid.decode()) for rows in pipe.execute() for cid, score in rows)
        due = []
        for _, cid in found:
            c = self.load(cid)
            if c is not None and (c.expires_at is None or c.expires_at > now):
                self._index(cid, c.expires_at)  # early (cut short): put right, keep
            else:
                due.append(cid)
        return due

    def check(self) -> None:
        self.conn.check()

    def close(self) -> None:
        """The connection is the metadata store's: it closes it."""
