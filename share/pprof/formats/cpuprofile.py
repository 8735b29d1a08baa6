"""Chrome DevTools / V8 `.cpuprofile` JSON (Node's `--cpu-prof`, Chrome's "Save profile"):
a call tree of nodes, and the node each sample was taken in.

Two sample types: samples/count (one per entry of `samples`) and wall/nanoseconds (each
sample's `timeDeltas` entry, the time since the previous sample, in microseconds; a negative
delta, which V8 writes when samples arrive out of order, counts as 0; the older form's
`timestamps` give the differences between consecutive ones). A frame is its
`functionName` (`(anonymous)` when empty), its `url` as the file name and its 1-based line.
The tree's `(root)` is not a frame. The older form with a nested `head` tree is read too.
"""

from __future__ import annotations

from typing import Any

from ...errors import BadProfile
from ..limits import Limits
from .stacks import StackProfile

FORMAT = "cpuprofile"


def recognise(document: Any) -> bool:
    return isinstance(document, dict) and (
        isinstance(document.get("nodes"), list) or isinstance(document.get("head"), dict)
    )


def _bad(where: str, what: str) -> BadProfile:
    return BadProfile(f"{FORMAT}: {where}: {what}")


def _flatten(head: dict, limits: Limits) -> list[dict]:
    """The nested `head` tree as a `nodes` list (children as ids), without recursion."""
    nodes, todo = [], [head]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            raise _bad("head", "a child is not an object")
        children = node.get("children") or []
        if not isinstance(children, list):
            raise _bad(f"node {node.get('id')!r}", "children is not a list")
        nodes.append(
            {
                "id": node.get("id"),
                "callFrame": node,
                "children": [c.get("id") if isinstance(c, dict) else None for c in children],
            }
        )
        limits.check("locations", len(nodes))
        todo.extend(children)
    return nodes


def _int(value: Any, where: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise _bad(where, f"{what} is not a number")
    return int(value)


def _tree(nodes: list, limits: Limits) -> tuple[dict[int, dict], dict[int, int]]:
    """Nodes by id and each node's parent; a BadProfile for a malformed tree."""
    limits.check("locations", len(nodes))
    by_id: dict[int, dict] = {}
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise _bad(f"nodes[{i}]", "not an object")
        node_id = _int(node.get("id"), f"nodes[{i}]", "id")
        if node_id in by_id:
            raise _bad(f"nodes[{i}]", f"id {node_id} appears twice")
        by_id[node_id] = node
    parent: dict[int, int] = {}
    for node_id, node in by_id.items():
        children = node.get("children") or []
        if not isinstance(children, list):
            raise _bad(f"node {node_id}", "children is not a list")
        for child in children:
            if isinstance(child, bool) or not isinstance(child, int | float) or child not in by_id:
                raise _bad(f"node {node_id}", f"child {child!r} is not in nodes")
            if child in parent:
                raise _bad(f"node {child}", "has two parents")
            parent[child] = node_id
    return by_id, parent


def _frame(node: dict, node_id: int) -> tuple[str, str, int]:
    frame = node.get("callFrame")
    if not isinstance(frame, dict):
        raise _bad(f"node {node_id}", "callFrame is not an object")
    name, url = frame.get("functionName") or "", frame.get("url") or ""
    if not isinstance(name, str) or not isinstance(url, str):
        raise _bad(f"node {node_id}", "functionName and url must be strings")
    line = frame.get("lineNumber", -1)
    line = _int(line, f"node {node_id}", "lineNumber") if line is not None else -1
    return name or "(anonymous)", url, max(line + 1, 0)


def convert(document: dict, limits: Limits) -> bytes:
    nodes = document.get("nodes")
    if nodes is None:
        nodes = _flatten(document["head"], limits)
    by_id, parent = _tree(nodes, limits)
    samples = document.get("samples") or []
    if not isinstance(samples, list):
        raise _bad("samples", "not a list")
    deltas = document.get("timeDeltas")
    stamps = document.get("timestamps")
    if (
        deltas is None
        and isinstance(stamps, list)
        and len(samples) <= len(stamps) <= len(samples) + 1
    ):
        # n + 1 timestamps bound n samples; n timestamps leave the first sample's time unknown
        times = [_int(t, f"timestamps[{i}]", "the entry") for i, t in enumerate(stamps)]
        times = times if len(times) > len(samples) else times[:1] + times
        deltas = [b - a for a, b in zip(times, times[1:], strict=False)]
    if not isinstance(samples, list):
        raise _bad("samples", "not a list")
    if deltas is not None and (not isinstance(deltas, list) or len(deltas) != len(samples)):
        raise _bad("timeDeltas", f"must hold one entry per sample ({len(samples)})")
    limits.check("samples", len(samples))
    profile = StackProfile(
        [("samples", "count"), ("wall", "nanoseconds")], limits, ("wall", "nanoseconds"), 0, FORMAT
    )
    start, end = document.get("startTime"), document.get("endTime")
    if isinstance(start, int | float) and isinstance(end, int | float) and end >= start:
        scale = 1e9 if "head" in document else 1000  # the older form counts seconds
        profile.duration_nanos = min(int((end - start) * scale), (1 << 63) - 1)
    stacks: dict[int, list[int]] = {}
    for i, node_id in enumerate(samples):
        if isinstance(node_id, bool) or not isinstance(node_id, int) or node_id not in by_id:
            raise _bad(f"samples[{i}]", f"node {node_id!r} is not in nodes")
        stack = stacks.get(node_id)
        if stack is None:
            stack = stacks[node_id] = _stack(node_id, by_id, parent, profile)
        wall = max(_int(deltas[i], f"timeDeltas[{i}]", "the entry"), 0) if deltas else 0
        # (a difference of the older form's timestamps is checked the same way)
        profile.add(stack, [1, wall * 1000])
    return profile.encode()


def _stack(node_id: int, by_id: dict, parent: dict, profile: StackProfile) -> list[int]:
    """Location ids root first, the tree's root left out; a BadProfile for a cycle."""
    chain, seen = [], set()
    at: int | None = node_id
    while at is not None:
        if at in seen:
            raise _bad(f"node {at}", "is its own ancestor")
        seen.add(at)
        chain.append(at)
        at = parent.get(at)
    frames = [_frame(by_id[n], n) for n in reversed(chain)]
    if frames and frames[0][0] == "(root)":
        frames = frames[1:]
    return [profile.location(*f) for f in frames]
