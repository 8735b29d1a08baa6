"""A collection's warm-up: after a burst of adds, off the request path, its members' stacks
are numbered in this instance's compute process for its sums (share.compute.sums), so that a
range's flame graph and top table find them numbered: the summed top table of all its members,
in the background. A collection past windows.MOST_MEMBERS members of a kind is warmed as
before, with blocks: those of its default view built (or extended with the new members), the
views its page asks for first precomputed (share.compute.precompute), and the blocks of the
windows that filled built (Blocks.fill); what the merges superseded goes after its grace. Not
at all with SHARE_PRECOMPUTE=off.

One warm-up of a collection runs at a time on each instance, and at most one per WARM_DELAY,
across its web workers (a lease in the metadata store, named by the instance's compute
directory): each web worker that took an add used to run its own, so on the balanced pair a
fleet's collection was extended four times as often, each time merging its full-size profile
again (bench/fleet.py); and each instance numbers stacks in its own processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import socket
import threading
import time
from typing import Any

from ..analysis.views import options as view_options
from . import selection as sel
from . import windows

WARM_DELAY = 2.0  # seconds a warm-up waits for more adds, so a burst of adds is one warm-up
WARM_HOLD = 120.0  # the most a warm-up's lease is held, should its process die during it


class Warming:
    """The warm-ups this process runs, per collection (a flag set while one runs asks for
    one more)."""

    def __init__(self, collections: Any) -> None:  # service.Collections (which imports this)
        self.collections = collections
        self.share = collections.share
        self._warming: dict[str, bool] = {}
        self._sweeps: dict[str, float] = {}  # collection -> when its delayed sweep runs
        self._lock = threading.Lock()
        self.runs = 0  # warm-ups this process ran (read by tests)

    def later(self, cid: str) -> None:
        """Warm the collection up soon (once for a burst of adds), off the caller's path."""
        if not self.share.precompute.enabled:
            return
        with self._lock:
            if cid in self._warming:
                self._warming[cid] = True
                return
            self._warming[cid] = False
        threading.Thread(target=self._warm, args=(cid,), daemon=True).start()

    def _warm(self, cid: str) -> None:
        while True:
            time.sleep(WARM_DELAY)
            token = secrets.token_hex(8)
            if self._turn(cid, token):
                try:
                    self._once(cid)
                    self.runs += 1
                finally:  # the next warm-up of the collection, anywhere, WARM_DELAY from now
                    with contextlib.suppress(Exception):
                        self.share.meta.renew_lock(self._key(cid), token, WARM_DELAY)
            else:  # another worker's warm-up runs, or ran just now: this one's adds come next
                with self._lock:
                    self._warming[cid] = True
            with self._lock:
                if not self._warming.get(cid):
                    self._warming.pop(cid, None)
                    break
                self._warming[cid] = False
        self._sweep_later(cid)

    def _key(self, cid: str) -> str:
        """The lease of the collection's warm-up on this instance: one per instance, as each
        numbers the members' stacks in its own compute processes (share.compute.sums)."""
        instance = hashlib.sha256(f"{socket.gethostname()} {self.share.compute.directory}".encode())
        return f"collection:{cid}:warm-up:{instance.hexdigest()[:12]}"

    def _turn(self, cid: str, token: str) -> bool:
        """Whether this process warms the collection now (its lease: held while the warm-up
        runs, then left to lapse WARM_DELAY later)."""
        try:
            return bool(self.share.meta.try_lock(self._key(cid), token, WARM_HOLD))
        except Exception:  # noqa: BLE001 - a store that fails: the warm-up fails as it would
            return True

    def _once(self, cid: str) -> None:
        with contextlib.suppress(Exception), self.share.merges.background():
            self._merge(cid)  # a warm-up that fails leaves the work to a view

    def _merge(self, cid: str) -> None:
        c = self.collections.load(cid)
        members = self.collections.members(c, sel.Selection())
        for kind in sorted({m.kind for m in members}):
            if sum(m.kind == kind for m in members) <= windows.MOST_MEMBERS:
                everything = sel.Selection(kind=kind)
                pid, plan = self.collections.merged(c, everything, kind, False, merge=False)
                if pid is None and plan.parts:
                    self._number(cid, plan.parts)
                continue
            pid, plan = self.collections.refreshed(c, kind)  # a collection past MOST_MEMBERS
            if pid is not None and not plan.pending:  # the page's first views, as after upload
                r = self.share.record(pid)
                self.share.precompute.later(pid, r.sample_types, r.default_sample_type)
            self.collections.blocks.fill(c, kind, [m for m in members if m.kind == kind])
        self.collections.blocks.sweep(cid)  # what the merges above superseded before

    def _number(self, cid: str, parts: list[Any]) -> None:
        """The summed top table of the collection's members of a kind, all of them, in the
        background on this instance's process for the collection's sums: its members' stacks
        numbered as they arrive, not by the first view of a range (share.compute.sums). The
        top table: its layout costs least."""
        r = self.share.record(next(windows.leaves(parts)))
        types = [(t, u) for t, u in r.sample_types]
        opts = view_options.parse("top", {}, types, r.default_sample_type)
        title = f"collection {cid}"
        self.share.views.warm_summed(tuple(parts), "top", opts, title, cid)

    def _sweep_later(self, cid: str) -> None:
        """Once the adds stop, what the last warm-ups superseded goes after its grace too:
        one sweep per collection, a grace after its last warm-up."""
        with self._lock:
            pending = cid in self._sweeps
            self._sweeps[cid] = time.monotonic() + self.collections.blocks.grace + 1
        if not pending:
            threading.Thread(target=self._sweep, args=(cid,), daemon=True).start()

    def _sweep(self, cid: str) -> None:
        while True:
            with self._lock:
                wait = self._sweeps[cid] - time.monotonic()
                if wait <= 0:
                    del self._sweeps[cid]
                    break
            time.sleep(wait)
        with contextlib.suppress(Exception):  # left to expire with its hour
            self.collections.blocks.sweep(cid)
