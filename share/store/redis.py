"""RedisMetaStore: records, expiry, views and leases in Redis, for several machines."""

from __future__ import annotations

import time
from collections.abc import Iterator

from .meta import VIEW_CACHE_BYTES, Record


class RedisMetaStore:
    """Records in Redis. Key layout (all under one prefix, built by `key()`):

    - `<prefix>:profile:<id>`  hash: the record's fields (`record` JSON, `expires_at`)
    - `<prefix>:views:<id>`    hash: cached views, field = view key
    - `<prefix>:expiry`        sorted set: id scored by expiry (epoch seconds)
    - `<prefix>:lock:<id>`     string: the lease of whoever is changing the profile
    - `<prefix>:view-lru`      sorted set: `<id>|<view key>` scored by last use (epoch seconds)
    - `<prefix>:view-sizes`    hash: `<id>|<view key>` -> its size in bytes
    - `<prefix>:view-bytes`    string: the sizes' sum, kept under view_cache_bytes by evicting
                               the least recently used views

    Record and views keys carry a Redis TTL equal to the expiry, so Redis agrees with the
    index; the index outlives them until prune, which is how an expired id answers 410 Gone.
    A views hash that Redis expired leaves its sizes counted until they are evicted (they are
    the oldest), so the cap errs on the low side.
    """

    _CREATE = """
    if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
    redis.call('HSET', KEYS[1], 'record', ARGV[1], 'expires_at', ARGV[2])
    if ARGV[2] ~= '' then
        redis.call('EXPIREAT', KEYS[1], math.ceil(tonumber(ARGV[2])))
        redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
    else
        redis.call('ZREM', KEYS[2], ARGV[3])
    end
    return 1
    """
    _EXTEND = """
    if redis.call('EXISTS', KEYS[1]) == 0 then return false end
    local current = redis.call('HGET', KEYS[1], 'expires_at')
    if current == '' then return '' end
    if ARGV[1] == '' or tonumber(ARGV[1]) > tonumber(current) then
        redis.call('HSET', KEYS[1], 'expires_at', ARGV[1])
        if ARGV[1] == '' then
            redis.call('PERSIST', KEYS[1]); redis.call('PERSIST', KEYS[3])
            redis.call('ZREM', KEYS[2], ARGV[2])
        else
            local at = math.ceil(tonumber(ARGV[1]))
            redis.call('EXPIREAT', KEYS[1], at)
            if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('EXPIREAT', KEYS[3], at) end
            redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
        end
        return ARGV[1]
    end
    return current
    """
    _DELETE = """
    if ARGV[2] ~= '' then
        local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
        if not score or tonumber(score) > tonumber(ARGV[2]) then return 0 end
    end
    local existed = redis.call('DEL', KEYS[1])
    for _, field in ipairs(redis.call('HKEYS', KEYS[3])) do
        local member = ARGV[1] .. '|' .. field
        local size = redis.call('HGET', KEYS[5], member)
        if size then
            redis.call('DECRBY', KEYS[6], size)
            redis.call('HDEL', KEYS[5], member)
        end
        redis.call('ZREM', KEYS[4], member)
    end
    if tonumber(redis.call('GET', KEYS[6]) or '0') <= 0 then redis.call('DEL', KEYS[6]) end
    redis.call('DEL', KEYS[3])
    local indexed = redis.call('ZREM', KEYS[2], ARGV[1])
    if existed + indexed > 0 then return 1 end
    return 0
    """
    # KEYS: profile, views:<id>, view-lru, view-sizes, view-bytes;
    # ARGV: field, data, now, cap, member (<id>|<field>), views key prefix (<prefix>:views:).
    _VIEW_PUT = """
    if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
    local size = string.len(ARGV[2])
    local cap = tonumber(ARGV[4])
    if size > cap then return 0 end
    local old = redis.call('HGET', KEYS[4], ARGV[5])
    if old then redis.call('DECRBY', KEYS[5], old) end
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
    local ttl = redis.call('TTL', KEYS[1])
    if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
    redis.call('HSET', KEYS[4], ARGV[5], size)
    redis.call('ZADD', KEYS[3], ARGV[3], ARGV[5])
    local total = redis.call('INCRBY', KEYS[5], size)
    while total > cap do
        local oldest = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
        if not oldest then break end
        redis.call('ZREM', KEYS[3], oldest)
        local gone = tonumber(redis.call('HGET', KEYS[4], oldest) or '0')
        redis.call('HDEL', KEYS[4], oldest)
        total = redis.call('DECRBY', KEYS[5], gone)
        local bar = string.find(oldest, '|', 1, true)
        redis.call('HDEL', ARGV[6] .. string.sub(oldest, 1, bar - 1), string.sub(oldest, bar + 1))
    end
    return 1
    """

    _RENEW = """
    if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('PEXPIRE', KEYS[1], ARGV[2])
    end
    return 0
    """

    _UNLOCK = """
    if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
    return 0
    """

    def __init__(
        self,
        url: str,
        prefix: str = "pprof-share",
        timeout: float = 5.0,
        view_cache_bytes: int = VIEW_CACHE_BYTES,
    ) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.url = url
        self.prefix = prefix
        self.view_cache_bytes = view_cache_bytes
        self.failures: tuple[type[Exception], ...] = (redis.RedisError,)
        # Every call gives up after `timeout`. A dropped connection (Redis restarted) is
        # retried once at once on a fresh one; a timeout is not retried, so a frozen Redis
        # costs one timeout, not several.
        self.client = redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
        )
        self._create = self.client.register_script(self._CREATE)
        self._extend = self.client.register_script(self._EXTEND)
        self._delete = self.client.register_script(self._DELETE)
        self._view_put = self.client.register_script(self._VIEW_PUT)
        self._unlock = self.client.register_script(self._UNLOCK)
        self._renew = self.client.register_script(self._RENEW)

    def key(self, *parts: str) -> str:
        """Every Redis key of pprof-share, under one prefix."""
        return ":".join((self.prefix, *parts))

    def _keys(self, profile_id: str) -> list[str]:
        return [
            self.key("profile", profile_id),
            self.key("expiry"),
            self.key("views", profile_id),
            *self._lru_keys(),
        ]

    def _lru_keys(self) -> list[str]:
        return [self.key("view-lru"), self.key("view-sizes"), self.key("view-bytes")]

    @staticmethod
    def _at(value: float | None) -> str:
        return "" if value is None else repr(float(value))

    def create(self, record: Record) -> bool:
        keys = self._keys(record.id)[:2]
        args = [record.to_json(), self._at(record.expires_at), record.id]
        return bool(self._create(keys=keys, args=args))

    def load(self, profile_id: str) -> Record | None:
        fields = self.client.hgetall(self.key("profile", profile_id))
        if not fields:
            return None
        record = Record.from_json(fields[b"record"])
        at = fields.get(b"expires_at", b"")
        record.expires_at = float(at) if at else None
        return record

    def extend_expiry(self, profile_id: str, expires_at: float | None) -> float | None:
        result = self._extend(keys=self._keys(profile_id), args=[self._at(expires_at), profile_id])
        if result is None:
            raise KeyError(profile_id)
        return float(result) if result else None

    def expiry_of(self, profile_id: str) -> float | None:
        score = self.client.zscore(self.key("expiry"), profile_id)
        if score is not None:
            return float(score)
        record = self.load(profile_id)
        return None if record is None else record.expires_at

    def delete(self, profile_id: str, *, only_if_expired_at: float | None = None) -> bool:
        args = [profile_id, self._at(only_if_expired_at)]
        return bool(self._delete(keys=self._keys(profile_id), args=args))

    def expired(self, now: float) -> list[str]:
        ids = self.client.zrangebyscore(self.key("expiry"), "-inf", now)
        return [i.decode() for i in ids]

    def view_get(self, profile_id: str, key: str) -> bytes | None:
        pipe = self.client.pipeline(transaction=False)
        pipe.hget(self.key("views", profile_id), key)
        pipe.zadd(self.key("view-lru"), {f"{profile_id}|{key}": time.time()}, xx=True)
        data, _ = pipe.execute()
        return data

    def view_put(self, profile_id: str, key: str, data: bytes) -> None:
        keys = [self.key("profile", profile_id), self.key("views", profile_id), *self._lru_keys()]
        member = f"{profile_id}|{key}"
        args = [key, data, time.time(), self.view_cache_bytes, member, self.key("views", "")]
        self._view_put(keys=keys, args=args)

    def view_bytes(self) -> int:
        return int(self.client.get(self.key("view-bytes")) or 0)

    def check(self) -> None:
        import redis

        try:
            self.client.ping()
        except redis.RedisError as exc:
            raise OSError(f"redis at {self.url}: {exc}") from None

    def try_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        lease = self.key("lock", profile_id)
        return bool(self.client.set(lease, token, nx=True, px=int(seconds * 1000)))

    def renew_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        lease = [self.key("lock", profile_id)]
        return bool(self._renew(keys=lease, args=[token, int(seconds * 1000)]))

    def ids(self) -> Iterator[str]:
        start = len(self.key("profile", ""))
        for key in self.client.scan_iter(match=self.key("profile", "*"), count=1000):
            yield key.decode()[start:]

    def unlock(self, profile_id: str, token: str) -> None:
        self._unlock(keys=[self.key("lock", profile_id)], args=[token])

    def close(self) -> None:
        self.client.close()
