"""SqliteMetaStore: records, expiry, views and leases in one SQLite file (the default)."""

from __future__ import annotations

import os
import queue
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .group import GroupCommit
from .meta import VIEW_CACHE_BYTES, Record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS profiles (
    id TEXT PRIMARY KEY,
    expires_at REAL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS profiles_expires_at ON profiles(expires_at);
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
# Drop the least recently used views until the total is back under the cap (:excess is what
# it is over the cap once the new view is in).
_EVICT = """
DELETE FROM views WHERE rowid IN (
    SELECT rowid FROM (
        SELECT rowid, size, SUM(size) OVER (ORDER BY used, rowid) AS running FROM views
    ) WHERE running - size < :excess
)
"""
# Leases live in a database of their own beside the records, attached as "leases": they are
# written twice per upload and renewed every second, and need no fsync (synchronous=NORMAL
# in WAL mode is safe from corruption; a lease lost with the machine has lapsed anyway), while
# the records' database keeps fsyncing every commit, so a 201 means the record is on disk.
_LEASES_SCHEMA = """
CREATE TABLE IF NOT EXISTS leases.locks (
    id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    until REAL NOT NULL
);
"""


class _Connection(sqlite3.Connection):
    """A connection that waits for a locked database with time.sleep, up to busy_seconds.

    SQLite's own busy handler sleeps inside C: under gevent that froze the whole worker, every
    request in it, whenever another worker was committing. time.sleep is gevent's when it is
    patched, so waiting here lets the worker's other requests run. Retrying a statement that
    failed as busy is safe: it did nothing (a COMMIT that is busy leaves the transaction open).
    """

    busy_seconds = 5.0

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        deadline = None
        pause = 0.0005
        while True:
            try:
                return super().execute(sql, parameters)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                now = time.monotonic()
                deadline = deadline or now + self.busy_seconds
                if now >= deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.01)


class Pooled:
    """A pool of connections for a class whose _connect() opens one (it keeps _idle, a
    SimpleQueue, and _pid, the process that filled it): a method borrows one for its
    statements, or a transaction (BEGIN IMMEDIATE ... COMMIT, rolled back on any error)."""

    _idle: queue.SimpleQueue[sqlite3.Connection]
    _pid: int

    def _connect(self) -> sqlite3.Connection:
        raise NotImplementedError

    @contextmanager
    def _borrow(self) -> Iterator[sqlite3.Connection]:
        if self._pid != os.getpid():  # forked: the parent's connections are not ours
            self._idle, self._pid = queue.SimpleQueue(), os.getpid()
        try:
            db = self._idle.get_nowait()
        except queue.Empty:
            db = self._connect()
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                db.close()  # unknown state: do not hand it to the next caller
                raise
            self._idle.put(db)
            raise
        self._idle.put(db)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._borrow() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")


