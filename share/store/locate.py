"""What a store setting names, for people: its label in messages and, for the embedded stores,
the paths that must already exist before a command other than serve may use them."""

from __future__ import annotations

import os
import re

_CREDENTIALS = re.compile(r"(?<=://)[^/@]*@")


def label(url: str) -> str:
    """A store's setting as shown in messages and logs: any user:password@ removed."""
    return _CREDENTIALS.sub("", url)


def describe(blobs_url: str, meta_url: str) -> str:
    """The line commands print at start: which stores they use."""
    return f"blobs in {label(blobs_url)}, records in {label(meta_url)}"


def missing_embedded(blobs_url: str, meta_url: str) -> str | None:
    """Where an embedded store (file: directory, sqlite: file) should be and is not; None when
    every embedded store exists (or none is embedded). Both missing in one directory (the
    default ./data) name that directory."""
    paths = [blobs_url.removeprefix("file:")] if blobs_url.startswith("file:") else []
    if meta_url.startswith("sqlite:"):
        paths.append(meta_url.removeprefix("sqlite:"))
    missing = [p for p in paths if not os.path.exists(p)]
    if not missing:
        return None
    parents = {os.path.dirname(p.rstrip("/")) or "." for p in missing}
    return parents.pop() if len(missing) > 1 and len(parents) == 1 else missing[0]
