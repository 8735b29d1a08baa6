"""The upload's job, in a compute process: validate and identify a profile, say what to store.

The web tier names two spool files (compute.spool): the upload's, read here, and one for the
blob this writes when the upload is not stored as it is (a protobuf sent uncompressed, a
converted format, a stripped profile); it gets back the record's fields and which file to
store. Neither the decompressed profile nor the blob crosses the socket to the web tier.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from pathlib import Path
from typing import Any

from .. import pprof
from ..analysis.model import kind as profile_kind

ID_LENGTH = 16  # base64url characters: 96 bits of SHA-256
BLOB_GZIP_LEVEL = 6


def profile_id(raw: bytes) -> str:
    """The id of a profile: the first 96 bits of SHA-256 of its decompressed bytes, URL-safe."""
    return _id_of(hashlib.sha256(raw).digest())


def _id_of(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).decode()[:ID_LENGTH]


def _last(value: Any) -> int:
    """A scalar field that the decoder may keep as a list of every occurrence."""
    if isinstance(value, int):
        return value
    return int(value[-1]) if len(value) else 0


def summarize(parsed: pprof.ParsedProfile) -> dict[str, Any]:
    """The informational fields of a profile, for the record and the metadata panel."""
    message, string = parsed.outline, parsed.string
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
        "kind": profile_kind.of_profile(parsed),
        # pprof's total of each sample type (sum of |value|): a collection's timeline plots it.
        "totals": [int(x) for x in abs(parsed.values).sum(axis=0, dtype="int64")],
        "converted_from": parsed.converted_from,  # None: uploaded as a pprof protobuf
        "mappings": [
            {
                "filename": string(m.filename),
                "build_id": string(m.build_id),
                "has_functions": m.has_functions,
            }
            for m in message.mapping
        ],
    }


def read_upload(path: str) -> bytes:
    """An upload's bytes, from the spool file the web tier wrote (bounded by
    SHARE_MAX_UPLOAD_BYTES there; inflating it is bounded by share.pprof.inflate)."""
    return Path(path).read_bytes()


def ingest(parsed: pprof.ParsedProfile, blob_path: str) -> dict[str, Any]:
    """What the core needs to store a validated profile: id, record fields, and "blob": the
    path of the gzip written to blob_path, or None when the upload is stored as it is."""
    digest = hashlib.sha256(parsed.raw).digest()
    blob = None
    if not parsed.was_gzip:
        Path(blob_path).write_bytes(gzip.compress(parsed.raw, BLOB_GZIP_LEVEL))
        blob = blob_path
    return {
        "id": _id_of(digest),
        "sha256": digest.hex(),
        "size_bytes": len(parsed.raw),
        "blob": blob,
        "sample_types": [list(t) for t in parsed.sample_types()],
        "default_sample_type": parsed.default_sample_type(),
        "n_samples": parsed.n_samples,
        "n_locations": parsed.n_locations,
        "n_functions": parsed.n_functions,
        "metadata": summarize(parsed),
    }
