"""CollectionIndex: a collection's record, its members in time order, and its block entries.

A member is one stored profile added to one collection at one time with one label set; the
same profile may be a member several times (other labels or times). Its key (member_key) is
what makes an add idempotent: the same bytes, labels and time are one member.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol

import orjson

Added = Literal["added", "exists", "full"]


def canonical_labels(labels: dict[str, str]) -> str:
    """A label set as one string, keys sorted: the series it belongs to."""
    return orjson.dumps(dict(sorted(labels.items()))).decode()


def member_key(pid: str, time: float, labels: dict[str, str]) -> str:
    """The member's identity in its collection: time first, so keys sort by time."""
    return f"{time:020.6f}|{pid}|{canonical_labels(labels)}"


@dataclass
class Collection:
    """What we know about one collection (its members are indexed beside it)."""

    id: str
    title: str
    created_at: float
    expires_at: float | None  # extended by every add; None: never
    expires: str | None  # the duration each add extends it by (and its members' expiry)
    retention_seconds: int | None  # members older than this are pruned; None: kept
    token_hash: str
    last_add_at: float | None = None

    def to_json(self) -> str:
        return orjson.dumps(self).decode()

    @classmethod
    def from_json(cls, text: str | bytes) -> Collection:
        return cls(**orjson.loads(text))


@dataclass
class Member:
    """One profile's membership: when it was taken, its labels, what kind it is."""

    pid: str
    time: float  # epoch seconds: the profile's time_nanos, the add's time, or time=
    labels: dict[str, str]
    kind: str  # share.analysis.model.kind's name: cpu, heap, ...
    added_at: float
    sample_types: list[list[str]] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)  # pprof's total per sample type
    duration_nanos: int = 0
    owned: bool = False  # the add stored the profile: deleting the collection may remove it

    @property
    def key(self) -> str:
        """member_key, made once (a plan digests the keys of every member it covers)."""
        known = self.__dict__.get("_key")
        if known is None:
            known = self.__dict__["_key"] = member_key(self.pid, self.time, self.labels)
        return known  # type: ignore[no-any-return]

    def known_key(self, key: str) -> None:
        """The key the index lists the member under (what member_key made when it was added)."""
        self.__dict__["_key"] = key

    @property
    def series(self) -> str:
        return canonical_labels(self.labels)

    def to_json(self) -> bytes:
        return orjson.dumps({name: getattr(self, name) for name in _MEMBER_FIELDS})

    @classmethod
    def from_json(cls, text: str | bytes) -> Member:
        return cls(**orjson.loads(text))

    @classmethod
    def many(cls, texts: Iterable[bytes]) -> list[Member]:
        """Members from their JSON, decoded as one array: a call per member cost twice as
        much over a 10 000-member timeline."""
        return [cls(**d) for d in orjson.loads(b"[" + b",".join(texts) + b"]")]


_MEMBER_FIELDS = tuple(f.name for f in fields(Member))  # not the key made once (Member.key)


class CollectionIndex(Protocol):
    def create(self, collection: Collection) -> None:
        """Store a new collection's record (ids are random: no clash to check)."""

    def load(self, cid: str) -> Collection | None:
        """The record, or None."""

    def touch(self, cid: str, last_add_at: float, expires_at: float | None) -> None:
        """An add happened: its time, and the later expiry."""

    def add(self, cid: str, member: Member, max_members: int) -> Added:
        """Index a member unless its key is there ("exists") or the collection holds
        max_members already ("full"). Atomic."""

    def members(
        self, cid: str, start: float | None = None, end: float | None = None
    ) -> list[Member]:
        """The members with start <= time < end (None: unbounded), in time order."""

    def count(self, cid: str) -> int:
        """How many members the collection has."""

    def remove(self, cid: str, keys: list[str]) -> int:
        """Drop these members (retention); how many were there."""

    def remove_profile(self, cid: str, pid: str) -> int:
        """Drop every member of the collection that is profile pid (deleted); how many."""

    def holders(self, pid: str) -> set[str]:
        """The collections that have pid as a member."""

    def entry_get(self, cid: str, key: str) -> dict[str, Any] | None:
        """A small JSON entry of the collection (a block, a resolved selection)."""

    def entry_put(self, cid: str, key: str, value: dict[str, Any]) -> None:
        """Store an entry; dropped with the collection."""

    def entries(self, cid: str) -> list[dict[str, Any]]:
        """Every entry of the collection."""

    def delete(self, cid: str) -> list[Member]:
        """Remove the collection, its members and entries; the members it had."""

    def expired(self, now: float) -> list[str]:
        """Collections whose expiry is at or before now."""

    def check(self) -> None:
        """Raise OSError with a readable message when the index cannot be used."""
