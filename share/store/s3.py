"""S3BlobStore: profiles as objects in an S3-compatible bucket (AWS, MinIO, R2, Ceph, ...)."""

from __future__ import annotations

import os
from collections.abc import Iterator

# A blob larger than this goes up as a multipart upload in parts of this size, several at once
# (boto3's transfer manager, reading the file a part at a time); smaller ones in one PUT.
# boto3's own default (S3's parts are 5 MiB at least).
MULTIPART_BYTES = 8 << 20
MULTIPART_CONCURRENCY = 4


class S3BlobStore:
    """Blobs as objects in an S3-compatible bucket; endpoint and credentials come from boto3's
    standard variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...)."""

    def __init__(
        self, bucket: str, prefix: str = "", timeout: float = 5.0, **client_options: object
    ) -> None:
        import boto3
        from boto3.exceptions import S3UploadFailedError
        from boto3.s3.transfer import TransferConfig
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        # (upload_file reports a refused request as S3UploadFailedError, not ClientError)
        self.failures: tuple[type[Exception], ...] = (
            BotoCoreError,
            ClientError,
            S3UploadFailedError,
        )
        # Two attempts of half the budget each (a dropped connection is retried once), so a
        # call that cannot succeed gives up after `timeout` plus one backoff of at most 1 s
        # (legacy mode: "standard" may back off for 2 s before its first retry).
        config = Config(
            connect_timeout=timeout / 2,
            read_timeout=timeout / 2,
            retries={"total_max_attempts": 2, "mode": "legacy"},
        )
        self.client = boto3.client("s3", config=config, **client_options)  # type: ignore[call-overload]
        # No "Expect: 100-continue" on uploads: botocore waits a fixed second for the 100
        # before sending the body, which a stalled S3 turned into 3 s per attempt.
        from botocore.handlers import add_expect_header

        self.client.meta.events.unregister("before-call.s3", add_expect_header)
        self.transfer = TransferConfig(
            multipart_threshold=MULTIPART_BYTES,
            multipart_chunksize=MULTIPART_BYTES,
            max_concurrency=MULTIPART_CONCURRENCY,
        )

    def _key(self, key: str) -> str:
        return self.prefix + key

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def put_file(self, key: str, path: str | os.PathLike[str]) -> None:
        """One PUT up to MULTIPART_BYTES, a multipart upload above (aborted if it fails: an
        object appears whole or not at all). The transfer manager costs 4-5 ms a call more
        than a PUT (its threads), so it is only asked for the large ones."""
        if os.path.getsize(path) <= MULTIPART_BYTES:
            with open(path, "rb") as body:
                self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=body)
            return
        self.client.upload_file(os.fspath(path), self.bucket, self._key(key), Config=self.transfer)

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

    def keys(self) -> Iterator[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        )
        for page in pages:
            for item in page.get("Contents", []):
                key = item["Key"][len(self.prefix) :]
                if key and "/" not in key:
                    yield key

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
