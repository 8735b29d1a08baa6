"""Share: upload, fetch, delete and prune profiles. No Flask here: the web views, the JSON API
and the CLI all call this one core, and none of them touches a store."""

from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from . import metrics, pprof
from .analysis import options as view_options
from .analysis import views
from .config import ConfigError, parse_duration
from .errors import BadProfile, Forbidden, Gone, NotFound, ShareError, StoreUnavailable, TooLarge
from .store import blobs, locate, meta
from .store.blobs import BlobStore
from .store.guard import guard
from .store.lease import Busy, Leases
from .store.meta import MetaStore, Record

ID_LENGTH = 16  # base64url characters: 96 bits of SHA-256
PRESENT_SECONDS = 5  # a blob seen present is not looked for again (S3 HEAD) for this long
VIEW_GZIP_LEVEL = 6  # paid once per view; level 9 took 3-6x as long for 3-17% fewer bytes


@dataclass
class Upload:
    """The outcome of an upload: the record, whether it was new, and (only then) the token."""

    record: Record
    created: bool
    delete_token: str | None


def profile_id(raw: bytes) -> str:
    """The id of a profile: the first 96 bits of SHA-256 of its decompressed bytes, URL-safe."""
    digest = hashlib.sha256(raw).digest()
    return base64.urlsafe_b64encode(digest).decode()[:ID_LENGTH]


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


def _last(value: Any) -> int:
    """A scalar field that the decoder may keep as a list of every occurrence."""
    if isinstance(value, int):
        return value
    return int(value[-1]) if len(value) else 0


def summarize(parsed: pprof.ParsedProfile) -> dict[str, Any]:
    """The informational fields of a profile, for the record and the metadata panel."""
    message, string = parsed.message, parsed.string
    period_type = message.period_type if message.HasField("period_type") else None
    return {
        "period": message.period,
        "period_type": (
            {"type": string(period_type.type), "unit": string(period_type.unit)}
            if period_type
            else None
        ),
        "time_nanos": _last(message.time_nanos),
        "duration_nanos": message.duration_nanos,
        "comments": [string(i) for i in message.comment],
        "drop_frames": string(message.drop_frames),
        "keep_frames": string(message.keep_frames),
        "doc_url": string(message.doc_url),
        "mappings": [
            {
                "filename": string(m.filename),
                "build_id": string(m.build_id),
                "has_functions": m.has_functions,
            }
            for m in message.mapping
        ],
    }


def open_share(settings: dict[str, Any], *, create: bool = True, check: bool = True) -> Share:
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
        blob_store = blobs.from_url(settings["BLOBS"], timeout=timeout)
    except ValueError as exc:
        raise ConfigError(f"SHARE_BLOBS={settings['BLOBS']!r}: {exc}") from None
    meta_store = meta.from_url(settings["META"], timeout=timeout)
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
    )


class Share:
    """The service: profiles in a BlobStore (gzip, keyed by id), records in a MetaStore."""

    def __init__(
        self,
        blobs: BlobStore,
        meta: MetaStore,
        settings: dict[str, Any],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.blobs = blobs
        self.meta = meta
        self.settings = settings
        self.clock = clock
        self.leases = Leases(meta)
        self._present: dict[str, float] = {}  # id -> when its blob was last seen (monotonic)

    def close(self) -> None:
        """Let go of store connections (the CLI does before gunicorn forks its workers)."""
        self.meta.close()

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
    def upload(self, data: bytes, *, title: str = "", expires: str | None = None) -> Upload:
        """Validate, deduplicate and store a profile; the blob is written before its record."""
        limit = self.settings["MAX_UPLOAD_BYTES"]
        if len(data) > limit:
            raise TooLarge(
                f"upload is {human_bytes(len(data))}, over the limit of {human_bytes(limit)} "
                "(SHARE_MAX_UPLOAD_BYTES)"
            )
        seconds = self.expiry_seconds(expires)
        parsed = pprof.parse(data, max_profile_bytes=self.settings["MAX_PROFILE_BYTES"])
        try:
            return self._store(parsed, data, title, seconds)
        except StoreUnavailable as exc:  # the blob may be written, never a record without it
            raise exc.nothing_stored() from exc

    def _store(
        self, parsed: pprof.ParsedProfile, data: bytes, title: str, seconds: int | None
    ) -> Upload:
        """The store half of an upload: under the profile's lease, the blob, then its record."""
        pid = profile_id(parsed.raw)
        with self._exclusive(pid) as lease:
            now = self.clock()
            expires_at = None if seconds is None else now + seconds
            existing = self._live_record(pid, now)
            if existing is not None:
                return self._again(existing, parsed, data, expires_at)
            blob = self._blob(parsed, data)
            self.blobs.put(pid, blob)
            token = new_token()
            record = Record(
                id=pid,
                sha256=hashlib.sha256(parsed.raw).hexdigest(),
                title=title.strip()[:200],
                size_bytes=len(parsed.raw),
                stored_bytes=len(blob),
                created_at=now,
                expires_at=expires_at,
                delete_token_hash=token_hash(token),
                sample_types=[list(t) for t in parsed.sample_types()],
                default_sample_type=parsed.default_sample_type(),
                n_samples=parsed.n_samples,
                n_locations=parsed.n_locations,
                n_functions=parsed.n_functions,
                metadata=summarize(parsed),
            )
            if not lease.held():  # lapsed while the store did not answer: take no chances
                raise Busy(f"profile {pid} was busy while uploading; try again")
            if not self.meta.create(record):  # only if a lease expired under a slow upload
                raise ShareError("the profile changed while uploading; try again", 409)
            return Upload(record, created=True, delete_token=token)

    @staticmethod
    def _blob(parsed: pprof.ParsedProfile, data: bytes) -> bytes:
        """What we store: the upload itself when it is gzip, else its gzip."""
        return data if parsed.was_gzip else gzip.compress(parsed.raw, compresslevel=6)

    def _again(
        self, record: Record, parsed: pprof.ParsedProfile, data: bytes, expires_at: float | None
    ) -> Upload:
        """A profile we already have: keep one copy, extend its life to the later expiry."""
        record.expires_at = self.meta.extend_expiry(record.id, expires_at)
        if not self.blobs.exists(record.id):  # lost by the store: put it back
            self.blobs.put(record.id, self._blob(parsed, data))
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

    def profile(self, pid: str) -> pprof.ParsedProfile:
        """The stored profile, parsed."""
        data = self.raw_gzip(pid)
        try:
            return pprof.parse(data, max_profile_bytes=max(self.settings["MAX_PROFILE_BYTES"], 1))
        except (BadProfile, TooLarge) as exc:  # stored under older, laxer rules or limits
            raise ShareError(f"stored profile {pid} cannot be read: {exc.message}", 500) from exc

    def view(self, pid: str, name: str, options: dict[str, Any]) -> bytes:
        """A view of a profile (analysis.views), gzip-compressed: computed once, then served
        from the metadata store. Options are canonical (analysis.options.parse)."""
        self.record(pid)
        key = f"{view_options.key(name, options)}:{views.VERSION}"
        cached = self.meta.view_get(pid, key)
        metrics.cache(hit=cached is not None)
        if cached is not None:
            return cached
        with metrics.analysis(name):
            body = views.render(name, [self.profile(pid)], options)
        data = gzip.compress(body, compresslevel=VIEW_GZIP_LEVEL, mtime=0)
        self.meta.view_put(pid, key, data)
        return data

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
