"""What a profile costs to keep and to serve, measured on the engines a company runs, and what
that makes for 10 million profiles a month (README, "Running at scale").

    .venv/bin/python bench/cost.py [--profiles 200] [--per-month 10000000]

It starts redis-server, moto's S3 server and one `pprof-share serve --workers 2` on them (as
deployed: precompute on), then measures each phase as a difference:
1. plain uploads of distinct ~100 KB profiles (half CPU, half heap: bench/fleet_profiles.py),
   then 5 s for their precompute: bytes per profile in S3 (the objects' sizes) and in Redis
   (`used_memory`; the cached views' share by MEMORY USAGE of the view keys), CPU seconds per
   upload (web workers, compute processes, redis-server; moto is not S3's cost);
2. each profile's page views (flame graph, top: cache hits after precompute), then one view
   nobody asked for before (`?focus=runtime`): CPU seconds per cached and per computed view;
3. the same number of collection adds (labels pod=…, a CPU and a heap profile per target):
   bytes per member beyond the profile's own, CPU seconds per add; the merged profiles the
   collection's warm-ups stored meanwhile (its default selection, extended as members came),
   those its entries name now and those superseded, awaiting their grace;
4. the collection's views over ranges (last 15 min, 1 h, per pod): the blocks they build, bytes
   per block in Redis and S3;
5. a grace after the last warm-up (4 x SHARE_ANALYSIS_SECONDS, and a few seconds): what is left
   in S3 of the superseded profiles (the instance's last sweep removes them).
CPU is read from /proc (utime + stime) of the instance's processes (web: the master and its
workers; compute: analysis, ingest and merge processes) and redis-server.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import boto3
import orjson
import redis
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from fleet_profiles import FleetProfiles  # noqa: E402

from conftest import (  # noqa: E402
    _AWS_ENV,
    BIN,
    free_port,
    new_bucket,
    start_moto,
    start_redis,
    stop,
    wait_for_port,
)

TICKS = os.sysconf("SC_CLK_TCK")
ID = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{10,16}(?![A-Za-z0-9_-])")  # profile, collection
KINDS = ("cpu", "heap")
ROUNDS = 4  # the collection's adds come in rounds, a warm-up after each
SPREAD = 120  # seconds the members' times span, up to now: blocks of 10 s and 1 min to build
GRACE = 4 * 30  # the superseded profiles' grace: GRACE_TIMES x SHARE_ANALYSIS_SECONDS (default)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").iterdir():
            children = (task / "children").read_text().split()
            todo.extend(int(c) for c in children)
    return found


class Meter:
    """CPU seconds of the instance (web: master and workers; compute processes by role) and
    of redis-server."""

    def __init__(self, serve_pid: int, redis_pid: int) -> None:
        self.serve_pid, self.redis_pid = serve_pid, redis_pid

    def read(self) -> dict[str, float]:
        found = dict.fromkeys(("web", "analysis", "ingest", "merge"), 0.0)
        for pid in descendants(self.serve_pid):
            try:
                seconds = cpu_seconds(pid)
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except FileNotFoundError:
                continue
            if b"share.compute.worker" not in command:
                found["web"] += seconds
            else:  # `python -m share.compute.worker SOCKET [ingest|merge]`
                role = command[command.index(b"share.compute.worker") + 2 :][:1]
                name = role[0].decode() if role and role[0] else "analysis"
                found[name] = found.get(name, 0.0) + seconds
        return {**found, "redis": cpu_seconds(self.redis_pid)}

    @staticmethod
    def since(before: dict[str, float], after: dict[str, float], n: int) -> dict[str, float]:
        per = {k: (after[k] - before[k]) / n for k in before}
        per["all"] = sum(per.values())
        return per


class Stores:
    """What Redis and the bucket hold."""

    def __init__(self, client: redis.Redis, s3: object, bucket: str) -> None:
        self.client, self.s3, self.bucket = client, s3, bucket

    def redis_bytes(self) -> int:
        return int(self.client.info("memory")["used_memory"])

    def view_bytes(self) -> int:
        """MEMORY USAGE of every key that holds cached views (their names say `view`)."""
        total = 0
        for key in self.client.scan_iter(count=1000):
            if b"view" in key:
                total += self.client.memory_usage(key, samples=0) or 0
        return total

    def by_kind(self) -> dict[str, int]:
        """MEMORY USAGE summed by key name with its ids as `*`: where Redis's bytes are."""
        found: dict[str, int] = {}
        for key in self.client.scan_iter(count=1000):
            name = ID.sub("*", key.decode(errors="replace"))
            found[name] = found.get(name, 0) + (self.client.memory_usage(key, samples=0) or 0)
        return found

    def s3_bytes(self) -> tuple[int, int]:
        sizes = self.s3_objects()
        return sum(sizes.values()), len(sizes)

    def s3_objects(self) -> dict[str, int]:
        """Each object's size by the profile id that ends its key."""
        found = {}
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):  # type: ignore[attr-defined]
            for obj in page.get("Contents", []):
                found[obj["Key"].rsplit("/", 1)[-1]] = obj["Size"]
        return found

    def entries(self, cid: str) -> tuple[set[str], set[str]]:
        """The profiles a collection's entries name now, and those listed as superseded."""
        named, superseded = set(), set()
        for key in self.client.scan_iter(match=f"*c:{{{cid}}}:entries", count=1000):
            for value in self.client.hvals(key):
                entry = orjson.loads(value)
                named |= {entry["pid"]} if "pid" in entry else set()
                superseded |= {old[0] for old in entry.get("old", [])}
        return named, superseded


