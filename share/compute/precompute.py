"""Precompute: the views a profile's page asks for first, computed right after its upload, so
that the first teammate who opens the link is served from the cache.

How it is scheduled, so that a burst of uploads never starves views someone waits for:
- Each web worker process keeps one queue of profiles to warm, bounded (QUEUE_LENGTH): past
  it the oldest is dropped, and the newest is warmed first: the newest links are the ones
  about to be opened. One thread (a greenlet under gunicorn's gevent worker) works through it,
  one view at a time.
- A view is computed on the profile's analysis process (the one its id hashes to, which then
  fetches and decodes it, and answers its every later view; with SHARE_INGEST_WORKERS=0, the
  one that validated it and holds it decoded) through that process's background socket:
  between jobs a process takes every waiting connection of its main socket (views someone
  waits for, merges; uploads, when they share it) before a background one, so a precompute
  delays them by at most the one view it is running. Ingest processes get no background work:
  an upload waits for none.
- Before it takes the view's lease the thread reserves the process (share.compute.pool), and it
  gives way — computes nothing — when the view is cached, being computed by anyone, or the
  process stays busy for WAIT_SECONDS. A teammate who opens the link meanwhile computes the
  view the usual way, with the usual single flight, limits and cache (ViewService.view).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from typing import Any

from .. import metrics
from ..analysis.views import options as view_options
from .service import ViewService

# What the profile page fetches first (static/viewer.js: the flame graph, then the top table;
# the summary is also the link preview's), with the page's default options.
FIRST_VIEWS = ("flamegraph", "top", "summary")
QUEUE_LENGTH = 256
WAIT_SECONDS = 5.0  # for an idle compute process, per view; past it the view is left to a visit


class Precompute:
    """The queue of profiles whose first views this process computes in the background."""

    def __init__(self, views: ViewService, enabled: bool = True) -> None:
        self.views = views
        self.enabled = enabled
        self._queue: collections.deque[tuple[str, list[tuple[str, str]], str | None]] = (
            collections.deque(maxlen=QUEUE_LENGTH)
        )
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        self.computed = 0  # views this process precomputed (read by tests)
        self.dropped = 0  # profiles that left the queue unwarmed (it was full)

    def later(
        self, pid: str, sample_types: Sequence[Sequence[str]], default_type: str | None
    ) -> None:
        """Warm pid's first views soon, off the caller's path."""
        if not self.enabled:
            return
        types = [(t, u) for t, u in sample_types]
        with self._ready:
            if len(self._queue) == self._queue.maxlen:
                self.dropped += 1
                metrics.precompute("dropped")
            self._queue.append((pid, types, default_type))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, daemon=True, name="precompute")
                self._thread.start()
            self._ready.notify()

    def pending(self) -> int:
        return len(self._queue)

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._queue:
                    self._ready.wait()
                pid, types, default_type = self._queue.pop()
            for name in FIRST_VIEWS:
                self._warm(pid, name, types, default_type)

    def _warm(self, pid: str, name: str, types: list[tuple[str, str]], default: str | None) -> None:
        try:
            options: dict[str, Any] = view_options.parse(name, {}, types, default)
            computed = self.views.warm(pid, name, options, WAIT_SECONDS)
        except Exception:  # noqa: BLE001 - a precompute that fails leaves the view to a visit
            metrics.precompute("failed")
            return
        if computed:
            self.computed += 1
        metrics.precompute("computed" if computed else "skipped")
