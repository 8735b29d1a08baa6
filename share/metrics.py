"""Prometheus metrics of the service, and the small helpers that count them.

A leaf like config and errors: any part of share may call `metrics.upload(...)`,
`metrics.analysis(view)` and the rest; only share.web.ops exposes them (/metrics). Under
gunicorn `pprof-share serve` sets PROMETHEUS_MULTIPROC_DIR before any worker starts, and
prometheus_client then keeps each worker's values in a file of that directory, summed on
reading; without it (tests, one process) they live in the process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Histogram

REQUESTS = Counter(
    "share_http_requests", "HTTP requests answered, by route and status", ["route", "status"]
)
UPLOADS = Counter(
    "share_uploads", "Uploads by outcome: created, deduplicated, rejected, failed", ["outcome"]
)
UPLOAD_BYTES = Counter("share_upload_bytes", "Bytes received in uploads (as sent)")
ANALYSIS_SECONDS = Histogram(
    "share_analysis_seconds",
    "Time to compute a view of a profile (cache misses only)",
    ["view"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
VIEW_CACHE = Counter("share_view_cache", "View requests by cache result: hit, miss", ["result"])
PRECOMPUTE = Counter(
    "share_precompute",
    "First views after uploads, by outcome: computed, skipped (cached, being computed, no idle "
    "compute process), failed, dropped (the queue was full)",
    ["outcome"],
)
STORE_ERRORS = Counter(
    "share_store_errors", "Store calls that failed or timed out, by store", ["store"]
)
RATE_LIMITED = Counter("share_rate_limited", "Requests refused by a rate limit", ["limit"])


def request(route: str, status: int) -> None:
    REQUESTS.labels(route, str(status)).inc()


def upload(outcome: str, nbytes: int = 0) -> None:
    """One upload's outcome; nbytes as received."""
    UPLOADS.labels(outcome).inc()
    if nbytes:
        UPLOAD_BYTES.inc(nbytes)


@contextmanager
def analysis(view: str) -> Iterator[None]:
    """Time the computation of one view (the compute tier calls this around its work)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        ANALYSIS_SECONDS.labels(view).observe(time.perf_counter() - started)


def cache(hit: bool) -> None:
    VIEW_CACHE.labels("hit" if hit else "miss").inc()


def precompute(outcome: str) -> None:
    PRECOMPUTE.labels(outcome).inc()


def store_error(store: str, _exc: BaseException | None = None) -> None:
    STORE_ERRORS.labels(store).inc()


def rate_limited(limit: str) -> None:
    RATE_LIMITED.labels(limit).inc()
