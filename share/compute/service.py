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
from .once import Lease, Once
from .pool import AnalysisFailed, ComputePool, job_settings
from .progress import Progress
from .sums import BUDGET_SHARE, Busy, leaves, parts_text

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
        """The compute process that validated the profile holds it decoded: its views go there,
        if it is an analysis process. An ingest or merge process (a slot past them) answers no
        views: nothing is remembered, and the views go to the profile's own analysis process
        (slot_of), precompute included."""
        if slot < self.compute.size:
            self.meta.view_put(pid, AFFINITY_KEY, str(slot).encode())

    def _slot(self, pid: str) -> int | None:
        """The analysis process that validated pid, if remembered (ingest and merge slots never
        are; one remembered by an instance with more analysis processes is out of range here)."""
        slot = self.meta.view_get(pid, AFFINITY_KEY)
        if slot is None or not slot.isdigit() or int(slot) >= self.compute.size:
            return None
        return int(slot)

    def view(
        self, pid: str, name: str, options: dict[str, Any], bases: tuple[str, ...] = ()
    ) -> bytes:
        """A view of a profile (analysis.views), gzip-compressed. Options are canonical
        (analysis.options.parse); bases are the other profiles a diff view reads."""
        return self._once(_Flight(self, pid, name, options, bases), self._slot(pid))

    def summed(
        self,
        parts: tuple[Any, ...],
        name: str,
        options: dict[str, Any],
        comment: str,
        route: str = "",
    ) -> bytes:
        """View `name` (views.summed_viewable) of the merge of `parts` (stored profile ids,
        and windows of them: sums.py), computed from their stacks summed without storing the
        merge, once, then cached under the first profile (so it never outlives it) by the
        digest of all. `route` (a collection) names the stack table they are numbered in: its
        sums go to one process (ComputePool.sum_slot), where that table is kept."""
        first = next(leaves(list(parts)))
        flight = _Flight(self, first, name, options, (), parts=parts, comment=comment)
        flight.job["route"] = route
        return self._once(flight, self.compute.sum_slot(route or flight.parts_key))

    def warm_summed(
        self,
        parts: tuple[Any, ...],
        name: str,
        options: dict[str, Any],
        comment: str,
        route: str,
    ) -> bool:
        """summed() for a collection's warm-up, unless cached or being computed: on the sum's
        process, in jobs that number members for WARM_BUDGET seconds each (sums.py), taken in
        turn with views, so that a view waits behind one of them at most. Not reserved as
        other background work is (an idle process): on the fleet bench the merge process was
        seldom idle, the warm-up fell behind, and views numbered two thirds of the members
        themselves. True when it computed it."""
        first = next(leaves(list(parts)))
        flight = _Flight(self, first, name, options, (), parts=parts, comment=comment)
        flight.job.update(route=route, budget=WARM_BUDGET)
        lease = Lease(self.meta, flight.lease)
        if flight.cached() is not None or not lease.acquire():
            return False
        slot = self.compute.sum_slot(route)
        try:
            for _ in range(WARM_JOBS):
                try:  # in turn with views: a reservation waited for an idle process in vain
                    flight.compute(lambda job, stages: self.compute.run(job, slot=slot))
                    return True
                except Busy:  # numbered for its budget: the next job goes on
                    continue
            return False
        finally:
            lease.release()

    def _once(self, flight: _Flight, slot: int | None) -> bytes:
        """The flight's view: cached, or computed once across every instance."""

        def compute() -> bytes:
            return flight.compute(
                lambda job, stages: self.compute.run(
                    job, profile=flight.pid, slot=slot, progress=stages
                )
            )

        wait = self.compute.seconds + WAIT_MARGIN_SECONDS
        computed_before = self.once.computed
        data = self.once.run(flight.once_key, flight.lease, flight.cached, compute, wait)
        metrics.cache(hit=self.once.computed == computed_before)
        return data

    def warm(
        self, pid: str, name: str, options: dict[str, Any], wait: float, slot: int | None = None
    ) -> bool:
        """warm_first() of one view: True when it computed it."""
        return self.warm_first(pid, [(name, options)], wait, slot) == 1

    def warm_first(
        self,
        pid: str,
        wanted: list[tuple[str, dict[str, Any]]],
        wait: float,
        slot: int | None = None,
    ) -> int:
        """Compute views nobody has asked for yet (share.compute.precompute), in the
        background, in order: on an idle compute process (`slot`, the ingest process that has
        just validated the profile and holds it decoded; else the profile's analysis process),
        each only if it is neither cached nor being computed. The leases of all are taken
        first, so that a page that asks for its second view while the first is computed waits
        for it (one table lookup away) instead of computing it cold elsewhere. Waits at most
        `wait` seconds for the process to be free of work someone waits for, per view; gives
        the others up when it was not. How many it computed."""
        flights = [_Flight(self, pid, name, options, ()) for name, options in wanted]
        held: list[tuple[_Flight, Lease]] = []
        try:
            for flight in flights:
                lease = Lease(self.meta, flight.lease)
                if flight.cached() is None and lease.acquire():
                    held.append((flight, lease))
            slot = self._slot(pid) if slot is None else slot
            slot = self.compute.slot_of(pid) if slot is None else slot
            computed = 0
            for flight, _ in held:
                with self.compute.reserve(slot, wait) as rs:
                    if rs is None:
                        break
                    if flight.cached() is None:  # computed before the lease was taken
                        flight.compute(rs.run)
                        computed += 1
            return computed
        finally:
            for _, lease in held:
                lease.release()

    def progress(self, pid: str) -> dict[str, Any]:
        """What a slow first view of the profile is doing now (stage None: nothing)."""
        return view_progress.read(self.meta, pid, self.compute.seconds + WAIT_MARGIN_SECONDS)


