"""The one renderer of errors: a line for curl, {"error": {...}} for JSON clients, or a page."""

from __future__ import annotations

from flask import Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from ..core import human_bytes
from ..errors import ShareError


def wants_json() -> bool:
    """JSON for API paths and for clients that prefer it over HTML and text."""
    return request.path.startswith("/api/") or accepts_json()


def accepts_json() -> bool:
    """The client prefers JSON over HTML and text (Accept: application/json)."""
    best = request.accept_mimetypes.best_match(["text/plain", "application/json", "text/html"])
    return best == "application/json" and request.accept_mimetypes["application/json"] > 0


def wants_html() -> bool:
    """Browsers ask for text/html first; curl sends */*, which gets plain text."""
    accept = request.accept_mimetypes
    return accept.best == "text/html" or (accept["text/html"] > accept["text/plain"])


def render_error(code: int, message: str) -> Response:
    """The error in the client's format."""
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

    @app.errorhandler(ShareError)
    def _share_error(error: ShareError) -> Response:
        return render_error(error.code, error.message)

    @app.errorhandler(RequestEntityTooLarge)
    def _too_large(_error: RequestEntityTooLarge) -> Response:
        limit = app.config["SHARE"]["MAX_UPLOAD_BYTES"]
        return render_error(
            413, f"upload is over the limit of {human_bytes(limit)} (SHARE_MAX_UPLOAD_BYTES)"
        )

    @app.errorhandler(HTTPException)
    def _http_error(error: HTTPException) -> Response:
        return render_error(error.code or 500, error.description or error.name)
