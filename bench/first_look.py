"""A label selection's first look, its merges of members side by side against one after the
other (share.collections.sidebyside), in one run.

    .venv/bin/python bench/first_look.py [--targets 40] [--rounds 6] [--runs 3]

An app in this process on the embedded stores, with its own compute pool of two merge
processes (SHARE_MERGE_WORKERS=2). Per run, a fresh collection of --targets targets (labels pod
and zone z0..z3) each adding a ~100 KB CPU profile every 10 s for --rounds rounds
(bench/fleet_profiles.py), then the first look at `zone="z1"` over those rounds: the selection
and its flame graph JSON, timed. The same with the plan's merges one after the other (the code
before sidebyside: its build() switched off in this process). It prints the medians and their
ratio; the machine's 2 cores are the ceiling of what two merge processes can give.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_profiles import FleetProfiles  # noqa: E402

from share import create_app  # noqa: E402
from share.collections import blocks as blocks_module  # noqa: E402
from share.compute.pool import ComputePool  # noqa: E402
from share.config import load  # noqa: E402

OFF = {"RATE_UPLOADS": "off", "RATE_UPLOAD_BYTES": "off", "RATE_DELETES": "off"}


def first_look(client: Any, profiles: FleetProfiles, args: argparse.Namespace, run: int) -> float:
    made = client.post("/api/v1/collections", json={}, headers={"Accept": "application/json"})
    cid, token = made.json["id"], made.json["token"]
    start = (int(time.time()) // 60 - 3) * 60
    for k in range(args.rounds):
        for t in range(args.targets):
            when = start + 10 * k + t * 9 / args.targets
            r = client.post(
                f"/c/{cid}",
                query_string=[
                    ("label", f"pod=target-{t}"),
                    ("label", f"zone=z{t % 4}"),
                    ("time", f"{when:.3f}"),
                ],  # fmt: skip
                data=profiles.bases[t, "cpu"]
                + profiles.suffix(t, "cpu", run * args.rounds + k, int(when * 1e9)),
                headers={"X-Collection-Token": token},
            )
            assert r.status_code == 201, r.data
    query = {"from": str(start), "to": str(start + 10 * args.rounds), "match": 'zone="z1"'}
    started = time.perf_counter()
    found = client.get(f"/api/v1/collections/{cid}/selection", query_string=query)
    flame = client.get(f"/api/v1/collections/{cid}/flamegraph", query_string=query)
    took = time.perf_counter() - started
    assert found.status_code == 200 and flame.status_code == 200, (found.data, flame.data)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    profiles = FleetProfiles(args.targets)
    pool = ComputePool(load({}, {"ANALYSIS_WORKERS": 1, "INGEST_WORKERS": 1, "MERGE_WORKERS": 2}))
    real = blocks_module.sidebyside.build
    times: dict[str, list[float]] = {"side by side": [], "one after the other": []}
    try:
        with tempfile.TemporaryDirectory() as work:
            stores = {"BLOBS": f"file:{work}/b", "META": f"sqlite:{work}/m.sqlite3"}
            app = create_app({"COMPUTE": pool, "PRECOMPUTE": "off", **stores, **OFF})
            client = app.test_client()
            for run in range(args.runs):
                for n, name in enumerate(times):
                    on = name == "side by side"
                    blocks_module.sidebyside.build = real if on else (lambda *a, **k: 0)
                    times[name].append(first_look(client, profiles, args, 2 * run + n))
    finally:
        blocks_module.sidebyside.build = real
        pool.close()
    z = args.targets // 4
    print(f'first look at zone="z1": {args.rounds} windows of {z} members ({args.runs} runs)')
    med = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"  {name:<20} median {med[name]:.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
    ratio = med["one after the other"] / med["side by side"]
    print(f"  ratio one after the other / side by side: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