def start_serve(env: dict[str, str], log: Path) -> tuple[str, object]:
    import subprocess

    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(BIN / "pprof-share"), "serve", "--port", str(port), "--workers", "2"],
            env=env, stdout=subprocess.DEVNULL, stderr=out,
        )  # fmt: skip
    if not wait_for_port(port, proc, timeout=30):
        sys.exit(f"pprof-share serve did not start:\n{log.read_text()}")
    return f"http://127.0.0.1:{port}", proc


def measure(n: int, work: Path) -> dict[str, object]:
    redis_url, redis_proc = start_redis(work)
    endpoint, moto_proc = start_moto()
    os.environ.update(_AWS_ENV, AWS_ENDPOINT_URL=endpoint)
    bucket = new_bucket(endpoint)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHARE_")}
    env.update(
        SHARE_BLOBS=f"s3://{bucket}/p", SHARE_META=redis_url, SHARE_PUBLIC_URL="",
        SHARE_RATE_UPLOADS="off", SHARE_RATE_UPLOAD_BYTES="off", SHARE_RATE_DELETES="off",
    )  # fmt: skip
    base, proc = start_serve(env, work / "serve.log")
    try:
        client = redis.Redis.from_url(redis_url)
        stores = Stores(client, boto3.client("s3", endpoint_url=endpoint), bucket)
        meter = Meter(proc.pid, redis_proc.pid)  # type: ignore[attr-defined]
        targets = n // 2
        fleet = FleetProfiles(targets)
        now_ns = time.time_ns()
        bodies = [
            fleet.bases[t, kind] + fleet.suffix(t, kind, nth, now_ns)
            for nth in range(2)
            for t in range(targets)
            for kind in KINDS
        ]
        requests.get(base + "/", timeout=30)
        out: dict[str, object] = {"profile_kb": {k: fleet.size(k) / 1000 for k in KINDS}, "n": n}

        # 1. plain uploads
        r0, s0, c0 = stores.redis_bytes(), stores.s3_bytes(), meter.read()
        ids = []
        for body in bodies[:n]:
            reply = requests.post(base + "/", data=body, timeout=60)
            reply.raise_for_status()
            ids.append(reply.text.strip().rsplit("/", 1)[1])
        time.sleep(5)  # precompute
        r1, s1, c1 = stores.redis_bytes(), stores.s3_bytes(), meter.read()
        views = stores.view_bytes()
        out["upload"] = {
            "s3_bytes": (s1[0] - s0[0]) / n,
            "redis_bytes": (r1 - r0) / n,
            "redis_view_bytes": views / n,
            "cpu": Meter.since(c0, c1, n),
        }

        # 2. views: cached (the page's), then computed (a new focus)
        c2 = meter.read()
        for pid in ids:
            for name in ("flamegraph", "top"):
                requests.get(f"{base}/api/v1/profiles/{pid}/{name}", timeout=60).raise_for_status()
        c3 = meter.read()
        for pid in ids:
            url = f"{base}/api/v1/profiles/{pid}/flamegraph?focus=runtime"
            requests.get(url, timeout=60).raise_for_status()
        c4 = meter.read()
        out["view_cached_cpu"] = Meter.since(c2, c3, 2 * n)
        out["view_computed_cpu"] = Meter.since(c3, c4, n)

        # 3. collection adds (new profiles: the member's cost is beyond a profile's own)
        made = requests.post(base + "/api/v1/collections", data={"title": "cost"}, timeout=30)
        cid = made.headers["Location"].rsplit("/", 1)[1]
        token = made.headers["X-Collection-Token"]
        # In ROUNDS rounds, each followed by the warm-up it causes (which extends the default
        # selection of each kind), the members' times spread over the last SPREAD seconds.
        s5 = stores.s3_objects()
        adding = dict.fromkeys(meter.read(), 0.0)
        warming = dict(adding)
        members, start = set(), time.time() - SPREAD
        for k, body in enumerate(bodies[n : 2 * n]):
            if k % max(1, n // ROUNDS) == 0:
                c5 = meter.read()
            headers = {"X-Collection-Token": token, "X-Labels": f"pod=target-{k // 2}"}
            at = {"time": f"{start + SPREAD * k / n:.3f}"}
            reply = requests.post(
                f"{base}/c/{cid}", params=at, data=body, headers=headers, timeout=60
            )
            reply.raise_for_status()
            members.add(reply.text.strip().rsplit("/", 1)[1])
            if (k + 1) % max(1, n // ROUNDS) == 0 or k == n - 1:
                c6 = meter.read()
                time.sleep(8)  # the warm-up: 2 s after the burst, then its merges
                c7 = meter.read()
                adding = {key: adding[key] + c6[key] - c5[key] for key in adding}
                warming = {key: warming[key] + c7[key] - c6[key] for key in warming}
        warmed = time.monotonic()
        s6 = stores.s3_objects()
        zero = dict.fromkeys(adding, 0.0)
        out["add"] = {
            "cpu": Meter.since(zero, adding, n),
            "warm_cpu": Meter.since(zero, warming, n),
        }
        merged = {pid: size for pid, size in s6.items() if pid not in s5 and pid not in members}
        named, superseded = stores.entries(cid)
        now_named = [size for pid, size in merged.items() if pid in named]
        out["warmup"] = {
            "merged": len(merged),
            "named": len(now_named),
            "named_bytes": sum(now_named),
            "superseded": len(superseded & set(merged)),
            "superseded_bytes": sum(merged[pid] for pid in superseded & set(merged)),
        }
        out["keys"] = stores.by_kind()
        out["records"] = sum(1 for _ in client.scan_iter(match="*:profile:{*}", count=1000))

        # 4. range views: the blocks they build
        entries0 = len(list(client.scan_iter(match="*entr*", count=1000)))
        r7, s7, c7 = stores.redis_bytes(), stores.s3_objects(), meter.read()
        queries = [{"from": "now-15m"}, {"from": "now-1h"}]
        queries += [{"match": f'{{pod="target-{t}"}}'} for t in range(min(targets, 10))]
        for kind in KINDS:
            for q in queries:
                url = f"{base}/api/v1/collections/{cid}/flamegraph"
                requests.get(url, params={**q, "kind": kind}, timeout=120).raise_for_status()
        r8, s8, c8 = stores.redis_bytes(), stores.s3_objects(), meter.read()
        entries = len(list(client.scan_iter(match="*entr*", count=1000))) - entries0
        built = [size for pid, size in s8.items() if pid not in s7]  # not less those swept
        out["ranges"] = {
            "queries": 2 * len(queries),
            "s3_objects": len(built),
            "s3_bytes_per_object": sum(built) / max(1, len(built)),
            "entry_keys": entries,
            "redis_bytes": r8 - r7,
            "cpu_per_query": Meter.since(c7, c8, 2 * len(queries)),
        }
        out["totals"] = {"s3_bytes": sum(s8.values()), "s3_objects": len(s8), "redis_bytes": r8}

        # 5. a grace after the last warm-up: its delayed sweep has removed the superseded
        time.sleep(max(0.0, warmed + GRACE + 10 - time.monotonic()))
        s9 = stores.s3_objects()
        left = superseded & set(merged) & set(s9)
        out["after_grace"] = {"superseded_left": len(left), "s3_objects": len(s9)}
        return out
    finally:
        stop(proc)  # type: ignore[arg-type]
        stop(moto_proc)
        stop(redis_proc)


def kb(n: float) -> str:
    return f"{n / 1000:,.1f} KB"


def ms(cpu: dict[str, float]) -> str:
    parts = ", ".join(f"{k} {v * 1000:.1f}" for k, v in cpu.items() if k != "all")
    return f"{cpu['all'] * 1000:6.1f} ms CPU ({parts})"


def report(m: dict[str, object], per_month: int) -> None:
    up, add, ranges = m["upload"], m["add"], m["ranges"]  # type: ignore[index]
    sizes = m["profile_kb"]
    print(f"profiles: CPU {sizes['cpu']:.0f} KB, heap {sizes['heap']:.0f} KB (gzip, as sent)")  # type: ignore[index]
    print("\nper profile (a plain upload, its three first views precomputed)")
    print(f"  S3:    {kb(up['s3_bytes'])}  (the gzip as sent)")  # type: ignore[index]
    print(f"  Redis: {kb(up['redis_bytes'])}  of which cached views {kb(up['redis_view_bytes'])}")  # type: ignore[index]
    print(f"  upload:            {ms(up['cpu'])}")  # type: ignore[index]
    print(f"  view, cached:      {ms(m['view_cached_cpu'])}")  # type: ignore[arg-type]
    print(f"  view, computed:    {ms(m['view_computed_cpu'])}")  # type: ignore[arg-type]
    print(f"\nper collection add: {ms(add['cpu'])}")  # type: ignore[index]
    print(
        f"  and its share of the warm-ups: {ms(add['warm_cpu'])} "  # type: ignore[index]
        f"({ROUNDS} warm-ups of {m['n'] // ROUNDS} adds each)"  # type: ignore[operator]
    )
    keys: dict[str, int] = m["keys"]  # type: ignore[assignment]
    member_keys = ("*:c:{*}:data", "*:c:{*}:members", "*:memberof:{*}")
    member = sum(keys.get(k, 0) for k in member_keys) / m["n"]  # type: ignore[operator]
    print(f"  Redis beyond the profile's own: {kb(member)} per member ({', '.join(member_keys)})")
    warm, later = m["warmup"], m["after_grace"]
    print(
        f"  the collection's warm-ups stored {warm['merged']} merged profiles (its default "  # type: ignore[index]
        f"selection of each kind, extended as members came): {warm['named']} named by its "  # type: ignore[index]
        f"entries now, {kb(warm['named_bytes'] / max(1, warm['named']))} each in S3; "  # type: ignore[index]
        f"{warm['superseded']} superseded, {kb(warm['superseded_bytes'])} in all, awaiting "  # type: ignore[index]
        f"their grace; {later['superseded_left']} of those left {GRACE + 10} s after the "  # type: ignore[index]
        "last warm-up"
    )
    print(
        f"\nrange views: {ranges['queries']} queries, {ranges['s3_objects']} new stored profiles "  # type: ignore[index]
        f"({kb(ranges['s3_bytes_per_object'])} each in S3), "  # type: ignore[index]
        f"{kb(ranges['redis_bytes'])} more in Redis (their cached views); "  # type: ignore[index]
        f"{ms(ranges['cpu_per_query'])} per query"  # type: ignore[index]
    )
    print("\nRedis by key (MEMORY USAGE, ids as *), per profile uploaded or added:")
    ranked = sorted(keys.items(), key=lambda kv: -kv[1])
    total = sum(v for _, v in ranked)
    for name, size in ranked[:12]:
        print(f"  {size / (2 * m['n']) / 1000:9.2f} KB  {name}")  # type: ignore[operator]
    per = total / (2 * m["n"]) / 1000  # type: ignore[operator]
    print(f"  {per:9.2f} KB  in all (used_memory counts the allocator's overhead too)")
    cpu_add, cpu_warm = add["cpu"]["all"], add["warm_cpu"]["all"]  # type: ignore[index]
    s3_month = per_month * up["s3_bytes"]  # type: ignore[index]
    # An add keeps a profile's record (the mean of every record: uploads, members and the
    # warm-ups' merged profiles), its member's keys, and its share of the other indexes.
    record = keys.get("*:profile:{*}", 0) / max(1, m["records"])  # type: ignore[call-overload]
    skip = {*member_keys, "*:profile:{*}"}
    other = sum(v for k, v in ranked if "view" not in k and k not in skip) / (2 * m["n"])  # type: ignore[operator]
    kept = record + member + other
    print(
        f"  {record / 1000:9.2f} KB  a record, the mean of {m['records']} "
        f"({record / 1000:.2f} + {member / 1000:.2f} member + {other / 1000:.2f} other "
        "indexes per add)"
    )
    print(f"\n{per_month:,} profiles a month (collection adds of these sizes), 30-day retention:")
    print(f"  S3: {s3_month / 1e12:.2f} TB kept, {per_month:,} PUTs a month (and the blocks')")
    print(
        f"  Redis: {per_month * kept / 1e9:.1f} GB of records, members and indexes "
        f"({kept / 1000:.2f} KB each, MEMORY USAGE), plus the view cache "
        "(SHARE_VIEW_CACHE_BYTES, 256 MiB by default)"
    )
    computed, cached = m["view_computed_cpu"]["all"], m["view_cached_cpu"]["all"]  # type: ignore[index]
    print(
        f"  CPU: {per_month * cpu_add / 3600:,.0f} CPU-hours a month for the adds "
        f"({per_month * cpu_add / (30 * 86400):.2f} cores on average), "
        f"{per_month * cpu_warm / 3600:,.0f} more for warm-ups as often as here; a view "
        f"computed {computed * 1000:.0f} ms, a cached one {cached * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=200)
    parser.add_argument("--per-month", type=int, default=10_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cost-bench-") as tmp:
        found = measure(args.profiles, Path(tmp))
    report(found, args.per_month)


if __name__ == "__main__":
    main()
