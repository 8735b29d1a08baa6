"""RedisCollectionIndex: collections in the production Redis, beside RedisMetaStore's records."""

from __future__ import annotations

import math
from typing import Any

import orjson

from .index import Added, Collection, Member

_CHUNK = 5000  # fields per HMGET: a 36 000-member hour is eight round trips


class RedisCollectionIndex:
    """Key layout (under the metadata store's prefix; a collection's keys share one hash slot,
    `{<cid>}`, so its Lua scripts touch one slot of a cluster):

    - `<prefix>:c:{<cid>}:record`   string: the Collection as JSON
    - `<prefix>:c:{<cid>}:members`  sorted set: member keys scored by time
    - `<prefix>:c:{<cid>}:data`     hash: member key -> Member JSON
    - `<prefix>:c:{<cid>}:entries`  hash: entry key -> JSON (blocks, resolved selections)
    - `<prefix>:memberof:{<pid>}`   set: the collections that have the profile as a member
    - `<prefix>:c-expiry`           sorted set: collection ids scored by expiry

    The collection's keys carry its expiry as a TTL (moved by every add).
    """

    _ADD = """
    if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 'exists' end
    if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 'full' end
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
    return 'added'
    """

    def __init__(self, client: Any, prefix: str, failures: tuple[type[Exception], ...]) -> None:
        self.client = client
        self.prefix = prefix
        self.failures = failures
        self._add = client.register_script(self._ADD)

    def _key(self, cid: str, part: str) -> str:
        return f"{self.prefix}:c:{{{cid}}}:{part}"

    def _keys(self, cid: str) -> list[str]:
        return [self._key(cid, p) for p in ("record", "members", "data", "entries")]

    def create(self, collection: Collection) -> None:
        pipe = self.client.pipeline(transaction=False)
        pipe.set(self._key(collection.id, "record"), collection.to_json())
        if collection.expires_at is not None:
            pipe.expireat(self._key(collection.id, "record"), math.ceil(collection.expires_at))
            pipe.zadd(f"{self.prefix}:c-expiry", {collection.id: collection.expires_at})
        pipe.execute()

    def load(self, cid: str) -> Collection | None:
        text = self.client.get(self._key(cid, "record"))
        return Collection.from_json(text) if text else None

    def touch(self, cid: str, last_add_at: float, expires_at: float | None) -> None:
        c = self.load(cid)
        if c is None:
            return
        c.last_add_at = max(c.last_add_at or 0.0, last_add_at)
        pipe = self.client.pipeline(transaction=False)
        if c.expires_at is not None:
            c.expires_at = None if expires_at is None else max(c.expires_at, expires_at)
        pipe.set(self._key(cid, "record"), c.to_json())
        if c.expires_at is None:
            for key in self._keys(cid):
                pipe.persist(key)
            pipe.zrem(f"{self.prefix}:c-expiry", cid)
        else:
            for key in self._keys(cid):
                pipe.expireat(key, math.ceil(c.expires_at))
            pipe.zadd(f"{self.prefix}:c-expiry", {cid: c.expires_at})
        pipe.execute()

    def add(self, cid: str, member: Member, max_members: int) -> Added:
        keys = [self._key(cid, "members"), self._key(cid, "data")]
        args = [member.key, member.time, member.to_json(), max_members]
        outcome = self._add(keys=keys, args=args)
        outcome = outcome.decode() if isinstance(outcome, bytes) else outcome
        if outcome == "added":
            self.client.sadd(f"{self.prefix}:memberof:{{{member.pid}}}", cid)
        return outcome  # type: ignore[no-any-return]

    def members(
        self, cid: str, start: float | None = None, end: float | None = None
    ) -> list[Member]:
        low = "-inf" if start is None else start
        high = "+inf" if end is None else f"({end}"
        keys = self.client.zrangebyscore(self._key(cid, "members"), low, high)
        found: list[Member] = []
        for i in range(0, len(keys), _CHUNK):
            datas = self.client.hmget(self._key(cid, "data"), keys[i : i + _CHUNK])
            found.extend(Member.many(d for d in datas if d is not None))
        return found

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
        self.client.srem(f"{self.prefix}:memberof:{{{pid}}}", cid)
        return removed

    def holders(self, pid: str) -> set[str]:
        found = self.client.smembers(f"{self.prefix}:memberof:{{{pid}}}")
        live = {c.decode() if isinstance(c, bytes) else c for c in found}
        return {cid for cid in live if self.client.exists(self._key(cid, "record"))}

    def entry_get(self, cid: str, key: str) -> dict[str, Any] | None:
        data = self.client.hget(self._key(cid, "entries"), key)
        return orjson.loads(data) if data else None

    def entry_put(self, cid: str, key: str, value: dict[str, Any]) -> None:
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(self._key(cid, "entries"), key, orjson.dumps(value))
        ttl = self.client.ttl(self._key(cid, "record"))
        if ttl and ttl > 0:
            pipe.expire(self._key(cid, "entries"), ttl)
        pipe.execute()

    def entries(self, cid: str) -> list[dict[str, Any]]:
        return [orjson.loads(v) for v in self.client.hvals(self._key(cid, "entries"))]

    def delete(self, cid: str) -> list[Member]:
        members = self.members(cid)
        pipe = self.client.pipeline(transaction=False)
        pipe.delete(*self._keys(cid))
        pipe.zrem(f"{self.prefix}:c-expiry", cid)
        for pid in {m.pid for m in members}:
            pipe.srem(f"{self.prefix}:memberof:{{{pid}}}", cid)
        pipe.execute()
        return members

    def expired(self, now: float) -> list[str]:
        ids = self.client.zrangebyscore(f"{self.prefix}:c-expiry", "-inf", now)
        return [i.decode() if isinstance(i, bytes) else i for i in ids]

    def check(self) -> None:
        self.client.ping()

    def close(self) -> None:
        """The client is the metadata store's: it closes it."""
