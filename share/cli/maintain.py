"""`pprof-share prune` and `pprof-share fsck`: maintenance on the configured stores.

Both say first which stores they use, and neither creates an embedded store that is not
there: run from the wrong directory, they stop with one line instead of tidying a new, empty
./data and reporting that all is well.
"""

from __future__ import annotations

import os
import sys

from ..collections import open_collections
from ..config import ConfigError, load
from ..core import Share, open_share
from ..errors import ShareError
from ..store.locate import describe


def _open() -> Share | None:
    try:
        settings = load(os.environ)
        print(f"pprof-share: {describe(settings['BLOBS'], settings['META'])}", file=sys.stderr)
        return open_share(settings, create=False)
    except ConfigError as exc:
        print(f"pprof-share: {exc}", file=sys.stderr)
        return None


def prune() -> int:
    share = _open()
    if share is None:
        return 2
    try:
        removed = share.prune()
        gone = open_collections(share).prune()
    except ShareError as exc:
        print(f"pprof-share: {exc.message}", file=sys.stderr)
        return 1
    print(f"removed {removed} expired profile{'' if removed == 1 else 's'}")
    print(f"removed {gone} expired collection{'' if gone == 1 else 's'}")
    return 0


def fsck(repair: bool) -> int:
    """0 when the stores agree (or were repaired), 1 when orphans remain."""
    share = _open()
    if share is None:
        return 2
    try:
        found = share.fsck(repair=repair)
    except ShareError as exc:
        print(f"pprof-share: {exc.message}", file=sys.stderr)
        return 1
    done = " (removed)" if repair else ""
    for pid in found.records_without_blobs:
        print(f"record without blob: {pid}{done}")
    for pid in found.blobs_without_records:
        print(f"blob without record: {pid}{done}")
    n_records, n_blobs = len(found.records_without_blobs), len(found.blobs_without_records)
    print(
        f"{n_records} record{'' if n_records == 1 else 's'} without blobs, "
        f"{n_blobs} blob{'' if n_blobs == 1 else 's'} without records"
        + (" — removed" if repair and n_records + n_blobs else "")
    )
    return 1 if (n_records or n_blobs) and not repair else 0
