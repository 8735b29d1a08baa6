"""The decoded profiles a compute process keeps warm: least recently used out, bounded by bytes."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ..analysis.combine import combine, prof
from ..analysis.model import tables as analysis_tables


def _arrays_bytes(obj: Any, seen: set[int], depth: int = 0) -> int:
    """Bytes of the numpy arrays and string lists reachable from obj's fields (roughly)."""
    if id(obj) in seen or depth > 3:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, bytes):
        return len(obj)
    if isinstance(obj, list):
        return 8 * len(obj) + (56 * len(obj) if obj and isinstance(obj[0], str) else 0)
    if isinstance(obj, (tuple, dict)):
        values = obj.values() if isinstance(obj, dict) else obj
        return sum(_arrays_bytes(v, seen, depth + 1) for v in values)
    fields = getattr(obj, "__dict__", None)
    if fields is None and hasattr(obj, "__dataclass_fields__"):
        fields = {k: getattr(obj, k) for k in obj.__dataclass_fields__}
    if not fields:
        return 0
    return sum(_arrays_bytes(v, seen, depth + 1) for k, v in fields.items() if k != "message")


def footprint(parsed: Any) -> int:
    """What a parsed profile and its analysis caches hold, estimated in bytes: its arrays and
    strings, plus three times the raw size for the decoded protobuf message."""
    seen: set[int] = set()
    total = _arrays_bytes(parsed, seen) + 3 * len(parsed.raw)
    tables = analysis_tables._CACHE.get(parsed)
    if tables is not None:
        total += _arrays_bytes(tables, seen)
    for derived in (prof._CACHE.get(parsed), combine._COMPACT.get(parsed)):  # diffs' columns
        if derived is not None:
            total += _arrays_bytes(derived, seen)
    return total


def columns_footprint(columns: Any) -> int:
    """What a profile's columns alone (share.analysis.combine.prof.Prof) hold, estimated."""
    return _arrays_bytes(columns, set()) + 64 * len(columns.strings)


class ProfileCache:
    """id -> parsed profile (or any value with a footprint), LRU, at most max_bytes in all."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._bytes = 0  # the sum of the sizes kept: a fleet's collection keeps thousands
        self.let_go = 0  # bytes evicted since the owner last collected them (worker.py)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def get(self, key: str) -> Any | None:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: str, value: Any, size: int) -> None:
        if self.max_bytes <= 0:  # an ingest process's: keeps nothing (else the one in use)
            return
        before = self._items.get(key)
        self._bytes += size - (before[1] if before is not None else 0)
        self._items[key] = (value, size)
        self._items.move_to_end(key)
        self.trim(keep=key)

    def resize(self, key: str, size: int) -> None:
        """A value's caches grew (stacks, graphs): account for it and trim the others."""
        if key in self._items:
            value, before = self._items[key]
            self._bytes += size - before
            self._items[key] = (value, size)
            self.trim(keep=key)

    def trim(self, keep: str | None = None) -> None:
        while len(self._items) > 1 and self.bytes() > self.max_bytes:
            oldest = next(iter(self._items))
            if oldest == keep:
                self._items.move_to_end(oldest)
                oldest = next(iter(self._items))
            size = self._items.pop(oldest)[1]
            self._bytes -= size
            self.let_go += size

    def bytes(self) -> int:
        return self._bytes

    def keys(self) -> list[str]:
        return list(self._items)
