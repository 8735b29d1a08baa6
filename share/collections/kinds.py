"""Which kind of profile a collection's views show when the request names none."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ..store.collections.index import Collection, Member

KINDS_KEPT = 1000  # collections whose default kind is remembered per process


def kind_of(members: list[Member], wanted: str | None) -> str | None:
    """The kind shown: the one asked for, else the one with the most members."""
    if wanted:
        return wanted
    counts = Counter(m.kind for m in members)
    return max(sorted(counts), key=lambda k: counts[k]) if counts else None


class DefaultKinds:
    """The kind a view shows when kind= names none: the collection's most common, so
    narrowing a selection never switches the kind under the viewer. Kept per collection until
    its next add (last_add_at): every view of a page asks, and the answer needs every member."""

    def __init__(self, every_member: Callable[[Collection], list[Member]]) -> None:
        self.every_member = every_member
        self._known: dict[str, tuple[float | None, str | None]] = {}

    def of(self, c: Collection) -> str | None:
        known = self._known.get(c.id)
        if known is not None and known[0] == c.last_add_at:
            return known[1]
        kind = kind_of(self.every_member(c), None)
        if len(self._known) > KINDS_KEPT:
            self._known.clear()
        self._known[c.id] = (c.last_add_at, kind)
        return kind
