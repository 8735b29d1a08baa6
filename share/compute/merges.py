"""Merges of stored profiles and uploaded files, as `go tool pprof -proto a b c`, in the tier.

The core names the sources (ids of live profiles, or (name, path) of uploaded files: spool
files the compute process reads, compute.spool); Merges checks the limits
(SHARE_MERGE_MAX_PROFILES, and SHARE_MERGE_MAX_BYTES of the stored ones here, of the files in
the compute process as they inflate: worker.Worker.merge), runs the job on a merge process
(ComputePool.merge_slot: an analysis process without them), and says what the merge is of: the
comment the merged profile carries and its default title. The core then stores the result as
any upload.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import ShareError, TooLarge
from ..pprof.inflate import human_size
from .pool import AnalysisFailed, ComputePool, job_settings

# A background merge waits this long for its merge process to be free, then gives way (the
# warm-up leaves the work to a view): it may hold a block's lease meanwhile, and stops waiting
# at once when someone waits for that lease (urgent_when).
BACKGROUND_WAIT_SECONDS = 10.0


class Merges:
    """Merges and the size of diffs, on one set of compute processes."""

    def __init__(self, compute: ComputePool, settings: dict[str, Any]) -> None:
        self.compute = compute
        self.most = settings["MERGE_MAX_PROFILES"]
        self.max_bytes = settings["MERGE_MAX_BYTES"]
        self._job = job_settings(settings)
        self._local = threading.local()  # per thread (greenlet): background()

    @contextlib.contextmanager
    def background(self) -> Iterator[None]:
        """The merges of stored profiles this thread asks for meanwhile are background work (a
        collection's warm-up, share.collections.warming): each waits until its merge process
        is free of the merges someone waits for (a view's selection), which it takes first
        (share.compute.pool: its background socket), so that a view's merge waits for at most
        the one warm-up merge running, not for every one queued (bench/fleet.py: range views
        queued for 30-60 s behind the warm-ups' merges of a fleet's members)."""
        self._local.background = True
        try:
            yield
        finally:
            self._local.background = False

    def in_background(self) -> bool:
        return bool(getattr(self._local, "background", False))

    @contextlib.contextmanager
    def urgent_when(self, wanted: Callable[[], bool]) -> Iterator[None]:
        """Meanwhile, once wanted() says so, this thread's background merges stop waiting for
        their merge process to be free and queue as merges someone waits for: someone does (a
        view waits for the lease of the block they merge, share.collections.blocks). Without
        it, on the fleet bench, views waited up to 9 s for a block whose warm-up merge waited,
        holding the lease, behind the merges of other views."""
        before = getattr(self._local, "wanted", None)
        self._local.wanted = wanted
        try:
            yield
        finally:
            self._local.wanted = before

    def check(self, what: str, count: int, total: int = 0) -> None:
        """Refuse to combine more profiles, or more bytes (decompressed), than allowed."""
        if count > self.most:
            raise TooLarge(
                f"{what} of {count} profiles is over the limit of {self.most} "
                "(SHARE_MERGE_MAX_PROFILES)"
            )
        if total > self.max_bytes:
            raise TooLarge(
                f"{what} of {human_size(total)} of profiles (decompressed) is over the limit "
                f"of {human_size(self.max_bytes)} (SHARE_MERGE_MAX_BYTES)"
            )

    def run(
        self, sources: Sequence[str | tuple[str, Path]], record: Callable[[str], Any]
    ) -> tuple[bytes, str]:
        """(the merged profile, gzip-compressed; its default title). record(id) is the
        core's: a live profile's record, or NotFound / Gone."""
        if not sources:
            raise ShareError("nothing to merge: give profile ids or links, or files")
        self.check("a merge", len(sources))
        names, refs, parts, stored = [], [], [], 0
        for source in sources:
            if isinstance(source, str):
                found = record(source)
                names.append(found.title or source)
                refs.append(source)
                parts.append(source)
                stored += found.size_bytes
            else:
                names.append(source[0] or f"file {len(names) + 1}")
                refs.append(names[-1])
                parts.append((names[-1], str(source[1])))
        self.check("a merge", len(sources), stored)
        comment = f"# pprof-share: merged from {len(sources)} profiles: {', '.join(refs)}"
        job = {"op": "merge", "parts": parts, "comment": comment[:4000],
               "max_bytes": self.max_bytes, **self._job}  # fmt: skip
        try:
            data = self.compute.run(job, slot=self.compute.merge_slot())
        except AnalysisFailed as exc:
            if exc.kind == "memory":
                raise TooLarge(f"{exc.message}; nothing was stored") from None
            raise
        return data, "merge of " + ", ".join(names)

    def merge_ids(self, pids: Sequence[str], comment: str = "", what: str = "") -> bytes:
        """Stored profiles merged as `go tool pprof -proto` merges them, gzip-compressed: the
        pre-merged blocks and selections of a collection. The caller keeps each merge to at
        most SHARE_MERGE_MAX_PROFILES parts (merging the merges beyond that). what (a block's
        title) names the merge in the compute log, beside its parts and size."""
        self.check("a merge", len(pids))
        job = {"op": "merge", "parts": list(pids), "comment": comment[:4000],
               "max_bytes": self.max_bytes, "name": what[:200], **self._job}  # fmt: skip
        slot = self.compute.merge_slot()
        try:
            if not self.in_background():
                return self.compute.run(job, slot=slot)  # type: ignore[no-any-return]
            wanted = getattr(self._local, "wanted", None)
            with self.compute.reserve(slot, BACKGROUND_WAIT_SECONDS, wanted) as reservation:
                if reservation is not None:
                    return reservation.run(job)  # type: ignore[no-any-return]
            if wanted is not None and wanted():  # someone waits for it: as urgent as they are
                return self.compute.run(job, slot=slot)  # type: ignore[no-any-return]
            raise ShareError("the merge processes are busy with merges someone waits for", 503)
        except AnalysisFailed as exc:
            if exc.kind == "memory":
                raise TooLarge(f"{exc.message}; nothing was stored") from None
            raise
