"""Share: upload, fetch, view, merge, delete and prune profiles. No Flask here: the web views,
the JSON API and the CLI all call this one core, and none of them touches a store."""

from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from . import pprof
from .analysis import combine, views
from .analysis import options as view_options
from .config import ConfigError, parse_duration
from .errors import BadProfile, Forbidden, Gone, NotFound, ShareError, TooLarge
from .store import blobs, meta
from .store.blobs import BlobStore
from .store.meta import MetaStore, Record

ID_LENGTH = 16  # base64url characters: 96 bits of SHA-256
LOCK_LEASE_SECONDS = 60  # a crashed holder's lease lapses after this
LOCK_WAIT_SECONDS = 30  # how long an upload or delete waits for the lease before a 503
VIEW_GZIP_LEVEL = 6  # paid once per view; level 9 took 3-6x as long for 3-17% fewer bytes
MERGE_GZIP_LEVEL = 1  # a merge is stored as go tool pprof -proto writes it: gzip BestSpeed


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


def open_share(settings: dict[str, Any]) -> Share:
    """The core on the stores that settings name; raises ConfigError when one is unusable."""
    try:
        blob_store = blobs.from_url(settings["BLOBS"])
    except ValueError as exc:
        raise ConfigError(f"SHARE_BLOBS={settings['BLOBS']!r}: {exc}") from None
    meta_store = meta.from_url(settings["META"])
    for name, store in (("SHARE_BLOBS", blob_store), ("SHARE_META", meta_store)):
        try:
            store.check()
        except OSError as exc:
            raise ConfigError(f"{name}={settings[name[6:]]!r}: {exc}") from None
    return Share(blob_store, meta_store, settings)


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
        pid = profile_id(parsed.raw)
        with self._exclusive(pid):
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

    def profile(self, pid: str) -> pprof.ParsedProfile:
        """The stored profile, parsed."""
        data = self.raw_gzip(pid)
        try:
            return pprof.parse(data, max_profile_bytes=max(self.settings["MAX_PROFILE_BYTES"], 1))
        except (BadProfile, TooLarge) as exc:  # stored under older, laxer rules or limits
            raise ShareError(f"stored profile {pid} cannot be read: {exc.message}", 500) from exc

    def view(self, pid: str, name: str, options: dict[str, Any]) -> bytes:
        """A view of a profile (analysis.views), gzip-compressed: computed once, then served
        from the metadata store. Options are canonical (analysis.options.parse); those of a
        diff name its bases, which must be live too."""
        bases = view_options.bases(options)
        records = [self.record(pid), *map(self.record, bases)]
        self._check_size("a diff", len(records), sum(r.size_bytes for r in records))
        key = f"{view_options.key(name, options)}:{views.VERSION}"
        cached = self.meta.view_get(pid, key)
        if cached is not None:
            return cached
        body = views.render(name, [self.profile(pid), *map(self.profile, bases)], options)
        data = gzip.compress(body, compresslevel=VIEW_GZIP_LEVEL, mtime=0)
        self.meta.view_put(pid, key, data)
        return data

    # --- combining ----------------------------------------------------------------------
    def _check_size(self, what: str, count: int, total: int = 0) -> None:
        """Refuse to combine more profiles, or more bytes (decompressed), than the settings
        allow."""
        most, limit = self.settings["MERGE_MAX_PROFILES"], self.settings["MERGE_MAX_BYTES"]
        if count > most:
            raise TooLarge(
                f"{what} of {count} profiles is over the limit of {most} (SHARE_MERGE_MAX_PROFILES)"
            )
        if total > limit:
            raise TooLarge(
                f"{what} of {human_bytes(total)} of profiles (decompressed) is over the limit of "
                f"{human_bytes(limit)} (SHARE_MERGE_MAX_BYTES)"
            )

    def merge(
        self,
        sources: Sequence[str | tuple[str, bytes]],
        *,
        title: str = "",
        expires: str | None = None,
    ) -> Upload:
        """Merge stored profiles (ids) and uploaded files ((name, bytes)), in order, as
        `go tool pprof -proto` merges them, and store the result as a new upload."""
        if not sources:
            raise ShareError("nothing to merge: give profile ids or links, or files")
        self._check_size("a merge", len(sources))
        parsed, names, refs, total = [], [], [], 0
        for source in sources:
            if isinstance(source, str):
                names.append(self.record(source).title or source)
                refs.append(source)
                parsed.append(self.profile(source))
            else:
                names.append(source[0] or f"file {len(names) + 1}")
                refs.append(names[-1])
                try:
                    parsed.append(
                        pprof.parse(source[1], max_profile_bytes=self.settings["MAX_PROFILE_BYTES"])
                    )
                except BadProfile as exc:
                    raise BadProfile(f"{names[-1]}: {exc.message}") from None
            total += len(parsed[-1].raw)
            self._check_size("a merge", len(sources), total)
        comment = f"# pprof-share: merged from {len(sources)} profiles: {', '.join(refs)}"
        raw = combine.merged_profile(parsed, comment[:4000])
        data = gzip.compress(raw, compresslevel=MERGE_GZIP_LEVEL, mtime=0)
        title = title.strip() or "merge of " + ", ".join(names)
        return self.upload(data, title=title[:200], expires=expires)

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
