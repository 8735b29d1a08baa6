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

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import ShareError, TooLarge
from ..pprof.inflate import human_size
from .pool import AnalysisFailed, ComputePool, job_settings


class Merges:
    """Merges and the size of diffs, on one set of compute processes."""

    def __init__(self, compute: ComputePool, settings: dict[str, Any]) -> None:
        self.compute = compute
        self.most = settings["MERGE_MAX_PROFILES"]
        self.max_bytes = settings["MERGE_MAX_BYTES"]
        self._job = job_settings(settings)

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

    def merge_ids(self, pids: Sequence[str], comment: str = "") -> bytes:
        """Stored profiles merged as `go tool pprof -proto` merges them, gzip-compressed: the
        pre-merged blocks and selections of a collection. The caller keeps each merge to at
        most SHARE_MERGE_MAX_PROFILES parts (merging the merges beyond that)."""
        self.check("a merge", len(pids))
        job = {"op": "merge", "parts": list(pids), "comment": comment[:4000],
               "max_bytes": self.max_bytes, **self._job}  # fmt: skip
        try:
            return self.compute.run(job, slot=self.compute.merge_slot())
        except AnalysisFailed as exc:
            if exc.kind == "memory":
                raise TooLarge(f"{exc.message}; nothing was stored") from None
            raise
