"""pprof's report options from a query string (or the CLI's flags): checked and canonical.

Names are pprof's own (`focus`, `tagfocus`, `granularity`, `nodecount`, ...), and its web UI's
short URL names are taken too (`f`, `tf`, `g`, `n`, ...; config.go's urlparam). Values are
checked as pprof checks them, with its messages: regexes compile in Go's dialect, tag filters
parse, granularity is one of five, booleans are strconv-like. Only values that change
something are kept, so equivalent queries give one cache key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ..model import goregexp
from .nodes import GRANULARITIES
from .refine import RefineError, Spec, check

# Long name -> pprof's short URL name (internal/driver/config.go).
SHORT = {
    "focus": "f",
    "ignore": "i",
    "hide": "h",
    "show": "s",
    "show_from": "sf",
    "tagfocus": "tf",
    "tagignore": "ti",
    "tagshow": "ts",
    "taghide": "th",
    "prune_from": "prunefrom",
    "granularity": "g",
    "relative_percentages": "rel",
    "nodecount": "n",
    "nodefraction": "nf",
    "edgefraction": "ef",
}
TEXT = ("focus", "ignore", "hide", "show", "show_from", "tagfocus", "tagignore")
TEXT += ("tagshow", "taghide", "prune_from", "tagroot", "tagleaf")
SAMPLE_ONLY = ("granularity", "noinlines", "relative_percentages")  # no part in -tags
SVG_NODE_LIMIT = 500  # the largest node count graph.svg lays out (Graphviz time grows fast)
ZOOM_DEPTH = 4096  # frames a zoom path may name


class QueryError(ValueError):
    """A value pprof (or this server) refuses; str() names the parameter."""


def arg(args: Mapping[str, str], name: str) -> str:
    """A parameter by its long name, else by pprof's short one ('' when absent)."""
    value = args.get(name) or ""
    if not value and name in SHORT:
        value = args.get(SHORT[name]) or ""
    return value


def go_bool(name: str, text: str) -> bool:
    """pprof's stringToBool."""
    low = text.lower()
    if low in ("true", "t", "yes", "y", "1"):
        return True
    if low in ("false", "f", "no", "n", "0"):
        return False
    raise QueryError(f'illegal value "{text}" for bool variable {name}')


def refine_options(args: Mapping[str, str], *, labels_only: bool = False) -> dict[str, Any]:
    """The refinements in a query (Spec fields that differ from the defaults), checked in
    applyFocus's order; labels_only leaves out what cannot change -tags output."""
    out: dict[str, Any] = {}
    for name in TEXT:
        value = arg(args, name)
        if value:
            out[name] = value
    g = arg(args, "granularity")
    if g and g not in GRANULARITIES:  # refused even where it would change nothing, as pprof
        raise QueryError(f'invalid "granularity" value "{g}"')
    if g and g != "functions" and not labels_only:
        out["granularity"] = g
    for name in ("noinlines", "relative_percentages"):
        value = arg(args, name)
        if value and go_bool(name, value) and not labels_only:
            out[name] = True
    try:
        check(Spec.of(out))
    except RefineError as exc:
        raise QueryError(str(exc)) from None
    return out


def sort_cum(args: Mapping[str, str]) -> bool:
    """-cum (or ?sort=cum, pprof's URL form)."""
    sort = args.get("sort") or ""
    if sort and sort not in ("cum", "flat"):
        raise QueryError(f'invalid "sort" value "{sort}"')
    value = args.get("cum") or ""
    return sort == "cum" or bool(value and go_bool("cum", value))


def whole(args: Mapping[str, str], name: str, default: int, shown: str | None = None) -> int:
    """A count of 0 or more (the query's own name in messages)."""
    text = arg(args, name)
    label = shown or name
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise QueryError(f"?{label}={text!r} is not a whole number") from None
    if value < 0:
        raise QueryError(f"?{label}={text!r} must be 0 or more")
    return value


def fraction(args: Mapping[str, str], name: str, default: float) -> float:
    """A fraction between 0 and 1."""
    text = arg(args, name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise QueryError(f"?{name}={text!r} is not a number") from None
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise QueryError(f"?{name}={text!r} must be between 0 and 1")
    return value


def zoom_path(args: Mapping[str, str]) -> list[str] | None:
    """?zoom=["frame", ...]: a flame graph frame path from the root, as a JSON list."""
    text = args.get("zoom") or ""
    if not text:
        return None
    try:
        path = json.loads(text)
    except ValueError:
        path = None
    if not (isinstance(path, list) and all(isinstance(p, str) for p in path)):
        raise QueryError('?zoom= must be a JSON list of frame names, e.g. ["main.main"]')
    if len(path) > ZOOM_DEPTH:
        raise QueryError(f"?zoom= names {len(path)} frames, more than {ZOOM_DEPTH}")
    return path or None


def view_options(view: str, args: Mapping[str, str]) -> dict[str, Any]:
    """The pprof options of one of the new views (and the new ones of top / flame graph)."""
    out: dict[str, Any] = {}
    if view in ("tags", "tagstext", "warnings"):
        out.update(refine_options(args, labels_only=True))
        if view == "warnings" and args.get("labels"):  # a view that reads labels anyway
            out["labels"] = True
        if view == "tags":
            values = whole(args, "values", 50)
            if values != 50:
                out["values"] = values
        return out
    relative = arg(args, "relative_percentages")
    if view in ("peek", "peektext"):
        pattern = args.get("peek") or ""
        if not pattern:
            raise QueryError("?peek=REGEX is needed: the functions to show callers and callees of")
        if not (relative and go_bool("relative_percentages", relative)):
            compile_peek(pattern)  # pprof compiles it before the filters
        out.update(refine_options(args))
        compile_peek(pattern)
        out["peek"] = pattern
        if sort_cum(args):
            out["cum"] = True
        return out
    if view == "search":
        pattern = args.get("q") or ""
        if not pattern:
            raise QueryError("?q=REGEX is needed: the function names to search for")
        try:
            goregexp.compile(pattern)
        except goregexp.RegexpError as exc:
            raise QueryError(f"parsing search regexp: {exc}") from None
        out.update(refine_options(args))
        out["q"] = pattern
        return out
    out.update(refine_options(args))
    if view in ("top", "toptext"):
        nf = fraction(args, "nodefraction", 0.0)
        if nf:
            out["node_fraction"] = nf
        ef = fraction(args, "edgefraction", 0.001)
        if ef != 0.001:
            out["edge_fraction"] = ef
        if sort_cum(args):
            out["cum"] = True
    elif view in ("dot", "svg"):
        n = whole(args, "nodecount", 80)
        if view == "svg" and not 0 < n <= SVG_NODE_LIMIT:
            raise QueryError(f"?nodecount={n} is over this server's graph limit of "
                             f"{SVG_NODE_LIMIT} nodes (0 means every node)")  # fmt: skip
        if n != 80:
            out["node_count"] = n
        nf = fraction(args, "nodefraction", 0.005)
        if nf != 0.005:
            out["node_fraction"] = nf
        ef = fraction(args, "edgefraction", 0.001)
        if ef != 0.001:
            out["edge_fraction"] = ef
    elif view == "flamegraph":
        zoom = zoom_path(args)
        if zoom:
            out["zoom"] = zoom
    return out


def compile_peek(pattern: str) -> Any:
    """The -peek argument as pprof compiles it (reports.peek does too, before its report): its
    error, pprof's text, is a QueryError here."""
    try:
        return goregexp.compile(pattern)
    except goregexp.RegexpError as exc:
        raise QueryError(f"parsing argument regexp {pattern}: {exc}") from None
