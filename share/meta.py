"""MetaStore: the records of stored profiles, their expiry, and cached views.

Two backends behind one narrow interface: SqliteMetaStore, the single-machine default (one
file, no server), and RedisMetaStore for production. Both make `create` atomic (insert only
if absent), so concurrent identical uploads end with one record.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass
class Record:
    """What we know about one stored profile; the blob is under `id` in the BlobStore."""

    id: str
    sha256: str
    title: str
    size_bytes: int  # decompressed profile size
    stored_bytes: int  # gzip blob size
    created_at: float  # epoch seconds
    expires_at: float | None  # epoch seconds; None = never
    delete_token_hash: str
    sample_types: list[list[str]] = field(default_factory=list)  # [[type, unit], ...]
    default_sample_type: str | None = None
    n_samples: int = 0
    n_locations: int = 0
    n_functions: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)  # period, mappings, comments, ...

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Record:
        return cls(**json.loads(text))


class MetaStore(Protocol):
    def create(self, record: Record) -> bool:
        """Insert record unless its id exists; True if inserted. Atomic."""

    def load(self, profile_id: str) -> Record | None:
        """The record, or None."""

    def extend_expiry(self, profile_id: str, expires_at: float | None) -> float | None:
        """Move expiry to the later of the stored one and expires_at (None = never); the
        resulting expiry."""

    def expiry_of(self, profile_id: str) -> float | None:
        """When a profile expires or expired, as still indexed (even if its record is gone)."""

    def delete(self, profile_id: str, *, only_if_expired_at: float | None = None) -> bool:
        """Remove record, views and expiry entry; with only_if_expired_at=now, only when the
        profile has expired by then (so a concurrent extension wins). True if removed."""

    def expired(self, now: float) -> list[str]:
        """Ids whose expiry is at or before now."""

    def view_get(self, profile_id: str, key: str) -> bytes | None:
        """A cached derived view of a profile."""

    def view_put(self, profile_id: str, key: str, data: bytes) -> None:
        """Cache a derived view; dropped with the profile."""

    def check(self) -> None:
        """Raise OSError with a readable message when the store cannot be used."""

    def close(self) -> None:
        """Let go of connections (before a fork); the store reconnects when used again."""

    def try_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        """Take the profile's lease for `seconds` unless someone else holds it."""

    def unlock(self, profile_id: str, token: str) -> None:
        """Give the lease back, if it is still ours."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS profiles (
    id TEXT PRIMARY KEY,
    expires_at REAL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS profiles_expires_at ON profiles(expires_at);
CREATE TABLE IF NOT EXISTS locks (
    id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    until REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS views (
    id TEXT NOT NULL,
    key TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (id, key)
);
"""


