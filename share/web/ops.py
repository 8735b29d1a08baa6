"""Operations: /healthz, /readyz, /metrics, request ids and the access log.

Every request gets an id (the client's X-Request-Id when it looks like one, else a new one),
sent back in X-Request-Id on every reply, errors included, and written on its access log line
(logger "share.access", one line per request on stderr).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import sys
import time

from flask import Flask, Response, g, jsonify, request

from .. import metrics
from ..errors import ShareError
from .api import share
from .errors import wants_json

ACCESS = logging.getLogger("share.access")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
UPLOAD_ENDPOINTS = {"upload_post", "upload_put"}


def healthz() -> Response:
    """The process is alive and answering (no store is asked)."""
    return Response("ok\n", mimetype="text/plain")


def readyz() -> Response:
    """Both stores answer: 200, or 503 with what each said."""
    core = share()
    checks = []
    for name, store in (("blobs", core.blobs), ("records", core.meta)):
        started = time.perf_counter()
        try:
            store.check()
            said, ok = "ok", True
        except (ShareError, OSError) as exc:
            said, ok = getattr(exc, "detail", "") or str(exc), False
        ms = (time.perf_counter() - started) * 1000
        where = getattr(store, "label", "")
        checks.append({"store": name, "url": where, "ok": ok, "said": said, "ms": round(ms, 1)})
    ready = all(c["ok"] for c in checks)
    if wants_json():
        response = jsonify({"ready": ready, "stores": checks})
    else:
        lines = [f"{c['store']} {c['url']}: {c['said']} ({c['ms']:.0f} ms)" for c in checks]
        response = Response("\n".join(lines) + "\n", mimetype="text/plain")
    response.status_code = 200 if ready else 503
    response.headers["Cache-Control"] = "no-store"
    return response


def metrics_page() -> Response:
    """Prometheus' text format; summed over gunicorn's workers in multiprocess mode."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return Response(generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


def _access_logger() -> None:
    if not ACCESS.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        ACCESS.addHandler(handler)
        ACCESS.setLevel(logging.INFO)
        ACCESS.propagate = False


def init_app(app: Flask) -> None:
    """Request ids, the access log line and the request metrics of every reply."""
    _access_logger()

    @app.before_request
    def _start() -> None:
        given = request.headers.get("X-Request-Id", "")
        g.request_id = given if _REQUEST_ID.match(given) else secrets.token_hex(8)
        g.started = time.perf_counter()

    @app.after_request
    def _finish(response: Response) -> Response:
        request_id = g.get("request_id") or secrets.token_hex(8)
        response.headers["X-Request-Id"] = request_id
        if response.status_code < 400:  # Flask-Limiter adds it to every limited reply
            response.headers.pop("Retry-After", None)
        route = request.url_rule.rule if request.url_rule is not None else "(none)"
        status = response.status_code
        metrics.request(route, status)
        if request.endpoint in UPLOAD_ENDPOINTS:
            outcome = {201: "created", 200: "deduplicated", 429: "rate-limited"}.get(status)
            outcome = outcome or ("failed" if status >= 500 else "rejected")
            metrics.upload(outcome, request.content_length or 0)
        ms = (time.perf_counter() - g.get("started", time.perf_counter())) * 1000
        # The server's time, for the browser's devtools and bench/paint.py (serverTiming).
        response.headers["Server-Timing"] = f"app;dur={ms:.1f}"
        ACCESS.info(
            '%s "%s %s" %d %s %.1fms id=%s',
            request.remote_addr,
            request.method,
            request.full_path.rstrip("?"),
            status,
            response.content_length if response.content_length is not None else "-",
            ms,
            request_id,
        )
        return response
