"""What a slow computation is doing, published for the page to show while it waits.

A compute process reports stages ("fetching the profile", "decoding the profile",
"analysing"); most jobs end in milliseconds, so nothing is written for them. Once a job has
run for PUBLISH_AFTER seconds its current stage, and each later one, is written beside the
profile's views in the metadata store, where any worker of any instance can read it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

PUBLISH_AFTER = 0.15  # seconds: quicker jobs publish nothing
KEY = "progress"  # in the profile's view cache


class Progress:
    """The stages of one job, published once it turns out slow; use as a context manager."""

    def __init__(self, meta: Any, pid: str, view: str) -> None:
        self.meta, self.pid, self.view = meta, pid, view
        self.started = time.time()
        self.stage = "waiting for a compute process"
        self._published = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(PUBLISH_AFTER, self._publish)
        self._timer.daemon = True

    def __enter__(self) -> Progress:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            if self._published:
                self._write(None)

    def __call__(self, stage: str) -> None:
        """A new stage (the pool's progress callback)."""
        with self._lock:
            self.stage = stage
            if self._published:
                self._write(stage)

    def _publish(self) -> None:
        with self._lock:
            self._published = True
            self._write(self.stage)

    def _write(self, stage: str | None) -> None:
        doc = {"stage": stage, "view": self.view, "since": self.started, "at": time.time()}
        # Progress is a courtesy: a failing store must not fail the job.
        with contextlib.suppress(Exception):
            self.meta.view_put(self.pid, KEY, json.dumps(doc).encode())


def read(meta: Any, pid: str, max_age: float) -> dict[str, Any]:
    """The profile's current stage: {"stage", "view", "seconds"}; stage None when idle."""
    data = meta.view_get(pid, KEY)
    if data is None:
        return {"stage": None}
    doc = json.loads(data)
    now = time.time()
    if doc.get("stage") is None or now - doc["at"] > max_age:
        return {"stage": None}
    return {"stage": doc["stage"], "view": doc["view"], "seconds": round(now - doc["since"], 1)}
