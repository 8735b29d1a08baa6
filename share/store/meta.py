"""MetaStore: the records of stored profiles, their expiry, and cached views.

Two backends behind this one narrow interface, a module each: sqlite.SqliteMetaStore, the
single-machine default (one file, no server), and redis.RedisMetaStore for production. Both make
`create` atomic (insert only if absent), so concurrent identical uploads end with one record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

VIEW_CACHE_BYTES = 256 << 20  # the default cap of cached views (SHARE_VIEW_CACHE_BYTES)


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
        return orjson.dumps(self).decode()  # orjson encodes dataclasses, 10x asdict + json

    @classmethod
    def from_json(cls, text: str | bytes) -> Record:
        return cls(**orjson.loads(text))


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
        """Cache a derived view; dropped with the profile. Views hold at most the store's
        view_cache_bytes in all: the least recently used go first."""

    def view_bytes(self) -> int:
        """Bytes held by cached views in all."""

    def check(self) -> None:
        """Raise OSError with a readable message when the store cannot be used."""

    def close(self) -> None:
        """Let go of connections (before a fork); the store reconnects when used again."""

    def try_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        """Take the profile's lease for `seconds` unless someone else holds it."""

    def renew_lock(self, profile_id: str, token: str, seconds: float) -> bool:
        """Extend our lease to `seconds` from now; False if it is no longer ours."""

    def unlock(self, profile_id: str, token: str) -> None:
        """Give the lease back, if it is still ours."""

    def ids(self) -> Iterator[str]:
        """Every id that has a record (for fsck), in no particular order."""
