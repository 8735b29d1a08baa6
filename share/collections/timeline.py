"""A collection's timeline: one series per value of a label, a point per step.

What a point's y means depends on the kind (README, "Collections"): for the kinds that measure
time spent (cpu, wall, node-time) it is a rate, the summed total per second of the members'
durations (CPU nanoseconds per second: cores); for the others (heap, allocs, goroutines, mutex,
block, ...) each process's profile is a snapshot, so y is the mean of each label set's totals in
the step, summed over the label sets of the series (a fleet's heap is the sum of its pods').
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..store.collections.index import Member

RATE_KINDS = {"cpu", "wall", "node-time"}
# Whole multiples of the blocks' smallest window (share.collections.blocks.RESOLUTIONS, 10 s):
# a range dragged on the timeline snaps to steps (static/collection.time.js), so its edges fall
# on block boundaries and it is merged from blocks alone, never from a fleet's loose members at
# its edges (a 1 s step left up to 10 s of them: for 100 targets, 200 merges of a member's
# size). Pyroscope's timeline and its segment trees share their 10 s the same way.
STEPS = (10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
POINTS = 240  # about this many steps across the span, unless step= says otherwise
MAX_SERIES = 50  # the heaviest series are drawn (the selection's views hold them all)


def nice_step(span: float, points: int = POINTS) -> int:
    """The smallest round step that gives at most `points` steps over span seconds."""
    for step in STEPS:
        if span / step <= points:
            return step
    return int(span // points) + 1


def snap_range(t0: float, t1: float, step: int) -> tuple[int, int]:
    """A span dragged on the timeline, from t0 to t1, as whole steps: what the page asks for
    (static/collection.time.js, snapRange, the same rule: from the first step that starts
    inside it to the end of the last). For tests and bench/fleet.py."""
    start, end = math.ceil(t0 / step) * step, math.floor(t1 / step) * step + step
    return (start, end) if end > start else (math.floor(t0 / step) * step, start + step)


def sample_type_of(members: Sequence[Member], wanted: str | None) -> tuple[str, str] | None:
    """The sample type plotted: by name (si=, the inuse_ prefix optional), else the last type
    of the most recent member (pprof's default when a profile names none)."""
    if not members:
        return None
    types = [tuple(t) for t in members[-1].sample_types]
    if not types:
        return None
    if wanted:
        for t in types:
            if wanted in (t[0], f"inuse_{t[0]}", t[0].removeprefix("inuse_")):
                return t  # type: ignore[return-value]
        if wanted.isdigit() and int(wanted) < len(types):
            return types[int(wanted)]  # type: ignore[return-value]
    return types[-1]  # type: ignore[return-value]


def _total(m: Member, t: tuple[str, str]) -> int | None:
    for i, have in enumerate(m.sample_types):
        if tuple(have) == t and i < len(m.totals):
            return m.totals[i]
    return None


def timeline(
    members: Sequence[Member],
    kind: str,
    sample_type: tuple[str, str] | None,
    group_by: str | None,
    step: int | None,
) -> dict[str, Any]:
    """The timeline JSON (README): series by the group_by label's value, points per step."""
    chosen = [m for m in members if m.kind == kind]
    rate = kind in RATE_KINDS
    unit = sample_type[1] if sample_type else ""
    doc: dict[str, Any] = {
        "kind": kind,
        "sample_type": {"type": sample_type[0], "unit": unit} if sample_type else None,
        "group_by": group_by or None, "rate": rate,
        "y_unit": ("cores" if unit == "nanoseconds" else f"{unit}/s") if rate else unit,
        "step": 0, "from": None, "to": None, "series": [],
    }  # fmt: skip
    if not chosen or sample_type is None:
        return doc
    start, end = chosen[0].time, chosen[-1].time
    step = step or nice_step(max(end - start, 1.0))
    first = int(start // step) * step
    doc.update(step=step, **{"from": first, "to": int(end // step) * step + step})
    # series -> step -> label set -> [sum of values, sum of durations (ns), count, a member]
    cells: dict[str, dict[int, dict[Any, list[Any]]]] = defaultdict(lambda: defaultdict(dict))
    for m in chosen:
        value = _total(m, sample_type)
        if value is None:
            continue
        name = m.labels.get(group_by, "") if group_by else "all"
        t0 = int(m.time // step) * step
        label_set = (
            tuple(sorted(m.labels.items())) if len(m.labels) > 1 else tuple(m.labels.items())
        )
        cell = cells[name][t0].setdefault(label_set, [0, 0, 0, m.pid])
        cell[0] += value
        cell[1] += m.duration_nanos
        cell[2] += 1
    for name, by_step in cells.items():
        times, values, counts, pids = [], [], [], []
        for t0 in sorted(by_step):
            sets = by_step[t0].values()
            if rate:
                y = sum(v / ((d / 1e9) if d > 0 else (n * step)) for v, d, n, _ in sets)
                if unit == "nanoseconds":
                    y /= 1e9
            else:
                y = sum(v / n for v, _, n, _ in sets)
            times.append(t0)
            values.append(y)
            counts.append(sum(c[2] for c in sets))
            pids.append(next(iter(sets))[3])
        doc["series"].append(
            {"name": name, "times": times, "values": values, "members": counts, "ids": pids}
        )
    doc["series"].sort(key=lambda s: (-sum(s["values"]), s["name"]))
    doc["series"] = doc["series"][:MAX_SERIES]
    return doc
