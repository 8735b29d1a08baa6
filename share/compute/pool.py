"""The ComputePool every web worker uses to reach its instance's compute processes (started
and kept running by share.compute.supervisor).

`pprof-share serve` starts the Supervisor in gunicorn's master, before it forks the workers, and
names its directory in $PPROF_SHARE_COMPUTE_DIR: every worker of the instance then reaches the
same processes, so a profile is warm for all of them. An app without one (the Flask test client,
another WSGI server) starts a private Supervisor on first use.

Three kinds of process run the same program (share.compute.worker): SHARE_ANALYSIS_WORKERS
analysis processes (slots 0 to n-1), SHARE_INGEST_WORKERS ingest processes (the slots after
them) and SHARE_MERGE_WORKERS merge processes (the last slots). Each listens on
<directory>/compute-<slot>.sock. An upload's validation goes to the ingest processes in turn
(`ingest_slot`), so it never waits behind an analysis or a merge; a merge (share.compute.merges:
/api/v1/merge, a collection's blocks and selections) to the merge processes in turn
(`merge_slot`), so a view never waits behind one, and the validation of a merge the server
stores (Share.upload(derived=True)) to the merge process that made it (`made_slot`); every
other job goes to an analysis process: a job about a profile to the one the profile's id hashes
to (`slot_of`) — the same from every worker — or to the one that validated it, when it did
(SHARE_INGEST_WORKERS=0, or SHARE_MERGE_WORKERS=0 for the server's merges) and holds it
decoded; with no process of a kind, its jobs go to the analysis processes in turn
(`next_slot`). An ingest process keeps its last uploads decoded only for their precompute: their
views someone waits for are answered by their analysis processes. A merge process keeps what it
decoded, as an analysis process does: a collection's next merge reads the blocks and members the
last one read or made.

The pool waits at most SHARE_ANALYSIS_SECONDS for a process to take the job and as long again
for the answer; past that, or when the process dies or runs out of memory, it is killed, the
Supervisor starts another in its place, and the caller gets a ShareError saying what happened.

Each process also listens on compute-<slot>.background.sock, for work nobody waits for (the
views precomputed after an upload, share.compute.precompute: on the process that validated it;
a collection's warm-up merges, share.compute.merges.Merges.background: on a merge process).
Between jobs a process takes a waiting connection of its main socket before any of the
background one, so a background job delays a view someone waits for by at most the one
background job it is running. A background caller first reserves the process (`reserve`): it
holds an idle process before it takes the view's lease, so a view that a teammate opens
meanwhile is never left waiting behind a queued one.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import ShareError
from . import protocol
from .sums import Busy
from .supervisor import (
    DIRECTORY_ENV,
    Supervisor,
    ingest_size,
    merge_size,
    pool_size,
    socket_path,
)

RESERVE_POLL_SECONDS = 0.1  # how often a reservation asks give_up() while it waits
ELEMENT_LIMITS = ("SAMPLES", "LOCATIONS", "FUNCTIONS", "MAPPINGS", "STRINGS", "LABELS", "FRAMES")


class AnalysisFailed(ShareError):
    """A job that ran out of time or memory, or whose process died: a 503 (422 at upload)."""

    code = 503

    def __init__(self, message: str, code: int | None = None, *, kind: str) -> None:
        super().__init__(message, code)
        self.kind = kind  # "time", "memory" or "died"


class _NotStarted(Exception):
    """The connection ended before a process took the job."""


def job_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """What a job needs of an app's settings: its blob store and its limits. Jobs carry them,
    so one set of processes serves apps on different stores (tests do)."""
    return {
        "blobs": settings["BLOBS"],
        "max_profile_bytes": settings["MAX_PROFILE_BYTES"],
        "limits": {k.lower(): settings[f"MAX_{k}"] for k in ELEMENT_LIMITS},
    }


def _spread(key: str, among: int) -> int:
    """One of `among` processes for key, the same in every worker of the instance."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % among


