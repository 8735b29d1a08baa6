"""The other direction: stacks and weights as folded text, the input of flamegraph.pl and
speedscope (`frame;frame;frame N`, root first)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def _frame(name: str) -> str:
    # A line is one stack: a newline inside a name would start another. `;` separates frames
    # and has no escape in the format, so it stays (flamegraph.pl splits there too).
    return name.replace("\r", " ").replace("\n", " ")


def folded_lines(stacks: Iterable[Sequence[str]], weights: Iterable[int]) -> list[str]:
    """One `a;b;c N` line per distinct stack (frames root first), weights summed, in order of
    first appearance; stacks weighing 0 in all are left out, negative ones (diffs) kept."""
    summed: dict[tuple[str, ...], int] = {}
    for stack, weight in zip(stacks, weights, strict=True):
        key = tuple(_frame(f) for f in stack)
        summed[key] = summed.get(key, 0) + int(weight)
    return [f"{';'.join(key)} {weight}" for key, weight in summed.items() if weight and key]
