"""Members already decoded, kept per process: a collection's view reads its members again for
every request (its page, timeline, flame graph and top, each resolved), and decoding them was
most of a web worker's CPU per view on a fleet's collection (bench/fleet.py: 96 ms for 6000
members on Redis, of which the keys' listing is 15). A member never changes under its key (an
add of the same key changes nothing; a removal removes the key), so a decoded member is good
for as long as its key is listed: the index lists the keys each time, which says what is a
member now, and decodes only the keys it has not seen.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from .index import Member

MOST = 100_000  # members kept decoded per process (about 1 KB each); then the least recent go
Key = str | bytes


class ParsedMembers:
    """Decoded members by collection and key, the least recently read collections dropped
    first beyond `most` members in all."""

    def __init__(self, most: int = MOST) -> None:
        self.most = most
        self._by_cid: OrderedDict[str, dict[Key, Member]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def members(
        self,
        cid: str,
        keys: Sequence[Key],
        fetch: Callable[[list[Key]], list[bytes | None]],
        whole: bool = False,
    ) -> list[Member]:
        """The members under keys (in their order): those decoded before from here, the
        others decoded from fetch(their keys) -> their JSON each (None: removed meanwhile).
        whole: keys are every member of the collection, so any other kept is gone."""
        if self._pid != os.getpid():  # forked (a gunicorn worker): not a lock held elsewhere
            self.__init__(self.most)  # type: ignore[misc]
        with self._lock:
            known = self._by_cid.get(cid, {})
            missing = [k for k in keys if k not in known]
        new: dict[Key, Member] = {}
        if missing:
            datas = fetch(missing)
            present = [(k, d) for k, d in zip(missing, datas, strict=True) if d is not None]
            decoded = Member.many(d for _, d in present)
            for (k, _), m in zip(present, decoded, strict=True):
                m.known_key(k.decode() if isinstance(k, bytes) else k)
                new[k] = m
        with self._lock:
            known = self._keep(cid, new, keys if whole else None)
            return [m for k in keys if (m := known.get(k)) is not None]

    def forget(self, cid: str) -> None:
        with self._lock:
            self._count -= len(self._by_cid.pop(cid, {}))

    def _keep(
        self, cid: str, new: dict[Key, Member], every: Sequence[Key] | None
    ) -> dict[Key, Member]:
        known = self._by_cid.pop(cid, {})
        if every is not None:  # members removed (retention prunes a fleet's oldest) go
            kept = {k: m for k in every if (m := known.get(k)) is not None}
            self._count -= len(known) - len(kept)
            known = kept
        self._count += sum(1 for k in new if k not in known)  # two reads may decode one key
        known.update(new)
        self._by_cid[cid] = known
        while self._count > self.most and len(self._by_cid) > 1:
            _, dropped = self._by_cid.popitem(last=False)
            self._count -= len(dropped)
        if self._count > self.most:  # one collection larger than the whole allowance
            self._by_cid.clear()
            self._count = 0
        return known
