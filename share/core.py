"""Share: upload, fetch, view, merge, delete and prune profiles. No Flask here: the web views,
the JSON API and the CLI all call this one core, and none of them touches a store."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import metrics, pprof
from .compute import spool
from .compute.ingest import ID_LENGTH
from .compute.merges import Merges
from .compute.pool import AnalysisFailed, ComputePool, job_settings
from .compute.precompute import Precompute
from .compute.service import ViewService
from .config import ConfigError, human_bytes, parse_duration  # noqa: F401 - the web's too
from .errors import Forbidden, Gone, NotFound, ShareError, StoreUnavailable, TooLarge
from .store import locate
from .store.blobs import BlobStore
from .store.guard import guard
from .store.lease import Busy, Leases
from .store.meta import MetaStore, Record

PRESENT_SECONDS = 5  # a blob seen present is not looked for again (S3 HEAD) for this long


@dataclass
class Upload:
    """The outcome of an upload: the record, whether it was new, and (only then) the token."""

    record: Record
    created: bool
    delete_token: str | None


def new_token() -> str:
    """192 random bits, URL-safe; never starting with "-", which a command line would take
    for an option (`pprof-share delete LINK --token -x...` failed one time in 64)."""
    while True:
        token = secrets.token_urlsafe(24)
        if not token.startswith("-"):
            return token


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def open_share(
    settings: dict[str, Any],
    compute: ComputePool | None = None,
    *,
    create: bool = True,
    check: bool = True,
) -> Share:
    """The core on the stores that settings name; raises ConfigError when one is unusable.
    With create=False (every command but serve) an embedded store must already exist: a
    command run from the wrong directory must not make itself a new, empty one."""
    where = None if create else locate.missing_embedded(settings["BLOBS"], settings["META"])
    if where is not None:
        raise ConfigError(
            f"no store at {where} — set SHARE_BLOBS/SHARE_META or run from the service's directory"
        )
    timeout = settings["STORE_TIMEOUT"]
    try:
        blob_store = locate.blob_store(settings["BLOBS"], timeout=timeout)
    except ValueError as exc:
        raise ConfigError(f"SHARE_BLOBS={settings['BLOBS']!r}: {exc}") from None
    meta_store = locate.meta_store(
        settings["META"], timeout=timeout, view_cache_bytes=settings["VIEW_CACHE_BYTES"]
    )
    for name, store in (("SHARE_BLOBS", blob_store), ("SHARE_META", meta_store)):
        try:
            if check:
                store.check()
        except OSError as exc:
            raise ConfigError(f"{name}={settings[name[6:]]!r}: {exc}") from None
    return Share(
        guard(blob_store, "blob store", settings["BLOBS"], metrics.store_error),
        guard(meta_store, "metadata store", settings["META"], metrics.store_error),
        settings,
        compute=compute,
    )


class Share:
    """The service: profiles in a BlobStore (gzip, keyed by id), records in a MetaStore."""

    def __init__(
        self,
        blobs: BlobStore,
        meta: MetaStore,
        settings: dict[str, Any],
        clock: Callable[[], float] = time.time,
        compute: ComputePool | None = None,
    ) -> None:
        self.blobs, self.meta, self.settings, self.clock = blobs, meta, settings, clock
        # Processes start on first use; one pool may serve several apps (tests share one).
        self.compute = compute if compute is not None else ComputePool(settings)
        self.views = ViewService(meta, self.compute, settings, clock=lambda: self.clock())
        self.precompute = Precompute(self.views, enabled=settings.get("PRECOMPUTE") == "on")
        self.merges = Merges(self.compute, settings)
        self._job = job_settings(settings)
        self.leases = Leases(meta)
        self._present: dict[str, float] = {}  # id -> when its blob was last seen (monotonic)

    @property
    def once(self) -> Any:
        """The views' single flight (its `computed` counts computations: tests read it)."""
        return self.views.once

    def close(self) -> None:
        """Let go of store connections and compute processes (the CLI does before gunicorn
        forks its workers: neither may cross a fork)."""
        self.meta.close()
        self.compute.close()

    # --- expiry -------------------------------------------------------------------------
    def expiry_seconds(self, requested: str | None) -> int | None:
        """Seconds a new upload lives: the request's choice within the operator's maximum."""
        choice = requested.strip() if requested and requested.strip() else None
        try:
            seconds = parse_duration(choice or self.settings["DEFAULT_EXPIRY"])
        except ValueError as exc:
            raise ShareError(f"expires: {exc}") from None
        longest = parse_duration(self.settings["MAX_EXPIRY"])
        if longest is not None and (seconds is None or seconds > longest):
            seconds = longest
        return seconds

    # --- upload -------------------------------------------------------------------------
    def upload(
        self,
        source: bytes | Path,
        *,
        title: str = "",
        expires: str | None = None,
        strip: pprof.StripSpec | None = None,
        precompute: bool = True,
        derived: bool = False,
    ) -> Upload:
        """Validate, deduplicate and store a profile; the blob is written before its record.
        source: bytes, or a file that holds them (compute.spool: never whole in memory here).
        With strip, what is stored (and hashed for the id) is the profile without those parts
        (share.pprof.strip, applied in the compute process before hashing). With precompute,
        a new profile's first views are computed next, where it was validated (compute.precompute).
        derived: the server made it (a block): validated on the merge process that made it
        (ComputePool.made_slot), where the collection's next merge finds it decoded, so that
        neither uploads nor views wait behind it."""
        seconds = self.expiry_seconds(expires)
        limit = self.settings["MAX_UPLOAD_BYTES"]
        with spool.holding(source, limit) as path, spool.new_file(".gz") as made:
            slot = self.compute.made_slot() if derived else self.compute.ingest_slot()
            facts = self._validate(path, made, slot, strip)
            blob = made if facts["blob"] is not None else path
            try:
                upload = self._store(facts, blob, title, seconds, slot)
            except StoreUnavailable as exc:  # the blob may be written, never a record without it
                raise exc.nothing_stored() from exc
        if upload.created and precompute:
            record = upload.record
            self.precompute.later(record.id, record.sample_types, record.default_sample_type, slot)
        return upload

    def _store(
        self, facts: dict[str, Any], blob: Path, title: str, seconds: int | None, slot: int
    ) -> Upload:
        """The store half of an upload: under the profile's lease, the blob, then its record."""
        pid = facts["id"]
        with self._exclusive(pid) as lease:
            now = self.clock()
            expires_at = None if seconds is None else now + seconds
            existing = self._live_record(pid, now)
            if existing is not None:
                return self._again(existing, blob, expires_at)
            self.blobs.put_file(pid, blob)
            token = new_token()
            record = Record(
                id=pid,
                sha256=facts["sha256"],
                title=title.strip()[:200],
                size_bytes=facts["size_bytes"],
                stored_bytes=blob.stat().st_size,
                created_at=now,
                expires_at=expires_at,
                delete_token_hash=token_hash(token),
                sample_types=facts["sample_types"],
                default_sample_type=facts["default_sample_type"],
                n_samples=facts["n_samples"],
                n_locations=facts["n_locations"],
                n_functions=facts["n_functions"],
                metadata=facts["metadata"],
            )
            if not lease.held():  # lapsed while the store did not answer: take no chances
                raise Busy(f"profile {pid} was busy while uploading; try again")
            if not self.meta.create(record):  # only if a lease expired under a slow upload
                raise ShareError("the profile changed while uploading; try again", 409)
            self._present[pid] = time.monotonic()
            self.views.remember_slot(pid, slot)  # it holds the profile decoded
            return Upload(record, created=True, delete_token=token)

    def _validate(
        self, path: Path, made: Path, slot: int, strip: pprof.StripSpec | None = None
    ) -> dict[str, Any]:
        """The profile's id, record fields and blob (None: the upload as is, else written to
        made), from a compute process reading path: the web tier never holds the profile."""
        job = {"op": "ingest", "path": str(path), "blob_path": str(made),
               "strip": strip or None, **self._job}  # fmt: skip
        try:
            return self.compute.run(job, slot=slot)
        except AnalysisFailed as exc:
            if exc.kind == "time":
                raise ShareError(
                    f"validating the profile took longer than {self.compute.seconds:g} s "
                    "(SHARE_ANALYSIS_SECONDS); nothing was stored",
                    422,
                ) from None
            if exc.kind == "memory":
                raise TooLarge(
                    f"{exc.message.replace('the analysis', 'the profile')}; nothing was stored"
                ) from None
            raise

    def _again(self, record: Record, blob: Path, expires_at: float | None) -> Upload:
        """A profile we already have: keep one copy, extend its life to the later expiry."""
        record.expires_at = self.meta.extend_expiry(record.id, expires_at)
        if not self.blobs.exists(record.id):  # lost by the store: put it back
            self.blobs.put_file(record.id, blob)
        return Upload(record, created=False, delete_token=None)

    @contextmanager
    def _exclusive(self, pid: str) -> Iterator[Any]:
        """Hold the profile's lease (store.lease: short, renewed while held, so a killed
        holder frees it in seconds): uploads, deletes and purges of one id take turns, so a
        delete never removes the blob of an upload that was answered 201."""
        with self.leases.hold(pid, f"profile {pid}") as lease:
            yield lease

    # --- reading ------------------------------------------------------------------------
    def _lookup(self, pid: str, now: float) -> tuple[Record | None, bool]:
        """(the record if live, whether the profile has expired and awaits purging)."""
        record = self.meta.load(pid)
        if record is not None and (record.expires_at is None or record.expires_at > now):
            return record, False
        expiry = record.expires_at if record is not None else self.meta.expiry_of(pid)
        return None, expiry is not None and expiry <= now

    def _live_record(self, pid: str, now: float) -> Record | None:
        """Under the lease: the record if it has not expired; an expired one is removed."""
        record, expired = self._lookup(pid, now)
        if expired:
            self._purge_held(pid, now)
        return record

    def record(self, pid: str) -> Record:
        """The record of a live profile; NotFound, or Gone once it has expired."""
        now = self.clock()
        record, expired = self._lookup(pid, now)
        if record is not None:
            return record
        if expired:
            self.purge(pid, now)
            raise Gone(f"profile {pid} has expired")
        raise NotFound(f"no profile with id {pid}")

    @staticmethod
    def _missing(pid: str) -> Gone:
        return Gone(
            f"profile {pid}: the stored profile is missing; uploading the same file again "
            "restores it"
        )

    def available(self, pid: str) -> Record:
        """The record of a live profile whose blob is stored; Gone when the blob was lost, so
        the page and every view answer alike (a re-upload of the same bytes heals it)."""
        record = self.record(pid)
        seen = self._present.get(pid)
        if seen is None or time.monotonic() - seen > PRESENT_SECONDS:
            if not self.blobs.exists(pid):
                self._present.pop(pid, None)
                raise self._missing(pid)
            if len(self._present) > 10_000:
                self._present.clear()
            self._present[pid] = time.monotonic()
        return record

    def raw_gzip(self, pid: str) -> bytes:
        """The stored profile, gzip-compressed."""
        self.record(pid)
        try:
            return self.blobs.get(pid)
        except FileNotFoundError:
            self._present.pop(pid, None)
            raise self._missing(pid) from None

    def cached_view(
        self, pid: str, name: str, options: dict[str, Any], bases: tuple[str, ...] = ()
    ) -> bytes | None:
        """The view if it is already computed, else None — never waiting for an analysis
        (a page renders at once; its script asks for what is missing)."""
        self.record(pid)
        return self.views.cached(pid, name, options, bases)

    def view(
        self, pid: str, name: str, options: dict[str, Any], bases: tuple[str, ...] = ()
    ) -> bytes:
        """A view of a live profile (and of the bases a diff reads), gzip-compressed:
        computed once in the compute tier, then cached (compute.service)."""
        records = [self.record(pid), *map(self.record, bases)]
        if bases:
            self.merges.check("a diff", len(records), sum(r.size_bytes for r in records))
        return self.views.view(pid, name, options, bases)

    def progress(self, pid: str) -> dict[str, Any]:
        """What a slow first view of the profile is doing now (stage None: nothing)."""
        self.record(pid)
        return self.views.progress(pid)

    # --- combining ----------------------------------------------------------------------
    def merge(
        self,
        sources: Sequence[str | tuple[str, Path]],
        *,
        title: str = "",
        expires: str | None = None,
    ) -> Upload:
        """Merge stored profiles (ids) and files ((name, spool file path)), in order, as
        `go tool pprof -proto` merges them (compute.merges), and store it as any upload is."""
        data, default_title = self.merges.run(sources, self.record)
        return self.upload(data, title=(title.strip() or default_title)[:200], expires=expires)

    # --- removal ------------------------------------------------------------------------
    def delete(self, pid: str, token: str | None) -> None:
        """Remove a profile for whoever holds its delete token."""
        self.record(pid)
        with self._exclusive(pid):
            record = self.meta.load(pid)  # again, under the lease: it may have changed
            if record is None:
                raise NotFound(f"no profile with id {pid}")
            if not token or not hmac.compare_digest(token_hash(token), record.delete_token_hash):
                raise Forbidden(
                    "wrong or missing delete token (send it in the X-Delete-Token header)"
                )
            if self.meta.delete(pid):
                self.blobs.delete(pid)

    def purge(self, pid: str, now: float) -> bool:
        """Remove an expired profile from both stores; a concurrent extension wins."""
        with self._exclusive(pid):
            return self._purge_held(pid, now)

    def _purge_held(self, pid: str, now: float) -> bool:
        if self.meta.delete(pid, only_if_expired_at=now):
            self.blobs.delete(pid)
            return True
        return False

    def prune(self) -> int:
        """Remove every expired profile; safe to run from cron while the service runs."""
        now = self.clock()
        return sum(self.purge(pid, now) for pid in self.meta.expired(now))

    # --- consistency --------------------------------------------------------------------
    def fsck(self, repair: bool = False) -> Fsck:
        """Records without blobs and blobs without records; with repair, remove them. Safe
        while the service runs: each is checked again under its lease, which an upload holds
        from blob to record. A blob still in the expiry index awaits prune: no orphan."""
        records, stored = set(self.meta.ids()), set(self.blobs.keys())
        found = Fsck()
        for pid in sorted(records - stored):
            with self._exclusive(pid):
                if self.meta.load(pid) is not None and not self.blobs.exists(pid):
                    found.records_without_blobs.append(pid)
                    if repair:
                        self.meta.delete(pid)
        for key in sorted(stored - records):
            if len(key) != ID_LENGTH:
                continue  # not a profile of ours
            with self._exclusive(key):
                if self.meta.load(key) is None and self.meta.expiry_of(key) is None:
                    found.blobs_without_records.append(key)
                    if repair:
                        self.blobs.delete(key)
        return found


@dataclass
class Fsck:
    """What fsck found (and, with repair, removed)."""

    records_without_blobs: list[str] = field(default_factory=list)
    blobs_without_records: list[str] = field(default_factory=list)
