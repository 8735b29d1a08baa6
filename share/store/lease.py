"""Leases: short locks on an id in a MetaStore, renewed in the background while held.

A holder takes the lease for a few seconds (LEASE_SECONDS) and one renewer thread per process
extends every lease the process holds, so a long upload keeps its lease while a holder that is
killed (kill -9, a lost machine) frees it within LEASE_SECONDS. Under gevent the renewer is a
greenlet (threading is patched in the worker before it starts). Used for a profile's uploads,
deletes and purges; any "done once" work can hold a lease on a key of its own.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import ShareError
from .meta import MetaStore

LEASE_SECONDS = 3.0  # a dead holder's lease lapses after this
RENEW_EVERY = 1.0  # the renewer extends held leases this often
WAIT_SECONDS = 15.0  # how long a taker waits for a held lease before a 503
WANTED = ":wanted"  # the key a taker marks while it waits (Leases.wanted): the lease's, and this


@dataclass
class Lease:
    key: str
    token: str
    seconds: float
    renewed_at: float = field(default_factory=time.monotonic)
    lost: bool = False  # renewal found it taken over

    def held(self) -> bool:
        """Whether it is surely still ours: not taken over, and renewed within its length
        (a renewer cut off from the store may have let it lapse)."""
        return not self.lost and time.monotonic() - self.renewed_at < self.seconds


class Busy(ShareError):
    """The lease stayed taken for the whole wait."""

    code = 503
    retry_after = 2


class Leases:
    """Take, renew and give back leases on keys of one MetaStore."""

    def __init__(
        self,
        meta: MetaStore,
        seconds: float = LEASE_SECONDS,
        wait: float = WAIT_SECONDS,
        renew_every: float = RENEW_EVERY,
    ) -> None:
        self.meta = meta
        self.seconds = seconds
        self.wait = wait
        self.renew_every = renew_every
        self._held: dict[str, Lease] = {}
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._pid = 0

    @contextmanager
    def hold(
        self, key: str, label: str | None = None, wait: float | None = None, want: bool = True
    ) -> Iterator[Lease]:
        """Hold key's lease for the block; Busy (503) if it stays taken for `wait` seconds
        (default: the Leases' own; its message names `label`, else the key). While it waits, a
        taker that `want`s it says so to the holder (wanted()); background work does not."""
        lease = Lease(key, secrets.token_hex(8), self.seconds)
        waits = self.wait if wait is None else wait
        deadline = time.monotonic() + waits
        pause, marked = 0.002, False
        try:
            while not self.meta.try_lock(key, lease.token, self.seconds):
                if want and not marked:  # or another taker's mark stands: tried again next time
                    marked = self.meta.try_lock(key + WANTED, lease.token, waits + self.seconds)
                if time.monotonic() > deadline:
                    raise Busy(f"{label or key} is busy; try again")
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        finally:
            if marked:
                self.meta.unlock(key + WANTED, lease.token)
        lease.renewed_at = time.monotonic()
        with self._lock:
            self._held[lease.token] = lease
        self._ensure_renewer()
        try:
            yield lease
        finally:
            with self._lock:
                self._held.pop(lease.token, None)
            self.meta.unlock(key, lease.token)

    def wanted(self, lease: Lease) -> bool:
        """Whether a taker waits for the lease now (marked in the store, so on any instance):
        a holder doing background work meanwhile then does it as if someone waited for it,
        as someone does (share.compute.merges: the warm-up's merges of a collection's blocks,
        which views that need the same block waited behind for seconds)."""
        probe = secrets.token_hex(8)
        if not self.meta.try_lock(lease.key + WANTED, probe, self.seconds):
            return True
        self.meta.unlock(lease.key + WANTED, probe)
        return False

    def _ensure_renewer(self) -> None:
        if self._renewer is not None and self._pid == os.getpid() and self._renewer.is_alive():
            return
        with self._lock:
            if self._renewer is None or self._pid != os.getpid() or not self._renewer.is_alive():
                self._pid = os.getpid()
                self._renewer = threading.Thread(
                    target=self._renew_forever, name="share-lease-renewer", daemon=True
                )
                self._renewer.start()

    def _renew_forever(self) -> None:
        while True:
            time.sleep(self.renew_every)
            with self._lock:
                held = list(self._held.values())
            for lease in held:
                started = time.monotonic()
                try:
                    if self.meta.renew_lock(lease.key, lease.token, self.seconds):
                        lease.renewed_at = started
                    else:
                        lease.lost = True
                except Exception:  # noqa: BLE001 - the store is down: the holder will find out
                    pass