class ComputePool:
    """The way to the compute processes: those of the instance's Supervisor when
    $PPROF_SHARE_COMPUTE_DIR names it, else a private one started on first use."""

    def __init__(self, settings: dict[str, Any], directory: str | None = None) -> None:
        self.settings = settings
        self.seconds = float(settings["ANALYSIS_SECONDS"])
        self.size = pool_size(settings)  # analysis processes: slots 0 to size-1
        self.ingest_size = ingest_size(settings)  # ingest processes: the slots after them
        self.merge_size = merge_size(settings)  # merge processes: the last slots
        directory = directory or os.environ.get(DIRECTORY_ENV)
        self.supervisor = None if directory else Supervisor(settings)
        self._directory = directory
        self._turn = itertools.count()
        self._ingest_turn = itertools.count()
        self._merge_turn = itertools.count()
        self._made = threading.local()  # per thread (greenlet): where its last merge ran
        # as last reported, per slot
        slots = self.size + self.ingest_size + self.merge_size
        self.warm: list[frozenset[str]] = [frozenset()] * slots

    @property
    def directory(self) -> str:
        """The instance's socket directory, or the private Supervisor's."""
        if self._directory is not None:
            return self._directory
        assert self.supervisor is not None
        return self.supervisor.directory

    def close(self) -> None:
        """Stop a private Supervisor's processes (the instance's are the master's to stop)."""
        if self.supervisor is not None:
            self.supervisor.stop()

    def next_slot(self) -> int:
        """An analysis process in turn, for a job about no stored profile (a merge, without
        merge processes)."""
        return next(self._turn) % self.size

    def ingest_slot(self) -> int:
        """The process for an upload's validation: an ingest process in turn, never busy with
        an analysis or a merge; without ingest processes, an analysis process in turn."""
        if not self.ingest_size:
            return self.next_slot()
        return self.size + next(self._ingest_turn) % self.ingest_size

    def sum_slot(self, key: str) -> int:
        """The process for a sum of stored profiles' stack summaries (worker.summed): a merge
        process, chosen by key, where the blocks a collection's ranges sum were made and are
        kept decoded, and where the merges the sums replace ran, so that a profile's own
        views do not wait behind them; without merge processes, an analysis process by key."""
        if not self.merge_size:
            return self.slot_of(key)
        return self.size + self.ingest_size + _spread(key, self.merge_size)

    def merge_slot(self) -> int:
        """The process for a merge: a merge process in turn, so that no view waits behind a
        merge; without merge processes, an analysis process in turn. This thread's next
        made_slot() is this one."""
        if not self.merge_size:
            return self.next_slot()
        slot = self.size + self.ingest_size + next(self._merge_turn) % self.merge_size
        self._made.slot = slot
        return slot

    def made_slot(self) -> int:
        """The process for the validation of a merge the server stores (a collection's block
        or selection): the merge process this thread's last merge ran on, which then holds the
        result decoded for the collection's next merge (one that grows the block, or merges
        blocks into a larger one); without merge processes, an analysis process in turn, which
        holds it decoded for its views (ViewService.remember_slot)."""
        if not self.merge_size:
            return self.next_slot()
        slot: int | None = getattr(self._made, "slot", None)
        return self.merge_slot() if slot is None else slot

    def slot_of(self, profile: str) -> int:
        """The analysis process a profile's jobs go to: the same in every worker of the
        instance."""
        return _spread(profile, self.size)

    def run(
        self,
        job: dict[str, Any],
        *,
        profile: str | None = None,
        slot: int | None = None,
        seconds: float | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> Any:
        """The job's answer; ShareError from the job itself, AnalysisFailed when the process
        ran out of time or memory or died (it is then replaced). A job goes to `slot` if
        given, else to the profile's process, else to the next one in turn."""
        limit = self.seconds if seconds is None else seconds
        if slot is None:
            slot = self.slot_of(profile) if profile is not None else self.next_slot()
        if self.supervisor is not None:
            self.supervisor.start()
        deadline = time.monotonic() + limit
        while True:
            with self._connect(slot, deadline) as sock:
                try:
                    return self._exchange(sock, slot, job, limit, progress)
                except _NotStarted:
                    # The process ended while the job waited its turn (it ran out of memory,
                    # or another job of it was stopped): its replacement takes the job.
                    if time.monotonic() > deadline:
                        raise ShareError(
                            "no compute process is answering; try again", 503
                        ) from None
                    time.sleep(0.01)

    def _connect(self, slot: int, deadline: float, background: bool = False) -> socket.socket:
        """A connection to the slot's process, waiting while one (re)starts."""
        path = socket_path(self.directory, slot, background)
        pause = 0.005
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(path)
                return sock
            except (FileNotFoundError, ConnectionRefusedError):
                sock.close()
                if time.monotonic() > deadline:
                    raise ShareError("no compute process is answering; try again", 503) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.1)

    def _exchange(
        self,
        sock: socket.socket,
        slot: int,
        job: dict[str, Any],
        limit: float,
        progress: Callable[[str], None] | None,
    ) -> Any:
        try:
            sock.settimeout(limit)
            protocol.send(sock, job)
            worker_pid = protocol.recv(sock)["started"]  # queued until the process takes it
        except TimeoutError:
            raise ShareError("every compute process is busy; try again", 503) from None
        except (protocol.Closed, OSError):
            raise _NotStarted from None
        return self._answer(sock, slot, worker_pid, limit, progress)

    def _answer(
        self,
        sock: socket.socket,
        slot: int,
        worker_pid: int,
        limit: float,
        progress: Callable[[str], None] | None,
    ) -> Any:
        """The answer to the job a process has taken: its progress, then its value."""
        try:
            deadline = time.monotonic() + limit
            while True:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                reply = protocol.recv(sock)
                if "progress" not in reply:
                    break
                if progress is not None:
                    progress(reply["progress"])
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker_pid, signal.SIGKILL)
            raise AnalysisFailed(
                f"the analysis took longer than {limit:g} s (SHARE_ANALYSIS_SECONDS) and was "
                "stopped",
                kind="time",
            ) from None
        except (protocol.Closed, OSError):
            raise AnalysisFailed(
                "the compute process died during the analysis (killed, perhaps out of "
                "memory); try again",
                kind="died",
            ) from None
        if "memory" in reply:
            memory = self.settings["ANALYSIS_MEMORY"] >> 20
            raise AnalysisFailed(
                f"the analysis needs more memory than the {memory} MiB a compute process may "
                "use (SHARE_ANALYSIS_MEMORY)",
                kind="memory",
            )
        self.warm[slot] = frozenset(reply.get("warm", ()))
        if "error" in reply:
            code, message = reply["error"]
            if reply.get("again"):
                raise Busy(message, code, retry_after=1)
            raise ShareError(message, code)
        return reply["ok"]

    @contextlib.contextmanager
    def reserve(
        self, slot: int, wait: float, give_up: Callable[[], bool] | None = None
    ) -> Iterator[Reservation | None]:
        """The slot's process, idle and waiting for one background job (None: it did not take
        the reservation within `wait` seconds: busy with work someone waits for; or, asked
        every RESERVE_POLL_SECONDS meanwhile, give_up() said to stop waiting)."""
        if self.supervisor is not None:
            self.supervisor.start()
        deadline = time.monotonic() + wait
        try:
            sock = self._connect(slot, deadline, background=True)
        except ShareError:
            yield None
            return
        with sock:
            try:
                sock.settimeout(wait if give_up is None else RESERVE_POLL_SECONDS)
                protocol.send(sock, {"op": protocol.RESERVE})
                while not self._answered(sock):
                    if time.monotonic() > deadline or (give_up is not None and give_up()):
                        raise TimeoutError
                sock.settimeout(wait)
                worker_pid = protocol.recv(sock)["started"]
            except (TimeoutError, protocol.Closed, OSError):
                yield None
                return
            reservation = Reservation(self, sock, slot, worker_pid)
            try:
                yield reservation
            finally:
                if not reservation.used:
                    with contextlib.suppress(OSError):
                        protocol.send(sock, {"op": protocol.SKIP})

    @staticmethod
    def _answered(sock: socket.socket) -> bool:
        """Whether the process has answered on sock (read nothing), within sock's timeout."""
        try:
            sock.recv(1, socket.MSG_PEEK)
        except TimeoutError:
            return False
        return True  # its answer, or the end of the connection: recv() tells which


class Reservation:
    """A compute process that has taken a background connection and waits for its job."""

    def __init__(self, pool: ComputePool, sock: socket.socket, slot: int, worker_pid: int) -> None:
        self.pool, self.sock, self.slot, self.worker_pid = pool, sock, slot, worker_pid
        self.used = False

    def run(self, job: dict[str, Any], progress: Callable[[str], None] | None = None) -> Any:
        """The job's answer, as ComputePool.run gives it (once per reservation)."""
        assert not self.used, "a reservation runs one job"
        self.used = True
        try:
            protocol.send(self.sock, job)
        except OSError:
            raise AnalysisFailed(
                "the compute process went away before the job", kind="died"
            ) from None
        return self.pool._answer(self.sock, self.slot, self.worker_pid, self.pool.seconds, progress)
