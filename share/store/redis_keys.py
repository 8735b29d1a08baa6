"""RedisKeys: every Redis key of pprof-share, one helper, one prefix, laid out for a cluster.

One layout serves a standalone Redis and a Redis Cluster, so both run the same code and the
tests of either cover the other. Redis Cluster hashes a key's `{tag}` (its first braces) to
one of 16384 slots and refuses any command or script whose keys are in several, so:

- what belongs to one profile carries `{<pid>}`: its record, cached views, leases and the
  collections it is a member of; what belongs to one collection carries `{<cid>}`. A script
  that changes a profile (create, extend, delete, a view) touches that one slot.
- the global indexes (which profiles expire when, the views' least-recently-used order,
  sizes and total, which collections expire when) cannot live in one key without every
  upload writing one slot of the cluster beside its own: each is split into SHARDS keys
  tagged `{<index>-<n>}`, n = crc32(id) % SHARDS, updated by commands of their own after
  (or before) the profile's, in the order the stores document as safe to be cut short.

Lease names (share.store.lease, share.compute.once) name what they guard: `<pid>`,
`<pid>:view:<hash>`, `collection:<cid>:<key>`; lock() tags each with its profile or
collection, so a lease lives in the slot of what it guards.
"""

from __future__ import annotations

import zlib

SHARDS = 16  # keys per global index: spread over the cluster's nodes, few to read back


def shard_of(name: str) -> int:
    """The shard of a global index that holds name (stable across processes, unlike hash())."""
    return zlib.crc32(name.encode()) % SHARDS


def lease_owner(name: str) -> str:
    """The profile or collection id a lease name belongs to (its slot)."""
    head, _, rest = name.partition(":")
    return rest.partition(":")[0] if head == "collection" and rest else head


class RedisKeys:
    """The keys of one deployment, under one prefix (`pprof-share` unless told)."""

    def __init__(self, prefix: str = "pprof-share") -> None:
        self.prefix = prefix

    # --- one profile: `{pid}` ---------------------------------------------------------------
    def profile(self, pid: str) -> str:
        """Hash: the record's fields (`record` JSON, `expires_at`)."""
        return f"{self.prefix}:profile:{{{pid}}}"

    def views(self, pid: str) -> str:
        """Hash: the profile's cached views, field = view key."""
        return f"{self.prefix}:views:{{{pid}}}"

    def memberof(self, pid: str) -> str:
        """Set: the collections that have the profile as a member."""
        return f"{self.prefix}:memberof:{{{pid}}}"

    def lock(self, name: str) -> str:
        """String: a lease, in the slot of the profile or collection it guards."""
        owner = lease_owner(name)
        head = "collection:" if owner != name.partition(":")[0] else ""
        rest = name[len(head) + len(owner) :]
        return f"{self.prefix}:lock:{head}{{{owner}}}{rest}"

    # --- one collection: `{cid}` ------------------------------------------------------------
    def collection(self, cid: str, part: str) -> str:
        """A collection's `record`, `members`, `data` or `entries`."""
        return f"{self.prefix}:c:{{{cid}}}:{part}"

    # --- the global indexes, sharded --------------------------------------------------------
    def expiry(self, pid: str) -> str:
        """Sorted set: profile ids scored by expiry (epoch seconds), pid's shard."""
        return self._shard("expiry", shard_of(pid))

    def expiry_shards(self) -> list[str]:
        return [self._shard("expiry", n) for n in range(SHARDS)]

    def collection_expiry(self, cid: str) -> str:
        """Sorted set: collection ids scored by expiry, cid's shard."""
        return self._shard("c-expiry", shard_of(cid))

    def collection_expiry_shards(self) -> list[str]:
        return [self._shard("c-expiry", n) for n in range(SHARDS)]

    def view_index(self, member: str) -> list[str]:
        """A view's shard of the cache's accounting, member = `<pid>|<view key>`: the sorted
        set of last uses, the hash of sizes, the total (one slot: one script keeps them)."""
        return self.view_shard(shard_of(member))

    def view_shard(self, n: int) -> list[str]:
        parts = ("view-lru", "view-sizes", "view-bytes")
        return [f"{self.prefix}:{part}:{{views-{n}}}" for part in parts]

    def _shard(self, index: str, n: int) -> str:
        return f"{self.prefix}:{index}:{{{index}-{n}}}"
