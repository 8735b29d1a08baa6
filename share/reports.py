"""Derived views of a profile: flame graph and top table as JSON, and the -top text.

Each view is computed once per (profile, sample type, options) and cached by the core,
gzip-compressed: it is sent as stored to clients that accept gzip (browsers, curl --compressed)
and inflated for the others. The sample type is resolved from the record first, so `?si=cpu`
and `?si=1` share one cache entry.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson
from flask import Blueprint, Response, current_app, request

from . import analysis, flame, report
from .errors import ShareError
from .pprof import ParsedProfile

bp = Blueprint("reports", __name__)

PID = "<pid:pid>"
VERSION = "v3"  # bump when a view's content changes, so cached copies are not served
GZIP_LEVEL = 6  # paid once per view; level 9 took 3-6x as long for 3-17% fewer bytes


def _share() -> Any:
    return current_app.extensions["share"]


def _sample_index(pid: str) -> int | None:
    """The sample type ?si= names (a name or an index), else the profile's default."""
    record = _share().record(pid)
    types = [tuple(t) for t in record.sample_types]
    try:
        return analysis.sample_index(types, record.default_sample_type, request.args.get("si"))
    except analysis.SampleTypeError as exc:
        raise ShareError(str(exc), 400) from None


def _int_arg(name: str, default: int) -> int:
    text = request.args.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ShareError(f"?{name}={text!r} is not a whole number", 400) from None
    if value < 0:
        raise ShareError(f"?{name}={text!r} must be 0 or more", 400)
    return value


def _fraction_arg(name: str, default: float) -> float:
    text = request.args.get(name)
    if text is None or text == "":
        return default
    try:
        value = float(text)
    except ValueError:
        raise ShareError(f"?{name}={text!r} is not a number", 400) from None
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise ShareError(f"?{name}={text!r} must be between 0 and 1", 400)
    return value


def _cached(pid: str, key: str, compute: Callable[[ParsedProfile], bytes]) -> bytes:
    """The view, gzip-compressed: computed and compressed once, then read from the cache."""

    def compressed(parsed: ParsedProfile) -> bytes:
        return gzip.compress(compute(parsed), compresslevel=GZIP_LEVEL, mtime=0)

    return _share().view(pid, f"{key}:{VERSION}", compressed)


def _graph(parsed: ParsedProfile, index: int | None) -> analysis.Graph:
    return analysis.graph(analysis.tables(parsed), index)


def _send(gz: bytes, mimetype: str) -> Response:
    """A cached view as is, with Content-Encoding: gzip, or inflated for a client without gzip."""
    if request.accept_encodings["gzip"]:
        response = Response(gz, mimetype=mimetype)
        response.headers["Content-Encoding"] = "gzip"
    else:
        response = Response(gzip.decompress(gz), mimetype=mimetype)
    response.vary.add("Accept-Encoding")
    return response


def _json(gz: bytes) -> Response:
    return _send(gz, "application/json")


def _encode(doc: dict[str, Any]) -> bytes:
    """Compact JSON, UTF-8 (orjson: 10x the standard library's speed on these number lists)."""
    return orjson.dumps(doc)


def flamegraph_json(
    parsed: ParsedProfile,
    index: int | None,
    node_fraction: float = 0.0,
    budget: int = flame.FLAME_NODE_BUDGET,
) -> bytes:
    """The flame graph view, encoded."""
    doc = flame.flamegraph(_graph(parsed, index), node_fraction, budget)
    return _encode(doc)


def top_json(parsed: ParsedProfile, index: int | None, node_count: int) -> bytes:
    """The top table view, encoded: every row unless node_count limits them."""
    g = _graph(parsed, index)
    t = analysis.top(g, node_count=node_count)
    rows = t.rows
    # By column, as the flame graph's nodes: no dict per row to build, nor keys to repeat.
    columns = {
        "name": rows.names,
        "file": rows.files,
        "inline": [i.strip("()") for i in rows.inline],
        "flat": rows.flat.tolist(),
        "flat_pct": _pcts(rows.flat, t.total),
        "sum_pct": _pcts(np.cumsum(rows.flat, dtype=np.int64), t.total),  # wraps as pprof's
        "cum": rows.cum.tolist(),
        "cum_pct": _pcts(rows.cum, t.total),
    }
    doc = {
        "sample_type": {"type": g.sample_type[0], "unit": g.sample_type[1]},
        "sample_index": g.index,
        "sample_types": [{"type": a, "unit": b} for a, b in g.tables.sample_types],
        "default_sample_index": g.tables.sample_index(None),
        "total": t.total,
        "unit": g.sample_type[1],
        "nodes": t.orig_count,
        "rows": columns,
        "no_samples": not bool(g.weights.any()),
    }
    return _encode(doc)


def _pcts(values: np.ndarray, total: int) -> list[float]:
    """|value / total| in percent, as pprof computes it (0 when the total is 0)."""
    if not total:
        return [0.0] * len(values)
    return (np.abs(values.astype(np.float64) / float(total)) * 100).tolist()


def top_text(parsed: ParsedProfile, index: int | None, node_count: int) -> bytes:
    """`go tool pprof -top -nodefraction=0` as text."""
    t = analysis.top(_graph(parsed, index), node_count=node_count)
    text = report.top_text(t.header, t.total, t.rows, orig_count=t.orig_count)
    return text.encode()


@bp.get(f"/api/v1/profiles/{PID}/flamegraph")
def flamegraph(pid: str) -> Response:
    index = _sample_index(pid)
    nf = _fraction_arg("nf", 0.0)
    # The node budget is the default limit; ?nf= alone replaces it, and both may be given.
    default = flame.FLAME_NODE_BUDGET if request.args.get("nf", "") == "" else 0
    budget = _int_arg("budget", default)
    key = f"flamegraph:{index}:nf={nf!r}:budget={budget}"
    return _json(_cached(pid, key, lambda p: flamegraph_json(p, index, nf, budget)))


@bp.get(f"/api/v1/profiles/{PID}/top")
def top(pid: str) -> Response:
    index = _sample_index(pid)
    n = _int_arg("n", 0)
    return _json(_cached(pid, f"top:{index}:n={n}", lambda p: top_json(p, index, n)))


@bp.get(f"/{PID}/top")
def top_plain(pid: str) -> Response:
    index = _sample_index(pid)
    n = _int_arg("n", 0)
    text = _cached(pid, f"toptext:{index}:n={n}", lambda p: top_text(p, index, n))
    return _send(text, "text/plain")
