"""Summary windows: a range of a collection as nested time windows of its members, summed.

The stack summaries of a selection's members (share.analysis.combine.summed) are summed in the
aligned windows of the blocks (blocks.RESOLUTIONS: 10 s, 1 min, 10 min, 1 h, 1 day), as
Pyroscope's segment trees sum stack trees: a 10 s window is the sum of its members' summaries,
a larger one the sum of the next smaller windows inside it, and a range is covered by the
largest windows that fit inside it, smaller ones towards its edges, and the loose members left
at the edges. Nothing is merged or stored: the compute process that sums them (worker.summed)
keeps each window's sum by the digest of the members it holds, so ranges that share windows
share their sums, and a window that grows is summed again from its smaller windows, only its
newest 10 s one from members.

A part is a member's profile id, or a window: {"k": the digest of its members' ids in time
order, "p": its parts}.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..compute.sums import leaves
from ..store.collections.index import Member
from .behind import BEHIND_FEW
from .blocks import FILLED_AFTER, RESOLUTIONS, Plan

Part = str | dict[str, Any]
__all__ = ["MOST_MEMBERS", "PENDING_FROM", "cover", "leaves", "plan"]
# The most members a selection is summed from in windows: past it (a fleet's hour and more) it
# is summed from its blocks (blocks.py), merged and stored once for every instance, as a
# compute process would otherwise keep too many members' vectors, and read them all again
# after a restart.
MOST_MEMBERS = 20_000
# Members of a 10 s window still filling from which a view leaves them pending: a fleet's (or
# a label selection of it, a few per second); one add, or a few, are summed in at once. Those
# the warm-up has not numbered yet are the ones a view would otherwise number itself
# (bench/fleet.py: two thirds of the members were numbered by views with BEHIND_FROM, 32).
PENDING_FROM = BEHIND_FEW


def _digest(pids: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(pids).encode()).hexdigest()[:32]


def cover(
    members: Sequence[Member], start: float | None, end: float | None, now: float | None = None
) -> tuple[list[Part], int]:
    """The parts of members (sorted by time) in [start, end); None: open, past every member;
    and how many members were left pending. now: a view's, which is answered behind: the
    members of a 10 s window still filling (as blocks.FILLED_AFTER says; or ahead of now, not
    ended) are left pending once they are PENDING_FROM or more, as a fleet's are, so that its
    views share one sum until the window has filled, instead of each summing the window anew
    with the adds since the last."""
    if not members:
        return [], 0
    pending = 0
    if now is not None:
        small = RESOLUTIONS[0]
        filling = math.floor((now - FILLED_AFTER) / small) * small  # windows from here fill
        late = [m for m in members if m.time >= filling]  # and those ahead of now, not ended
        count = Counter(math.floor(m.time / small) for m in late)
        held = {w for w, n in count.items() if n >= PENDING_FROM}
        keep = [m for m in members if m.time < filling or math.floor(m.time / small) not in held]
        pending = len(members) - len(keep)
        if pending and keep:
            members = keep
        else:
            pending = 0
    times = [m.time for m in members]
    pids = [m.pid for m in members]
    top = RESOLUTIONS[-1]
    lo = math.floor(times[0] / top) * top if start is None else start
    hi = (math.floor(times[-1] / top) + 1) * top if end is None else end
    parts: list[Part] = []
    _cover(pids, times, lo, hi, len(RESOLUTIONS) - 1, parts)
    return parts, pending


def plan(
    members: Sequence[Member], start: float | None, end: float | None, now: float | None = None
) -> tuple[str | None, Plan]:
    """cover() as a selection's plan (its parts windows, not blocks), and the one member's id
    when it is all."""
    parts, pending = cover(members, start, end, now)
    windows = sum(not isinstance(p, str) for p in parts)
    found = Plan(parts, len(members) - pending, 0, windows, pending=pending)  # type: ignore[arg-type]
    return (parts[0] if len(parts) == 1 and isinstance(parts[0], str) else None), found


def _cover(
    pids: list[str], times: list[float], lo: float, hi: float, level: int, out: list[Part]
) -> None:
    if lo >= hi:
        return
    if level < 0:  # the edges: loose members
        out.extend(pids[bisect.bisect_left(times, lo) : bisect.bisect_left(times, hi)])
        return
    res = RESOLUTIONS[level]
    first, last = math.ceil(lo / res) * res, math.floor(hi / res) * res
    if first >= last:
        _cover(pids, times, lo, hi, level - 1, out)
        return
    _cover(pids, times, lo, first, level - 1, out)
    for t0 in range(int(first), int(last), res):
        i, j = bisect.bisect_left(times, t0), bisect.bisect_left(times, t0 + res)
        if j - i == 1:
            out.append(pids[i])
        elif j > i:
            out.append(_window(pids[i:j], times[i:j], t0, res, level))
    _cover(pids, times, last, hi, level - 1, out)


def _window(pids: list[str], times: list[float], t0: int, res: int, level: int) -> Part:
    """The window [t0, t0 + res) of its members: of them at the smallest resolution, else of
    the windows of the next smaller one (one window inside: that one)."""
    parts: list[Part]
    if level == 0:
        parts = list(pids)
    else:
        parts = []
        _cover(pids, times, t0, t0 + res, level - 1, parts)
        if len(parts) == 1:
            return parts[0]
    return {"k": _digest(pids), "p": parts}
