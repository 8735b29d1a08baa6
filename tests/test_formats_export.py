"""share.pprof.formats.folded_lines: stacks and weights as folded text, and back."""

from __future__ import annotations

from collections import Counter

from share.pprof.formats import folded_lines

from formats_readback import parse, stacks


def test_lines_sum_equal_stacks_in_order_of_first_appearance() -> None:
    lines = folded_lines(
        [["main", "a"], ["main", "b"], ["main", "a"], ["main"], ["main", "c"]], [1, 2, 3, 4, 0]
    )
    assert lines == ["main;a 4", "main;b 2", "main 4"]


def test_a_name_cannot_break_a_line_and_diffs_keep_their_sign() -> None:
    assert folded_lines([["main", "two\nlines"], ["x"]], [-3, 5]) == ["main;two lines -3", "x 5"]


def test_empty_stacks_and_zero_weights_are_left_out() -> None:
    assert folded_lines([[], ["a"], ["b"]], [5, 0, 1]) == ["b 1"]


def test_the_lines_read_back_as_the_same_profile() -> None:
    """stacks -> folded text -> upload conversion -> the same stacks and weights."""
    stacks_in = [["main", "run", "sort"], ["main", "gc"], ["main", "run", "sort"], ["main"]]
    weights = [30, 5, 12, 2]
    text = "\n".join(folded_lines(stacks_in, weights)) + "\n"
    p = parse(text.encode())
    assert stacks(p, "samples") == Counter({"main;run;sort": 42, "main;gc": 5, "main": 2})
