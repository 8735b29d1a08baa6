"""Once: concurrent requests for one result wait for a single computation.

Within a process, followers wait on the leader's event. Across processes (the workers of an
instance) and instances (on Redis) the leader holds a lease in the metadata store, short and
renewed while it computes, so a holder that crashes frees it within seconds; followers poll
the cache for the result, and take over when the lease lapses without one.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ShareError

LEASE_SECONDS = 6.0  # a crashed leader's lease lapses after this
# Followers look for the result this often (doubling up to): a view a precompute is computing
# when its page asks is seen within 0.1 s of being stored (one cheap GET a poll).
POLL_SECONDS = (0.01, 0.1)


@dataclass
class _Flight:
    done: threading.Event = field(default_factory=threading.Event)
    value: Any = None
    error: BaseException | None = None


class Lease:
    """A lease on name in the metadata store, renewed by a thread until released."""

    def __init__(self, meta: Any, name: str, seconds: float = LEASE_SECONDS) -> None:
        self.meta, self.name, self.seconds = meta, name, seconds
        self.token = secrets.token_hex(8)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> bool:
        if not self.meta.try_lock(self.name, self.token, self.seconds):
            return False
        self._thread = threading.Thread(target=self._renew, daemon=True, name="lease")
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                if not self.meta.renew_lock(self.name, self.token, self.seconds):
                    return
            except Exception:  # the store is failing: the lease lapses, as after a crash
                return

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.meta.unlock(self.name, self.token)


class Once:
    """Single flight per key: in this process, and through leases in the metadata store."""

    def __init__(self, meta: Any) -> None:
        self.meta = meta
        self._flights: dict[str, _Flight] = {}
        self._guard = threading.Lock()
        self.computed = 0  # computations this process ran (read by tests)

    def run(
        self,
        key: str,
        lease_name: str,
        cached: Callable[[], Any | None],
        compute: Callable[[], Any],
        wait_seconds: float,
    ) -> Any:
        """cached() if it has the value, else compute() once among all who ask for key."""
        with self._guard:
            flight = self._flights.get(key)
            leader = flight is None
            if leader:
                flight = self._flights[key] = _Flight()
        assert flight is not None
        if not leader:
            if not flight.done.wait(wait_seconds):
                raise ShareError("the analysis is taking too long; try again", 503)
            if flight.error is not None:
                raise flight.error
            if flight.value is None:  # a try_run that left it to another: lead now
                return self.run(key, lease_name, cached, compute, wait_seconds)
            return flight.value
        try:
            flight.value = self._lead(lease_name, cached, compute, wait_seconds)
            return flight.value
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            flight.done.set()
            with self._guard:
                self._flights.pop(key, None)

    def try_run(
        self,
        key: str,
        lease_name: str,
        cached: Callable[[], Any | None],
        compute: Callable[[], Any],
    ) -> bool:
        """compute() unless the value is cached or someone, here or elsewhere, is computing it;
        never waits (a precompute gives way). True when it computed."""
        with self._guard:
            if key in self._flights:
                return False
            flight = self._flights[key] = _Flight()
        try:
            flight.value = cached()
            if flight.value is not None:
                return False
            lease = Lease(self.meta, lease_name)
            if not lease.acquire():
                return False
            try:
                flight.value = cached()
                if flight.value is not None:
                    return False
                self.computed += 1
                flight.value = compute()
                return True
            finally:
                lease.release()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            flight.done.set()
            with self._guard:
                self._flights.pop(key, None)

    def _lead(
        self,
        lease_name: str,
        cached: Callable[[], Any | None],
        compute: Callable[[], Any],
        wait_seconds: float,
    ) -> Any:
        deadline = time.monotonic() + wait_seconds
        pause = POLL_SECONDS[0]
        while True:
            value = cached()
            if value is not None:
                return value
            lease = Lease(self.meta, lease_name)
            if lease.acquire():
                try:
                    value = cached()  # computed while we waited for the lease
                    if value is not None:
                        return value
                    self.computed += 1
                    return compute()
                finally:
                    lease.release()
            if time.monotonic() > deadline:
                raise ShareError("the analysis is taking too long; try again", 503)
            time.sleep(pause)
            pause = min(pause * 2, POLL_SECONDS[1])
