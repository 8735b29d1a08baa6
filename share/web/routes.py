"""Every route of pprof-share, on one screen (as google/pprof's driver keeps its route table).

`<pid:pid>` is a profile id (api.ProfileIdConverter), so ids never shadow other paths.
`flask --app share routes` prints the same table from a running configuration.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from . import api, cli_script, embed, favicon, limits, negotiate, ops, pages, preview, reports
from .collections import api as capi
from .collections import views as cviews

GET, POST, PUT, DELETE = ["GET"], ["POST"], ["PUT"], ["DELETE"]

# (rule, methods, view); the endpoint is the view's name (endpoint()), as url_for() takes it.
ROUTES: list[tuple[str, list[str], Callable[..., object]]] = [
    # pages
    ("/", GET, pages.index),
    ("/<pid:pid>", GET, negotiate.profile),  # page, raw, record or text summary, by Accept
    ("/<pid:pid>/embed", GET, embed.embed),  # the only page another site may frame
    ("/<pid:pid>/preview.png", GET, preview.preview_png),  # og:image
    ("/favicon.ico", GET, favicon.favicon),
    ("/pprof-share", GET, cli_script.cli_script),  # the CLI as one file, for curl -o
    # uploads, downloads, deletion
    ("/", POST, api.upload_post),
    ("/<path:filename>", PUT, api.upload_put),
    ("/<pid:pid>/raw", GET, api.raw),
    ("/<pid:pid>", DELETE, api.delete),
    ("/symbolz", GET + POST, api.symbolz),
    ("/<pid:pid>/symbolz", GET + POST, api.symbolz),
    # views of a profile: text for curl, JSON for the page
    ("/<pid:pid>/top", GET, reports.top_plain),
    ("/<pid:pid>/peek", GET, reports.peek_plain),
    ("/<pid:pid>/tags", GET, reports.tags_plain),
    ("/<pid:pid>/dot", GET, reports.dot_plain),
    ("/<pid:pid>/graph.svg", GET, reports.graph_svg),
    ("/<pid:pid>/folded", GET, reports.folded_plain),  # folded stacks, for flamegraph.pl
    ("/api/v1/profiles/<pid:pid>", GET, reports.record),
    ("/api/v1/profiles/<pid:pid>/progress", GET, api.progress),
    ("/api/v1/profiles/<pid:pid>/flamegraph", GET, reports.flamegraph),
    ("/api/v1/profiles/<pid:pid>/top", GET, reports.top),
    ("/api/v1/profiles/<pid:pid>/peek", GET, reports.peek),
    ("/api/v1/profiles/<pid:pid>/search", GET, reports.search),
    ("/api/v1/profiles/<pid:pid>/tags", GET, reports.tags),
    ("/api/v1/profiles/<pid:pid>/summary", GET, reports.summary),
    # operations: alive, both stores answering, Prometheus metrics
    ("/healthz", GET, ops.healthz),
    ("/readyz", GET, ops.readyz),
    ("/metrics", GET, ops.metrics_page),
    # combining: merges stored as new profiles (POST /?merge=1 takes files: upload_post)
    ("/api/v1/merge", POST, api.merge),
    # collections: many profiles under one link (README "Collections"); every view of a
    # selection (?from=&to=&match=&kind=, base_from=... for a comparison)
    ("/api/v1/collections", POST, capi.create),
    ("/c/<cid:cid>", POST, capi.add_post),
    ("/c/<cid:cid>/<path:filename>", PUT, capi.add_put),
    ("/c/<cid:cid>", PUT, capi.add_put_bare),
    ("/c/<cid:cid>", DELETE, capi.delete),
    ("/c/<cid:cid>", GET, cviews.collection),  # page, merged profile, record or text
    ("/c/<cid:cid>/raw", GET, cviews.raw),
    ("/c/<cid:cid>/snapshot", GET, cviews.snapshot),
    ("/c/<cid:cid>/snapshot/<what>", GET, cviews.snapshot),
    ("/c/<cid:cid>/top", GET, cviews.top_plain),
    ("/c/<cid:cid>/peek", GET, cviews.peek_plain),
    ("/c/<cid:cid>/tags", GET, cviews.tags_plain),
    ("/c/<cid:cid>/dot", GET, cviews.dot_plain),
    ("/c/<cid:cid>/graph.svg", GET, cviews.graph_svg),
    ("/c/<cid:cid>/folded", GET, cviews.folded_plain),
    ("/api/v1/collections/<cid:cid>", GET, capi.record),
    ("/api/v1/collections/<cid:cid>/members", GET, capi.members),
    ("/api/v1/collections/<cid:cid>/timeline", GET, capi.timeline_json),
    ("/api/v1/collections/<cid:cid>/selection", GET, cviews.selection_doc),
    ("/api/v1/collections/<cid:cid>/flamegraph", GET, cviews.flamegraph),
    ("/api/v1/collections/<cid:cid>/top", GET, cviews.top),
    ("/api/v1/collections/<cid:cid>/peek", GET, cviews.peek),
    ("/api/v1/collections/<cid:cid>/search", GET, cviews.search),
    ("/api/v1/collections/<cid:cid>/tags", GET, cviews.tags),
    ("/api/v1/collections/<cid:cid>/summary", GET, cviews.summary),
]

# Views under a per-address rate limit (web.limits), by the limit's scope.
LIMITED = {
    api.upload_post: "uploads",
    api.upload_put: "uploads",
    api.merge: "uploads",  # a merge is stored as an upload
    api.delete: "deletes",
    capi.create: "uploads",
    capi.add_post: "uploads",
    capi.add_put: "uploads",
    capi.delete: "deletes",
}


def register(app: Flask) -> None:
    """Add every route of ROUTES to app."""
    app.url_map.converters["pid"] = api.ProfileIdConverter
    app.url_map.converters["cid"] = capi.CollectionIdConverter
    for rule, methods, view in ROUTES:
        limited = limits.limit(app, LIMITED[view], view) if view in LIMITED else view
        app.add_url_rule(rule, endpoint(view), limited, methods=methods)


def endpoint(view: Callable[..., object]) -> str:
    """The view's name, as url_for() takes it; a collection's views are collection_<name>."""
    inside = view.__module__.startswith("share.web.collections")
    return f"collection_{view.__name__}" if inside else view.__name__
