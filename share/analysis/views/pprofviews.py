"""The views that take pprof's options, encoded as served (views.py registers them).

Text equal to `go tool pprof`'s: toptext (-top), peektext (-peek), tagstext (-tags), dot
(-dot); svg (dot laid out by Graphviz); JSON for the page: flamegraph and top with the filters
applied, peek (callers, callees, sandwich), tags, and warnings (the lines pprof prints on
stderr, which the text views send as headers). All are pure functions of the profiles and the
canonical options of options.parse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from ...pprof import ParsedProfile
from ..flame import flame, zoom
from ..model.graph import view_header
from ..refine.refine import Spec
from ..reports import dot, explore, folded, peek, search, svg, tags
from . import diffview
from .docs import encode, shown, top_doc_of

Render = Callable[[Sequence[ParsedProfile], Mapping[str, Any]], bytes]
_REFINE = frozenset(f.name for f in fields(Spec))
_TOP = ("node_fraction", "edge_fraction", "cum")


def is_plain(name: str, o: Mapping[str, Any]) -> bool:
    """Whether a flame graph / top request has none of pprof's options (the fast views)."""
    if any(k in o for k in _REFINE) or "zoom" in o:
        return False
    return name == "flamegraph" or not any(k in o for k in _TOP)


def _filtered(o: Mapping[str, Any]) -> bool:
    return any(k in o for k in _REFINE) or "zoom" in o


def subject(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(the tables a view reads, its options): the profile's own, or with diff_base= / base=
    the combination pprof makes (combine.py) — filters then apply to it as pprof applies them;
    a diff's sample type None is resolved on the combination."""
    s, index = shown(profiles, o)
    return s, {**o, "sample_index": index}


def with_options(name: str, plain: Render) -> Render:
    """The flame graph / top view: as before without pprof's options, refined with them."""

    def render(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
        if is_plain(name, o):
            return plain(profiles, o)
        s, refined = subject(profiles, o)
        sides = name == "flamegraph" or (name == "top" and not any(k in o for k in _TOP))
        if s.diff and sides and not _filtered(o):
            return plain(profiles, o)  # a diff without filters: diffview's, with both sides
        o = refined
        if name == "toptext":
            return explore.top_text(s.tables, o)
        rep = explore.report(s.tables, o)
        if name == "top":
            result = explore.top_report(rep, o)
            doc = top_doc_of(rep.graph, result)
            doc["sort"] = "cum" if o.get("cum") else "flat"
            if s.diff:  # pprof's rows, with each side's flat and cum beside them
                doc["rows"].update(
                    diffview.refined_top_columns(s, rep.graph, rep.sample_stack, result.nodes)
                )
                doc.update(diffview.sides_header(s, rep.graph))
        elif "zoom" in o and s.diff:
            doc = diffview.zoomed_flamegraph(
                s, rep.graph, rep.sample_stack, list(o["zoom"]), o["node_fraction"], o["budget"]
            )
        elif "zoom" in o:
            doc = zoom.zoomed(rep.graph, list(o["zoom"]), o["node_fraction"], o["budget"])
        elif s.diff:
            doc = diffview.refined_flamegraph(
                s, rep.graph, rep.sample_stack, o["node_fraction"], o["budget"]
            )
        else:
            doc = flame.flamegraph(rep.graph, o["node_fraction"], o["budget"])
        doc["warnings"] = rep.warnings
        doc["filters"] = rep.filters
        doc["diff"] = s.diff
        return encode(doc)

    return render


def _common(rep: explore.Report) -> dict[str, Any]:
    """The fields every JSON view of a profile shares (as the flame graph's)."""
    return {
        **view_header(rep.graph),
        "filters": rep.filters,
        "warnings": rep.warnings,
    }


def _report(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> explore.Report:
    s, opts = subject(profiles, o)
    return explore.report(s.tables, opts)


def peek_json(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    rep = _report(profiles, o)
    doc = _common(rep)
    budget = o.get("budget", flame.FLAME_NODE_BUDGET)
    doc.update(peek.peek_doc(rep, o["peek"], bool(o.get("cum")), budget))
    return encode(doc)


def peek_text(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    rep = _report(profiles, o)
    return peek.peek_text(rep, o["peek"], bool(o.get("cum"))).encode()


def tags_json(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    s, opts = subject(profiles, o)
    rep = explore.report(s.tables, opts)
    doc = _common(rep)
    doc["warnings"] = explore.warnings(s.tables, {**opts, "labels": True})
    doc.update(tags.tags_doc(rep, o.get("values", tags.TAG_VALUES)))
    return encode(doc)


def tags_text(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    return tags.tags_text(_report(profiles, o)).encode()


def dot_text(
    profiles: Sequence[ParsedProfile], o: Mapping[str, Any], escape_labels: bool = False
) -> bytes:
    rep = _report(profiles, o)
    return dot.dot_text(
        rep,
        o.get("node_count", dot.NODE_COUNT),
        o.get("node_fraction", dot.NODE_FRACTION),
        o.get("edge_fraction", dot.EDGE_FRACTION),
        escape_labels,
    ).encode()


def graph_svg(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    return svg.render(dot_text(profiles, o, escape_labels=True))


def search_json(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    s, opts = subject(profiles, o)
    rep = explore.report(s.tables, opts)
    sides = diffview.stack_sides(s, rep.graph, rep.sample_stack) if s.diff else None
    return encode({**_common(rep), **search.search_doc(rep, o["q"], sides), "diff": s.diff})


def folded_text(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    return folded.folded_text(_report(profiles, o)).encode()


def warnings_json(profiles: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    s, opts = subject(profiles, o)
    return encode({"warnings": explore.warnings(s.tables, opts)})


VIEWS: dict[str, tuple[Render, str]] = {
    "peek": (peek_json, "application/json"),
    "peektext": (peek_text, "text/plain"),
    "tags": (tags_json, "application/json"),
    "tagstext": (tags_text, "text/plain"),
    "dot": (dot_text, "text/plain"),
    "svg": (graph_svg, "image/svg+xml"),
    "warnings": (warnings_json, "application/json"),
    "search": (search_json, "application/json"),
    "folded": (folded_text, "text/plain"),
}
