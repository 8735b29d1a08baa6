"""A compute process's sums: a collection's range views from its members' stacks, numbered.

A summed job (ViewService.summed) names its parts: stored profile ids, and windows of them
(share.collections.windows: {"k": digest, "p": parts}), and its route: the collection. Each
process keeps a stack table per collection and kind of profile (analysis.combine.stacktable):
a member is decoded once, its stacks numbered, and kept as a vector (a few tens of KB) in the
process's cache; a window's vector is the sum of its parts', kept by the digest of its members;
a range's is the sum of its windows' and edge members'. The flame graph and top table are laid
out from that sum's summary, as from summed.summed's, which equals the merge's (combine.summed
says when: parts that are not summable are merged here instead, not stored).

Numbering members is the one cost that grows with a range: after a restart, or on the
instance whose warm-up has not run yet, a view may find thousands cold. A job numbers members
for at most its budget (half the analysis limit) and then answers 503 "try again", keeping what
it numbered, so the next ask goes on from there instead of being stopped at the limit (which
kills the process, and all it kept) and starting over.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from .. import pprof
from ..analysis.combine import combine, stacktable, summed
from ..analysis.views import views
from ..errors import NotFound, ShareError
from .ingest import profile_id

SUM = "sum:"  # a range's summary, by its parts
LAST_SUMS = 4  # ranges' summaries kept (the page asks a range's flame graph, then its top)
VECTOR = "vector:"  # a member's or window's vector, by collection and id or digest
MAX_TABLES = 4  # stack tables a process keeps (the collections it sums lately)
BUDGET_SHARE = 0.5  # of the analysis limit, spent numbering members before a 503

Kept = tuple[stacktable.StackTable, stacktable.Vector]


def leaves(parts: list[Any]) -> Iterator[str]:
    """The profile ids under parts, in order."""
    for p in parts:
        if isinstance(p, str):
            yield p
        else:
            yield from leaves(p["p"])


def parts_text(parts: list[Any]) -> str:
    """What names parts in a sum's keys: members' ids, windows' digests."""
    return "\n".join(p if isinstance(p, str) else "w:" + p["k"] for p in parts)


class Busy(ShareError):
    """Numbering went past its budget: asked again, the job goes on from where it stopped."""

    code = 503


class _Fetched:
    """The stored bytes of a job's cold members, fetched ahead in batches as they are read:
    a job that stops at its budget has not fetched them all (a warm-up's job reads a few)."""

    BATCH = 4  # as many as are fetched at once: a job stopped at its budget wastes none

    def __init__(self, worker: Any, cold: list[str], job: dict[str, Any]) -> None:
        self.worker, self.cold, self.job = worker, cold, job
        self.at = {pid: i for i, pid in enumerate(cold)}
        self.got: dict[str, bytes] = {}

    def take(self, pid: str) -> bytes | None:
        if pid not in self.got and pid in self.at:
            i = self.at[pid]
            self.got.update(self.worker.prefetch(self.cold[i : i + self.BATCH], self.job))
        return self.got.pop(pid, None)


