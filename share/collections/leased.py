"""A collection's leases (a block's, a selection's): held while one instance merges what they
guard, so that instances merge it once.

The warm-up merges in the background (share.compute.merges: each merge waits for its merge
process to be free of merges someone waits for), holding the lease meanwhile. A view that needs
the same block waits for that lease, so it says so (Leases.wanted), and the warm-up's merges
under the lease then queue as the view's would: on the fleet bench views waited up to 9 s for
a 10 s block whose warm-up merge waited, holding its lease, behind the merges of other views.
A view that may be answered behind does not wait for a growing block's lease at all
(entry_lease's if_free: Blocks answers with the block as it was, the rest pending).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

from ..core import Share
from ..store.lease import Busy, Lease


@contextmanager
def entry_lease(
    share: Share, cid: str, key: str, label: str, wait: float, if_free: bool = False
) -> Iterator[Lease | None]:
    """The lease of the collection's entry key (Busy after wait seconds), as Leases.hold.
    if_free: None at once when someone holds it (a view answered behind does not wait for a
    growing block that another view or the warm-up is merging)."""
    merges, leases = share.merges, share.leases
    want = not (merges.in_background() or if_free)  # a warm-up waiting for a lease marks nothing
    with contextlib.ExitStack() as stack:
        try:
            hold = leases.hold(f"collection:{cid}:{key}", label, 0.0 if if_free else wait, want)
            lease = stack.enter_context(hold)
        except Busy:
            if not if_free:
                raise
            yield None
            return
        stack.enter_context(merges.urgent_when(lambda: leases.wanted(lease)))
        yield lease
