"""Share: upload, fetch, delete and prune profiles. No Flask here: the web views, the JSON API
and the CLI all call this one core, and none of them touches a store."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from . import pprof
from .analysis import options as view_options
from .analysis import views
from .compute import progress as view_progress
from .compute.once import Once
from .compute.pool import AnalysisFailed, ComputePool, job_settings
from .compute.progress import Progress
from .config import ConfigError, parse_duration
from .errors import Forbidden, Gone, NotFound, ShareError, TooLarge
from .store import blobs, meta
from .store.blobs import BlobStore
from .store.meta import MetaStore, Record

LOCK_LEASE_SECONDS = 60  # a crashed holder's lease lapses after this
LOCK_WAIT_SECONDS = 30  # how long an upload or delete waits for the lease before a 503
AFFINITY_KEY = "compute-slot"  # in the view cache: where the profile was validated
# Followers of a view wait this much longer than the analysis may take (queueing, storing).
VIEW_WAIT_MARGIN_SECONDS = 10


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


def human_bytes(n: int) -> str:
    """64 MiB, 512 KiB, 100 bytes: limits as people read them."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def open_share(settings: dict[str, Any], compute: ComputePool | None = None) -> Share:
    """The core on the stores that settings name; raises ConfigError when one is unusable."""
    try:
        blob_store = blobs.from_url(settings["BLOBS"])
    except ValueError as exc:
        raise ConfigError(f"SHARE_BLOBS={settings['BLOBS']!r}: {exc}") from None
    meta_store = meta.from_url(settings["META"], settings["VIEW_CACHE_BYTES"])
    for name, store in (("SHARE_BLOBS", blob_store), ("SHARE_META", meta_store)):
        try:
            store.check()
        except OSError as exc:
            raise ConfigError(f"{name}={settings[name[6:]]!r}: {exc}") from None
    return Share(blob_store, meta_store, settings, compute=compute)


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
        self.blobs = blobs
        self.meta = meta
        self.settings = settings
        self.clock = clock
        # Processes start on first use; one pool may serve several apps (tests share one).
        self.compute = compute if compute is not None else ComputePool(settings)
        self.once = Once(meta)
        self._job = job_settings(settings)

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
        data: bytes,
        *,
        title: str = "",
        expires: str | None = None,
        strip: pprof.StripSpec | None = None,
    ) -> Upload:
        """Validate, deduplicate and store a profile; the blob is written before its record.
        With strip, what is stored (and hashed for the id) is the profile without those parts
        (share.pprof.strip, applied in the compute process before hashing)."""
        limit = self.settings["MAX_UPLOAD_BYTES"]
        if len(data) > limit:
            raise TooLarge(
                f"upload is {human_bytes(len(data))}, over the limit of {human_bytes(limit)} "
                "(SHARE_MAX_UPLOAD_BYTES)"
            )
        seconds = self.expiry_seconds(expires)
        slot = self.compute.next_slot()
        facts = self._validate(data, slot, strip)
        pid = facts["id"]
        blob = facts["blob"] if facts["blob"] is not None else data
        with self._exclusive(pid):
            now = self.clock()
            expires_at = None if seconds is None else now + seconds
            existing = self._live_record(pid, now)
            if existing is not None:
                return self._again(existing, blob, expires_at)
            self.blobs.put(pid, blob)
            token = new_token()
            record = Record(
                id=pid,
                sha256=facts["sha256"],
                title=title.strip()[:200],
                size_bytes=facts["size_bytes"],
                stored_bytes=len(blob),
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
            if not self.meta.create(record):  # only if a lease expired under a slow upload
                raise ShareError("the profile changed while uploading; try again", 409)
            # The process that validated it holds it decoded: its first views go there.
            self.meta.view_put(pid, AFFINITY_KEY, str(slot).encode())
            return Upload(record, created=True, delete_token=token)

    def _validate(
        self, data: bytes, slot: int, strip: pprof.StripSpec | None = None
    ) -> dict[str, Any]:
        """The profile's id, record fields and blob (None: the upload as is), from a compute
        process: the web tier never holds the decompressed profile, whatever it inflates to."""
        job = {"op": "ingest", "data": data, "strip": strip or None, **self._job}
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

    def _again(self, record: Record, blob: bytes, expires_at: float | None) -> Upload:
        """A profile we already have: keep one copy, extend its life to the later expiry."""
        record.expires_at = self.meta.extend_expiry(record.id, expires_at)
        if not self.blobs.exists(record.id):  # lost by the store: put it back
            self.blobs.put(record.id, blob)
        return Upload(record, created=False, delete_token=None)

    @contextmanager
    def _exclusive(self, pid: str) -> Iterator[None]:
        """Hold the profile's lease: uploads, deletes and purges of one id take turns, so a
        delete never removes the blob of an upload that was answered 201."""
        token = secrets.token_hex(8)
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        pause = 0.002
        while not self.meta.try_lock(pid, token, LOCK_LEASE_SECONDS):
            if time.monotonic() > deadline:
                raise ShareError(f"profile {pid} is busy; try again", 503)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        try:
            yield
        finally:
            self.meta.unlock(pid, token)

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

    def raw_gzip(self, pid: str) -> bytes:
        """The stored profile, gzip-compressed."""
        self.record(pid)
        try:
            return self.blobs.get(pid)
        except FileNotFoundError:
            raise NotFound(f"no profile with id {pid}") from None

    def cached_view(
        self, pid: str, name: str, options: dict[str, Any], bases: tuple[str, ...] = ()
    ) -> bytes | None:
        """The view if it is already computed, else None — never waiting for an analysis
        (a page renders at once; its script asks for what is missing)."""
        self.record(pid)
        return self.meta.view_get(pid, self._view_key(name, options, bases))

    def _view_key(self, name: str, options: dict[str, Any], bases: tuple[str, ...]) -> str:
        return f"{view_options.key(name, options)}:{'+'.join(bases)}:{views.VERSION}"

    def _affinity(self, pid: str) -> int | None:
        """The compute process that validated the profile (and may hold it decoded)."""
        slot = self.meta.view_get(pid, AFFINITY_KEY)
        if slot is None or not slot.isdigit() or int(slot) >= self.compute.size:
            return None
        return int(slot)

    def view(
        self, pid: str, name: str, options: dict[str, Any], bases: tuple[str, ...] = ()
    ) -> bytes:
        """A view of a profile (analysis.views), gzip-compressed. Computed once in the compute
        tier — concurrent requests wait for that one computation — then served from the
        metadata store. A view that ran out of time or memory answers its failure for
        SHARE_ANALYSIS_FAILURE_SECONDS without being tried again. Options are canonical
        (analysis.options.parse); bases are the other profiles a diff view reads."""
        self.record(pid)
        for base in bases:
            self.record(base)
        key = self._view_key(name, options, bases)
        failed_key = "failed:" + key

        def cached() -> bytes | None:
            data = self.meta.view_get(pid, key)
            if data is not None:
                return data
            failure = self.meta.view_get(pid, failed_key)
            if failure is not None:
                known = json.loads(failure)
                age = self.clock() - known["at"]
                if age < self.settings["ANALYSIS_FAILURE_SECONDS"]:
                    raise ShareError(
                        f"{known['message']} (when tried {age:.0f} s ago; not tried again "
                        f"for {self.settings['ANALYSIS_FAILURE_SECONDS']} s)",
                        known["code"],
                    )
            return None

        def compute() -> bytes:
            job = {"op": "view", "pid": pid, "bases": list(bases), "name": name,
                   "options": options, **self._job}  # fmt: skip
            try:
                with Progress(self.meta, pid, name) as stages:
                    slot = self._affinity(pid)
                    data = self.compute.run(job, profile=pid, slot=slot, progress=stages)
            except AnalysisFailed as exc:
                if exc.kind != "died":  # a killed process may do better on retry
                    failure = {"at": self.clock(), "code": exc.code, "message": exc.message}
                    self.meta.view_put(pid, failed_key, json.dumps(failure).encode())
                raise
            self.meta.view_put(pid, key, data)
            return data

        lease = f"{pid}:view:{hashlib.sha256(key.encode()).hexdigest()[:16]}"
        wait = self.compute.seconds + VIEW_WAIT_MARGIN_SECONDS
        return self.once.run(f"{pid}:{key}", lease, cached, compute, wait)

    def progress(self, pid: str) -> dict[str, Any]:
        """What a slow first view of the profile is doing now (stage None: nothing)."""
        self.record(pid)
        return view_progress.read(self.meta, pid, self.compute.seconds + VIEW_WAIT_MARGIN_SECONDS)

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
