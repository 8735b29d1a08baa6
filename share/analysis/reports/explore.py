"""One report of a profile with pprof's options: the refined graph every view reads.

`report(parsed, options)` resolves the sample type, applies the refinements (refine.py) and
gives the Graph, the header, the active filters and the warnings, as generateRawReport does
before any format is printed. The -top view with every option lives here too; peek, dot and
tags have modules of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...errors import ShareError
from ...pprof import ParsedProfile
from ..measure import text
from ..model.graph import Graph, graph
from ..model.labels import labels
from ..model.stacks import stacks
from ..model.tables import Tables, tables
from ..refine.refine import RefineError, Spec, refined_graph
from ..refine.refine import warnings as refine_warnings
from .top import top

_I64 = np.int64
DEFAULT_SPEC = Spec()


class ReportError(ShareError):
    """pprof refuses the report (a regex it cannot compile, no match for peek): a 400."""

    code = 400


@dataclass
class Report:
    """A profile's graph for one sample type after the refinements, and its report labels."""

    tables: Tables
    graph: Graph
    spec: Spec
    sample_stack: np.ndarray  # per profile sample: its stack in graph.stacks, -1 if dropped
    removed_keys: frozenset[int]
    refined_warnings: list[str] | None  # None: no refinement (only the profile's own)
    header: text.Header

    @property
    def filters(self) -> list[str]:
        return self.spec.active_filters()

    @property
    def warnings(self) -> list[str]:
        """What pprof writes to stderr for this report's options, in its order (nothing
        without options: see warnings())."""
        return self.refined_warnings or []


def _tables(profile: ParsedProfile | Tables) -> Tables:
    """A parsed profile's tables, or tables as given (a diff's or a merge's, combine.py)."""
    return profile if isinstance(profile, Tables) else tables(profile)


def report(parsed: ParsedProfile | Tables, options: dict[str, Any]) -> Report:
    """The report of a profile with a view's options (options.parse's canonical dict)."""
    t = _tables(parsed)
    spec = Spec.of(options)
    index = options.get("sample_index")
    if spec == DEFAULT_SPEC:
        g = graph(t, index)
        sample_stack, removed, warnings = stacks(t).stack_of, frozenset[int](), None
    else:
        try:
            g, r = refined_graph(t, index, spec)
        except RefineError as exc:
            raise ReportError(str(exc)) from None
        sample_stack, removed, warnings = r.sample_stack, r.removed_keys, r.warnings
    header = replace(t.header, sample_type=g.sample_type[0], sample_unit=g.sample_type[1])
    return Report(t, g, spec, sample_stack, removed, warnings, header)


def top_report(rep: Report, options: dict[str, Any]) -> Any:
    """top.Top of a report with the options of -top (nodecount, fractions, -cum)."""
    return top(
        rep.graph,
        node_count=options.get("node_count", 0),
        node_fraction=options.get("node_fraction", 0.0),
        edge_fraction=options.get("edge_fraction", 0.001),
        cum=options.get("cum", False),
    )


def top_text(parsed: ParsedProfile | Tables, options: dict[str, Any]) -> bytes:
    """`go tool pprof -top` with every option (our default node fraction is 0)."""
    rep = report(parsed, options)
    t = top_report(rep, options)
    return text.top_text(
        t.header,
        t.total,
        t.rows,
        orig_count=t.orig_count,
        dropped_nodes=t.dropped_nodes,
        node_cutoff=t.node_cutoff_label,
        filters=rep.filters,
    ).encode()


def warnings(parsed: ParsedProfile | Tables, options: dict[str, Any]) -> list[str]:
    """The lines pprof writes to stderr for these options (its warnings).

    Without any option pprof may still print one line: a numeric label key seen with two
    units. Finding it means decoding every label, so only views that read labels anyway
    (tags, and any with a filter) report it; options["labels"] asks for it.
    """
    t = _tables(parsed)
    spec = Spec.of(options)
    if spec == DEFAULT_SPEC:
        if options.get("labels") and t.n_samples:
            return list(labels(t).unit_warnings)
        return []
    try:
        return refine_warnings(t, spec)
    except RefineError as exc:
        raise ReportError(str(exc)) from None
