"""GET /<id>/embed: a compact flame graph with a sample-type switch, made to sit in an iframe.

Its query string is the profile page's (pprof's filters, granularity, diff_base/base): the
embed asks the flame graph API with it as it stands, and links to the page with it, so an
embedded diff or filtered view opens as the same view.

The one response whose Content-Security-Policy lets another site frame it: frame-ancestors
comes from SHARE_EMBED_FRAME_ANCESTORS ("*" by default, or a list of origins); every other
response keeps csp.CONTENT_SECURITY_POLICY's frame-ancestors 'none'.
"""

from __future__ import annotations

from flask import Response, current_app, make_response, render_template, request

from .api import base_url, share
from .csp import CONTENT_SECURITY_POLICY


def embed_policy() -> str:
    """The page's CSP with the configured frame-ancestors in place of 'none'."""
    ancestors = current_app.config["SHARE"]["EMBED_FRAME_ANCESTORS"]
    return CONTENT_SECURITY_POLICY.replace("frame-ancestors 'none'", f"frame-ancestors {ancestors}")


def embed(pid: str) -> Response:
    """The embeddable flame graph of one profile (static/embed.js draws it)."""
    record = share().record(pid)
    query = request.query_string.decode("utf-8", "replace")
    link = f"{base_url()}/{pid}" + (f"?{query}" if query else "")
    response = make_response(
        render_template(
            "embed.html",
            record=record,
            link=link,
            query=query,
            api=f"{request.script_root}/api/v1/profiles/{pid}",
        )
    )
    response.headers["Content-Security-Policy"] = embed_policy()
    response.headers["Cache-Control"] = "no-cache"
    return response
