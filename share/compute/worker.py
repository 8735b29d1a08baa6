"""A compute process: `python -m share.compute.worker SOCKET [ingest|merge]`, started by
supervisor.Supervisor. With `ingest` it is an ingest process: it answers the same jobs, but the pool
sends it only uploads' validations and, on its background socket, their precompute (the first
views of an upload it has just validated: it keeps its last uploads decoded for that, in a
cache half an analysis process's size).
With `merge` it is a merge process: the pool sends it merges and the validation of the merges
the server stores, and it keeps profiles decoded as an analysis process does (a collection's
merges read again the blocks and members the last ones read or made).

It listens on a Unix socket and answers one connection's job at a time (a web worker connects,
sends a job, reads the answer), and exits when its supervisor goes away. Its address space is
capped first (RLIMIT_AS), so a profile that needs more memory fails here with a MemoryError
instead of growing the machine's; the process then exits, and the supervisor starts another.
On a connection: the job -> {"started": os pid}, any number of {"progress": stage}, then
{"ok": value} | {"error": [code, message]} | {"memory": message}.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import json
import os
import resource
import selectors
import socket
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import pprof
from ..analysis.combine import combine
from ..analysis.views import views
from ..errors import NotFound, ShareError, TooLarge
from ..pprof import scan
from ..pprof.inflate import human_size
from ..store import locate
from . import protocol
from .cache import ProfileCache, columns_footprint, footprint
from .ingest import ingest, profile_id, read_upload
from .sums import Busy, Sums
from .supervisor import INGEST, MERGE

VIEW_GZIP_LEVEL = 6  # paid once per view; level 9 took 3-6x as long for 3-17% fewer bytes
# Over 256 KiB (the flame graphs and top tables of large profiles, 0.8-2.2 MB of JSON) level 6
# takes 30-45 ms, the most of a warm view's time; level 3 takes a third of that for 12-19% more
# bytes (cpu-xl's flame graph: 134 KB against 113 KB).
LARGE_VIEW_BYTES = 256 << 10
LARGE_VIEW_GZIP_LEVEL = 3
PREFETCH_THREADS = 4  # a merge's parts fetched at once from the blob store
COLLECT_FRACTION = 8  # collect once the cache has let go of 1/8 of its cap: collect_after_jobs
MERGE_GZIP_LEVEL = 1  # a merge is stored as go tool pprof -proto writes it: gzip BestSpeed
# The cache key of a merge's output by its profile id: its columns (combine.merged_prof) and
# size. A collection's blocks are merged into the next larger ones, and into selections, soon
# after they are made, mostly by the process that made them: there they are neither fetched
# nor decoded again, and merge as a Merge output merges, faster than the same profile decoded.
MADE = "made:"
RESERVED_SECONDS = 10  # a reserving caller sends its job at once (one lease away): or it is gone


def view_gzip(body: bytes) -> bytes:
    """A view's bytes as cached and served: gzip, at a lower level for large ones."""
    level = LARGE_VIEW_GZIP_LEVEL if len(body) > LARGE_VIEW_BYTES else VIEW_GZIP_LEVEL
    return gzip.compress(body, compresslevel=level, mtime=0)


def log(line: str) -> None:
    """One line per job on stderr (the server's log): what ran, how it ended, how long."""
    print(f"pprof-share compute[{os.getpid()}]: {line}", file=sys.stderr, flush=True)