class SqliteMetaStore(Pooled):
    """Records in one SQLite file: the single-machine default. WAL mode lets several gunicorn
    workers read while one writes.

    Connections are pooled, not kept per thread: under gevent every request is a greenlet of
    its own, and a connection per greenlet cost a connect and the schema per request. Each
    method borrows one connection for its statements (a transaction never spans methods).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        timeout: float = 5.0,
        view_cache_bytes: int = VIEW_CACHE_BYTES,
    ) -> None:
        self.path = Path(path)
        self.view_cache_bytes = view_cache_bytes
        self.timeout = timeout  # SQLite's busy timeout: how long a write waits for the lock
        self.failures: tuple[type[Exception], ...] = (sqlite3.Error,)
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._pid = os.getpid()
        self._group = GroupCommit(self._insert)
        self._writer: sqlite3.Connection | None = None
        self._writer_pid = 0

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(
            self.path,
            timeout=self.timeout,
            isolation_level=None,
            check_same_thread=False,
            factory=_Connection,
        )
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA)
        have = {row[1] for row in db.execute("PRAGMA table_info(views)")}
        for column, decl in _VIEW_COLUMNS.items():
            if column not in have:
                db.execute(f"ALTER TABLE views ADD COLUMN {column} {decl}")
                db.execute("UPDATE views SET size = length(data)")
        db.execute(_VIEW_INDEX)
        db.execute("ATTACH DATABASE ? AS leases", (f"{self.path}-leases",))
        db.execute("PRAGMA leases.journal_mode=WAL")
        db.execute("PRAGMA leases.synchronous=NORMAL")
        db.executescript(_LEASES_SCHEMA)
        # From now on a locked database is waited for in Python (see _Connection).
        db.execute("PRAGMA busy_timeout=0")
        db.busy_seconds = self.timeout
        return db

    def _one(self, sql: str, args: tuple[object, ...]) -> tuple[object, ...] | None:
        with self._borrow() as db:
            return db.execute(sql, args).fetchone()

    def create(self, record: Record) -> bool:
        return self._group.commit(record)

    def _insert(self, records: list[Record]) -> list[bool]:
        """Insert a batch of records in one transaction: one fsync for all of them.

        GroupCommit runs this in a native thread under gevent (the fsync must not freeze the
        worker), one batch at a time per process: so on a connection of its own, which waits
        for the lock in C (busy_timeout), harmless off the gevent hub."""
        if self._writer is None or self._writer_pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            self._writer.execute("PRAGMA journal_mode=WAL")
            self._writer.executescript(_SCHEMA)
            self._writer_pid = os.getpid()
        db = self._writer
        db.execute("BEGIN IMMEDIATE")
        try:
            inserted = [
                db.execute(
                    "INSERT OR IGNORE INTO profiles (id, expires_at, record) VALUES (?, ?, ?)",
                    (r.id, r.expires_at, r.to_json()),
                ).rowcount
                == 1
                for r in records
            ]
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return inserted

    def load(self, profile_id: str) -> Record | None:
        row = self._one("SELECT record, expires_at FROM profiles WHERE id = ?", (profile_id,))
        if row is None:
            return None
        record = Record.from_json(row[0])  # type: ignore[arg-type]
        record.expires_at = row[1]  # type: ignore[assignment]
        return record

    def extend_expiry(self, profile_id: str, expires_at: float | None) -> float | None:
        with self._transaction() as db:
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
        return current

    def expiry_of(self, profile_id: str) -> float | None:
        row = self._one("SELECT expires_at FROM profiles WHERE id = ?", (profile_id,))
        return None if row is None else row[0]  # type: ignore[return-value]

    def delete(self, profile_id: str, *, only_if_expired_at: float | None = None) -> bool:
        with self._transaction() as db:
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
        return removed

    def expired(self, now: float) -> list[str]:
        with self._borrow() as db:
            rows = db.execute(
                "SELECT id FROM profiles WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
            )
            return [row[0] for row in rows]

    def ids(self) -> Iterator[str]:
        with self._borrow() as db:
            rows = db.execute("SELECT id FROM profiles").fetchall()
        yield from (row[0] for row in rows)

    def view_get(self, profile_id: str, key: str) -> bytes | None:
        with self._borrow() as db:
            row = db.execute(
                "SELECT data, used FROM views WHERE id = ? AND key = ?", (profile_id, key)
            ).fetchone()
            if row is None:
                return None
            now = time.time()
            if now - row[1] > _TOUCH_SECONDS:
                db.execute(
                    "UPDATE views SET used = ? WHERE id = ? AND key = ?", (now, profile_id, key)
                )
            return bytes(row[0])

    def view_put(self, profile_id: str, key: str, data: bytes) -> None:
        if len(data) > self.view_cache_bytes:
            return  # it would push out everything else, and then itself
        with self._transaction() as db:
            # Only for a profile that still has a record, so a view never outlives its profile.
            db.execute(
                "INSERT OR REPLACE INTO views (id, key, data, size, used) "
                "SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM profiles WHERE id = ?)",
                (profile_id, key, data, len(data), time.time(), profile_id),
            )
            (total,) = db.execute("SELECT COALESCE(SUM(size), 0) FROM views").fetchone()
            if total > self.view_cache_bytes:
                db.execute(_EVICT, {"excess": total - self.view_cache_bytes})

    def view_bytes(self) -> int:
        """Bytes held by cached views in all."""
        row = self._one("SELECT COALESCE(SUM(size), 0) FROM views", ())
        return int(row[0]) if row else 0  # type: ignore[arg-type]

    def check(self) -> None:
        try:
            self._one("SELECT 1 FROM profiles LIMIT 1", ())
        except sqlite3.Error as exc:
            raise OSError(f"sqlite database {self.path}: {exc}") from None

    def try_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        # One statement: take the lease if free or lapsed (a crashed holder's).
        now = time.time()
        with self._borrow() as db:
            cursor = db.execute(
                "INSERT INTO leases.locks (id, token, until) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET token = excluded.token, until = excluded.until "
                "WHERE locks.until < ?",
                (profile_id, token, now + seconds, now),
            )
            return cursor.rowcount == 1

    def renew_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        with self._borrow() as db:
            cursor = db.execute(
                "UPDATE leases.locks SET until = ? WHERE id = ? AND token = ?",
                (time.time() + seconds, profile_id, token),
            )
            return cursor.rowcount == 1

    def unlock(self, profile_id: str, token: str) -> None:
        with self._borrow() as db:
            db.execute("DELETE FROM leases.locks WHERE id = ? AND token = ?", (profile_id, token))

    def close(self) -> None:
        if self._writer is not None and self._writer_pid == os.getpid():
            self._writer.close()
        self._writer = None
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
