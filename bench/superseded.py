"""What a collection fed for a while leaves in the blob store: its members, the merged profile
each entry (block, selection) names now, and the merged profiles superseded as they grew.

    .venv/bin/python bench/superseded.py [--targets 4] [--minutes 10] [--every 2] [--view 0]
                                         [--history 0]

In process (the tests' make_app: a file blob store and SQLite, the compute pool of the tests),
with the app's clock moved by hand, so ten minutes of a fleet take the CPU of their merges
only: every `--every` simulated seconds each target adds a CPU and a heap profile of ~100 KB
(bench/fleet_profiles.py) at that time, then the collection's warm-up does its work (its
default selection of each kind, extended with the members added since: Collections._warm
without its wait); with `--view S`, every S seconds someone views `from=now-1h` of each kind
too; with `--history M`, M minutes of one round a minute come first. It prints what the blob
store holds then (bytes and objects: members, profiles named by an entry now, others), then
`--grace` seconds later after one more warm-up and `prune`, then an hour later after `prune`
(every growing profile's hour is up).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from fleet_profiles import FleetProfiles  # noqa: E402

from share.collections import selection as sel  # noqa: E402

from conftest import make_app  # noqa: E402

KINDS = ("cpu", "heap")


class Fleet:
    def __init__(self, tmp: Path, targets: int) -> None:
        open_limits = {"RATE_UPLOADS": "off", "RATE_UPLOAD_BYTES": "off", "RATE_DELETES": "off"}
        self.blobs = tmp / "blobs"
        self.app = make_app(
            {"BLOBS": f"file:{self.blobs}", "META": f"sqlite:{tmp}/meta.sqlite3", **open_limits}
        )
        self.share = self.app.extensions["share"]
        self.collections = self.app.extensions["collections"]
        self.now = float(int(time.time()) // 3600 * 3600 + 60)  # a minute into an hour
        self.share.clock = lambda: self.now
        self.fleet = FleetProfiles(targets)
        self.targets = targets
        c, self.token = self.collections.create(title="superseded", expires="30d")
        self.cid = c.id
        self.adds = 0

    def tick(self, seconds: float) -> None:
        self.now += seconds
        for t in range(self.targets):
            for kind in KINDS:
                body = self.fleet.bases[t, kind] + self.fleet.suffix(
                    t, kind, self.adds, int(self.now * 1e9)
                )
                self.collections.add(self.cid, self.token, body, {"pod": f"target-{t}"})
                self.adds += 1

    def warm(self) -> None:
        c = self.collections.load(self.cid)
        for kind in KINDS:
            self.collections.merged(c, sel.Selection(kind=kind), kind)
        sweep = getattr(self.collections.blocks, "sweep", None)
        if sweep is not None:  # the warm-up's sweep, where there is one
            sweep(self.cid)

    def view_last_hour(self) -> None:
        for kind in KINDS:
            self.collections.resolve(self.cid, {"from": "now-1h", "kind": kind})

    def held(self) -> dict[str, Any]:
        members = {m.pid for m in self.collections.index.members(self.cid)}
        named = {e["pid"] for e in self.collections.index.entries(self.cid) if "pid" in e}
        out = {"members": [0, 0], "named": [0, 0], "other": [0, 0]}
        for path in self.blobs.rglob("*"):
            if not path.is_file():
                continue
            pid = path.name.split(".")[0]
            part = "members" if pid in members else "named" if pid in named else "other"
            out[part][0] += path.stat().st_size
            out[part][1] += 1
        return out


def show(what: str, held: dict[str, Any]) -> None:
    total = sum(b for b, _ in held.values()), sum(n for _, n in held.values())
    parts = ", ".join(f"{k} {b / 1e6:.1f} MB in {n}" for k, (b, n) in held.items())
    print(f"{what}: {total[0] / 1e6:.1f} MB in {total[1]} objects ({parts})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=4)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--every", type=float, default=2, help="seconds between warm-ups")
    parser.add_argument("--view", type=float, default=0, help="seconds between now-1h views")
    parser.add_argument("--grace", type=float, default=150, help="seconds waited at the end")
    parser.add_argument("--history", type=float, default=0, help="minutes added before, 1/min")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="superseded-bench-") as tmp:
        f = Fleet(Path(tmp), args.targets)
        f.now -= args.history * 60
        for _ in range(int(args.history)):  # older members, a round a minute
            f.tick(60)
        started, ticks = time.monotonic(), int(args.minutes * 60 / args.every)
        last_view = -1e9
        for _ in range(ticks):
            f.tick(args.every)
            f.warm()
            if args.view and f.now - last_view >= args.view:
                f.view_last_hour()
                last_view = f.now
        print(
            f"{f.adds} adds by {args.targets} targets over {args.minutes:g} simulated minutes, "
            f"a warm-up every {args.every:g} s"
            + (f", now-1h viewed every {args.view:g} s" if args.view else "")
            + f" ({time.monotonic() - started:.0f} s to run)"
        )
        show("fed", f.held())
        f.now += args.grace
        f.warm()
        f.share.prune()
        show(f"{args.grace:g} s later, a warm-up and prune", f.held())
        f.now += 3600
        f.share.prune()
        show("an hour later, prune", f.held())


if __name__ == "__main__":
    main()
