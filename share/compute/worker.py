"""A compute process: `python -m share.compute.worker FD`, started by pool.ComputePool.

It reads jobs from the socket FD, answers each, and exits when its parent goes away. Its
address space is capped first (RLIMIT_AS), so a profile that needs more memory fails here with
a MemoryError instead of growing the machine's; the process then exits, to start afresh.
Replies: {"ok": value} | {"error": [code, message]} | {"memory": message}, after any number of
{"progress": stage} messages.
"""

from __future__ import annotations

import gzip
import os
import resource
import socket
import sys
import time
import traceback
from typing import Any

from .. import pprof
from ..analysis import views
from ..errors import NotFound, ShareError
from ..store import blobs
from . import protocol
from .cache import ProfileCache, footprint
from .ingest import ingest, profile_id

VIEW_GZIP_LEVEL = 6  # paid once per view; level 9 took 3-6x as long for 3-17% fewer bytes


def log(line: str) -> None:
    """One line per job on stderr (the server's log): what ran, how it ended, how long."""
    print(f"pprof-share compute[{os.getpid()}]: {line}", file=sys.stderr, flush=True)


class Worker:
    """The jobs a compute process runs, with its warm profiles."""

    def __init__(self, settings: dict[str, Any], sock: socket.socket) -> None:
        self.sock = sock
        self.cache = ProfileCache(settings["ANALYSIS_CACHE_BYTES"])
        self._stores: dict[str, Any] = {}
        self.jobs = 0

    def blobs(self, url: str) -> Any:
        """The blob store a job names (one client per store, kept)."""
        store = self._stores.get(url)
        if store is None:
            store = self._stores[url] = blobs.from_url(url)
        return store

    def progress(self, stage: str) -> None:
        protocol.send(self.sock, {"progress": stage})

    def profile(self, pid: str, job: dict[str, Any]) -> pprof.ParsedProfile:
        """A stored profile, decoded: from the warm cache (ids are content hashes, so any
        store's copy will do), else from the job's blob store."""
        parsed = self.cache.get(pid)
        if parsed is not None:
            return parsed
        self.progress("fetching the profile")
        try:
            data = self.blobs(job["blobs"]).get(pid)
        except FileNotFoundError:
            raise NotFound(f"no profile with id {pid}") from None
        self.progress("decoding the profile")
        try:
            parsed = pprof.parse(data, max_profile_bytes=job["max_profile_bytes"])
        except ShareError as exc:  # stored under older, laxer rules or limits
            raise ShareError(f"stored profile {pid} cannot be read: {exc.message}", 500) from exc
        self.cache.put(pid, parsed, footprint(parsed))
        return parsed

    def run(self, job: dict[str, Any]) -> Any:
        op = job["op"]
        if op == "ingest":
            self.progress("validating the profile")
            limits = pprof.Limits(**job["limits"])
            parsed = pprof.parse(
                job["data"], max_profile_bytes=job["max_profile_bytes"], limits=limits
            )
            result = ingest(parsed)
            self.cache.put(result["id"], parsed, footprint(parsed))  # warm for its first view
            return result
        if op == "view":
            profiles = [self.profile(p, job) for p in [job["pid"], *job.get("bases", [])]]
            self.progress("analysing")
            body = views.render(job["name"], profiles, job["options"])
            for pid, parsed in zip([job["pid"], *job.get("bases", [])], profiles, strict=True):
                self.cache.resize(pid, footprint(parsed))
            return gzip.compress(body, compresslevel=VIEW_GZIP_LEVEL, mtime=0)
        if op == "ping":
            return {"pid": os.getpid(), "jobs": self.jobs, "warm": self.cache.keys()}
        if op == "sleep":  # for tests: a job that takes as long as asked
            time.sleep(job["seconds"])
            return job["seconds"]
        if op == "allocate":  # for tests: a job that needs this much memory
            return len(bytearray(job["bytes"]))
        raise ValueError(f"unknown job {op!r}")

    def serve(self) -> None:
        while True:
            try:
                job = protocol.recv(self.sock)
            except (protocol.Closed, OSError):
                return  # the parent is gone
            self.jobs += 1
            started = time.monotonic()
            what = f"{job['op']} {job.get('name', '')} {job.get('pid', '')}".strip()
            log(f"start {what}")
            try:
                reply: dict[str, Any] = {"ok": self.run(job)}
            except MemoryError as exc:
                protocol.send(self.sock, {"memory": str(exc) or "out of memory"})
                return  # start afresh: a process that ran out may hold fragments
            except ShareError as exc:
                reply = {"error": [exc.code, exc.message]}
            except Exception as exc:  # a bug: say so (a 500), keep serving
                traceback.print_exc()
                reply = {"error": [500, f"the analysis failed ({type(exc).__name__}: {exc})"]}
            reply["warm"] = self.cache.keys()
            outcome = "ok" if "ok" in reply else f"error {reply['error'][0]}"
            log(f"done {what}: {outcome} in {time.monotonic() - started:.3f} s")
            protocol.send(self.sock, reply)


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[1]))
    init = protocol.recv(sock)
    settings = init["settings"]
    limit = int(settings["ANALYSIS_MEMORY"])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    protocol.send(sock, {"ready": os.getpid()})
    Worker(settings, sock).serve()
    return 0


__all__ = ["main", "profile_id"]

if __name__ == "__main__":
    sys.exit(main(sys.argv))