class Sums:
    """The stack tables of one compute process, and the summed jobs it runs with them."""

    def __init__(self, worker: Any) -> None:  # worker.Worker (which imports this)
        self.worker = worker
        self.cache = worker.cache
        self._tables: dict[tuple[str, str], stacktable.StackTable] = {}
        self._sums: dict[str, summed.Summary] = {}  # the last ranges' summaries
        self.numbered = 0  # members this job numbered (for the log)
        self._deadline = 0.0

    def view(self, job: dict[str, Any]) -> bytes:
        """View job["name"] of the merge of job["parts"] (its body, not compressed)."""
        parts: list[Any] = job["parts"]
        key = SUM + profile_id(parts_text(parts).encode())
        total = self._sums.pop(key, None)
        self.numbered = 0
        if total is None:
            route = job.get("route") or key
            budget = job.get("budget")
            self._deadline = time.monotonic() + (1e9 if budget is None else float(budget))
            cold = self._cold(route, parts)
            if cold:
                self.worker.progress(f"reading {len(cold)} of the collection's profiles")
            fetched = _Fetched(self.worker, cold, job)
            got = [self._vector(route, p, job, fetched) for p in parts]
            table = self._one_table(got)
            vector = None if table is None else table.add([g[1] for g in got])  # type: ignore[index]
            if table is None or vector is None or vector.magnitude >= summed.MOST:
                return self._merged(parts, job)
            self.worker.progress("summing")
            total = table.summary(vector)
        self._sums[key] = total  # kept apart from the cache: megabytes each, for a moment
        while len(self._sums) > LAST_SUMS:
            del self._sums[next(iter(self._sums))]
        self.worker.progress("analysing")
        self.worker.detail = f" ({len(parts)} parts summed, {self.numbered} members numbered)"
        return views.render_summed(job["name"], total, job["options"])

    def _merged(self, parts: list[Any], job: dict[str, Any]) -> bytes:
        """The view of parts merged here (not summable: the merge says what it refuses)."""
        self.worker.progress("merging")
        profiles = [combine.from_parsed(self.worker.profile(p, job)) for p in leaves(parts)]
        raw = combine.encode(combine.merged_prof(profiles, job["comment"]))
        merged = pprof.parse(raw, max_profile_bytes=job["max_profile_bytes"])
        return views.render(job["name"], [merged], job["options"])

    @staticmethod
    def _one_table(got: list[Kept | None]) -> stacktable.StackTable | None:
        """The table all parts were numbered in; None: some part was not summable."""
        if not got or got[0] is None:
            return None
        table = got[0][0]
        return table if all(g is not None and g[0] is table for g in got) else None

    def _cold(self, route: str, parts: list[Any]) -> list[str]:
        """The member ids under parts whose vector, or whose window's, is not kept here."""
        cold: list[str] = []
        for p in parts:
            if isinstance(p, str):
                if self._packed(f"{VECTOR}{route}:{p}") is None:
                    cold.append(p)
            elif self._packed(f"{VECTOR}{route}:w:{p['k']}") is None:
                cold.extend(self._cold(route, p["p"]))
        return cold

    def _packed(self, key: str) -> tuple[stacktable.StackTable, Any] | None:
        """A vector kept here, packed or not (_keep), when its table is still in use."""
        kept = self.cache.get(key)
        if kept is None or not any(kept[0] is t for t in self._tables.values()):
            return None
        return kept  # type: ignore[no-any-return]

    def _kept(self, key: str) -> Kept | None:
        """A vector kept here (its table still in use), unpacked."""
        kept = self._packed(key)
        if kept is None or isinstance(kept[1], stacktable.Vector):
            return kept  # type: ignore[return-value]
        return kept[0], stacktable.unpack(kept[1])

    def _keep(self, key: str, kept: Kept, packed: bool = True) -> None:
        """Kept packed (stacktable.Packed: a process's cache bounds how far back ranges stay
        warm): members and windows of members, the bulk; wider windows, which every view of
        a range reads and which are few, as they are (a heap window unpacks in about 1.3 ms)."""
        value = stacktable.pack(kept[1]) if packed else kept[1]
        self.cache.put(key, (kept[0], value), value.footprint())

    def _table(self, route: str, s: summed.Summary) -> stacktable.StackTable | None:
        """The route's (a collection's) stack table for summaries like s; None: not summable."""
        if not s.summable:
            return None
        sig = (route, repr((s.sample_types, s.period_type, s.prune)))
        table = self._tables.pop(sig, None)
        if table is None or table.full():
            table = stacktable.StackTable(s)
        self._tables[sig] = table  # the most recently used last
        while len(self._tables) > MAX_TABLES:
            del self._tables[next(iter(self._tables))]
        return table

    def _vector(self, route: str, part: Any, job: dict[str, Any], fetched: _Fetched) -> Kept | None:
        """A part's vector and its table: a member's numbered from its decoded profile, a
        window's the sum of its parts' (None: its parts are not summable through one table)."""
        if not isinstance(part, str):
            key = f"{VECTOR}{route}:w:{part['k']}"
            kept = self._kept(key)
            if kept is None:
                got = [self._vector(route, p, job, fetched) for p in part["p"]]
                table = self._one_table(got)
                if table is None:
                    return None
                kept = (table, table.add([g[1] for g in got]))  # type: ignore[index]
                self._keep(key, kept, packed=all(isinstance(q, str) for q in part["p"]))
            return kept
        key = f"{VECTOR}{route}:{part}"
        kept = self._kept(key)
        if kept is not None:
            return kept
        if self.numbered and time.monotonic() > self._deadline:  # each ask numbers some
            raise Busy(
                f"the collection's profiles are still being read ({self.numbered} read for "
                "this view so far); try again",
                503,
                retry_after=1,
            )
        s = summed.of(self._decoded(part, job, fetched))
        self.numbered += 1
        table = self._table(route, s)
        if table is None or not table.accepts(s):
            return None
        kept = (table, table.vector(s))
        self._keep(key, kept)
        return kept

    def _decoded(self, pid: str, job: dict[str, Any], fetched: _Fetched) -> Any:
        """A member's profile decoded: its vector is kept, not it (unless it was warm)."""
        parsed = self.cache.get(pid)
        if parsed is not None:
            return parsed
        data = fetched.take(pid)
        if data is None:
            try:
                data = self.worker.blobs(job["blobs"]).get(pid)
            except FileNotFoundError:
                raise NotFound(f"no profile with id {pid}") from None
        try:
            return pprof.parse(data, max_profile_bytes=job["max_profile_bytes"])
        except ShareError as exc:  # stored under older, laxer rules or limits
            raise ShareError(f"stored profile {pid} cannot be read: {exc.message}", 500) from exc
