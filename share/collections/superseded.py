"""Superseded profiles: what a growing entry of a collection named before it moved on.

A block of a window still filling, or an open selection, is stored again as it grows (at a
fleet's rate a full-size merged profile every few seconds); what its entry named before is
superseded (replace()). It is listed in the collection's SUPERSEDED entry and removed once a
grace has passed (GRACE_TIMES x SHARE_ANALYSIS_SECONDS: any view or merge that found it before
has read it by then), at the next replacement or sweep (the warm-up's), unless it is in use
again; whatever is not removed so expires with its hour. Only a profile merged for the entry is
superseded with it, not a part it named as is (a smaller block, a member), which other
entries may still name.
"""

from __future__ import annotations

from typing import Any

from ..core import Share
from ..errors import ShareError
from ..store.collections.index import CollectionIndex

GROWING_SECONDS = 3600  # the most a block or selection of a window still filling is kept
GRACE_TIMES = 4  # SHARE_ANALYSIS_SECONDS a superseded block or selection is kept for readers
SUPERSEDED = "x|superseded"  # the entry listing superseded profiles: {"old": [[pid, at, key]]}


class Superseded:
    """A collection's superseded profiles: listed, then removed after their grace."""

    def __init__(self, share: Share, index: CollectionIndex, wait: float) -> None:
        self.share = share
        self.index = index
        self.wait = wait  # the most a lease is waited for
        self.grace = GRACE_TIMES * float(share.settings["ANALYSIS_SECONDS"])

    def replace(
        self, cid: str, key: str, before: dict[str, Any] | None, value: dict[str, Any]
    ) -> None:
        """Put entry key (a block, an open selection; under its lease) in place of before.
        The profile before named is superseded when it was merged for it ("own": not a part
        named as is, which other entries may name) and value names another."""
        self.index.entry_put(cid, key, value)
        if before is not None and before.get("own") and before.get("pid") != value["pid"]:
            self.supersede(cid, [[before["pid"], self.share.clock(), key]])

    def sweep(self, cid: str) -> int:
        """Remove the collection's superseded profiles whose grace has passed; how many."""
        return self.supersede(cid, [])

    def supersede(self, cid: str, new: list[list[Any]]) -> int:
        """List new superseded profiles ([pid, when, entry key]) in the SUPERSEDED entry and
        remove those listed whose grace has passed; how many were removed. Best effort: one
        left (a busy lease, a store error, two instances' lists crossing) expires with its
        hour."""
        now = self.share.clock()
        try:
            listed = (self.index.entry_get(cid, SUPERSEDED) or {}).get("old", [])
            if not new and all(at + self.grace > now for _, at, _ in listed):
                return 0
            with self.share.leases.hold(
                f"collection:{cid}:{SUPERSEDED}", "the collection's superseded profiles", self.wait
            ):
                listed = (self.index.entry_get(cid, SUPERSEDED) or {}).get("old", []) + new
                due = [old for old in listed if old[1] + self.grace <= now]
                kept = [old for old in listed if old[1] + self.grace > now]
                self.index.entry_put(cid, SUPERSEDED, {"old": kept})
        except ShareError:
            return 0
        return sum(self._drop(cid, pid, key) for pid, _, key in due)

    def _drop(self, cid: str, pid: str, key: str) -> int:
        """Remove a superseded profile from both stores unless it is in use again: named by
        the entry that superseded it, a member of a collection, or kept longer than a
        growing profile is (stored again since, or settled)."""
        try:
            with self.share.leases.hold(pid, f"profile {pid}", self.wait):  # as uploads take it
                record = self.share.meta.load(pid)
                if record is None or record.expires_at is None:
                    return 0
                if record.expires_at - record.created_at > GROWING_SECONDS + 1:
                    return 0
                if (self.index.entry_get(cid, key) or {}).get("pid") == pid:
                    return 0
                if self.index.holders(pid) or not self.share.meta.delete(pid):
                    return 0
                self.share.blobs.delete(pid)
                return 1
        except ShareError:
            return 0
