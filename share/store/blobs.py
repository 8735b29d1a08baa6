"""BlobStore: where profile bytes live, keyed by content hash.

Two backends behind this one narrow interface, a module each: local.LocalBlobStore, the
single-machine default (a directory), and s3.S3BlobStore for any S3-compatible service. Both
report a missing key as FileNotFoundError, so no caller imports botocore.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol


class BlobStore(Protocol):
    def put(self, key: str, data: bytes) -> None:
        """Store data under key, atomically: readers see all of it or nothing."""

    def put_file(self, key: str, path: str | os.PathLike[str]) -> None:
        """Store the file's bytes under key, as put does, reading them a piece at a time."""

    def get(self, key: str) -> bytes:
        """The bytes under key; FileNotFoundError if there are none."""

    def exists(self, key: str) -> bool:
        """Whether key holds bytes."""

    def delete(self, key: str) -> None:
        """Remove key; no error when it is already gone."""

    def keys(self) -> Iterator[str]:
        """Every key that holds bytes (for fsck), in no particular order."""

    def check(self) -> None:
        """Raise OSError with a readable message when the store cannot be used."""
