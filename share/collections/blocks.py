"""Pre-merged blocks: a range of a collection costs blocks, not members.

As Pyroscope's segment trees do, the members of a selection are kept merged in aligned time
windows at a few resolutions (RESOLUTIONS: 10 s, 1 min, 10 min, 1 h, 1 day). A range is covered
by the largest windows that fit inside it, smaller ones towards its edges, and the loose members
left at the edges (cover()); the merge of those parts is the selection's profile. An open end
of a range (no from=, no to=) reaches past every member, so there any window fits: the default
selection of a collection within one day is its day's block alone. A block of one resolution
is the merge of the blocks of the next smaller one inside it (the smallest: of its members), so
no merge has more than a few dozen parts; merges of more than SHARE_MERGE_MAX_PROFILES parts
are merged in chunks, then merged again.

Blocks grow as a fleet adds: the window that is filling now changes with every add, and its
block is not merged again from its parts but extended, when the members it holds are those
added up to its last one, or the first ones of the window in time order (a digest of their
keys says which), and no more than a few merges' worth are new: the new block is the old one
merged with the new members (extension(), lacks()). So a fleet's adds cost each member one
merge per level a view asks for, not one per view.

Blocks are kept per kind and label selector (the whole collection when the selector is empty,
one series when it names one) as ordinary stored profiles, indexed as collection entries with
the digest of the member keys they hold: a member pruned from a window, or indexed after a
block was merged though stamped as added before it, changes the digest, and the block is built
again when next needed. Building holds a lease on the block's key, so instances build each
block once (the view cache's single flight).

What a growing entry named before is superseded when the entry moves on (superseded.py).
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import Share
from ..store.collections.index import Collection, CollectionIndex, Member
from ..store.meta import Record
from . import sidebyside
from .behind import BEHIND_FROM, served_behind
from .leased import entry_lease
from .superseded import GROWING_SECONDS, Superseded

RESOLUTIONS = (10, 60, 600, 3600, 86400)
EXTEND_MOST = 4  # merges' worth (SHARE_MERGE_MAX_PROFILES) of new members a block is extended by
SETTLED_AFTER = 300  # a window that ended this long ago takes no more members, as a rule
FILLED_AFTER = 5  # seconds past a window's end before the warm-up builds it: adds arrive late
FILL_WINDOWS = 6  # the last complete windows of each of the smaller resolutions it builds
FILL_LEVELS = 3  # the resolutions it builds: 10 s, 1 min, 10 min
BLOCK_TITLE = "block of collection {cid}: {kind}{of}, {res} s from {t0}"


def digest(keys: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:32]


def latest_add(members: Sequence[Member]) -> float:
    """When the last of members was added: an entry merged from them holds those added up to
    then (Blocks.lacks)."""
    return max(m.added_at for m in members)


@dataclass
class Plan:
    """The parts a selection's profile is merged from, in time order."""

    parts: list[str]  # profile ids: blocks and loose members (or windows: windows.plan)
    members: int  # members selected
    blocks: int  # parts that are blocks
    windows: int = 0  # parts that are windows of members, summed (windows.plan)
    built: int = 0  # blocks built for this plan
    extended: int = 0  # of those, blocks extended with new members rather than merged anew
    pending: int = 0  # members selected but not merged in yet (a recent merge served behind)
    behind: bool = False  # growing blocks may be served behind (a view's plan, not a build's)
    dry: list[tuple[int, int]] | None = None  # a dry run's merges of members (sidebyside)


