"""Helpers of the tests of compute processes by role (ingest, merge): what a process says of
itself, how it was started, and the options of a profile's first views."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from share.analysis.views import options as view_options
from share.compute.pool import ComputePool
from share.core import Share


def ping(pool: ComputePool, slot: int) -> dict[str, Any]:
    """The slot's process: its pid, jobs answered (this one included) and warm profiles."""
    return pool.run({"op": "ping"}, slot=slot)  # type: ignore[no-any-return]


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def first_options(share: Share, pid: str, name: str) -> dict[str, Any]:
    record = share.record(pid)
    types = [(t, u) for t, u in record.sample_types]
    return view_options.parse(name, {}, types, record.default_sample_type)
