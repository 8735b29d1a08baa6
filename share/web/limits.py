"""Who may do what how often: rate limits per client address, the optional upload token, the
proxies whose X-Forwarded-For is believed, and the hosts links may be built for.

Rate limits are Flask-Limiter's, kept in Redis when SHARE_META is Redis (a Redis Cluster's
through limits' `redis+cluster://`) and in a SQLite file beside the records on the embedded
default (store.sqlite_limits), so every worker and every instance on the same store counts the
same client together. A fixed-window limit is one counter, written by one single-key script;
a client's counters carry its address as a hash tag (`{ADDRESS}`), so on a cluster they are
all in one slot. A limit answers
429 with Retry-After and the limit in its one line. The bytes-per-hour limit is charged with
the body's size: before reading it when Content-Length says it, after reading a chunked one.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, current_app, g, request
from flask_limiter import Limiter, RateLimitExceeded
from limits import parse as parse_limit
from werkzeug.middleware.proxy_fix import ProxyFix

from .. import metrics
from ..config import LOOPBACK_HOSTS, host_list, parse_rate
from ..core import human_bytes
from ..errors import ShareError, Unauthorized
from ..store import sqlite_limits
from .errors import render_error

NAMES = {"uploads": "SHARE_RATE_UPLOADS", "deletes": "SHARE_RATE_DELETES"}


class TooManyRequests(ShareError):
    code = 429


class TrustedProxies:
    """ProxyFix (X-Forwarded-For, -Proto, -Host of one hop) for requests whose peer is one of
    the trusted proxies; anyone else's forwarding headers are ignored."""

    def __init__(self, app: Any, networks: tuple[str, ...]) -> None:
        self.app = app
        self.fixed = ProxyFix(app, x_for=1, x_proto=1, x_host=1)
        self.networks = [ipaddress.ip_network(n, strict=False) for n in networks]

    def trusted(self, address: str | None) -> bool:
        try:
            ip = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if self.trusted(environ.get("REMOTE_ADDR")):
            return self.fixed(environ, start_response)
        return self.app(environ, start_response)


def client_address() -> str:
    """The client as rate limits count it: the peer, or what a trusted proxy said it was."""
    return request.remote_addr or "unknown"


def limit_key() -> str:
    """The client in its rate-limit keys: its address in braces, a Redis Cluster hash tag."""
    return "{" + client_address() + "}"


def storage(meta: str, timeout: float) -> tuple[str, dict[str, Any]]:
    """The limits storage URI and options beside the metadata store SHARE_META names."""
    redis_options: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    if meta.startswith("redis-cluster://"):
        return "redis+cluster://" + meta.removeprefix("redis-cluster://"), redis_options
    if meta.startswith(("redis://", "rediss://")):
        return meta, redis_options
    if meta.startswith("unix://"):
        return "redis+" + meta, redis_options
    if meta.startswith("sqlite:"):
        return sqlite_limits.storage_uri(meta.removeprefix("sqlite:")), {"timeout": timeout}
    return "memory://", {}


def _rate(setting: str) -> str | None:
    parsed = parse_rate(current_app.config["SHARE"][setting])
    return None if parsed is None else f"{parsed[0]}/{parsed[1]}"


def init_app(app: Flask) -> Limiter:
    """Rate limits, trusted proxies; returns the Limiter (routes.register applies limits)."""
    settings = app.config["SHARE"]
    if settings["TRUSTED_PROXIES"]:
        app.wsgi_app = TrustedProxies(app.wsgi_app, host_list(settings["TRUSTED_PROXIES"]))
    uri, options = storage(str(settings["META"]), min(float(settings["STORE_TIMEOUT"]), 2.0))
    limiter = Limiter(
        limit_key,
        app=app,
        storage_uri=uri,
        storage_options=options,
        strategy="fixed-window",
        key_prefix="pprof-share-limits",
        headers_enabled=True,
        swallow_errors=True,  # a rate-limit store that fails lets requests through
        enabled=any(
            parse_rate(settings[n]) for n in ("RATE_UPLOADS", "RATE_UPLOAD_BYTES", "RATE_DELETES")
        ),
    )
    app.extensions["share_limiter"] = limiter

    @app.errorhandler(RateLimitExceeded)
    def _limited(error: RateLimitExceeded) -> Response:
        scope = error.limit.scope if error.limit.shared else "requests"
        metrics.rate_limited(scope)
        # Retry-After is Flask-Limiter's: the seconds until the client's window resets.
        return render_error(
            429,
            f"too many {scope} from {client_address()}: the limit is {error.limit.limit} "
            f"({NAMES.get(scope, 'a rate limit')}); try again later (Retry-After)",
        )

    return limiter


def limit(app: Flask, scope: str, view: Callable[..., Any]) -> Callable[..., Any]:
    """view under the `scope` limit ("uploads" or "deletes"), shared by every route of it."""
    setting = {"uploads": "RATE_UPLOADS", "deletes": "RATE_DELETES"}[scope]
    if parse_rate(app.config["SHARE"][setting]) is None:
        return view
    limiter: Limiter = app.extensions["share_limiter"]
    return limiter.shared_limit(lambda: _rate(setting) or "", scope=scope)(view)


def charge_upload_bytes(nbytes: int) -> None:
    """Count nbytes against the client's SHARE_RATE_UPLOAD_BYTES; 429 once over it."""
    parsed = parse_rate(current_app.config["SHARE"]["RATE_UPLOAD_BYTES"])
    if parsed is None or nbytes <= 0 or g.get("share_bytes_charged"):
        return
    g.share_bytes_charged = True
    amount, per = parsed
    item = parse_limit(f"{amount}/{per}")
    limiter: Limiter = current_app.extensions["share_limiter"]
    key = ("pprof-share-limits", "upload-bytes", limit_key())
    try:
        allowed = limiter.limiter.hit(item, *key, cost=nbytes)
        reset = limiter.limiter.get_window_stats(item, *key).reset_time
    except Exception:  # noqa: BLE001 - like the other limits: a failing store lets it through
        return
    if not allowed:
        metrics.rate_limited("upload-bytes")
        raise TooManyRequests(
            f"too many bytes uploaded from {client_address()}: the limit is "
            f"{human_bytes(amount)} per {per} (SHARE_RATE_UPLOAD_BYTES); try again later",
            retry_after=max(1, int(reset - time.time())),
        )


def require_upload_token() -> None:
    """With SHARE_UPLOAD_TOKEN set, an upload must carry `Authorization: Bearer <token>`."""
    expected = current_app.config["SHARE"]["UPLOAD_TOKEN"]
    if not expected:
        return
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip(), expected):
        raise Unauthorized(
            "this server takes uploads only with its upload token: "
            "send it as 'Authorization: Bearer TOKEN'"
        )


@functools.lru_cache(maxsize=256)
def _host_allowed(host: str, setting: str) -> bool:
    allowed = host_list(setting) or LOOPBACK_HOSTS
    if "*" in allowed:
        return True
    name = host.lower()
    name = name[1:].partition("]")[0] if name.startswith("[") else name.rpartition(":")[0] or name
    return name in allowed


def link_host_allowed(host: str) -> bool:
    """Whether a request's Host may build links (SHARE_ALLOWED_HOSTS; loopback when unset)."""
    return _host_allowed(host, current_app.config["SHARE"]["ALLOWED_HOSTS"])
