"""Spool files: an upload on disk from the moment it arrives until it is stored.

A web worker writes an upload's body to one as it reads it (share.web.api); the compute
process validates the profile from that file (ingest) and writes the blob it makes, when it
makes one (a protobuf sent uncompressed, a converted format, a stripped profile), to another;
the blob store stores from the file. So an upload is never whole in a web worker's memory.

They are made in tempfile's directory (TMPDIR, else /tmp): the web workers and the compute
processes of an instance run on one host as one user, and the compute processes inherit the
environment of the master that starts them, so both tiers find the same directory. Each is
removed when its upload ends, however it ends.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..config import human_bytes
from ..errors import TooLarge

PREFIX = "pprof-share-spool-"


def too_large(size: int | None, limit: int) -> TooLarge:
    """The one refusal of an upload over SHARE_MAX_UPLOAD_BYTES (size None: not known, as
    for a chunked body refused once past the limit)."""
    what = "upload" if size is None else f"upload is {human_bytes(size)},"
    return TooLarge(f"{what} over the limit of {human_bytes(limit)} (SHARE_MAX_UPLOAD_BYTES)")


@contextlib.contextmanager
def new_file(suffix: str = "") -> Iterator[Path]:
    """An empty spool file of our own (mode 0600), removed on leaving."""
    fd, name = tempfile.mkstemp(prefix=PREFIX, suffix=suffix)
    os.close(fd)
    try:
        yield Path(name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


@contextlib.contextmanager
def holding(source: bytes | Path, limit: int) -> Iterator[Path]:
    """A file that holds source: the file itself (its owner removes it), or the bytes written
    to a spool file for as long as this lasts; TooLarge when source is over limit bytes."""
    size = len(source) if isinstance(source, bytes) else Path(source).stat().st_size
    if size > limit:
        raise too_large(size, limit)
    if not isinstance(source, bytes):
        yield Path(source)
        return
    with new_file() as path:
        path.write_bytes(source)
        yield path
