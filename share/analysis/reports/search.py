"""The share of a search (?q=REGEX): what the stacks with a matching frame weigh in all.

The page's search highlights frames of the flame graph it drew, and that graph keeps only its
heaviest nodes (the budget): on a large profile most of the weight can be in call trees too
small to draw, so a share summed over the drawn frames was far too low (cpu-xl: 0.1 s of
0.4 s for "runtime"). This view counts every stack of the report, after the view's filters,
once if any of its frames' names matches (Go's regexp, as every pattern here), with a diff's
two sides beside pprof's signed sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import goregexp
from .explore import Report

_I64 = np.int64


def matching_stacks(rep: Report, pattern: str) -> np.ndarray:
    """Per stack of the report's graph: whether a frame's name matches pattern."""
    st = rep.graph.stacks
    regex = goregexp.compile(pattern)
    hit = np.fromiter((bool(regex.search(n)) for n in st.names), dtype=bool, count=len(st.names))
    off = st.frame_off
    framed = np.diff(off) > 0
    out = np.zeros(len(off) - 1, dtype=bool)
    if framed.any():
        per_frame = hit[st.frame_node].astype(np.int8)
        out[framed] = np.add.reduceat(per_frame, off[:-1][framed]) > 0
    return out


def search_doc(rep: Report, pattern: str, sides: tuple[np.ndarray, ...] | None) -> dict[str, Any]:
    """{"q", "value": the matching stacks' weight, "kept": every kept stack's} (and
    "before", "after" on a diff: sides are its per-stack weights, diffview.stack_sides)."""
    matched = matching_stacks(rep, pattern)
    g = rep.graph
    doc: dict[str, Any] = {
        "q": pattern,
        "value": int(g.stack_weights[matched].sum(dtype=_I64)),
        "kept": int(g.stack_weights.sum(dtype=_I64)),  # what the filters keep, the root
    }
    if sides is not None:
        doc["before"], doc["after"] = (int(w[matched].sum(dtype=_I64)) for w in sides)
    return doc
