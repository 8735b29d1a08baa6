"""What the views' documents share: the JSON encoding, the top table's document, and what a
view of profiles with pprof's options shows (a profile or a diff). views.py and pprofviews.py
both build on it, so neither imports the other's internals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ...pprof import ParsedProfile
from ..combine import combine
from ..model.graph import Graph, view_header
from ..reports.top import columns
from .options import diff_of


def encode(doc: dict[str, Any]) -> bytes:
    """Compact JSON, UTF-8, the encoding of every JSON view (orjson: 10x the standard
    library's speed on these number lists)."""
    return orjson.dumps(doc)


def shown(
    profiles: Sequence[ParsedProfile], options: Mapping[str, Any]
) -> tuple[combine.Shown, int | None]:
    """What the views of profiles with these options show (a profile, or a diff), and the
    sample type: a diff's None is the combination's default (options.parse)."""
    mode, _, normalize = diff_of(options)
    s = combine.shown(profiles, mode, normalize)
    index = options.get("sample_index")
    if mode and index is None:
        index = s.tables.sample_index(None)
    return s, index


def top_doc_of(g: Graph, result: Any) -> dict[str, Any]:
    """The top table JSON of a graph's top.Top (README); sum_pct runs in the rows' order."""
    return {
        **view_header(g),
        "total": result.total,
        "nodes": result.orig_count,
        "rows": columns(result),
        "no_samples": not bool(g.weights.any()),
        "diff": False,
        "warnings": [],
    }
