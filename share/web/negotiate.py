"""GET /<id>: one link for every client, chosen by its Accept header (README "One link").

- no Accept at all (Go's HTTP client, so `go tool pprof <link>`; Python's urllib): the raw
  profile, exactly as /<id>/raw serves it;
- text/html named explicitly (browsers), or a link-preview bot by its User-Agent (they send
  */*): the page;
- application/json named: the record, as /api/v1/profiles/<id>;
- application/octet-stream or application/x-protobuf named: the raw profile;
- anything else (curl and wget send */*; text/plain): a short text summary with the links.
Every answer says Vary: Accept, User-Agent so caches keep them apart.
"""

from __future__ import annotations

import re

from flask import Response, jsonify, request

from ..analysis.reports import summary as summaries
from . import api, pages
from .preview import UNFURLERS
from .reports import summary_of

_HTML = ("text/html", "application/xhtml+xml")
_RAW = ("application/octet-stream", "application/x-protobuf", "application/vnd.google.protobuf")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def choice() -> str:
    """ "raw", "page", "json" or "text" for this request."""
    accept = request.headers.get("Accept")
    if accept is None or not accept.strip():
        return "raw"
    if UNFURLERS.search(request.headers.get("User-Agent", "")):
        return "page"
    named: dict[str, float] = {}
    for value, quality in request.accept_mimetypes:
        kind = (
            "page" if value in _HTML
            else "json" if value == "application/json"
            else "raw" if value in _RAW
            else "text" if value == "text/plain"
            else None
        )  # fmt: skip
        if kind and quality > named.get(kind, 0):
            named[kind] = quality
    if not named:
        return "text"
    return max(("page", "json", "raw", "text"), key=lambda k: named.get(k, 0))


def profile(pid: str) -> Response:
    """The page, the raw profile, the record or the summary, as the client asks."""
    chosen = choice()
    if chosen == "raw":
        response = api.raw(pid)
    elif chosen == "page":
        response = pages.profile_page(pid)
    elif chosen == "json":
        response = jsonify(api.record_json(api.share().record(pid)))
    else:
        response = Response(summary_text(pid), mimetype="text/plain")
    response.vary.update(("Accept", "User-Agent"))
    return response


def summary_text(pid: str) -> str:
    """What `curl <link>` prints: kind, pprof's header lines, the top 10 and the links."""
    record = api.share().record(pid)
    link = f"{api.base_url()}/{pid}"
    text = summaries.text(
        summary_of(pid),
        {"page": link, "raw": f"{link}/raw", "pprof": f"go tool pprof -http=: {link}"},
    )
    text = (f"{record.title}\n" if record.title else "") + text
    # Titles and function names are the uploader's: no terminal escape reaches the reader.
    return _CONTROL.sub("?", text)
