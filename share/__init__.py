"""pprof-share: a pastebin for pprof profiles."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI imports this package; keep `pprof-share top` free of Flask
    from flask import Flask

    from .core import Share

# Inline script is forbidden: profile data is shown only as text, never run.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


def create_share(settings: dict[str, Any]) -> Share:
    """The core on the stores that settings name; raises ConfigError when one is unusable."""
    from . import blobs, config, meta
    from .core import Share

    try:
        blob_store = blobs.from_url(settings["BLOBS"])
    except ValueError as exc:
        raise config.ConfigError(f"SHARE_BLOBS={settings['BLOBS']!r}: {exc}") from None
    meta_store = meta.from_url(settings["META"])
    for name, store in (("SHARE_BLOBS", blob_store), ("SHARE_META", meta_store)):
        try:
            store.check()
        except OSError as exc:
            raise config.ConfigError(f"{name}={settings[name[6:]]!r}: {exc}") from None
    return Share(blob_store, meta_store, settings)


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """The application: defaults, then SHARE_* environment, then test_config overrides."""
    from flask import Flask, Response

    from . import config, errors

    app = Flask(
        __name__,
        template_folder=os.path.join(os.path.dirname(__file__), "..", "templates"),
        static_folder=os.path.join(os.path.dirname(__file__), "..", "static"),
    )
    overrides = dict(test_config or {})
    clock = overrides.pop("CLOCK", None)
    settings = config.load(os.environ, overrides)
    app.config["SHARE"] = settings
    # Flask refuses bodies over this before we read them; a little slack for multipart framing.
    app.config["MAX_CONTENT_LENGTH"] = settings["MAX_UPLOAD_BYTES"] + 64 * 1024
    share = create_share(settings)
    if clock is not None:
        share.clock = clock
    app.extensions["share"] = share

    errors.init_app(app)
    from . import api, reports, views

    app.url_map.converters["pid"] = api.ProfileIdConverter
    app.register_blueprint(api.bp)
    app.register_blueprint(reports.bp)
    app.register_blueprint(views.bp)

    @app.after_request
    def _security_headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    return app
