"""Every setting of pprof-share, with its default. Read once by create_app; no I/O here.

Each setting can be given in the environment as SHARE_<NAME> (see README.md) or passed to
create_app() in a mapping.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

MiB = 1024 * 1024

DEFAULTS: dict[str, Any] = {
    # Where blobs live: file:PATH (single-machine default) or s3://BUCKET[/PREFIX].
    "BLOBS": "file:./data/blobs",
    # Where records live: sqlite:PATH (single-machine default), redis://… / rediss://…, or a
    # Redis Cluster: redis-cluster://HOST:PORT[,HOST:PORT…].
    "META": "sqlite:./data/meta.sqlite3",
    # Base of the links we hand out (set it behind a proxy); empty = taken from the request.
    "PUBLIC_URL": "",
    # Largest upload accepted, as sent (compressed), in bytes.
    "MAX_UPLOAD_BYTES": 64 * MiB,
    # Largest profile accepted once decompressed, in bytes (stops gzip bombs while inflating).
    "MAX_PROFILE_BYTES": 512 * MiB,
    # Expiry of an upload that names none: a duration such as 7d, or "never".
    "DEFAULT_EXPIRY": "30d",
    # Longest expiry an uploader may ask for: a duration, or "never" for no limit.
    "MAX_EXPIRY": "never",
    # Compute processes per app instance for parsing and analysis (0: one per CPU).
    "ANALYSIS_WORKERS": 0,
    # Compute processes per app instance that only validate uploads, so that an upload never
    # waits behind an analysis or a merge (0: uploads are validated on the analysis processes).
    "INGEST_WORKERS": 1,
    # Compute processes per app instance that only merge (/api/v1/merge, a collection's blocks
    # and selections), so that a view never waits behind a merge (0: merges run on the analysis
    # processes).
    "MERGE_WORKERS": 1,
    # Wall time one parse or analysis may take; past it its process is killed and replaced.
    "ANALYSIS_SECONDS": 30,
    # Address space of each compute process (RLIMIT_AS); past it the job fails clearly.
    "ANALYSIS_MEMORY": 2048 * MiB,
    # Decoded profiles each compute process keeps warm for the next question, in bytes.
    "ANALYSIS_CACHE_BYTES": 512 * MiB,
    # How long a view that failed (too slow, too big) answers its failure without retrying.
    "ANALYSIS_FAILURE_SECONDS": 600,
    # "on": right after an upload, compute the views its page asks for first (flame graph,
    # top, summary) in the background, at lower priority than views someone waits for.
    "PRECOMPUTE": "on",
    # Total bytes of cached views in the metadata store; least recently used go first.
    "VIEW_CACHE_BYTES": 256 * MiB,
    # Most elements one profile may hold (real ones hold ~10x less): refused at upload.
    "MAX_SAMPLES": 4_000_000,
    "MAX_LOCATIONS": 1_000_000,
    "MAX_FUNCTIONS": 1_000_000,
    "MAX_MAPPINGS": 100_000,
    "MAX_STRINGS": 4_000_000,
    "MAX_LABELS": 20_000_000,
    "MAX_FRAMES": 50_000_000,
    # Who may frame /<id>/embed: * (anyone) or origins separated by spaces (https://wiki.example).
    "EMBED_FRAME_ANCESTORS": "*",
    # The speedscope the page's "Open in speedscope" link opens (a self-hosted build works).
    "SPEEDSCOPE_URL": "https://www.speedscope.app/",
    # Seconds a store call (S3, Redis, SQLite's lock) may take before it fails with a 503.
    "STORE_TIMEOUT": 5.0,
    # Seconds a client may send nothing (headers, body) before its connection is dropped.
    "CLIENT_TIMEOUT": 30.0,
    # Per client address: new uploads, uploaded bytes, delete attempts ("off": no limit).
    "RATE_UPLOADS": "60/minute",
    "RATE_UPLOAD_BYTES": "2GiB/hour",
    "RATE_DELETES": "30/minute",
    # Addresses or networks (comma-separated) of proxies whose X-Forwarded-For is believed.
    "TRUSTED_PROXIES": "",
    # When set, uploads need `Authorization: Bearer <this>`; reading links stays open.
    "UPLOAD_TOKEN": "",
    # Hosts (comma-separated, "*" for any) whose Host header may build links when PUBLIC_URL is
    # unset; empty = loopback names only.
    "ALLOWED_HOSTS": "",
    # Most profiles one merge may combine, or one diff (the profile and its bases).
    "MERGE_MAX_PROFILES": 64,
    # Largest total size, decompressed, of the profiles one merge or diff combines, in bytes.
    "MERGE_MAX_BYTES": 512 * MiB,
    # Most members one collection may hold (an add past it is a 413); retention prunes them.
    "COLLECTION_MAX_MEMBERS": 200_000,
    # Longest a collection view waits for its merges (a first look at a long range of a label
    # selection): past it a 503 with Retry-After, the merges going on for the next ask. Under
    # the balancer's timeout, which would cut the answer off with a 504.
    "COLLECTION_VIEW_SECONDS": 45.0,
}

_INT_SETTINGS = {
    "MAX_UPLOAD_BYTES",
    "MAX_PROFILE_BYTES",
    "ANALYSIS_MEMORY",
    "ANALYSIS_CACHE_BYTES",
    "ANALYSIS_FAILURE_SECONDS",
    "VIEW_CACHE_BYTES",
    *(f"MAX_{k}" for k in ("SAMPLES", "LOCATIONS", "FUNCTIONS", "MAPPINGS", "STRINGS")),
    "MAX_LABELS",
    "MAX_FRAMES",
    "MERGE_MAX_PROFILES",
    "MERGE_MAX_BYTES",
    "COLLECTION_MAX_MEMBERS",
}
_SIZE = re.compile(r"^\s*(\d+)\s*(|k|m|g|kib|mib|gib|kb|mb|gb)\s*$", re.I)
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdwy])\s*$")
# A CSP source: *, 'self', or scheme://host[:port] with an optional *. subdomain wildcard.
_ANCESTOR = re.compile(r"^(\*|'self'|https?://(\*\.)?[A-Za-z0-9.-]+(:\d+)?)$")

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
_SECONDS_SETTINGS = {"STORE_TIMEOUT", "CLIENT_TIMEOUT", "COLLECTION_VIEW_SECONDS"}
_RATE_SETTINGS = {"RATE_UPLOADS", "RATE_UPLOAD_BYTES", "RATE_DELETES"}
_RATE = re.compile(
    r"^\s*(\d+)\s*([KMG]i?B?|B|bytes)?\s*(?:/|per)\s*(second|minute|hour|day)\s*$", re.I
)
_SIZES = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the variable and the problem."""