class SqliteMetaStore:
    """Records in one SQLite file: the single-machine default. WAL mode lets several gunicorn
    workers read while one writes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=30000")
            db.executescript(_SCHEMA)
            self._local.db = db
        return db

    def create(self, record: Record) -> bool:
        cursor = self._db().execute(
            "INSERT OR IGNORE INTO profiles (id, expires_at, record) VALUES (?, ?, ?)",
            (record.id, record.expires_at, record.to_json()),
        )
        return cursor.rowcount == 1

    def load(self, profile_id: str) -> Record | None:
        row = (
            self._db()
            .execute("SELECT record, expires_at FROM profiles WHERE id = ?", (profile_id,))
            .fetchone()
        )
        if row is None:
            return None
        record = Record.from_json(row[0])
        record.expires_at = row[1]
        return record

    def extend_expiry(self, profile_id: str, expires_at: float | None) -> float | None:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT expires_at FROM profiles WHERE id = ?", (profile_id,)
            ).fetchone()
            if row is None:
                raise KeyError(profile_id)
            current = row[0]
            if current is not None and (expires_at is None or expires_at > current):
                db.execute(
                    "UPDATE profiles SET expires_at = ? WHERE id = ?", (expires_at, profile_id)
                )
                current = expires_at
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return current

    def expiry_of(self, profile_id: str) -> float | None:
        row = (
            self._db()
            .execute("SELECT expires_at FROM profiles WHERE id = ?", (profile_id,))
            .fetchone()
        )
        return None if row is None else row[0]

    def delete(self, profile_id: str, *, only_if_expired_at: float | None = None) -> bool:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            if only_if_expired_at is None:
                cursor = db.execute("DELETE FROM profiles WHERE id = ?", (profile_id,))
            else:
                cursor = db.execute(
                    "DELETE FROM profiles WHERE id = ? AND expires_at <= ?",
                    (profile_id, only_if_expired_at),
                )
            removed = cursor.rowcount == 1
            if removed:
                db.execute("DELETE FROM views WHERE id = ?", (profile_id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return removed

    def expired(self, now: float) -> list[str]:
        rows = self._db().execute(
            "SELECT id FROM profiles WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
        )
        return [row[0] for row in rows]

    def view_get(self, profile_id: str, key: str) -> bytes | None:
        row = (
            self._db()
            .execute("SELECT data FROM views WHERE id = ? AND key = ?", (profile_id, key))
            .fetchone()
        )
        return None if row is None else bytes(row[0])

    def view_put(self, profile_id: str, key: str, data: bytes) -> None:
        # Only for a profile that still has a record, so a view never outlives its profile.
        self._db().execute(
            "INSERT OR REPLACE INTO views (id, key, data) "
            "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM profiles WHERE id = ?)",
            (profile_id, key, data, profile_id),
        )

    def check(self) -> None:
        try:
            self._db().execute("SELECT 1 FROM profiles LIMIT 1")
        except sqlite3.Error as exc:
            raise OSError(f"sqlite database {self.path}: {exc}") from None

    def try_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        now = time.time()
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM locks WHERE id = ? AND until < ?", (profile_id, now))
            cursor = db.execute(
                "INSERT OR IGNORE INTO locks (id, token, until) VALUES (?, ?, ?)",
                (profile_id, token, now + seconds),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return cursor.rowcount == 1

    def unlock(self, profile_id: str, token: str) -> None:
        self._db().execute("DELETE FROM locks WHERE id = ? AND token = ?", (profile_id, token))

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


class RedisMetaStore:
    """Records in Redis. Key layout (all under one prefix, built by `key()`):

    - `<prefix>:profile:<id>`  hash: the record's fields (`record` JSON, `expires_at`)
    - `<prefix>:views:<id>`    hash: cached views, field = view key
    - `<prefix>:expiry`        sorted set: id scored by expiry (epoch seconds)
    - `<prefix>:lock:<id>`     string: the lease of whoever is changing the profile

    Record and views keys carry a Redis TTL equal to the expiry, so Redis agrees with the
    index; the index outlives them until prune, which is how an expired id answers 410 Gone.
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
    redis.call('DEL', KEYS[3])
    local indexed = redis.call('ZREM', KEYS[2], ARGV[1])
    if existed + indexed > 0 then return 1 end
    return 0
    """
    _VIEW_PUT = """
    if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
    local ttl = redis.call('TTL', KEYS[1])
    if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
    return 1
    """

    _UNLOCK = """
    if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
    return 0
    """

    def __init__(self, url: str, prefix: str = "pprof-share") -> None:
        import redis

        self.url = url
        self.prefix = prefix
        self.client = redis.Redis.from_url(url, socket_connect_timeout=5)
        self._create = self.client.register_script(self._CREATE)
        self._extend = self.client.register_script(self._EXTEND)
        self._delete = self.client.register_script(self._DELETE)
        self._view_put = self.client.register_script(self._VIEW_PUT)
        self._unlock = self.client.register_script(self._UNLOCK)

    def key(self, *parts: str) -> str:
        """Every Redis key of pprof-share, under one prefix."""
        return ":".join((self.prefix, *parts))

    def _keys(self, profile_id: str) -> list[str]:
        return [self.key("profile", profile_id), self.key("expiry"), self.key("views", profile_id)]

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
        return self.client.hget(self.key("views", profile_id), key)

    def view_put(self, profile_id: str, key: str, data: bytes) -> None:
        keys = [self.key("profile", profile_id), self.key("views", profile_id)]
        self._view_put(keys=keys, args=[key, data])

    def check(self) -> None:
        import redis

        try:
            self.client.ping()
        except redis.RedisError as exc:
            raise OSError(f"redis at {self.url}: {exc}") from None

    def try_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        lease = self.key("lock", profile_id)
        return bool(self.client.set(lease, token, nx=True, px=int(seconds * 1000)))

    def unlock(self, profile_id: str, token: str) -> None:
        self._unlock(keys=[self.key("lock", profile_id)], args=[token])

    def close(self) -> None:
        self.client.close()


def from_url(url: str) -> MetaStore:
    """sqlite:PATH or redis://… / rediss://… -> a MetaStore."""
    if url.startswith("sqlite:"):
        return SqliteMetaStore(url.removeprefix("sqlite:"))
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisMetaStore(url)
    raise ValueError(f"unknown metadata store {url!r}")
