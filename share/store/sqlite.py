"""SqliteMetaStore: records, expiry, views and leases in one SQLite file (the default)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from .meta import VIEW_CACHE_BYTES, Record

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
    size INTEGER NOT NULL DEFAULT 0,
    used REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (id, key)
);
"""
# Added to views after its first release: older files get them on open.
_VIEW_COLUMNS = {"size": "INTEGER NOT NULL DEFAULT 0", "used": "REAL NOT NULL DEFAULT 0"}
_VIEW_INDEX = "CREATE INDEX IF NOT EXISTS views_used ON views(used)"
# A hit refreshes a view's place in the LRU order at most this often (a hit is a read, not a
# write, most of the time).
_TOUCH_SECONDS = 60.0
# Drop the least recently used views until `size` more bytes fit under the cap (:excess is
# what the total is over it once they are in).
_EVICT = """
DELETE FROM views WHERE rowid IN (
    SELECT rowid FROM (
        SELECT rowid, size, SUM(size) OVER (ORDER BY used, rowid) AS running FROM views
    ) WHERE running - size < :excess
)
"""


class SqliteMetaStore:
    """Records in one SQLite file: the single-machine default. WAL mode lets several gunicorn
    workers read while one writes."""

    def __init__(
        self, path: str | os.PathLike[str], view_cache_bytes: int = VIEW_CACHE_BYTES
    ) -> None:
        self.path = Path(path)
        self.view_cache_bytes = view_cache_bytes
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=30000")
            db.executescript(_SCHEMA)
            have = {row[1] for row in db.execute("PRAGMA table_info(views)")}
            for column, decl in _VIEW_COLUMNS.items():
                if column not in have:
                    db.execute(f"ALTER TABLE views ADD COLUMN {column} {decl}")
                    db.execute("UPDATE views SET size = length(data)")
            db.execute(_VIEW_INDEX)
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
        db = self._db()
        row = db.execute(
            "SELECT data, used FROM views WHERE id = ? AND key = ?", (profile_id, key)
        ).fetchone()
        if row is None:
            return None
        now = time.time()
        if now - row[1] > _TOUCH_SECONDS:
            db.execute("UPDATE views SET used = ? WHERE id = ? AND key = ?", (now, profile_id, key))
        return bytes(row[0])

    def view_put(self, profile_id: str, key: str, data: bytes) -> None:
        if len(data) > self.view_cache_bytes:
            return  # it would push out everything else, and then itself
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            # Only for a profile that still has a record, so a view never outlives its profile.
            db.execute(
                "INSERT OR REPLACE INTO views (id, key, data, size, used) "
                "SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM profiles WHERE id = ?)",
                (profile_id, key, data, len(data), time.time(), profile_id),
            )
            (total,) = db.execute("SELECT COALESCE(SUM(size), 0) FROM views").fetchone()
            if total > self.view_cache_bytes:
                db.execute(_EVICT, {"excess": total - self.view_cache_bytes})
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def view_bytes(self) -> int:
        """Bytes held by cached views in all."""
        return int(self._db().execute("SELECT COALESCE(SUM(size), 0) FROM views").fetchone()[0])

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

    def renew_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        cursor = self._db().execute(
            "UPDATE locks SET until = ? WHERE id = ? AND token = ?",
            (time.time() + seconds, profile_id, token),
        )
        return cursor.rowcount == 1

    def unlock(self, profile_id: str, token: str) -> None:
        self._db().execute("DELETE FROM locks WHERE id = ? AND token = ?", (profile_id, token))

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
