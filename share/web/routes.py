"""Every route of pprof-share, on one screen (as google/pprof's driver keeps its route table).

`<pid:pid>` is a profile id (api.ProfileIdConverter), so ids never shadow other paths.
`flask --app share routes` prints the same table from a running configuration.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from . import api, pages, reports

GET, POST, PUT, DELETE = ["GET"], ["POST"], ["PUT"], ["DELETE"]

# (rule, methods, view); the endpoint is the view's name, as url_for() takes it.
ROUTES: list[tuple[str, list[str], Callable[..., object]]] = [
    # pages
    ("/", GET, pages.index),
    ("/<pid:pid>", GET, pages.profile_page),
    # uploads, downloads, deletion
    ("/", POST, api.upload_post),
    ("/<path:filename>", PUT, api.upload_put),
    ("/<pid:pid>/raw", GET, api.raw),
    ("/<pid:pid>", DELETE, api.delete),
    ("/symbolz", GET + POST, api.symbolz),
    ("/<pid:pid>/symbolz", GET + POST, api.symbolz),
    # views of a profile: text for curl, JSON for the page
    ("/<pid:pid>/top", GET, reports.top_plain),
    ("/api/v1/profiles/<pid:pid>", GET, api.record),
    ("/api/v1/profiles/<pid:pid>/flamegraph", GET, reports.flamegraph),
    ("/api/v1/profiles/<pid:pid>/top", GET, reports.top),
    # combining: merges stored as new profiles (POST /?merge=1 takes files: upload_post)
    ("/api/v1/merge", POST, api.merge),
]


def register(app: Flask) -> None:
    """Add every route of ROUTES to app."""
    app.url_map.converters["pid"] = api.ProfileIdConverter
    for rule, methods, view in ROUTES:
        app.add_url_rule(rule, view.__name__, view, methods=methods)
