"""share.collections: many profiles under one link, over time and across processes.

A team, a CI job or `pprof-share collect` adds profiles to a collection with labels and times;
whoever opens its link selects a range, a label selector and a kind (and a base to compare
with), and gets the members merged as `go tool pprof a b c` merges them, as a stored profile
that every view of share.core serves. selection parses what a request selects, blocks keeps
pre-merged blocks so a range costs blocks rather than members, timeline draws the series, and
service (Collections) is the whole: create, add, delete, resolve. It may import share.core,
share.compute, share.analysis, share.pprof and share.store; share.web and share.cli use it.
"""

from __future__ import annotations

from typing import Any

from .. import metrics
from ..core import Share
from ..store import locate
from ..store.guard import guard
from .service import Collections

__all__ = ["Collections", "open_collections"]


def open_collections(share: Share) -> Collections:
    """The collections of share, indexed beside its metadata store."""
    settings: dict[str, Any] = share.settings
    index = locate.collection_index(
        settings["META"], getattr(share.meta, "inner", share.meta), settings["STORE_TIMEOUT"]
    )
    return Collections(share, guard(index, "metadata store", settings["META"], metrics.store_error))
