"""create_app(): settings, the core on its stores, the routes, error rendering, security headers.

templates/ and static/ sit at the top of a source checkout and are shipped inside the wheel as
share/web/templates and share/web/static (pyproject.toml): the app takes whichever exists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask, Response

from .. import config
from ..collections import open_collections
from ..core import open_share
from . import errors, limits, ops, routes
from .api import UploadRequest
from .csp import CONTENT_SECURITY_POLICY

_HERE = Path(__file__).resolve().parent


def asset_dir(name: str) -> str:
    """templates/ or static/: inside the installed package, else at the checkout's top."""
    installed = _HERE / name
    if installed.is_dir():
        return str(installed)
    return str(_HERE.parent.parent / name)


def create_app(test_config: Mapping[str, Any] | None = None, *, check_stores: bool = True) -> Flask:
    """The application: defaults, then SHARE_* environment, then test_config overrides.

    check_stores=False: a gunicorn worker, whose master checked them once at start. A worker
    that boots (or is replaced) while a store is down must come up and answer 503s: failing
    to boot, it would make gunicorn stop the whole service."""
    app = Flask("share", template_folder=asset_dir("templates"), static_folder=asset_dir("static"))
    app.request_class = UploadRequest  # uploads are spooled to files as they arrive
    overrides = dict(test_config or {})
    clock = overrides.pop("CLOCK", None)
    compute = overrides.pop("COMPUTE", None)  # a ComputePool to share (tests share one)
    settings = config.load(os.environ, overrides)
    app.config["SHARE"] = settings
    # Flask refuses bodies over this before we read them; a little slack for multipart framing.
    app.config["MAX_CONTENT_LENGTH"] = settings["MAX_UPLOAD_BYTES"] + 64 * 1024
    share = open_share(settings, compute=compute, check=check_stores)
    if clock is not None:
        share.clock = clock
    app.extensions["share"] = share
    app.extensions["collections"] = open_collections(share)

    errors.init_app(app)
    ops.init_app(app)
    limits.init_app(app)
    routes.register(app)

    @app.after_request
    def _security_headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    return app
