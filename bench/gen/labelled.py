"""A heavy labelled CPU profile, shaped like Go's runtime/pprof output of a busy server.

A Go server that wraps each request in pprof.Do(ctx, pprof.Labels("request_id", ...)) gets a
CPU profile where nearly every sample carries its own label set, so samples with the same stack
are not merged and the file grows with the request count. Profiling a real server long enough
to get a ~6 MB profile takes many CPU-minutes; this writes the same shape directly, seeded so
every run produces the same bytes:

- ~700 functions with Go-style names and files, ~25k locations (some with inlined lines);
- stacks from a fixed call graph: runtime/net/http entry frames, handlers, middleware, a few
  recursive helpers (so cum must not double count), depth 12..60;
- samples (count, nanoseconds) at 10 ms, labelled request_id (unique per request, a request
  spans 1..8 samples), handler (one of 24) and tenant (one of 500);
- mapping, period, duration and time set as runtime/pprof sets them.

    .venv/bin/python bench/gen/labelled.py OUT.pb.gz [--samples N]
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from share.pprof._proto import profile_pb2  # noqa: E402

PACKAGES = [
    "main", "net/http", "encoding/json", "database/sql", "github.com/acme/shop/api",
    "github.com/acme/shop/store", "github.com/acme/shop/cache", "google.golang.org/grpc",
    "compress/gzip", "crypto/tls", "bufio", "strings", "sort", "sync", "reflect",
]  # fmt: skip
VERBS = [
    "Get", "Put", "List", "Encode", "Decode", "Serve", "Handle", "Scan", "Query", "Write", "Read",
    "Parse", "Marshal",
]  # fmt: skip
NOUNS = [
    "Order", "Cart", "User", "Item", "Row", "Stmt", "Conn", "Buffer", "Token", "Header", "Field",
    "Value", "Node", "Entry",
]  # fmt: skip


def generate(n_samples: int, seed: int = 7) -> profile_pb2.Profile:
    rng = random.Random(seed)
    strings = [""]
    index: dict[str, int] = {"": 0}

    def s(text: str) -> int:
        if text not in index:
            index[text] = len(strings)
            strings.append(text)
        return index[text]

    p = profile_pb2.Profile()
    p.sample_type.add(type=s("samples"), unit=s("count"))
    p.sample_type.add(type=s("cpu"), unit=s("nanoseconds"))
    p.period_type.type, p.period_type.unit = s("cpu"), s("nanoseconds")
    p.period = 10_000_000
    p.time_nanos = 1_767_225_600_000_000_000
    p.duration_nanos = 600 * 10**9
    p.mapping.add(
        id=1, memory_start=0x400000, memory_limit=0x1400000, filename=s("/srv/shop"),
        has_functions=True, has_filenames=True, has_line_numbers=True, has_inline_frames=True,
    )  # fmt: skip

    # Functions: runtime entry frames, then library/user functions.
    names = ["runtime.goexit", "net/http.(*conn).serve", "net/http.serverHandler.ServeHTTP",
             "net/http.HandlerFunc.ServeHTTP", "runtime.mallocgc", "runtime.memmove",
             "runtime.mapaccess2_faststr", "syscall.Syscall"]  # fmt: skip
    while len(names) < 700:
        pkg = rng.choice(PACKAGES)
        recv = f"(*{rng.choice(NOUNS)})." if rng.random() < 0.5 else ""
        name = f"{pkg}.{recv}{rng.choice(VERBS)}{rng.choice(NOUNS)}"
        if name not in names:
            names.append(name)
    for i, name in enumerate(names):
        pkg = name.rsplit(".", 1)[0].split(".(")[0]
        p.function.add(
            id=i + 1, name=s(name), system_name=s(name),
            filename=s(f"{pkg}/{pkg.rsplit('/', 1)[-1]}.go"), start_line=10 + 7 * i,
        )  # fmt: skip
    leaves = [4, 5, 6, 7]  # runtime leaf functions, by index
    handlers = list(range(8, 32))
    callees = {f: rng.sample(range(32, len(names)), 6) for f in range(len(names))}

    # Locations: a few per function (different lines), some with an inlined callee.
    loc_of: dict[int, list[int]] = {}
    for f in range(len(names)):
        for _ in range(rng.randint(20, 50)):
            n = len(p.location)
            loc = p.location.add(id=n + 1, mapping_id=1, address=0x401000 + 16 * n)
            if rng.random() < 0.15:
                inner = rng.randrange(32, len(names))
                loc.line.add(function_id=inner + 1, line=rng.randint(1, 400))
            loc.line.add(function_id=f + 1, line=rng.randint(1, 400))
            loc_of.setdefault(f, []).append(loc.id)

    def stack() -> list[int]:
        frames = [0, 1, 2, 3, rng.choice(handlers)]
        depth = rng.randint(10, 45)
        while len(frames) < depth:
            f = frames[-1]
            nxt = rng.choice(callees[f])
            if rng.random() < 0.05 and len(frames) > 8:  # a recursive helper
                nxt = frames[-2]
            frames.append(nxt)
        frames.append(rng.choice(leaves))
        return [rng.choice(loc_of[f]) for f in reversed(frames)]  # leaf first

    stacks = [stack() for _ in range(4000)]
    tenants = [f"tenant-{i:03d}" for i in range(500)]
    k_req, k_handler, k_tenant = s("request_id"), s("handler"), s("tenant")
    request = 0
    left = 0
    while len(p.sample) < n_samples:
        if left == 0:
            request += 1
            left = rng.randint(1, 8)
            handler = f"/api/v1/{rng.choice(NOUNS).lower()}s/{rng.choice(VERBS).lower()}"
            tenant = rng.choice(tenants)
            base = rng.randrange(len(stacks))
        left -= 1
        sample = p.sample.add(
            location_id=stacks[(base + rng.randrange(3)) % len(stacks)], value=[1, 10_000_000]
        )
        if rng.random() < 0.95:  # most samples run inside a request
            sample.label.add(key=k_req, str=s(f"{request:08x}-{request * 2654435761 % 2**32:08x}"))
            sample.label.add(key=k_handler, str=s(handler))
            sample.label.add(key=k_tenant, str=s(tenant))
    p.string_table.extend(strings)
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--samples", type=int, default=165_000)
    args = parser.parse_args()
    data = gzip.compress(generate(args.samples).SerializeToString(), compresslevel=6)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data) / 1e6:.1f} MB gzip", file=sys.stderr)


if __name__ == "__main__":
    main()
