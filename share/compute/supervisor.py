"""The Supervisor: starts an instance's compute processes, and another whenever one ends.

`pprof-share serve` starts it in gunicorn's master, before it forks the workers, and names its
directory in $PPROF_SHARE_COMPUTE_DIR, where each process listens on compute-<slot>.sock (and
compute-<slot>.background.sock): every worker's ComputePool (share.compute.pool) reaches the
same processes. The analysis processes take slots 0 to n-1, the ingest processes the slots
after them, the merge processes the last ones; a replacement takes its slot's kind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import Any

DIRECTORY_ENV = "PPROF_SHARE_COMPUTE_DIR"
_PROCESS_SETTINGS = ("ANALYSIS_MEMORY", "ANALYSIS_CACHE_BYTES")
_WATCH_SECONDS = 0.05  # how soon a dead process is replaced
INGEST = "ingest"  # the worker's argument that makes it an ingest process (visible in ps)
MERGE = "merge"  # the worker's argument that makes it a merge process (visible in ps)


def pool_size(settings: dict[str, Any]) -> int:
    """Analysis processes: SHARE_ANALYSIS_WORKERS, else one per CPU."""
    return int(settings.get("ANALYSIS_WORKERS") or os.cpu_count() or 1)


def ingest_size(settings: dict[str, Any]) -> int:
    """Ingest processes: SHARE_INGEST_WORKERS (settings without it: none, uploads share the
    analysis processes)."""
    return int(settings.get("INGEST_WORKERS") or 0)


def merge_size(settings: dict[str, Any]) -> int:
    """Merge processes: SHARE_MERGE_WORKERS (settings without it: none, merges share the
    analysis processes)."""
    return int(settings.get("MERGE_WORKERS") or 0)


def socket_path(directory: str, index: int, background: bool = False) -> str:
    return os.path.join(directory, f"compute-{index}{'.background' if background else ''}.sock")


class Supervisor:
    """Starts the compute processes and starts another whenever one ends: the analysis
    processes in slots 0 to analysis-1, the ingest processes after them, then the merge ones."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.analysis = pool_size(settings)
        self.ingest = ingest_size(settings)
        self.merge = merge_size(settings)
        self.size = self.analysis + self.ingest + self.merge  # every process, of every kind
        self._directory: str | None = None  # made by start(): an app that never computes
        self._env = dict(
            os.environ,
            PPROF_SHARE_COMPUTE=json.dumps({k: settings[k] for k in _PROCESS_SETTINGS}),
            OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MALLOC_ARENA_MAX="2",
        )  # fmt: skip
        self._env.pop(DIRECTORY_ENV, None)
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * self.size
        self.started = [0] * self.size  # processes started per slot, replacements included
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._owner = os.getpid()  # forked workers inherit this object: only the owner stops

    @property
    def directory(self) -> str:
        """Where the processes' sockets are (made on first use)."""
        with self._lock:
            if self._directory is None:
                self._directory = tempfile.mkdtemp(prefix="pprof-share-compute-")
            return self._directory

    def start(self) -> None:
        """Start every process and the thread that replaces those that end."""
        self.directory  # noqa: B018 - made before the lock is taken: _spawn needs it
        with self._lock:
            if self._watcher is not None:
                return
            for i in range(self.size):
                self._spawn(i)
            self._watcher = threading.Thread(target=self._watch, daemon=True, name="compute")
            self._watcher.start()

    def role(self, i: int) -> str:
        """What slot i's process does: "analysis", "ingest" or "merge"."""
        if i < self.analysis:
            return "analysis"
        return INGEST if i < self.analysis + self.ingest else MERGE

    def roles(self) -> str:
        """How many processes of each kind, as serve's start-up line says it."""
        kinds = (("analysis", self.analysis), (INGEST, self.ingest), (MERGE, self.merge))
        return ", ".join(f"{n} {kind}" for kind, n in kinds if n or kind == "analysis")

    def _spawn(self, i: int) -> None:
        path = socket_path(str(self._directory), i)
        role = self.role(i)  # a replacement's too: it is the slot's
        role_arg = [] if role == "analysis" else [role]
        self.procs[i] = subprocess.Popen(
            [sys.executable, "-m", "share.compute.worker", path, *role_arg],
            stdin=subprocess.PIPE, env=self._env,
            # Out of the terminal's process group: Ctrl+C or a group SIGTERM reaches the server,
            # which stops them itself (and they end with its pipe, however it ends).
            start_new_session=True,
        )  # fmt: skip
        self.started[i] += 1

    def _watch(self) -> None:
        while not self._stop.wait(_WATCH_SECONDS):
            with self._lock:
                if self._stop.is_set():
                    return
                for i, proc in enumerate(self.procs):
                    if proc is not None and proc.poll() is not None:
                        # (Under gunicorn its master may reap the process first: status 0.)
                        status = proc.returncode
                        how = f" (signal {-status})" if status < 0 else ""
                        how = f" (status {status})" if status > 0 else how
                        print(f"pprof-share: compute process {proc.pid} ended{how}; "
                              "starting another", file=sys.stderr, flush=True)  # fmt: skip
                        if proc.stdin is not None:
                            proc.stdin.close()
                        self._spawn(i)

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs if p is not None]

    def stop(self) -> None:
        """End every process and remove the directory (in the process that started them)."""
        if os.getpid() != self._owner:
            return
        self._stop.set()
        with self._lock:
            for proc in self.procs:
                if proc is not None and proc.poll() is None:
                    proc.kill()
            for proc in self.procs:
                if proc is not None:
                    with contextlib.suppress(Exception):
                        proc.wait(timeout=10)
                    if proc.stdin is not None:
                        proc.stdin.close()
            self.procs = [None] * self.size
            if self._directory is not None:
                shutil.rmtree(self._directory, ignore_errors=True)
