"""The one renderer of errors: a line for curl, {"error": {...}} for JSON clients, or a page."""

from __future__ import annotations

import contextlib
import socket

from flask import Flask, Response, g, jsonify, render_template, request
from werkzeug.exceptions import ClientDisconnected, HTTPException, RequestEntityTooLarge

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


def render_error(code: int, message: str, retry_after: int | None = None) -> Response:
    """The error in the client's format; the request id (web.ops) rides along in each, and
    Retry-After tells a client of a 503 or 429 when to come back."""
    request_id = g.get("request_id")
    if wants_json():
        response = jsonify({"error": {"code": code, "message": message, "request_id": request_id}})
    elif wants_html():
        response = Response(
            render_template("error.html", code=code, message=message, request_id=request_id)
        )
    else:
        response = Response(message.rstrip("\n") + "\n", mimetype="text/plain")
    response.status_code = code
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


def stop_reading() -> None:
    """Read no more of this request's body (one over the limit, or one that stopped arriving):
    gunicorn then closes the connection after the answer, instead of reading the rest to keep
    the connection alive."""
    sock = request.environ.get("gunicorn.socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RD)


def init_app(app: Flask) -> None:
    """Register the handlers: ShareError and werkzeug's own HTTP errors share one renderer."""

    @app.errorhandler(ShareError)
    def _share_error(error: ShareError) -> Response:
        return render_error(error.code, error.message, error.retry_after)

    @app.errorhandler(RequestEntityTooLarge)
    def _too_large(_error: RequestEntityTooLarge) -> Response:
        stop_reading()
        limit = app.config["SHARE"]["MAX_UPLOAD_BYTES"]
        return render_error(
            413, f"upload is over the limit of {human_bytes(limit)} (SHARE_MAX_UPLOAD_BYTES)"
        )

    @app.errorhandler(ClientDisconnected)
    def _stopped(_error: ClientDisconnected) -> Response:
        # The body stopped arriving (silent for SHARE_CLIENT_TIMEOUT, or the client left):
        # answer, and let gunicorn close the connection after it instead of keeping it alive.
        stop_reading()
        return render_error(
            400, "the request's body stopped arriving before its end; nothing was stored"
        )

    @app.errorhandler(HTTPException)
    def _http_error(error: HTTPException) -> Response:
        return render_error(error.code or 500, error.description or error.name)

    try:  # gunicorn's reader of a chunked body raises its own errors, not OSError
        from gunicorn.http.errors import ParseException
    except ImportError:
        return

    @app.errorhandler(ParseException)
    def _bad_chunks(error: ParseException) -> Response:
        stop_reading()
        return render_error(
            400, f"the chunked body is malformed or cut short ({error}); nothing was stored"
        )