WARM_BUDGET = 0.1  # seconds a warm-up's sum numbers members in one job (warm_summed)
WARM_JOBS = 200  # its jobs at most, one after another


class _Flight:
    """One view's computation: its cache keys, its lease, and how a failure is remembered."""

    def __init__(
        self,
        service: ViewService,
        pid: str,
        name: str,
        options: dict[str, Any],
        bases: tuple[str, ...],
        parts: tuple[Any, ...] = (),
        comment: str = "",
    ) -> None:
        self.service, self.pid, self.name = service, pid, name
        self.key = service.key(name, options, bases)
        self.parts_key = ""
        if parts:  # a sum of parts: cached under the first, by the digest of all
            self.parts_key = hashlib.sha256(parts_text(list(parts)).encode()).hexdigest()[:32]
            self.key = f"summed:{self.parts_key}:{self.key}"
        self.failed_key = "failed:" + self.key
        self.once_key = f"{pid}:{self.key}"
        self.lease = f"{pid}:view:{hashlib.sha256(self.key.encode()).hexdigest()[:16]}"
        self.job = {"op": "view", "pid": pid, "bases": list(bases), "name": name,
                    "options": options, **service._job}  # fmt: skip
        if parts:  # numbering members stops at its budget, short of the limit (sums.py)
            budget = service.compute.seconds * BUDGET_SHARE
            self.job.update(op="summed", parts=list(parts), comment=comment, budget=budget)

    def cached(self) -> bytes | None:
        """The cached view; a ShareError while a recent failure of it is remembered."""
        meta, forget = self.service.meta, self.service.settings["ANALYSIS_FAILURE_SECONDS"]
        data = meta.view_get(self.pid, self.key)
        if data is not None:
            return data
        failure = meta.view_get(self.pid, self.failed_key)
        if failure is not None:
            known = json.loads(failure)
            age = self.service.clock() - known["at"]
            if age < forget:
                raise ShareError(
                    f"{known['message']} (when tried {age:.0f} s ago; not tried again "
                    f"for {forget} s)",
                    known["code"],
                )
        return None

    def compute(self, run: Callable[[dict[str, Any], Progress], bytes]) -> bytes:
        """Run the job with `run` (a pool's or a reservation's), cache what it gives."""
        meta = self.service.meta
        try:
            with Progress(meta, self.pid, self.name) as stages, metrics.analysis(self.name):
                data = run(self.job, stages)
        except AnalysisFailed as exc:
            if exc.kind != "died":  # a killed process may do better on retry
                failure = {"at": self.service.clock(), "code": exc.code, "message": exc.message}
                meta.view_put(self.pid, self.failed_key, json.dumps(failure).encode())
            raise
        meta.view_put(self.pid, self.key, data)
        return data
