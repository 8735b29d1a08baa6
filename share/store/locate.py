"""What a store setting names: the store it opens (blob_store, meta_store: the one place that
knows every backend, so the interfaces in blobs.py and meta.py import none of them), its label
in messages and, for the embedded stores, the paths that must exist before a command other than
serve may use them."""

from __future__ import annotations

import os
import re
from typing import Any

from .blobs import BlobStore
from .meta import VIEW_CACHE_BYTES, MetaStore

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


def blob_store(url: str, timeout: float = 5.0) -> BlobStore:
    """file:PATH or s3://BUCKET[/PREFIX] -> a BlobStore whose calls give up after timeout."""
    if url.startswith("file:"):
        from .local import LocalBlobStore

        return LocalBlobStore(url.removeprefix("file:"))
    if url.startswith("s3://"):
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        if not bucket:
            raise ValueError("s3:// URL names no bucket")
        from .s3 import S3BlobStore

        return S3BlobStore(bucket, prefix, timeout=timeout)
    raise ValueError(f"unknown blob store {url!r}")


def meta_store(
    url: str, timeout: float = 5.0, view_cache_bytes: int = VIEW_CACHE_BYTES
) -> MetaStore:
    """sqlite:PATH, redis://… / rediss://… / unix://…, or redis-cluster://HOST:PORT[,HOST:PORT…]
    -> a MetaStore whose calls give up after timeout."""
    if url.startswith("sqlite:"):
        from .sqlite import SqliteMetaStore

        return SqliteMetaStore(
            url.removeprefix("sqlite:"), timeout=timeout, view_cache_bytes=view_cache_bytes
        )
    if url.startswith(("redis://", "rediss://", "unix://", "redis-cluster://")):
        from .redis import RedisMetaStore

        return RedisMetaStore(url, timeout=timeout, view_cache_bytes=view_cache_bytes)
    raise ValueError(f"unknown metadata store {url!r}")


def collection_index(url: str, meta: Any, timeout: float = 5.0) -> Any:
    """The collection index beside a metadata store (its unguarded backend): a SQLite file
    next to the records' file, or the same Redis or Redis Cluster (its connection and keys)."""
    if url.startswith("sqlite:"):
        from .collections.sqlite import SqliteCollectionIndex

        return SqliteCollectionIndex(url.removeprefix("sqlite:") + "-collections", timeout)
    from .collections.redis import RedisCollectionIndex

    return RedisCollectionIndex(meta.conn, meta.keys)
