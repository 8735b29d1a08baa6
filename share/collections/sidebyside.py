"""The merges of members a view's plan needs, run side by side on the merge processes.

A range that no one viewed before (a label selection's first look: `zone="z1"` over the last
five minutes) needs its 10 s blocks built from members, one merge of ~25 members each, and
Blocks._cover builds them one after the other: one merge process works while the others idle,
so SHARE_MERGE_WORKERS did not make a single view faster. A dry run of the plan (Plan.dry)
finds those merges — blocks built from members, growing blocks extended with new ones, which
are independent of one another — and they run SHARE_MERGE_WORKERS at a time (each under its
block's lease, as the plan would run them) before the plan itself merges what they made.
When it finds none, the dry run's parts are the plan: a view of built blocks walks them once.
(bench/first_look.py: 1.5x faster with two merge processes on two cores.)
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


def run(width: int, found: list[tuple[int, int]], build: Callable[[int, int], object]) -> int:
    """Build each merge a dry run found ((level, window start)), width at a time, when there
    are more than one; how many ran (none: the plan builds the one it finds)."""
    if len(found) < 2:
        return 0
    with ThreadPoolExecutor(min(width, len(found))) as pool:
        list(pool.map(lambda window: build(*window), found))  # the first failure is raised
    return len(found)