class Blocks:
    """Covers, builds and reuses a collection's blocks."""

    def __init__(self, share: Share, index: CollectionIndex, expires: Callable[[Collection], str]):
        self.share = share
        self.index = index
        self.expires = expires  # the expiry a collection's blocks and selections are stored with
        self.chunk = max(2, share.settings["MERGE_MAX_PROFILES"])
        # A view that finds a block (or selection) being merged waits for it as long as for
        # one analysis, not the lease's usual wait: a busy fleet's merges queue for a while.
        self.wait = float(share.settings["ANALYSIS_SECONDS"])
        self.superseded = Superseded(share, index, self.wait)
        self.grace = self.superseded.grace

    # --- covering a range ---------------------------------------------------------------
    def plan(
        self,
        c: Collection,
        selector: str,
        kind: str,
        members: list[Member],
        start: float | None,
        end: float | None,
        behind: bool = False,
    ) -> Plan:
        """The parts of the selection's members (sorted by time, all of one kind and selector)
        in [start, end); None: open, past every member (to the largest windows' edge).
        behind: growing blocks may be used behind (BEHIND_FROM), as views may."""
        plan = Plan([], len(members), 0, behind=behind)
        if not members:
            return plan
        times = [m.time for m in members]
        top, top_level = RESOLUTIONS[-1], len(RESOLUTIONS) - 1
        lo = math.floor(times[0] / top) * top if start is None else start
        hi = (math.floor(times[-1] / top) + 1) * top if end is None else end
        width, found = self.share.merges.compute.merge_size, list[tuple[int, int]]()
        if behind and width > 1:  # a view waits: the merges of members it needs side by side
            plan.dry = found
            self._cover(c, selector, kind, members, times, lo, hi, top_level, plan)
            plan.dry = None  # with nothing to merge found, the dry run made the plan itself
            plan.built = sidebyside.run(width, found, lambda lv, t0: self._block(
                c, selector, kind, members, times, lv, t0, Plan([], 0, 0)))  # fmt: skip
        if found or not (behind and width > 1):
            plan.parts, plan.blocks, plan.pending = [], 0, 0
            self._cover(c, selector, kind, members, times, lo, hi, top_level, plan)
        if behind and plan.pending and not plan.parts:  # nothing merged to answer with
            return self.plan(c, selector, kind, members, start, end)
        plan.members -= plan.pending
        return plan

    def fill(self, c: Collection, kind: str, members: list[Member]) -> Plan:
        """Build the blocks of the collection's windows that have filled lately (the warm-up
        does, after a burst of adds): the last FILL_WINDOWS complete windows of 10 s, 1 min
        and 10 min, smallest first, so that a range dragged on the timeline finds its blocks
        built instead of merging a fleet's ~100 members per 10 s while someone waits. As a
        Pyroscope segment tree's windows are written as data arrives: each member costs one
        more merge (its 10 s window's), off the request path; the larger windows merge those
        blocks (or extend theirs: the default selection's merges build them only once)."""
        plan = Plan([], len(members), 0)
        times = [m.time for m in members]
        small = RESOLUTIONS[0]
        end = math.floor((self.share.clock() - FILLED_AFTER) / small) * small
        for level, res in enumerate(RESOLUTIONS[:FILL_LEVELS]):
            last = end // res * res
            for t0 in range(last - FILL_WINDOWS * res, last, res):
                i, j = bisect.bisect_left(times, t0), bisect.bisect_left(times, t0 + res)
                if j - i > 1:
                    self._block(c, "", kind, members, times, level, t0, plan)
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
                pid = self._block(c, selector, kind, members, times, level, t0, plan)
                if pid:  # else left pending (or a dry run's)
                    plan.parts.append(pid)
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
        growing = self.growing(t0 + res)
        entry = self.index.entry_get(c.id, key)
        record = self.holding(entry, want)
        if record is not None:
            if not growing:
                self._settle(c, record)
            return record.id
        if plan.behind and growing:
            late = self.behind(entry, members[i:j])
            if late:
                plan.pending += late
                return entry["pid"]  # type: ignore[index]
            if (
                entry is None
                and level == 0
                and j - i >= BEHIND_FROM
                and t0 + res + FILLED_AFTER > self.share.clock()
            ):
                # A fleet's 10 s window filling now: merged once it is complete (fill()),
                # not by every view meanwhile (then by the next as more joined, and again);
                # the view is answered with the rest, these pending, unless it is all.
                plan.pending += j - i
                return ""
        # Its parts first, each under a lease of its own: a lease is held for one merge only,
        # never while smaller blocks are built (others wait on it at most that long).
        sub = Plan([], j - i, 0, dry=plan.dry)
        most = self.extends_by(selector, level)
        grown = self.extension(entry, members[i:j], most)
        if plan.dry is not None and (grown is not None or level == 0):
            plan.dry.append((level, t0))  # a merge of members: what a dry run looks for
            return ""
        if grown is not None:
            sub.parts = grown
        elif level == 0:
            sub.parts = [m.pid for m in members[i:j]]
        else:
            window = (members[i:j], times[i:j])
            self._cover(c, selector, kind, *window, t0, t0 + res, level - 1, sub)
            if plan.dry is not None:
                return ""
        quick = plan.behind and growing  # a view does not wait for another's merge of it
        label = "a block of the collection"
        with entry_lease(self.share, c.id, key, label, self.wait, quick) as lease:
            if lease is None:  # answered with what it held (lacks()), the rest pending
                new = self.lacks(entry, members[i:j])
                plan.pending += j - i if new is None else len(new)
                return "" if new is None else entry["pid"]  # type: ignore[index]
            entry = self.index.entry_get(c.id, key)  # another instance built it meanwhile
            record = self.holding(entry, want)
            if record is not None:
                return record.id
            # Or built it with fewer members: extended, not merged anew from what was found
            # before the wait (on the balanced pair, views and warm-ups queued here each
            # merged a fleet's 10 s window of 100 members again).
            fresher = self.extension(entry, members[i:j], most)
            if fresher is not None and len(fresher) < len(sub.parts):
                grown = sub.parts = fresher
            of = f" of {selector}" if selector else ""
            title = BLOCK_TITLE.format(cid=c.id, kind=kind, of=of, res=res, t0=t0)
            began = self.share.clock()
            pid = self.merged(c, sub.parts, title, growing)
            took = self.share.clock() - began
            plan.built += 1 + sub.built
            plan.extended += sub.extended + (grown is not None)
            value = {"pid": pid, "digest": want, "members": j - i, "own": len(sub.parts) > 1}
            value["upto"] = latest_add(members[i:j])
            value["at"] = self.share.clock()  # since when it is behind, once members join
            value["took"] = round(took, 3)  # what merging it again would cost (behind())
            self.replace(c.id, key, entry, value)
            return pid

    def holding(self, entry: dict[str, Any] | None, want: str) -> Record | None:
        """The live record of the profile an entry (a block, an open selection) names, when it
        holds exactly the members whose keys' digest is want; else None."""
        if entry is None or entry.get("digest") != want:
            return None
        return self.live_record(entry["pid"])

    def extends_by(self, selector: str, level: int) -> int:
        """The most new members a block is extended by: EXTEND_MOST merges' worth, but one for
        a block of the whole collection above 10 s, whose smaller blocks the warm-up builds
        anyway (fill()): more are read from those blocks, not decoded and merged one by one
        again (the fleet bench extended its minute with 170 members)."""
        whole_filled = not selector and 0 < level < FILL_LEVELS
        return self.chunk if whole_filled else EXTEND_MOST * self.chunk

    def extension(
        self, entry: dict[str, Any] | None, members: list[Member], most: int = 0
    ) -> list[str] | None:
        """The parts of members' block made from the block an entry holds: its profile and the
        members after those it holds, when it holds the first of members (in time order) and
        at most `most` are new (0: EXTEND_MOST merges' worth); else None (merge the block anew
        from its parts: when a warm-up falls behind, extending still costs each new member one
        merge, where merging anew would merge it again at every level under the block)."""
        new = self.lacks(entry, members)
        if entry is None or not new or len(new) > (most or EXTEND_MOST * self.chunk):
            return None
        return [entry["pid"], *(m.pid for m in new)]

    def behind(self, entry: dict[str, Any] | None, members: list[Member]) -> int:
        """How many of members the entry's recent profile lacks when a view may be answered
        with it (it holds all the others (lacks()), and behind.served_behind says so); else 0."""
        new = self.lacks(entry, members)
        if not new or entry is None:
            return 0
        return len(new) if served_behind(entry, len(new), self.share.clock()) else 0

    def lacks(self, entry: dict[str, Any] | None, members: list[Member]) -> list[Member] | None:
        """The members (in time order) that the entry's live profile lacks, when it holds
        exactly the others; else None. It holds those added up to its `upto` (the latest add
        it merged), or else its first `members` in time order. A fleet's adds arrive out of
        time order, a few ms apart: held as the first ones in time order, the window a view or
        warm-up found filling was merged anew from all its members, and again at every level
        above it, where this extends it (bench/fleet.py: most merges of 10 s blocks were of
        30-100 members, not a few new ones). A member added late is then merged after later
        ones: the same samples and values as in time order, in another order."""
        if entry is None:
            return None
        held = int(entry.get("members", 0))
        if held < 1 or held > len(members):
            return None
        splits = [(members[:held], members[held:])]  # the first ones in time order
        upto = entry.get("upto")
        if upto is not None:  # those added up to then (adds at one clock tick: the first)
            splits.insert(0, ([m for m in members if m.added_at <= upto],
                              [m for m in members if m.added_at > upto]))  # fmt: skip
        for mine, new in splits:
            if len(mine) == held and entry.get("digest") == digest([m.key for m in mine]):
                return new if self.live(entry["pid"]) else None
        return None

    def live(self, pid: str) -> bool:
        return self.live_record(pid) is not None

    def live_record(self, pid: str) -> Record | None:
        record = self.share.meta.load(pid)
        now = self.share.clock()
        alive = record is not None and (record.expires_at is None or record.expires_at > now)
        return record if alive else None

    # --- expiry -------------------------------------------------------------------------
    def growing(self, end: float) -> bool:
        """Whether a window ending at end may still take members (and its block be
        superseded): one that ended less than SETTLED_AFTER ago, or has not ended."""
        return end > self.share.clock() - SETTLED_AFTER

    def _expires(self, c: Collection, growing: bool) -> str:
        """The expiry a block or selection is stored with: its collection's members', or at
        most GROWING_SECONDS while it grows, so that those superseded go soon."""
        kept = self.expires(c)
        if not growing:
            return kept
        seconds = self.share.expiry_seconds(kept)
        return kept if seconds is not None and seconds <= GROWING_SECONDS else f"{GROWING_SECONDS}s"

    def _settle(self, c: Collection, record: Record) -> None:
        """A block stored while it grew, found whole once its window has settled: it keeps
        its collection's members' expiry from now on."""
        now = self.share.clock()
        if record.expires_at is None:
            return
        if record.expires_at - now > 2 * GROWING_SECONDS:
            return
        seconds = self.share.expiry_seconds(self.expires(c))
        self.share.meta.extend_expiry(record.id, None if seconds is None else now + seconds)

    # --- superseded (superseded.py) -----------------------------------------------------
    def replace(
        self, cid: str, key: str, before: dict[str, Any] | None, value: dict[str, Any]
    ) -> None:
        self.superseded.replace(cid, key, before, value)

    def sweep(self, cid: str) -> int:
        return self.superseded.sweep(cid)

    # --- merging ------------------------------------------------------------------------
    def merged(self, c: Collection, parts: list[str], title: str, growing: bool = False) -> str:
        """The stored profile of parts merged (chunk by chunk beyond the merge limit); growing:
        it will soon be superseded (a block or selection of a window still filling)."""
        expires = self._expires(c, growing)
        level = list(parts)
        while len(level) > 1:
            level = [
                self._merge_one(level[k : k + self.chunk], title, expires)
                for k in range(0, len(level), self.chunk)
            ]
        return level[0]

    def _merge_one(self, pids: list[str], title: str, expires: str) -> str:
        if len(pids) == 1:
            return pids[0]
        data = self.share.merges.merge_ids(pids, what=title)
        upload = self.share.upload(
            data, title=title, expires=expires, precompute=False, derived=True
        )
        return upload.record.id
