"""Rate-limit counters of the embedded default, in a SQLite file beside its records.

Flask-Limiter keeps its counters in process memory unless it is given a shared store, and on
the embedded default it had none: each gunicorn worker counted a client on its own, so two
workers let twice SHARE_RATE_UPLOADS through. This is a `limits` storage (fixed windows, the
strategy web.limits uses) on `<records file>-limits`, so every worker, and every instance on
the same file, counts a client together, as Redis does in production. Counters are not worth
an fsync: the file is written with synchronous=OFF (a crash forgets at most the current
window). Locked waits go through sqlite._Connection (a Python-level sleep, which gevent can
switch out of), as the records' do.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from limits.storage import Storage

from .sqlite import _Connection

SCHEME = "pprof-share-sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS counters (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL,
    expires REAL NOT NULL
);
"""
SWEEP_EVERY = 1000  # increments between deletes of every lapsed counter


def storage_uri(records_path: str) -> str:
    """The storage URI (Flask-Limiter's storage_uri) for the records file at records_path."""
    return f"{SCHEME}://{records_path}-limits"


class SqliteLimitStorage(Storage):
    """`limits`' Storage on one SQLite file (registered for pprof-share-sqlite://PATH)."""

    STORAGE_SCHEME = [SCHEME]

    def __init__(
        self, uri: str, wrap_exceptions: bool = False, timeout: float = 2.0, **_: Any
    ) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions)
        self.path = uri.split("://", 1)[1]
        self.timeout = float(timeout)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._increments = 0

    @property
    def base_exceptions(self) -> type[Exception]:
        return sqlite3.Error

    def _connection(self) -> sqlite3.Connection:
        if self._db is None or self._pid != os.getpid():  # forked: the parent's is not ours
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, factory=_Connection
            )
            db.execute("PRAGMA busy_timeout=0")  # waited for in Python (sqlite._Connection)
            db.busy_seconds = self.timeout
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            db.executescript(_SCHEMA)
            self._db, self._pid = db, os.getpid()
        return self._db

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = time.time()
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM counters WHERE key = ? AND expires <= ?", (key, now))
                db.execute(
                    "INSERT INTO counters (key, value, expires) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
                    (key, amount, now + expiry),
                )
                (value,) = db.execute("SELECT value FROM counters WHERE key = ?", (key,)).fetchone()
                self._increments += 1
                if self._increments % SWEEP_EVERY == 0:
                    db.execute("DELETE FROM counters WHERE expires <= ?", (now,))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return int(value)

    def _row(self, key: str) -> tuple[int, float] | None:
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT value, expires FROM counters WHERE key = ? AND expires > ?",
                    (key, time.time()),
                )
                .fetchone()
            )
        return None if row is None else (int(row[0]), float(row[1]))

    def get(self, key: str) -> int:
        row = self._row(key)
        return 0 if row is None else row[0]

    def get_expiry(self, key: str) -> float:
        row = self._row(key)
        return time.time() if row is None else row[1]

    def check(self) -> bool:
        try:
            with self._lock:
                self._connection().execute("SELECT 1").fetchone()
        except sqlite3.Error:
            return False
        return True

    def reset(self) -> int | None:
        with self._lock:
            return self._connection().execute("DELETE FROM counters").rowcount

    def clear(self, key: str) -> None:
        with self._lock:
            self._connection().execute("DELETE FROM counters WHERE key = ?", (key,))
