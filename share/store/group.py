"""GroupCommit: concurrent record inserts of one process share one transaction, so one fsync.

SQLite's commit waits for fsync (a few ms on common disks) and, under gevent, holds the whole
worker while it does; one commit per upload made uploads cost that much each. Callers queue
their record; the first becomes the leader, lets the others that are ready queue theirs (one
switch), commits the batch and answers each; whoever is queued meanwhile is handed the lead.
Nobody returns before the commit that holds their record has been made durable. Under gevent
the write runs in a native thread of gevent's pool, so the worker's other requests go on while
the disk syncs (a slow fsync on a busy disk froze every request of the worker, for seconds).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


def offload(fn: Callable[[list[T]], list[bool]], items: list[T]) -> list[bool]:
    """fn(items) in a native thread when gevent has patched threading, else right here."""
    try:
        from gevent import monkey
    except ImportError:
        return fn(items)
    if not monkey.is_module_patched("threading"):
        return fn(items)
    import gevent

    return gevent.get_hub().threadpool.apply(fn, (items,))


class _Slot(Generic[T]):
    __slots__ = ("item", "ready", "lead", "done", "result", "error")

    def __init__(self, item: T) -> None:
        self.item = item
        self.ready = threading.Event()  # done, or handed the lead
        self.lead = False
        self.done = False
        self.result = False
        self.error: BaseException | None = None


class GroupCommit(Generic[T]):
    """commit(item) -> that item's result of `write(batch)`, batched with concurrent callers."""

    def __init__(self, write: Callable[[list[T]], list[bool]]) -> None:
        self.write = write
        self._lock = threading.Lock()
        self._pending: list[_Slot[T]] = []
        self._leading = False
        self._pid = os.getpid()

    def commit(self, item: T) -> bool:
        slot = _Slot(item)
        if self._pid != os.getpid():  # forked, maybe mid-commit: the parent's batch is not ours
            self._lock, self._pending, self._leading = threading.Lock(), [], False
            self._pid = os.getpid()
        with self._lock:
            self._pending.append(slot)
            if not self._leading:
                self._leading = slot.lead = True
        while not slot.done:
            if slot.lead:
                self._lead()
            else:
                slot.ready.wait()
        if slot.error is not None:
            raise slot.error
        return slot.result

    def _lead(self) -> None:
        time.sleep(0)  # let callers that are ready queue theirs: they join this commit
        with self._lock:
            batch, self._pending = self._pending, []
        try:
            results = offload(self.write, [s.item for s in batch])
        except BaseException as exc:  # noqa: BLE001 - every caller of the batch gets it
            for s in batch:
                s.error = exc
        else:
            for s, result in zip(batch, results, strict=True):
                s.result = result
        for s in batch:
            s.done = True
            s.lead = False
            s.ready.set()
        with self._lock:
            if self._pending:
                successor = self._pending[0]
                successor.lead = True
                successor.ready.set()
            else:
                self._leading = False
