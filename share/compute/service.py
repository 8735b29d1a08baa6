"""ViewService: a view of stored profiles computed once, in the compute tier, then cached.

Concurrent requests for one view wait for a single computation (once.Once); the result is kept
in the metadata store's bounded view cache; a view that ran out of time or memory answers its
failure for SHARE_ANALYSIS_FAILURE_SECONDS without being tried again; a slow one publishes what
it is doing (progress). The core checks that the profiles are live before asking.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from .. import metrics
from ..analysis.views import options as view_options
from ..analysis.views import views
from ..errors import ShareError
from . import progress as view_progress
from .once import Once
from .pool import AnalysisFailed, ComputePool, job_settings
from .progress import Progress

AFFINITY_KEY = "compute-slot"  # in the view cache: where the profile was validated
# Followers of a view wait this much longer than the analysis may take (queueing, storing).
WAIT_MARGIN_SECONDS = 10


class ViewService:
    """Views of stored profiles, on one metadata store and one set of compute processes."""

    def __init__(
        self,
        meta: Any,
        compute: ComputePool,
        settings: dict[str, Any],
        clock: Callable[[], float],
    ) -> None:
        self.meta = meta
        self.compute = compute
        self.settings = settings
        self.clock = clock
        self.once = Once(meta)
        self._job = job_settings(settings)

    @staticmethod
    def key(name: str, options: dict[str, Any], bases: tuple[str, ...]) -> str:
        return f"{view_options.key(name, options)}:{'+'.join(bases)}:{views.VERSION}"

    def cached(
        self, pid: str, name: str, options: dict[str, Any], bases: tuple[str, ...] = ()
    ) -> bytes | None:
        """The view if it is computed already, else None (never computing it)."""
        return self.meta.view_get(pid, self.key(name, options, bases))

    def remember_slot(self, pid: str, slot: int) -> None:
        """The compute process that validated the profile holds it decoded: its views go there."""
        self.meta.view_put(pid, AFFINITY_KEY, str(slot).encode())

    def _slot(self, pid: str) -> int | None:
        slot = self.meta.view_get(pid, AFFINITY_KEY)
        if slot is None or not slot.isdigit() or int(slot) >= self.compute.size:
            return None
        return int(slot)

    def view(
        self, pid: str, name: str, options: dict[str, Any], bases: tuple[str, ...] = ()
    ) -> bytes:
        """A view of a profile (analysis.views), gzip-compressed. Options are canonical
        (analysis.options.parse); bases are the other profiles a diff view reads."""
        key = self.key(name, options, bases)
        failed_key = "failed:" + key
        forget = self.settings["ANALYSIS_FAILURE_SECONDS"]

        def cached() -> bytes | None:
            data = self.meta.view_get(pid, key)
            if data is not None:
                return data
            failure = self.meta.view_get(pid, failed_key)
            if failure is not None:
                known = json.loads(failure)
                age = self.clock() - known["at"]
                if age < forget:
                    raise ShareError(
                        f"{known['message']} (when tried {age:.0f} s ago; not tried again "
                        f"for {forget} s)",
                        known["code"],
                    )
            return None

        def compute() -> bytes:
            job = {"op": "view", "pid": pid, "bases": list(bases), "name": name,
                   "options": options, **self._job}  # fmt: skip
            try:
                with Progress(self.meta, pid, name) as stages, metrics.analysis(name):
                    slot = self._slot(pid)
                    data = self.compute.run(job, profile=pid, slot=slot, progress=stages)
            except AnalysisFailed as exc:
                if exc.kind != "died":  # a killed process may do better on retry
                    failure = {"at": self.clock(), "code": exc.code, "message": exc.message}
                    self.meta.view_put(pid, failed_key, json.dumps(failure).encode())
                raise
            self.meta.view_put(pid, key, data)
            return data

        lease = f"{pid}:view:{hashlib.sha256(key.encode()).hexdigest()[:16]}"
        wait = self.compute.seconds + WAIT_MARGIN_SECONDS
        computed_before = self.once.computed
        data = self.once.run(f"{pid}:{key}", lease, cached, compute, wait)
        metrics.cache(hit=self.once.computed == computed_before)
        return data

    def progress(self, pid: str) -> dict[str, Any]:
        """What a slow first view of the profile is doing now (stage None: nothing)."""
        return view_progress.read(self.meta, pid, self.compute.seconds + WAIT_MARGIN_SECONDS)
