"""Pre-merged blocks: a range of a collection costs blocks, not members.

As Pyroscope's segment trees do, the members of a selection are kept merged in aligned time
windows at a few resolutions (RESOLUTIONS: 1 min, 10 min, 1 h, 1 day). A range is covered by
the largest windows that fit inside it, smaller ones towards its edges, and the loose members
left at the edges (cover()); the merge of those parts is the selection's profile. A block of
one resolution is the merge of the blocks of the next smaller one inside it (the smallest:
of its members), so no merge has more than a few dozen parts; merges of more than
SHARE_MERGE_MAX_PROFILES parts are merged in chunks, then merged again.

Blocks are kept per kind and label selector (the whole collection when the selector is empty,
one series when it names one) as ordinary stored profiles, indexed as collection entries with
the digest of the member keys they hold: a member added late into a window, or pruned from it,
changes the digest, and the block is built again when next needed. Building holds a lease on
the block's key, so instances build each block once (the view cache's single flight).
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core import Share
from ..store.collections.index import Collection, CollectionIndex, Member

RESOLUTIONS = (60, 600, 3600, 86400)
BLOCK_TITLE = "block of collection {cid}: {kind}, {res} s from {t0}"


def digest(keys: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:32]


@dataclass
class Plan:
    """The parts a selection's profile is merged from, in time order."""

    parts: list[str]  # profile ids: blocks and loose members
    members: int  # members selected
    blocks: int  # parts that are blocks
    built: int = 0  # blocks built for this plan


class Blocks:
    """Covers, builds and reuses a collection's blocks."""

    def __init__(self, share: Share, index: CollectionIndex, expires: Callable[[Collection], str]):
        self.share = share
        self.index = index
        self.expires = expires  # the expiry a collection's blocks and selections are stored with
        self.chunk = max(2, share.settings["MERGE_MAX_PROFILES"])

    # --- covering a range ---------------------------------------------------------------
    def plan(
        self,
        c: Collection,
        selector: str,
        kind: str,
        members: list[Member],
        start: float | None,
        end: float | None,
    ) -> Plan:
        """The parts of the selection's members (sorted by time, all of one kind and selector)
        in [start, end); None: the members' own span."""
        plan = Plan([], len(members), 0)
        if not members:
            return plan
        times = [m.time for m in members]
        lo = times[0] if start is None else start
        hi = math.nextafter(times[-1], math.inf) if end is None else end
        self._cover(c, selector, kind, members, times, lo, hi, len(RESOLUTIONS) - 1, plan)
        return plan

    def _cover(
        self,
        c: Collection,
        selector: str,
        kind: str,
        members: list[Member],
        times: list[float],
        lo: float,
        hi: float,
        level: int,
        plan: Plan,
    ) -> None:
        if lo >= hi:
            return
        if level < 0:  # the edges: loose members
            plan.parts.extend(
                m.pid
                for m in members[bisect.bisect_left(times, lo) : bisect.bisect_left(times, hi)]
            )
            return
        res = RESOLUTIONS[level]
        first, last = math.ceil(lo / res) * res, math.floor(hi / res) * res
        if first >= last:
            self._cover(c, selector, kind, members, times, lo, hi, level - 1, plan)
            return
        self._cover(c, selector, kind, members, times, lo, first, level - 1, plan)
        for t0 in range(int(first), int(last), res):
            i, j = bisect.bisect_left(times, t0), bisect.bisect_left(times, t0 + res)
            if j - i == 1:
                plan.parts.append(members[i].pid)
            elif j > i:
                plan.parts.append(self._block(c, selector, kind, members, times, level, t0, plan))
                plan.blocks += 1
        self._cover(c, selector, kind, members, times, last, hi, level - 1, plan)

    # --- one block ----------------------------------------------------------------------
    def _block(
        self,
        c: Collection,
        selector: str,
        kind: str,
        members: list[Member],
        times: list[float],
        level: int,
        t0: int,
        plan: Plan,
    ) -> str:
        """The block of [t0, t0 + res): its stored profile, built when missing or stale."""
        res = RESOLUTIONS[level]
        i, j = bisect.bisect_left(times, t0), bisect.bisect_left(times, t0 + res)
        want = digest([m.key for m in members[i:j]])
        key = f"b|{kind}|{digest([selector])[:12]}|{res}|{t0}"
        found = self._valid(c.id, key, want)
        if found:
            return found
        # Its parts first, each under a lease of its own: a lease is held for one merge only,
        # never while smaller blocks are built (others wait on it at most that long).
        sub = Plan([], j - i, 0)
        if level == 0:
            sub.parts = [m.pid for m in members[i:j]]
        else:
            window = (members[i:j], times[i:j])
            self._cover(c, selector, kind, *window, t0, t0 + res, level - 1, sub)
        with self.share.leases.hold(f"collection:{c.id}:{key}", "a block of the collection"):
            found = self._valid(c.id, key, want)  # another instance built it meanwhile
            if found:
                return found
            title = BLOCK_TITLE.format(cid=c.id, kind=kind, res=res, t0=t0)
            pid = self.merged(c, sub.parts, title)
            plan.built += 1 + sub.built
            self.index.entry_put(c.id, key, {"pid": pid, "digest": want, "members": j - i})
            return pid

    def _valid(self, cid: str, key: str, want: str) -> str | None:
        entry = self.index.entry_get(cid, key)
        if entry is None or entry.get("digest") != want:
            return None
        pid = entry["pid"]
        return pid if self.live(pid) else None

    def live(self, pid: str) -> bool:
        record = self.share.meta.load(pid)
        now = self.share.clock()
        return record is not None and (record.expires_at is None or record.expires_at > now)

    # --- merging ------------------------------------------------------------------------
    def merged(self, c: Collection, parts: list[str], title: str) -> str:
        """The stored profile of parts merged (chunk by chunk beyond the merge limit)."""
        level = list(parts)
        while len(level) > 1:
            level = [
                self._merge_one(c, level[k : k + self.chunk], title)
                for k in range(0, len(level), self.chunk)
            ]
        return level[0]

    def _merge_one(self, c: Collection, pids: list[str], title: str) -> str:
        if len(pids) == 1:
            return pids[0]
        data = self.share.merges.merge_ids(pids)
        upload = self.share.upload(data, title=title, expires=self.expires(c), precompute=False)
        return upload.record.id
