"""Every setting of pprof-share, with its default. Read once by create_app; no I/O here.

Each setting can be given in the environment as SHARE_<NAME> (see README.md) or passed to
create_app() in a mapping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MiB = 1024 * 1024

DEFAULTS: dict[str, Any] = {
    # Where blobs live: file:PATH (single-machine default) or s3://BUCKET[/PREFIX].
    "BLOBS": "file:./data/blobs",
    # Where records live: sqlite:PATH (single-machine default) or redis://… / rediss://…
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
    # Most profiles one merge may combine, or one diff (the profile and its bases).
    "MERGE_MAX_PROFILES": 64,
    # Largest total size, decompressed, of the profiles one merge or diff combines, in bytes.
    "MERGE_MAX_BYTES": 512 * MiB,
}

_INT_SETTINGS = {"MAX_UPLOAD_BYTES", "MAX_PROFILE_BYTES", "MERGE_MAX_PROFILES", "MERGE_MAX_BYTES"}
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdwy])\s*$")


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


def load(environ: Mapping[str, str], overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, then SHARE_* variables of environ, then overrides; checked and typed."""
    settings = dict(DEFAULTS)
    for name in DEFAULTS:
        if f"SHARE_{name}" in environ:
            settings[name] = environ[f"SHARE_{name}"]
    settings.update(overrides or {})
    for name in _INT_SETTINGS:
        try:
            settings[name] = int(settings[name])
            if settings[name] <= 0:
                raise ValueError
        except (TypeError, ValueError):
            raise ConfigError(
                f"SHARE_{name}={settings[name]!r}: expected a positive number"
                + ("" if name == "MERGE_MAX_PROFILES" else " of bytes")
            ) from None
    for name in ("DEFAULT_EXPIRY", "MAX_EXPIRY"):
        try:
            parse_duration(str(settings[name]))
        except ValueError as exc:
            raise ConfigError(f"SHARE_{name}: {exc}") from None
    blobs, meta = str(settings["BLOBS"]), str(settings["META"])
    if not (blobs.startswith("file:") or blobs.startswith("s3://")):
        raise ConfigError(f"SHARE_BLOBS={blobs!r}: expected file:PATH or s3://BUCKET[/PREFIX]")
    if not meta.startswith(("sqlite:", "redis://", "rediss://", "unix://")):
        raise ConfigError(f"SHARE_META={meta!r}: expected sqlite:PATH or redis://HOST:PORT/DB")
    settings["PUBLIC_URL"] = str(settings["PUBLIC_URL"]).rstrip("/")
    return settings
