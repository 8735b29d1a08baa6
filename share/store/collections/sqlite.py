"""SqliteCollectionIndex: collections in a SQLite file beside the embedded default's records."""

from __future__ import annotations

import os
import queue
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from ..sqlite import Pooled, _Connection
from .index import Added, Collection, Member
from .parsed import ParsedMembers

_CHUNK = 900  # keys per IN (...): under SQLite's oldest limit of 999 variables

_SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    id TEXT PRIMARY KEY,
    expires_at REAL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS collections_expires_at ON collections(expires_at);
CREATE TABLE IF NOT EXISTS members (
    cid TEXT NOT NULL,
    key TEXT NOT NULL,
    time REAL NOT NULL,
    pid TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (cid, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS members_pid ON members(pid);
CREATE TABLE IF NOT EXISTS entries (
    cid TEXT NOT NULL,
    key TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (cid, key)
) WITHOUT ROWID;
"""


class SqliteCollectionIndex(Pooled):
    """Collections in one SQLite file (WAL, pooled connections, as SqliteMetaStore). Member
    keys start with the time, so the primary key is the time order too."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.failures: tuple[type[Exception], ...] = (sqlite3.Error,)
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._pid = os.getpid()
        self.parsed = ParsedMembers()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False,
            factory=_Connection,
        )  # fmt: skip
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA)
        db.execute("PRAGMA busy_timeout=0")  # waited for in Python (sqlite._Connection)
        db.busy_seconds = self.timeout  # type: ignore[attr-defined]
        return db

    def create(self, collection: Collection) -> None:
        with self._borrow() as db:
            db.execute(
                "INSERT INTO collections (id, expires_at, record) VALUES (?, ?, ?)",
                (collection.id, collection.expires_at, collection.to_json()),
            )

    def load(self, cid: str) -> Collection | None:
        with self._borrow() as db:
            row = db.execute("SELECT record FROM collections WHERE id = ?", (cid,)).fetchone()
        return Collection.from_json(row[0]) if row else None

    def touch(self, cid: str, last_add_at: float, expires_at: float | None) -> None:
        with self._transaction() as db:
            row = db.execute("SELECT record FROM collections WHERE id = ?", (cid,)).fetchone()
            if row is None:
                return
            c = Collection.from_json(row[0])
            c.last_add_at = max(c.last_add_at or 0.0, last_add_at)
            if c.expires_at is not None:
                c.expires_at = None if expires_at is None else max(c.expires_at, expires_at)
            db.execute(
                "UPDATE collections SET expires_at = ?, record = ? WHERE id = ?",
                (c.expires_at, c.to_json(), cid),
            )

    def add(self, cid: str, member: Member, max_members: int) -> Added:
        key = member.key
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM members WHERE cid = ? AND key = ?", (cid, key)).fetchone():
                return "exists"
            (n,) = db.execute("SELECT COUNT(*) FROM members WHERE cid = ?", (cid,)).fetchone()
            if n >= max_members:
                return "full"
            db.execute(
                "INSERT INTO members (cid, key, time, pid, data) VALUES (?, ?, ?, ?, ?)",
                (cid, key, member.time, member.pid, member.to_json()),
            )
        return "added"

    def members(
        self, cid: str, start: float | None = None, end: float | None = None
    ) -> list[Member]:
        # Keys start with the time, zero-padded: a range of keys is a range of the primary
        # key (time itself is kept to check it: a key's rounding never admits a member).
        sql, args = "SELECT key FROM members WHERE cid = ?", [cid]
        if start is not None:
            sql, args = sql + " AND key >= ? AND time >= ?", [*args, f"{start - 1:020.6f}", start]
        if end is not None:
            sql, args = sql + " AND key < ? AND time < ?", [*args, f"{end + 1:020.6f}", end]
        with self._borrow() as db:
            keys = [r[0] for r in db.execute(sql + " ORDER BY key", args)]

        def fetch(missing: list[Any]) -> list[bytes | None]:
            found: dict[str, bytes] = {}
            with self._borrow() as db:
                for i in range(0, len(missing), _CHUNK):
                    chunk = missing[i : i + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    found.update(db.execute(
                        f"SELECT key, data FROM members WHERE cid = ? AND key IN ({marks})",
                        [cid, *chunk],
                    ).fetchall())  # fmt: skip
            return [found.get(k) for k in missing]

        return self.parsed.members(cid, keys, fetch, whole=start is None and end is None)

    def count(self, cid: str) -> int:
        with self._borrow() as db:
            return db.execute("SELECT COUNT(*) FROM members WHERE cid = ?", (cid,)).fetchone()[0]

    def remove(self, cid: str, keys: list[str]) -> int:
        with self._transaction() as db:
            return sum(
                db.execute("DELETE FROM members WHERE cid = ? AND key = ?", (cid, k)).rowcount
                for k in keys
            )

    def remove_profile(self, cid: str, pid: str) -> int:
        with self._borrow() as db:
            return db.execute("DELETE FROM members WHERE cid = ? AND pid = ?", (cid, pid)).rowcount

    def holders(self, pid: str) -> set[str]:
        with self._borrow() as db:
            rows = db.execute("SELECT DISTINCT cid FROM members WHERE pid = ?", (pid,)).fetchall()
        return {r[0] for r in rows}

    def entry_get(self, cid: str, key: str) -> dict[str, Any] | None:
        with self._borrow() as db:
            row = db.execute(
                "SELECT data FROM entries WHERE cid = ? AND key = ?", (cid, key)
            ).fetchone()
        return orjson.loads(row[0]) if row else None

    def entry_put(self, cid: str, key: str, value: dict[str, Any]) -> None:
        with self._borrow() as db:
            db.execute(
                "INSERT OR REPLACE INTO entries (cid, key, data) VALUES (?, ?, ?)",
                (cid, key, orjson.dumps(value)),
            )

    def entries(self, cid: str) -> list[dict[str, Any]]:
        with self._borrow() as db:
            rows = db.execute("SELECT data FROM entries WHERE cid = ?", (cid,)).fetchall()
        return [orjson.loads(r[0]) for r in rows]

    def delete(self, cid: str) -> list[Member]:
        with self._transaction() as db:
            rows = db.execute("SELECT data FROM members WHERE cid = ?", (cid,)).fetchall()
            for table, column in (("members", "cid"), ("entries", "cid"), ("collections", "id")):
                db.execute(f"DELETE FROM {table} WHERE {column} = ?", (cid,))
        self.parsed.forget(cid)
        return [Member.from_json(r[0]) for r in rows]

    def expired(self, now: float) -> list[str]:
        with self._borrow() as db:
            rows = db.execute(
                "SELECT id FROM collections WHERE expires_at IS NOT NULL AND expires_at <= ?",
                (now,),
            ).fetchall()
        return [r[0] for r in rows]

    def check(self) -> None:
        with self._borrow() as db:
            db.execute("SELECT 1 FROM collections LIMIT 1")

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
