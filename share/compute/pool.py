"""ComputePool: the compute processes of one app instance, and the one way to reach them.

run(job, profile=pid) sends the job to a process — the one that has the profile warm, else an
idle one — and waits at most SHARE_ANALYSIS_SECONDS for the answer. Past that, or when the
process dies or runs out of memory, the process is killed and a fresh one takes its slot, and
the caller gets a ShareError saying what happened. Processes start on first use, so an app
that never analyses (a CLI command, gunicorn's master) starts none.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..errors import ShareError
from . import protocol

AFFINITY_ENTRIES = 10_000  # profiles whose process we remember
_PROCESS_SETTINGS = ("ANALYSIS_MEMORY", "ANALYSIS_CACHE_BYTES")


class AnalysisFailed(ShareError):
    """A job that ran out of time or memory, or whose process died: a 503 (422 at upload)."""

    code = 503

    def __init__(self, message: str, code: int | None = None, *, kind: str) -> None:
        super().__init__(message, code)
        self.kind = kind  # "time", "memory" or "died"


class _Slot:
    """One compute process (started when first needed) and the lock of whoever talks to it."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.warm: frozenset[str] = frozenset()
        self.started = 0  # processes started in this slot, replacements included

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()
        if self.sock is not None:
            self.sock.close()
        self.proc, self.sock, self.warm = None, None, frozenset()


ELEMENT_LIMITS = ("SAMPLES", "LOCATIONS", "FUNCTIONS", "MAPPINGS", "STRINGS", "LABELS", "FRAMES")


def job_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """What a job needs of an app's settings: its blob store and its limits. Jobs carry them,
    so one pool can serve apps on different stores (tests do)."""
    return {
        "blobs": settings["BLOBS"],
        "max_profile_bytes": settings["MAX_PROFILE_BYTES"],
        "limits": {k.lower(): settings[f"MAX_{k}"] for k in ELEMENT_LIMITS},
    }


class ComputePool:
    """SHARE_ANALYSIS_WORKERS compute processes (default: one per CPU)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.size = int(settings.get("ANALYSIS_WORKERS") or os.cpu_count() or 1)
        self.seconds = float(settings["ANALYSIS_SECONDS"])
        self.slots = [_Slot(i) for i in range(self.size)]
        self._affinity: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._guard = threading.Lock()
        self._finalizer = weakref.finalize(self, ComputePool._kill_all, self.slots)

    # --- processes ---------------------------------------------------------------------
    @staticmethod
    def _kill_all(slots: list[_Slot]) -> None:
        for slot in slots:
            slot.kill()

    def close(self) -> None:
        """Stop every compute process (they are started again when needed)."""
        for slot in self.slots:
            with slot.lock:
                slot.kill()

    def _start(self, slot: _Slot) -> None:
        parent, child = socket.socketpair()
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MALLOC_ARENA_MAX="2")  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "share.compute.worker", str(child.fileno())],
            pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        child.close()
        parent.settimeout(60)  # importing numpy on a busy machine
        try:
            protocol.send(parent, {"settings": {k: self.settings[k] for k in _PROCESS_SETTINGS}})
            protocol.recv(parent)
        except (OSError, protocol.Closed) as exc:
            proc.kill()
            proc.wait()
            parent.close()
            raise ShareError(f"a compute process could not start ({exc})", 503) from None
        slot.proc, slot.sock = proc, parent
        slot.started += 1

    def pids(self) -> list[int | None]:
        """The OS process id in each slot (None: not started)."""
        return [s.proc.pid if s.proc is not None else None for s in self.slots]

    # --- routing -----------------------------------------------------------------------
    def _choose(self, profile: str | None) -> _Slot:
        """The slot with the profile warm, else the one that had it, else an idle one."""
        with self._guard:
            if profile is not None:
                for slot in self.slots:
                    if profile in slot.warm:
                        return slot
                index = self._affinity.get(profile)
                if index is not None:
                    return self.slots[index]
            idle = [s for s in self.slots if not s.lock.locked()]
            slot = idle[0] if idle else self.slots[hash(profile) % self.size]
            if profile is not None:
                self._affinity[profile] = slot.index
                while len(self._affinity) > AFFINITY_ENTRIES:
                    self._affinity.popitem(last=False)
            return slot

    # --- jobs --------------------------------------------------------------------------
    def run(
        self,
        job: dict[str, Any],
        *,
        profile: str | None = None,
        seconds: float | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> Any:
        """The job's answer; ShareError from the job itself, AnalysisFailed when the process
        ran out of time or memory or died (it is then replaced)."""
        limit = self.seconds if seconds is None else seconds
        deadline = time.monotonic() + limit
        slot = self._choose(profile)
        if not slot.lock.acquire(timeout=limit):
            raise ShareError("every compute process is busy; try again in a moment", 503)
        try:
            if slot.proc is None or slot.proc.poll() is not None:
                slot.kill()
                self._start(slot)
            assert slot.sock is not None
            return self._exchange(slot, job, deadline, limit, progress)
        finally:
            slot.lock.release()

    def _exchange(
        self,
        slot: _Slot,
        job: dict[str, Any],
        deadline: float,
        limit: float,
        progress: Callable[[str], None] | None,
    ) -> Any:
        sock = slot.sock
        assert sock is not None
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            protocol.send(sock, job)
            while True:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                reply = protocol.recv(sock)
                if "progress" in reply:
                    if progress is not None:
                        progress(reply["progress"])
                    continue
                break
        except TimeoutError:
            slot.kill()
            raise AnalysisFailed(
                f"the analysis took longer than {limit:g} s (SHARE_ANALYSIS_SECONDS) and was "
                "stopped",
                kind="time",
            ) from None
        except (protocol.Closed, OSError):
            status = slot.proc.wait() if slot.proc is not None else None
            slot.kill()
            how = f"killed by signal {-status}" if status and status < 0 else f"status {status}"
            if status == -signal.SIGKILL:
                how += ", perhaps out of memory"
            raise AnalysisFailed(
                f"the compute process died during the analysis ({how}); try again",
                kind="died",
            ) from None
        if "memory" in reply:
            slot.kill()
            memory = self.settings["ANALYSIS_MEMORY"] >> 20
            raise AnalysisFailed(
                f"the analysis needs more memory than the {memory} MiB a compute process may "
                "use (SHARE_ANALYSIS_MEMORY)",
                kind="memory",
            )
        slot.warm = frozenset(reply.get("warm", ()))
        if "error" in reply:
            code, message = reply["error"]
            raise ShareError(message, code)
        return reply["ok"]
