"""When a view is answered behind: with a growing entry's last merge (a block of a window still
filling, an open selection), the members that joined since pending (Plan.pending), rather than
after merging them in. A fleet's adds would otherwise make every view wait for merges.

Three rules, any one enough, for an entry made at most BEHIND_SECONDS ago:
- BEHIND_FROM or more members joined since it (at 20 adds/s every view would wait for seconds
  of merges: bench/fleet.py, 16 s with one viewer);
- BEHIND_FEW or more joined and its merge was costly (COSTLY_MERGE seconds or more) and is
  recent for its cost (less than BEHIND_DUTY times as long ago): the merges that keep one
  growing entry fresh then take at most about a tenth of a core however many views ask (on the
  fleet bench the warm-up merged the whole collection's default selection, 0.8 s, every 2-3 s,
  and views re-merged growing blocks). Fewer new members (someone's add, a CI job's) are
  merged in at once;
- for views, BEHIND_FEW or more joined and it was merged (not read from blocks already merged,
  which costs nothing) less than BEHIND_FRESH ago: a growing entry is extended by views at
  most once per BEHIND_FRESH, however cheap each extension (on the fleet bench views of ranges
  that reach the present merged the same filling windows again and again: one minute's block
  was the subject of 10 merges in that minute, its chunks counted).
"""

from __future__ import annotations

from typing import Any

BEHIND_FROM = 32
BEHIND_SECONDS = 60.0
COSTLY_MERGE = 0.5
BEHIND_DUTY = 10
BEHIND_FEW = 4
BEHIND_FRESH = 10.0


def served_behind(entry: dict[str, Any], new: int, now: float) -> bool:
    """Whether a view may be answered with the entry's profile, new members lacking from it.
    The entry's `at` is when it was made, `took` how long its merge took (both on the share's
    clock)."""
    age = now - float(entry.get("at", 0))
    merged_lately = float(entry.get("took", 0)) > 0 and age < BEHIND_FRESH
    return (
        (age <= BEHIND_SECONDS and new >= BEHIND_FROM)
        or (new >= BEHIND_FEW and merged_lately)
        or too_soon(entry, new, now)
    )


def too_soon(entry: dict[str, Any], new: int, now: float) -> bool:
    """The costly-merge rule alone: whether merging the entry again with new members now would
    come too soon for what its merge cost (the warm-up's rule: no one waits for it)."""
    age = now - float(entry.get("at", 0))
    took = float(entry.get("took", 0))
    recent = age <= BEHIND_SECONDS and age < BEHIND_DUTY * took
    return new >= BEHIND_FEW and took >= COSTLY_MERGE and recent
