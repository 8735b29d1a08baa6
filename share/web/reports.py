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

from flask import Response, current_app, request

from ..analysis import flame, views
from ..analysis.tables import SampleTypeError, sample_index
from ..errors import ShareError
from ..pprof import ParsedProfile

VERSION = "v3"  # bump when a view's content changes, so cached copies are not served
GZIP_LEVEL = 6  # paid once per view; level 9 took 3-6x as long for 3-17% fewer bytes


def _share() -> Any:
    return current_app.extensions["share"]


def _sample_index(pid: str) -> int | None:
    """The sample type ?si= names (a name or an index), else the profile's default."""
    record = _share().record(pid)
    types = [tuple(t) for t in record.sample_types]
    try:
        return sample_index(types, record.default_sample_type, request.args.get("si"))
    except SampleTypeError as exc:
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


def flamegraph(pid: str) -> Response:
    index = _sample_index(pid)
    nf = _fraction_arg("nf", 0.0)
    # The node budget is the default limit; ?nf= alone replaces it, and both may be given.
    default = flame.FLAME_NODE_BUDGET if request.args.get("nf", "") == "" else 0
    budget = _int_arg("budget", default)
    key = f"flamegraph:{index}:nf={nf!r}:budget={budget}"
    return _json(_cached(pid, key, lambda p: views.flamegraph_json(p, index, nf, budget)))


def top(pid: str) -> Response:
    index = _sample_index(pid)
    n = _int_arg("n", 0)
    return _json(_cached(pid, f"top:{index}:n={n}", lambda p: views.top_json(p, index, n)))


def top_plain(pid: str) -> Response:
    index = _sample_index(pid)
    n = _int_arg("n", 0)
    text = _cached(pid, f"toptext:{index}:n={n}", lambda p: views.top_text(p, index, n))
    return _send(text, "text/plain")
