"""Views of a profile over HTTP: JSON for the page, text as `go tool pprof` prints it.

Each handler turns the query into a view's canonical options (analysis.options) and asks the
core for the view's bytes, gzip-compressed as cached: sent as they are to clients that accept
gzip (browsers, curl --compressed) and inflated for the others. Text views carry what pprof
would print on stderr (a filter that matched nothing...) as X-Pprof-Warning headers, one each.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from typing import Any

from flask import Response, jsonify, request

from ..analysis.views import options, views
from ..errors import ShareError
from .api import record_json, share

# Headers a view is served with (graph.svg alone: an SVG may carry script; ours carries none,
# but its labels are the uploader's text).
HEADERS = {"svg": {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"}}


def view_options(pid: str, name: str, args: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The canonical options (analysis.views.options) of view `name` of profile pid asked for
    with query args (the request's when None); a 400 naming a wrong one."""
    record = share().available(pid)  # 410 when the blob was lost, as the page
    types = [(t, u) for t, u in record.sample_types]
    try:
        return options.parse(
            name, request.args if args is None else args, types, record.default_sample_type
        )
    except options.OptionError as exc:
        raise ShareError(str(exc), 400) from None


def computed(pid: str, name: str, args: Mapping[str, str]) -> bytes:
    """View `name` of profile pid with the options of query args, gzip-compressed as cached;
    a diff's options name its bases, which the view reads too."""
    opts = view_options(pid, name, args)
    return share().view(pid, name, opts, tuple(options.bases(opts)))


def summary_of(
    pid: str, args: Mapping[str, str] | None = None, *, wait: bool = True
) -> dict[str, Any] | None:
    """The summary view (share.analysis.reports.summary) as a dict, for pages and the text reply;
    with wait=False, only if it is computed already (None otherwise)."""
    args = args or {}
    if wait:
        gz: bytes | None = computed(pid, "summary", args)
    else:
        gz = share().cached_view(pid, "summary", view_options(pid, "summary", args))
    return None if gz is None else json.loads(gzip.decompress(gz))


def view(pid: str, name: str, warnings: bool = False) -> Response:
    """View `name` of profile pid, with the request's options (and pprof's warnings as
    headers, for the text views)."""
    response = send(computed(pid, name, request.args), views.mimetype(name))
    for header, value in HEADERS.get(name, {}).items():
        response.headers[header] = value
    if warnings:
        args = dict(request.args.items())
        if name == "tagstext":
            args["labels"] = "t"
        lines = json.loads(gzip.decompress(computed(pid, "warnings", args)))
        for line in lines["warnings"]:
            response.headers.add("X-Pprof-Warning", json.dumps(line)[1:-1])  # ASCII, one line
    return response


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
    return view(pid, "toptext", warnings=True)


def peek(pid: str) -> Response:
    return view(pid, "peek")


def search(pid: str) -> Response:
    return view(pid, "search")


def peek_plain(pid: str) -> Response:
    return view(pid, "peektext", warnings=True)


def tags(pid: str) -> Response:
    return view(pid, "tags")


def tags_plain(pid: str) -> Response:
    return view(pid, "tagstext", warnings=True)


def dot_plain(pid: str) -> Response:
    return view(pid, "dot", warnings=True)


def folded_plain(pid: str) -> Response:
    return view(pid, "folded", warnings=True)


def graph_svg(pid: str) -> Response:
    return view(pid, "svg")


def summary(pid: str) -> Response:
    return view(pid, "summary")


def record(pid: str) -> Response:
    """The record, with pprof's header lines for the default sample type (the summary view)
    when they are computed already: the record never waits for an analysis (null then; ask
    /api/v1/profiles/ID/summary for them)."""
    body = record_json(share().available(pid))
    summary = summary_of(pid, wait=False)
    body["header"] = summary["header"] if summary else None
    return jsonify(body)