def parse_duration(text: str) -> int | None:
    """Seconds in '90s', '1h', '7d', '2w', '1y'; None for 'never'. Raises ValueError."""
    text = text.strip().lower()
    if text in ("never", "forever", "0"):
        return None
    match = _DURATION.match(text)
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"{text!r} is not a duration like 1h, 7d, 30d or never")
    return int(match.group(1)) * _UNITS[match.group(2)]


def human_bytes(n: int) -> str:
    """64 MiB, 512 KiB, 100 bytes: limits as people read them (parse_size the other way)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def parse_size(value: Any) -> int:
    """1048576, '512MiB', '2G', '64k' -> bytes (or a plain count). Raises ValueError."""
    if isinstance(value, int):
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(value)
    return int(match.group(1)) * _SIZE_UNITS[match.group(2)[:1].lower()]


def parse_rate(text: str) -> tuple[int, str] | None:
    """'60/minute' -> (60, 'minute'); '2GiB/hour' -> (2147483648, 'hour'); None for 'off'."""
    text = str(text).strip()
    if text.lower() in ("off", "none", "0", ""):
        return None
    match = _RATE.match(text)
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"{text!r} is not a rate like 60/minute, 2GiB/hour or off")
    unit = (match.group(2) or "").lower()
    return int(match.group(1)) * _SIZES[unit[:1]], match.group(3).lower()


def host_list(text: str) -> tuple[str, ...]:
    """A comma-separated list of hosts or networks, as given (lower case, no blanks)."""
    return tuple(part.strip().lower() for part in str(text).split(",") if part.strip())


def _processes(settings: Mapping[str, Any], name: str, zero: str) -> int:
    """A count of compute processes: an integer >= 0 (zero meaning `zero`)."""
    value = settings[name]
    try:
        count = int(value)
        if count < 0:
            raise ValueError
        return count
    except (TypeError, ValueError):
        raise ConfigError(
            f"SHARE_{name}={value!r}: expected a number of processes (0: {zero})"
        ) from None


def load(environ: Mapping[str, str], overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, then SHARE_* variables of environ, then overrides; checked and typed."""
    settings = dict(DEFAULTS)
    for name in DEFAULTS:
        if f"SHARE_{name}" in environ:
            settings[name] = environ[f"SHARE_{name}"]
    settings.update(overrides or {})
    for name in _INT_SETTINGS:
        try:
            settings[name] = parse_size(settings[name])
            if settings[name] <= 0:
                raise ValueError
        except (TypeError, ValueError):
            what = "bytes" if "BYTES" in name or name.endswith("MEMORY") else "seconds"
            what = what if not name.startswith("MAX_") or "BYTES" in name else "elements"
            what = "profiles" if name == "MERGE_MAX_PROFILES" else what
            raise ConfigError(
                f"SHARE_{name}={settings[name]!r}: expected a positive number of {what}"
            ) from None
    try:
        settings["ANALYSIS_SECONDS"] = float(settings["ANALYSIS_SECONDS"])
        if not 0 < settings["ANALYSIS_SECONDS"] < 1e9:
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError(
            f"SHARE_ANALYSIS_SECONDS={settings['ANALYSIS_SECONDS']!r}: expected a positive "
            "number of seconds"
        ) from None
    settings["ANALYSIS_WORKERS"] = _processes(settings, "ANALYSIS_WORKERS", "one per CPU")
    settings["INGEST_WORKERS"] = _processes(
        settings, "INGEST_WORKERS", "uploads are validated on the analysis processes"
    )
    settings["MERGE_WORKERS"] = _processes(
        settings, "MERGE_WORKERS", "merges run on the analysis processes"
    )
    precompute = str(settings["PRECOMPUTE"]).strip().lower()
    if precompute not in ("on", "off"):
        raise ConfigError(f"SHARE_PRECOMPUTE={settings['PRECOMPUTE']!r}: expected on or off")
    settings["PRECOMPUTE"] = precompute
    for name in _SECONDS_SETTINGS:
        try:
            settings[name] = float(settings[name])
            if not settings[name] > 0:
                raise ValueError
        except (TypeError, ValueError):
            raise ConfigError(
                f"SHARE_{name}={settings[name]!r}: expected a positive number of seconds"
            ) from None
    for name in _RATE_SETTINGS:
        try:
            parse_rate(settings[name])
        except ValueError as exc:
            raise ConfigError(f"SHARE_{name}: {exc}") from None
    for network in host_list(settings["TRUSTED_PROXIES"]):
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ConfigError(
                f"SHARE_TRUSTED_PROXIES: {network!r} is not an address or network (10.0.0.0/8)"
            ) from None
    for name in ("DEFAULT_EXPIRY", "MAX_EXPIRY"):
        try:
            parse_duration(str(settings[name]))
        except ValueError as exc:
            raise ConfigError(f"SHARE_{name}: {exc}") from None
    blobs, meta = str(settings["BLOBS"]), str(settings["META"])
    if not (blobs.startswith("file:") or blobs.startswith("s3://")):
        raise ConfigError(f"SHARE_BLOBS={blobs!r}: expected file:PATH or s3://BUCKET[/PREFIX]")
    if not meta.startswith(("sqlite:", "redis://", "rediss://", "unix://", "redis-cluster://")):
        raise ConfigError(
            f"SHARE_META={meta!r}: expected sqlite:PATH, redis://HOST:PORT/DB or "
            "redis-cluster://HOST:PORT[,HOST:PORT…]"
        )
    settings["PUBLIC_URL"] = str(settings["PUBLIC_URL"]).rstrip("/")
    ancestors = str(settings["EMBED_FRAME_ANCESTORS"]).split()
    bad = [a for a in ancestors if not _ANCESTOR.match(a)]
    if bad or not ancestors:
        raise ConfigError(
            f"SHARE_EMBED_FRAME_ANCESTORS: {bad[0] if bad else '(empty)'!r} is not *, 'self' or "
            "an origin such as https://wiki.example.com"
        )
    settings["EMBED_FRAME_ANCESTORS"] = " ".join(ancestors)
    speedscope = str(settings["SPEEDSCOPE_URL"])
    if not speedscope.startswith(("http://", "https://")):
        raise ConfigError(f"SHARE_SPEEDSCOPE_URL={speedscope!r}: expected an http(s) URL")
    return settings
