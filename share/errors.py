"""ShareError and the one handler that renders it: a line for curl, JSON, or a page."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # share.pprof raises these errors; `pprof-share top` must not load Flask
    from flask import Flask, Response


class ShareError(Exception):
    """An error a client can act on: an HTTP status and a message that names the problem."""

    code = 400

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class BadProfile(ShareError):
    """The upload is not a profile google/pprof would accept."""

    code = 400


class TooLarge(ShareError):
    """The upload, or the profile once decompressed, is over a configured limit."""

    code = 413


class NotFound(ShareError):
    code = 404


class Gone(ShareError):
    """The profile existed but has expired."""

    code = 410


class Forbidden(ShareError):
    code = 403


def wants_json() -> bool:
    """JSON for API paths and for clients that prefer it over HTML and text."""
    from flask import request

    if request.path.startswith("/api/"):
        return True
    best = request.accept_mimetypes.best_match(["text/plain", "application/json", "text/html"])
    return best == "application/json" and request.accept_mimetypes["application/json"] > 0


def wants_html() -> bool:
    """Browsers ask for text/html first; curl sends */*, which gets plain text."""
    from flask import request

    accept = request.accept_mimetypes
    return accept.best == "text/html" or (accept["text/html"] > accept["text/plain"])


def render_error(code: int, message: str) -> Response:
    """The error in the client's format."""
    from flask import Response, jsonify, render_template

    if wants_json():
        response = jsonify({"error": {"code": code, "message": message}})
    elif wants_html():
        response = Response(render_template("error.html", code=code, message=message))
    else:
        response = Response(message.rstrip("\n") + "\n", mimetype="text/plain")
    response.status_code = code
    return response


def init_app(app: Flask) -> None:
    """Register the handlers: ShareError and werkzeug's own HTTP errors share one renderer."""
    from werkzeug.exceptions import HTTPException

    @app.errorhandler(ShareError)
    def _share_error(error: ShareError) -> Response:
        return render_error(error.code, error.message)

    @app.errorhandler(HTTPException)
    def _http_error(error: HTTPException) -> Response:
        return render_error(error.code or 500, error.description or error.name)
