"""BlobStore: where profile bytes live, keyed by content hash.

Two backends behind one narrow interface: LocalBlobStore, the single-machine default (a
directory), and S3BlobStore for any S3-compatible service. Both report a missing key as
FileNotFoundError, so no caller imports botocore.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol


class BlobStore(Protocol):
    def put(self, key: str, data: bytes) -> None:
        """Store data under key, atomically: readers see all of it or nothing."""

    def get(self, key: str) -> bytes:
        """The bytes under key; FileNotFoundError if there are none."""

    def exists(self, key: str) -> bool:
        """Whether key holds bytes."""

    def delete(self, key: str) -> None:
        """Remove key; no error when it is already gone."""

    def check(self) -> None:
        """Raise OSError with a readable message when the store cannot be used."""


class LocalBlobStore:
    """Blobs as files in one directory: the single-machine default, no server needed."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        if not key or "/" in key or key.startswith("."):
            raise ValueError(f"bad blob key {key!r}")
        return self.root / key[:2] / key

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def check(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not os.access(self.root, os.W_OK):
            raise OSError(f"directory {self.root} is not writable")


class S3BlobStore:
    """Blobs as objects in an S3-compatible bucket; endpoint and credentials come from boto3's
    standard variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...)."""

    def __init__(self, bucket: str, prefix: str = "", **client_options: object) -> None:
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        config = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5)
        self.client = boto3.client("s3", config=config, **client_options)  # type: ignore[call-overload]

    def _key(self, key: str) -> str:
        return self.prefix + key

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def get(self, key: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            reply = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise FileNotFoundError(key) from None
            raise
        return reply["Body"].read()

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return False
            raise
        return True

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def check(self) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            what = "no such bucket" if code in ("404", "NoSuchBucket") else f"error {code}"
            raise OSError(f"bucket {self.bucket!r}: {what}") from None
        except BotoCoreError as exc:
            raise OSError(f"bucket {self.bucket!r}: {exc}") from None


def from_url(url: str) -> BlobStore:
    """file:PATH or s3://BUCKET[/PREFIX] -> a BlobStore."""
    if url.startswith("file:"):
        return LocalBlobStore(url.removeprefix("file:"))
    if url.startswith("s3://"):
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        if not bucket:
            raise ValueError("s3:// URL names no bucket")
        return S3BlobStore(bucket, prefix)
    raise ValueError(f"unknown blob store {url!r}")
