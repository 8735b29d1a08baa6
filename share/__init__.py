"""pprof-share: a pastebin for pprof profiles.

The packages, and the one direction in which they import each other (tests/test_layout.py
walks every import and fails on an arrow that runs back up):

    web, cli  ->  collections  ->  core  ->  compute  ->  analysis, pprof, store
    analysis  ->  pprof

- share.web: the Flask app (create_app), every route in web/routes.py, pages, error rendering;
- share.cli: `pprof-share serve | upload | merge | delete | prune | fsck | top`, and the
  standard-library HTTP client, which loads neither Flask nor numpy (`upload` starts fast);
- share.collections: collection links: profiles added over time with labels, selected by
  range, label selector and kind, merged from pre-merged blocks into one profile to view;
- share.core: the service — upload, fetch, views, merge, delete, prune, fsck — with no Flask;
- share.compute: the processes every parse and analysis runs in, bounded in time and memory,
  with warm profiles, and the single flight of each view;
- share.analysis: parsed profiles -> the views (top, flame graph, text), merges and diffs,
  pprof's semantics;
- share.pprof: bytes -> a validated profile, exactly as google/pprof accepts it;
- share.store: the blob and metadata stores, one module per backend; leases; the guard that
  turns a store's failures into StoreUnavailable.

share.config (every setting), share.errors (ShareError) and share.metrics (the Prometheus
counters and their helpers) are leaves anything may import. cli may also import web (serve
runs the app); nothing below web or cli imports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """The web application (share.web.app.create_app); `share:create_app()` for gunicorn."""
    from .web.app import create_app as create

    return create(test_config)
