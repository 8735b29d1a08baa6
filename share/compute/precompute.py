"""Precompute: the views a profile's page asks for first, computed right after its upload, so
that the first teammate who opens the link is served from the cache.

How it is scheduled, so that a burst of uploads never starves views someone waits for:
- Each web worker process keeps one queue of profiles to warm, bounded (QUEUE_LENGTH): past
  it the oldest is dropped, and the newest is warmed first: the newest links are the ones
  about to be opened. One thread (a greenlet under gunicorn's gevent worker) works through it,
  one view at a time.
- A view is computed, through its background socket, on the compute process that has just
  validated the upload and holds it decoded: an ingest process (SHARE_INGEST_WORKERS), or the
  analysis process that validated it when there are none. Fetching and decoding it again on
  its analysis process took longer than the page takes to ask (bench/paint.py: 0.2 s of a
  6 MB profile's first second). Other profiles (a collection's merged selection) are warmed on
  their analysis process (the one the id hashes to). Between jobs a process takes every
  waiting connection of its main socket (uploads, views someone waits for, merges) before a
  background one, so a precompute delays them by at most the one view it is running; views
  someone waits for are answered by analysis processes, which an upload's precompute leaves
  alone.
- Before it takes the view's lease the thread reserves the process (share.compute.pool), and it
  gives way — computes nothing — when the view is cached, being computed by anyone, or the
  process stays busy for WAIT_SECONDS. A teammate who opens the link meanwhile computes the
  view the usual way, with the usual single flight, limits and cache (ViewService.view).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from typing import NamedTuple

from .. import metrics
from ..analysis.views import options as view_options
from .service import ViewService

# What the profile page fetches first (static/viewer.js: the flame graph, then the top table;
# the summary is also the link preview's), with the page's default options.
FIRST_VIEWS = ("flamegraph", "top", "summary")
QUEUE_LENGTH = 256
WAIT_SECONDS = 5.0  # for an idle compute process, per view; past it the view is left to a visit


class _Warming(NamedTuple):
    """A profile whose first views are to be computed, and where it is decoded (None: its
    analysis process)."""

    pid: str
    types: list[tuple[str, str]]
    default_type: str | None
    slot: int | None


class Precompute:
    """The queue of profiles whose first views this process computes in the background."""

    def __init__(self, views: ViewService, enabled: bool = True) -> None:
        self.views = views
        self.enabled = enabled
        self._queue: collections.deque[_Warming] = collections.deque(maxlen=QUEUE_LENGTH)
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        self.computed = 0  # views this process precomputed (read by tests)
        self.dropped = 0  # profiles that left the queue unwarmed (it was full)

    def later(
        self,
        pid: str,
        sample_types: Sequence[Sequence[str]],
        default_type: str | None,
        slot: int | None = None,
    ) -> None:
        """Warm pid's first views soon, off the caller's path; on `slot`, the compute process
        that holds it decoded, if given."""
        if not self.enabled:
            return
        types = [(t, u) for t, u in sample_types]
        with self._ready:
            if len(self._queue) == self._queue.maxlen:
                self.dropped += 1
                metrics.precompute("dropped")
            self._queue.append(_Warming(pid, types, default_type, slot))
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
                warming = self._queue.pop()
            self._warm(warming)

    def _warm(self, w: _Warming) -> None:
        try:
            wanted = [
                (name, view_options.parse(name, {}, w.types, w.default_type))
                for name in FIRST_VIEWS
            ]
            computed = self.views.warm_first(w.pid, wanted, WAIT_SECONDS, w.slot)
        except Exception:  # noqa: BLE001 - a precompute that fails leaves its views to a visit
            metrics.precompute("failed")
            return
        self.computed += computed
        for outcome in ["computed"] * computed + ["skipped"] * (len(FIRST_VIEWS) - computed):
            metrics.precompute(outcome)