class Worker:
    """The jobs a compute process runs, with its warm profiles."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.sock: socket.socket | None = None  # the connection of the job being answered
        self.cache = ProfileCache(settings["ANALYSIS_CACHE_BYTES"])
        self._stores: dict[str, Any] = {}
        self.jobs = 0
        self.sums = Sums(self)
        self.detail = ""  # what the log's line of the job adds (a merge's parts and size)

    def blobs(self, url: str) -> Any:
        """The blob store a job names (one client per store, kept)."""
        store = self._stores.get(url)
        if store is None:
            store = self._stores[url] = locate.blob_store(url)
        return store

    def profile(
        self, pid: str, job: dict[str, Any], fetched: bytes | None = None
    ) -> pprof.ParsedProfile:
        """A stored profile, decoded: from the warm cache (ids are content hashes, so any
        store's copy will do), else from its bytes fetched already, else from the job's blob
        store."""
        parsed = self.cache.get(pid)
        if parsed is not None:
            return parsed
        self.progress("fetching the profile")
        try:
            data = fetched if fetched is not None else self.blobs(job["blobs"]).get(pid)
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
            # From the web tier's spool file; a blob to store goes to its other (compute.spool).
            parsed = pprof.parse(
                read_upload(job["path"]), max_profile_bytes=job["max_profile_bytes"], limits=limits
            )
            if job.get("strip"):  # privacy: stored and hashed without those parts
                parsed = pprof.strip(parsed, job["strip"])
            result = ingest(parsed, job["blob_path"])
            self.cache.put(result["id"], parsed, footprint(parsed))  # warm for its first view
            return result
        if op == "view":
            profiles = [self.profile(p, job) for p in [job["pid"], *job.get("bases", [])]]
            self.progress("analysing")
            body = views.render(job["name"], profiles, job["options"])
            for pid, parsed in zip([job["pid"], *job.get("bases", [])], profiles, strict=True):
                self.cache.resize(pid, footprint(parsed))
            return view_gzip(body)
        if op == "merge":
            return self.merge(job)
        if op == "summed":
            return self.summed(job)
        if op == "ping":
            return {"pid": os.getpid(), "jobs": self.jobs, "warm": self.cache.keys()}
        if op == "sleep":  # for tests: a job that takes as long as asked
            time.sleep(job["seconds"])
            return job["seconds"]
        if op == "allocate":  # for tests: a job that needs this much memory
            return len(bytearray(job["bytes"]))
        raise ValueError(f"unknown job {op!r}")

    def merge(self, job: dict[str, Any]) -> bytes:
        """Stored profiles (ids) and files ((name, spool file path)) merged as `go tool pprof
        -proto` merges them, gzip-compressed as it writes them; their total size held to
        max_bytes."""
        limits = pprof.Limits(**job["limits"])
        profiles, total = [], 0
        made = {p: self.cache.get(MADE + p) for p in job["parts"] if isinstance(p, str)}
        fetched = self.prefetch([p for p, kept in made.items() if kept is None], job)
        for part in job["parts"]:
            if isinstance(part, str) and made[part] is not None:
                columns, size = made[part]  # merged here before: read as its bytes would be
                profiles.append(columns)
                total += size
                self.check_total(total, job)
                continue
            if isinstance(part, str):
                parsed = self.profile(part, job, fetched.pop(part, None))
            else:
                name, path = part
                self.progress(f"decoding {name}")
                try:
                    parsed = pprof.parse(
                        read_upload(path), max_profile_bytes=job["max_profile_bytes"], limits=limits
                    )
                except ShareError as exc:
                    raise type(exc)(f"{name}: {exc.message}", exc.code) from None
            total += len(parsed.raw)
            self.check_total(total, job)
            # Only its columns are kept: a file's decoded message and tables go with parsed
            # (a stored profile's stay in the warm cache), so ten large files fit in less.
            profiles.append(combine.from_parsed(parsed))
            if isinstance(part, str):  # its columns stay warm with it: counted against the cap
                self.cache.resize(part, footprint(parsed))
        self.progress("merging")
        reused = sum(kept is not None for kept in made.values())
        here = f", {reused} made here" if reused else ""
        self.detail = f" ({len(profiles)} parts{here}, {human_size(total)})"  # for the log
        merged = combine.merged_prof(profiles, job["comment"])
        raw = combine.encode(merged)
        self.cache.put(MADE + profile_id(raw), (merged, len(raw)), columns_footprint(merged))
        return gzip.compress(raw, compresslevel=MERGE_GZIP_LEVEL, mtime=0)

    def summed(self, job: dict[str, Any]) -> bytes:
        """View job["name"] of the merge of job["parts"], from their stacks summed (sums.py)."""
        return view_gzip(self.sums.view(job))

    @staticmethod
    def check_total(total: int, job: dict[str, Any]) -> None:
        if total > job["max_bytes"]:
            raise TooLarge(
                f"a merge of {human_size(total)} or more of profiles (decompressed) is over "
                f"the limit of {human_size(job['max_bytes'])} (SHARE_MERGE_MAX_BYTES)"
            )

    def prefetch(self, pids: list[str], job: dict[str, Any]) -> dict[str, bytes]:
        """The stored bytes of the pids not warm here, fetched PREFETCH_THREADS at a time: a
        collection's merge reads dozens of members, and one at a time it waited on the store
        (S3) for each in turn. Missing ones are left for profile() to report."""
        cold = [p for p in dict.fromkeys(pids) if p not in self.cache]
        if len(cold) < 2:
            return {}
        self.progress(f"fetching {len(cold)} profiles")
        store = self.blobs(job["blobs"])

        def get(pid: str) -> bytes | None:
            try:
                return store.get(pid)  # type: ignore[no-any-return]
            except FileNotFoundError:
                return None

        with ThreadPoolExecutor(PREFETCH_THREADS) as pool:
            got = dict(zip(cold, pool.map(get, cold), strict=True))
        return {p: data for p, data in got.items() if data is not None}

    def serve(self, listener: socket.socket, background: socket.socket | None = None) -> None:
        """Answer one connection's job at a time until the supervisor goes away (stdin, a
        pipe from it, reaches its end). A waiting connection of `listener` is taken before any
        of `background` (the views precomputed after uploads): see share.compute.pool."""
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, "job")
        if background is not None:
            selector.register(background, selectors.EVENT_READ, "background")
        selector.register(sys.stdin.buffer.raw, selectors.EVENT_READ, "supervisor")
        while True:
            ready = {key.data: key for key, _ in selector.select()}
            if "supervisor" in ready and not os.read(ready["supervisor"].fd, 4096):
                return
            chosen = listener if "job" in ready else background if "background" in ready else None
            if chosen is None:
                continue
            conn, _ = chosen.accept()
            with conn:
                if not self.answer(conn):
                    return

    def answer(self, conn: socket.socket) -> bool:
        """Run the job sent on conn and reply; False when this process must end."""
        try:
            job = protocol.recv(conn)
            self.sock = conn
            protocol.send(conn, {"started": os.getpid()})
            if job.get("op") == protocol.RESERVE:  # a background caller: its job, or a skip
                conn.settimeout(RESERVED_SECONDS)
                job = protocol.recv(conn)
                conn.settimeout(None)
                if job.get("op") == protocol.SKIP:
                    return True
        except (protocol.Closed, OSError):
            return True  # a client that gave up while queued
        self.jobs += 1
        self.detail = ""
        started = time.monotonic()
        what = f"{job['op']} {job.get('name', '')} {job.get('pid', '')}".strip()
        log(f"start {what}")
        try:
            reply: dict[str, Any] = {"ok": self.run(job)}
        except MemoryError as exc:
            log(f"out of memory in {what}: starting afresh")
            self._send({"memory": str(exc) or "out of memory"})
            return False  # a process that ran out may hold fragments: start afresh
        except ShareError as exc:
            reply = {"error": [exc.code, exc.message]}
            if isinstance(exc, Busy):  # asked again, it goes on (sums.py)
                reply["again"] = True
        except Exception as exc:  # a bug: say so (a 500), keep serving
            traceback.print_exc()
            reply = {"error": [500, f"the analysis failed ({type(exc).__name__}: {exc})"]}
        reply["warm"] = self.cache.keys()
        outcome = "ok" if "ok" in reply else f"error {reply['error'][0]}"
        log(f"done {what}: {outcome} in {time.monotonic() - started:.3f} s{self.detail}")
        self._send(reply)
        if self.cache.let_go > self.cache.max_bytes // COLLECT_FRACTION:  # see collect_after_jobs
            gc.collect()
            self.cache.let_go = 0
        return True

    def _send(self, message: dict[str, Any]) -> None:
        # A client that went away (it gave up) needs no answer.
        with contextlib.suppress(OSError):
            protocol.send(self.sock, message)

    def progress(self, stage: str) -> None:
        self._send({"progress": stage})


def collect_after_jobs() -> None:
    """A profile's analysis holds cycles (its Tables keep its Graphs, which name the Tables),
    so one the warm cache lets go is freed only by a full garbage collection, and Python runs
    those by counts of objects, not bytes: a view process that held 512 MiB of warm profiles
    by estimate grew by ~18 MiB per view past it and ran out of SHARE_ANALYSIS_MEMORY
    (bench/fleet.py). So a job after which the cache has let go of more than 1/COLLECT_FRACTION
    of its cap since the last collection is followed by gc.collect(), once its answer is sent:
    a collection takes 10-36 ms with a fleet's profiles warm (what the imports made is frozen
    out of it first), too much to follow every job; so the balanced pair's eight compute
    processes in bench/fleet.py collected 63 times a minute in all, ~4% of a core."""
    gc.collect()
    gc.freeze()


def _listen(path: str) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # left by the process this one replaces
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    return listener


def main(argv: list[str]) -> int:
    """python -m share.compute.worker SOCKET_PATH [ingest|merge], settings in
    $PPROF_SHARE_COMPUTE."""
    settings = json.loads(os.environ["PPROF_SHARE_COMPUTE"])
    role = argv[2] if argv[2:] in ([INGEST], [MERGE]) else None
    if role == INGEST:  # its last uploads, decoded, for their precompute only
        settings["ANALYSIS_CACHE_BYTES"] //= 2
    limit = int(settings["ANALYSIS_MEMORY"])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    path = argv[1]
    listeners = [_listen(path), _listen(path.removesuffix(".sock") + ".background.sock")]
    if scan.LIB is None:  # the install found no C compiler: correct, but slower
        log(
            f"share/pprof/{scan.LIBRARY} is not built: profiles are decoded on the pure-Python "
            "path, about 3x slower (reinstall pprof-share where a C compiler is installed)"
        )
    log(f"ready ({role})" if role else "ready")  # imports done, listening (bench/compute.py)
    collect_after_jobs()
    Worker(settings).serve(*listeners)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
