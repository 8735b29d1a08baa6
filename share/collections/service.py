"""Collections: many profiles under one link, over time and across processes.

A collection is a record (title, expiry, retention, the hash of its write token) and its
members in the collection index (share.store.collections); each member is an ordinary stored
profile (same validation, dedup, link) plus its time and labels. A selection of members
(selection.py) is merged as `go tool pprof a b c` merges, from pre-merged blocks where it can
(blocks.py), into a stored profile: every view of a profile is then a view of the selection.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import parse_duration
from ..core import Share, Upload, new_token, token_hash
from ..errors import Forbidden, Gone, NotFound, ShareError, TooLarge
from ..pprof import StripSpec
from ..store.collections.index import Collection, CollectionIndex, Member
from . import kinds, windows
from . import selection as sel
from .behind import too_soon
from .blocks import Blocks, Plan, digest, latest_add
from .leased import entry_lease
from .warming import Warming

ID_LENGTH = 12  # base64url characters: 72 random bits
SELECTION_EXPIRY = "7d"  # a merged selection's profile (made again when gone)
SELECTION_TITLE = "collection {cid}: {n} members"


@dataclass
class Resolved:
    """A selection's merged profile (a base's too, for a comparison)."""

    pid: str | None  # None: nothing selected
    base: str | None
    kind: str | None
    plan: Plan
    base_plan: Plan | None


def open_key(s: sel.Selection, selector: str, kind: str) -> str:
    """The entry of an open selection: the same for `now-15m` as its start moves on."""
    return "o|" + digest([kind, selector, s.relative or repr(s.start)])


def new_id() -> str:
    while True:
        cid = secrets.token_urlsafe(9)[:ID_LENGTH]
        if not cid.startswith("-"):
            return cid


class Collections:
    """The collections of one Share, indexed in one CollectionIndex."""

    def __init__(self, share: Share, index: CollectionIndex) -> None:
        self.share = share
        self.index = index
        self.max_members = share.settings["COLLECTION_MAX_MEMBERS"]
        self.blocks = Blocks(share, index, self.member_expiry)
        self.warming = Warming(self)
        self.kinds = kinds.DefaultKinds(lambda c: self.members(c, sel.Selection()))

    def member_expiry(self, c: Collection) -> str:
        return c.expires or "never"

    # --- the collection -----------------------------------------------------------------
    def create(
        self, title: str = "", expires: str | None = None, retention: str | None = None
    ) -> tuple[Collection, str]:
        """A new, empty collection and its write token."""
        seconds = self.share.expiry_seconds(expires)
        keep = None
        if retention and retention.strip():
            try:
                keep = parse_duration(retention)
            except ValueError as exc:
                raise ShareError(f"retention: {exc}") from None
        now = self.share.clock()
        token = new_token()
        c = Collection(
            id=new_id(),
            title=title.strip()[:200],
            created_at=now,
            expires_at=None if seconds is None else now + seconds,
            expires=None if seconds is None else f"{seconds}s",
            retention_seconds=keep,
            token_hash=token_hash(token),
        )
        self.index.create(c)
        return c, token

    def load(self, cid: str) -> Collection:
        c = self.index.load(cid)
        now = self.share.clock()
        if c is None:
            raise NotFound(f"no collection with id {cid}")
        if c.expires_at is not None and c.expires_at <= now:
            raise Gone(f"collection {cid} has expired")
        return c

    def _authorized(self, cid: str, token: str | None) -> Collection:
        c = self.load(cid)
        if not token or not hmac.compare_digest(token_hash(token), c.token_hash):
            raise Forbidden(
                "wrong or missing collection token (send it in the X-Collection-Token header)"
            )
        return c

    # --- adding -------------------------------------------------------------------------
    def add(
        self,
        cid: str,
        token: str | None,
        data: bytes | Path,
        labels: dict[str, str],
        time_text: str | None = None,
        strip: StripSpec | None = None,
    ) -> tuple[Upload, Member, bool]:
        """Store data (bytes, or a file: Share.upload) as a profile and make it a member
        (labels, time); (upload, member, whether the member is new). The same bytes, labels
        and time again change nothing."""
        c = self._authorized(cid, token)
        labels = sel.check_labels(labels)
        now = self.share.clock()
        at = sel.parse_time(time_text, "time", now) if time_text else None
        if self.index.count(cid) >= self.max_members:
            raise self._full()
        upload = self.share.upload(
            data, title=c.title, expires=self.member_expiry(c), strip=strip, precompute=False
        )
        r = upload.record
        if at is None:
            at = r.metadata.get("time_nanos", 0) / 1e9 or now
        # added_at: when it is indexed, not when its upload began, so that an entry merged
        # from the members added up to a time holds every one added before (Blocks.lacks).
        member = Member(
            pid=r.id, time=round(at, 6), labels=labels, kind=r.metadata.get("kind", "unknown"),
            added_at=self.share.clock(), sample_types=r.sample_types,
            totals=r.metadata.get("totals", []),
            duration_nanos=r.metadata.get("duration_nanos", 0), owned=upload.created,
        )  # fmt: skip
        outcome = self.index.add(cid, member, self.max_members)
        if outcome == "full":
            if upload.created:
                self._remove_profile(r.id)
            raise self._full()
        expiry = self.share.expiry_seconds(self.member_expiry(c))
        self.index.touch(cid, now, None if expiry is None else now + expiry)
        self._prune(c, now)
        if outcome == "added":
            self.warm_later(cid)
        return upload, member, outcome == "added"

    def _full(self) -> TooLarge:
        return TooLarge(
            f"the collection holds {self.max_members} members, the most it may "
            "(SHARE_COLLECTION_MAX_MEMBERS); give it a retention, or start another"
        )

    def _prune(self, c: Collection, now: float) -> int:
        """Drop members older than the retention (their profiles expire on their own)."""
        if c.retention_seconds is None:
            return 0
        old = self.index.members(c.id, None, now - c.retention_seconds)
        return self.index.remove(c.id, [m.key for m in old])

    # --- removing -----------------------------------------------------------------------
    def delete(self, cid: str, token: str | None) -> int:
        """Remove the collection, and the profiles stored through it alone (members it
        stored, its blocks and merged selections); how many profiles were removed."""
        self._authorized(cid, token)
        entries = self.index.entries(cid)
        members = self.index.delete(cid)
        owned = {m.pid for m in members if m.owned} | {e["pid"] for e in entries if "pid" in e}
        owned |= {old[0] for e in entries for old in e.get("old", [])}  # superseded ones
        removed = 0
        for pid in sorted(owned):
            if not self.index.holders(pid):
                removed += self._remove_profile(pid)
        return removed

    def prune(self) -> int:
        """Remove expired collections from the index (their profiles expire on their own,
        and `pprof-share prune` removes those); how many."""
        now = self.share.clock()
        expired = self.index.expired(now)
        for cid in expired:
            self.index.delete(cid)
        return len(expired)

    def forget_profile(self, pid: str) -> None:
        """A profile was deleted (with its own token): it is a member of no collection now."""
        for cid in self.index.holders(pid):
            self.index.remove_profile(cid, pid)

    def _remove_profile(self, pid: str) -> int:
        with self.share.leases.hold(pid, f"profile {pid}"):
            if self.share.meta.delete(pid):
                self.share.blobs.delete(pid)
                return 1
        return 0

    # --- selecting ----------------------------------------------------------------------
    def members(self, c: Collection, s: sel.Selection) -> list[Member]:
        """The live members of the selection's range that its selector accepts (any kind)."""
        expiry = self.share.expiry_seconds(self.member_expiry(c))
        now = self.share.clock()
        found = self.index.members(c.id, s.start, s.end)
        return [
            m
            for m in found
            if (expiry is None or m.added_at + expiry > now) and s.accepts(m.labels)
        ]

    kind_of = staticmethod(kinds.kind_of)

    def default_kind(self, c: Collection) -> str | None:
        """The kind a view shows when kind= names none (kinds.DefaultKinds)."""
        return self.kinds.of(c)

    def merged(
        self,
        c: Collection,
        s: sel.Selection,
        kind: str | None,
        behind: bool = False,
        merge: bool = True,
    ) -> tuple[str | None, Plan]:
        """The stored profile of the selection's members of one kind, and how it was made. A
        member whose profile is gone is dropped from the collection, and the selection merged
        again without it. behind: newest members may be pending (Plan.pending), as for views.
        merge=False: not merged (None; its parts, windows of members (windows.plan) or past
        windows.MOST_MEMBERS its blocks, are summed by the views that read only stacks)."""
        try:
            return self._merged(c, s, kind, behind, merge)
        except ShareError as exc:  # the compute tier's NotFound arrives as a ShareError
            if exc.code not in (404, 410):
                raise
            members = [m for m in self.members(c, s) if m.kind == kind]
            dead = [m.key for m in members if not self.blocks.live(m.pid)]
            if not dead:
                raise
            self.index.remove(c.id, dead)
            return self._merged(c, s, kind, behind, merge)

    def _merged(
        self, c: Collection, s: sel.Selection, kind: str | None, behind: bool, merge: bool = True
    ) -> tuple[str | None, Plan]:
        members = [m for m in self.members(c, s) if m.kind == kind]
        if not merge and 1 < len(members) <= windows.MOST_MEMBERS:  # summed, not merged
            found = windows.plan(members, s.start, s.end, self.share.clock() if behind else None)
            if found[1].pending:
                self.warm_later(c.id)  # numbers them
            return found
        selector = ",".join(sorted(str(m) for m in s.matchers))
        if s.end is None and members:
            return self._open(c, s, selector, kind or "", members, behind, merge)
        return self._planned(c, s, selector, kind or "", members, behind, merge)

    def _planned(
        self,
        c: Collection,
        s: sel.Selection,
        selector: str,
        kind: str,
        members: list[Member],
        behind: bool = False,
        merge: bool = True,
    ) -> tuple[str | None, Plan]:
        """The selection merged from the blocks and loose members that cover it (behind:
        growing ones may be served behind, behind.BEHIND_FROM); merge=False: not merged
        unless it was before."""
        plan = self.blocks.plan(c, selector, kind, members, s.start, s.end, behind)
        if not plan.parts:
            return None, plan
        if len(plan.parts) == 1:
            return plan.parts[0], plan
        key = "s|" + digest(plan.parts)
        entry = self.index.entry_get(c.id, key)
        if entry is not None and self.blocks.live(entry["pid"]):
            return entry["pid"], plan
        if not merge:
            return None, plan
        with entry_lease(self.share, c.id, key, "the collection's selection", self.blocks.wait):
            entry = self.index.entry_get(c.id, key)
            if entry is not None and self.blocks.live(entry["pid"]):
                return entry["pid"], plan
            title = SELECTION_TITLE.format(cid=c.id, n=plan.members)
            growing = s.end is None or self.blocks.growing(s.end)
            pid = self.blocks.merged(c, plan.parts, title, growing)
            self.index.entry_put(c.id, key, {"pid": pid})
            return pid, plan

    def _open(
        self,
        c: Collection,
        s: sel.Selection,
        selector: str,
        kind: str,
        members: list[Member],
        behind: bool = False,
        merge: bool = True,
    ) -> tuple[str | None, Plan]:
        """A selection with no end, which every add extends (the default one, `from=now-1h`):
        what it merged to before, extended with the members added since when they are few
        (blocks.Blocks.extension), else merged from blocks; kept as an entry either way.
        merge=False: what it merged to before, else the parts it would be merged from."""
        # `from=now-15m` keeps one entry as its start moves on: the profile it named before is
        # superseded (gone after a grace), not left behind for its hour every 10 s.
        key = open_key(s, selector, kind)
        want = digest([m.key for m in members])
        entry = self.index.entry_get(c.id, key)
        if self.blocks.holding(entry, want) is not None:
            return entry["pid"], Plan([entry["pid"]], len(members), 1)  # type: ignore[index]
        late = self.blocks.behind(entry, members) if behind else 0
        if late:
            self.warm_later(c.id)
            held = len(members) - late
            return entry["pid"], Plan([entry["pid"]], held, 1, pending=late)  # type: ignore[index]
        grown = self.blocks.extension(entry, members)
        pid: str | None = None
        took = 0.0  # an extension's merge: what the next one costs (behind.served_behind)
        if grown is None:  # merged from blocks, under their leases, before this one's
            pid, plan = self._planned(c, s, selector, kind, members, behind, merge)
            if plan.pending or pid is None:  # not what the entry holds (or not merged)
                return pid, plan
        else:
            plan = Plan(grown, len(members), 1, built=1, extended=1)
            if not merge:
                plan.built = plan.extended = 0
                return None, plan
        with entry_lease(self.share, c.id, key, "the collection's selection", self.blocks.wait):
            entry = self.index.entry_get(c.id, key)
            if self.blocks.holding(entry, want) is not None:
                return entry["pid"], Plan([entry["pid"]], len(members), 1)  # type: ignore[index]
            if grown is not None:
                title = SELECTION_TITLE.format(cid=c.id, n=plan.members)
                began = self.share.clock()
                pid = self.blocks.merged(c, grown, title, growing=True)
                took = self.share.clock() - began
            if pid is not None:
                value = {"pid": pid, "digest": want, "members": len(members)}
                value["upto"] = latest_add(members)
                value["at"] = self.share.clock()  # since when it is behind, once members join
                value["took"] = round(took, 3)  # 0 when built from blocks: the next extends it
                self.blocks.replace(c.id, key, entry, {**value, "own": len(plan.parts) > 1})
        return pid, plan

    def refreshed(self, c: Collection, kind: str) -> tuple[str | None, Plan]:
        """The warm-up's merge of the collection's default selection of a kind: its new
        members merged in, unless its last merge was costly and is recent for its cost
        (behind.too_soon: a fleet's whole collection, a second to merge, was merged at every
        warm-up, every 2-3 s); then they are left pending and the warm-up comes again."""
        s = sel.Selection(kind=kind)
        members = [m for m in self.members(c, s) if m.kind == kind]
        entry = self.index.entry_get(c.id, open_key(s, "", kind))
        new = self.blocks.lacks(entry, members)
        if entry is not None and new and too_soon(entry, len(new), self.share.clock()):
            self.warm_later(c.id)
            held = len(members) - len(new)
            return entry["pid"], Plan([entry["pid"]], held, 1, pending=len(new))
        return self.merged(c, s, kind)

    def resolve(self, cid: str, args: dict[str, str], merge: bool = True) -> Resolved:
        """The request's selection (and base selection) as stored profiles; recent times may
        be answered behind (Plan.pending) unless the request says `wait` (sel.waits).
        merge=False: a selection of several parts may be left unmerged (Resolved.pid None,
        its parts in the plan), unless it has a base or the request says `wait`."""
        c = self.load(cid)
        now = self.share.clock()
        s = sel.selection(args, now)
        kind = s.kind or self.default_kind(c)
        behind = not sel.waits(args)
        merge = merge or sel.has_base(args)  # a comparison is merged
        pid, plan = self.merged(c, s, kind, behind=behind, merge=merge)
        base = base_plan = None
        if sel.has_base(args):
            b = sel.selection(args, now, prefix="base_")
            base, base_plan = self.merged(c, b, kind, behind=behind)
        return Resolved(pid, base, kind, plan, base_plan)

    def summed_view(
        self, parts: list[Any], name: str, opts: dict[str, Any], title: str, route: str = ""
    ) -> bytes:
        """View `name` of the merge of `parts` from their stacks summed (ViewService.summed):
        blocks held to a merge's bytes; windows to MOST_MEMBERS, read in budgets (sums.py)."""
        if all(isinstance(p, str) for p in parts):  # blocks, or a few members: a record each
            self.share.merges.check("a sum", 0, sum(self.share.record(p).size_bytes for p in parts))
        return self.share.views.summed(tuple(parts), name, opts, title, route=route)

    # --- warming ------------------------------------------------------------------------
    def warm_later(self, cid: str) -> None:
        """The collection's warm-up, off the request path (share.collections.warming)."""
        self.warming.later(cid)
