"""Views of a profile over HTTP: flame graph and top table as JSON, the -top text.

Each handler turns the query into a view's canonical options (analysis.options) and asks the
core for the view's bytes, gzip-compressed as cached: sent as they are to clients that accept
gzip (browsers, curl --compressed) and inflated for the others.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from typing import Any

from flask import Response, request

from ..analysis import options, views
from ..errors import ShareError
from .api import share


def _options(pid: str, name: str, args: Mapping[str, str]) -> dict[str, Any]:
    record = share().available(pid)  # 410 when the blob was lost, as the page
    types = [(t, u) for t, u in record.sample_types]
    try:
        return options.parse(name, args, types, record.default_sample_type)
    except options.OptionError as exc:
        raise ShareError(str(exc), 400) from None


def computed(pid: str, name: str, args: Mapping[str, str]) -> bytes:
    """View `name` of profile pid with the options of query args, gzip-compressed as cached;
    a diff's options name its bases, which the view reads too."""
    opts = _options(pid, name, args)
    return share().view(pid, name, opts, tuple(options.bases(opts)))


def summary_of(
    pid: str, args: Mapping[str, str] | None = None, *, wait: bool = True
) -> dict[str, Any] | None:
    """The summary view (share.analysis.summary) as a dict, for pages and the text reply;
    with wait=False, only if it is computed already (None otherwise)."""
    args = args or {}
    if wait:
        gz: bytes | None = computed(pid, "summary", args)
    else:
        gz = share().cached_view(pid, "summary", _options(pid, "summary", args))
    return None if gz is None else json.loads(gzip.decompress(gz))


def view(pid: str, name: str) -> Response:
    """View `name` of profile pid, with the request's options."""
    return send(computed(pid, name, request.args), views.mimetype(name))


def send(gz: bytes, mimetype: str) -> Response:
    """A cached view as is, with Content-Encoding: gzip, or inflated for a client without gzip."""
    if request.accept_encodings["gzip"]:
        response = Response(gz, mimetype=mimetype)
        response.headers["Content-Encoding"] = "gzip"
    else:
        response = Response(gzip.decompress(gz), mimetype=mimetype)
    response.vary.add("Accept-Encoding")
    return response


def flamegraph(pid: str) -> Response:
    return view(pid, "flamegraph")


def top(pid: str) -> Response:
    return view(pid, "top")


def top_plain(pid: str) -> Response:
    return view(pid, "toptext")


def summary(pid: str) -> Response:
    return view(pid, "summary")
