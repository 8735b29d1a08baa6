"""Analysis semantics on small profiles built in code: each test pins one pprof rule."""

from __future__ import annotations

import gzip
from typing import Any

import numpy as np
import pytest

from share import pprof
from share.analysis.flame import flame
from share.analysis.measure import text, units
from share.analysis.model import names
from share.analysis.model import tables as analysis_tables
from share.analysis.model.graph import Graph, graph
from share.analysis.model.stacks import stacks, unique_stacks
from share.analysis.model.tables import SampleTypeError, Tables, _dense, tables
from share.analysis.reports.top import top
from share.pprof._proto import profile_pb2

INT64_MAX = (1 << 63) - 1


def build(
    stacks: list[tuple[list[str | tuple[str, ...]], list[int]]],
    *,
    types: tuple[tuple[str, str], ...] = (("samples", "count"), ("cpu", "nanoseconds")),
    labels: dict[int, dict[str, str]] | None = None,
    default: str = "",
    drop_frames: str = "",
    unsymbolized: int = 0,
) -> Tables:
    """A profile whose samples are given as (stack leaf first, values).

    A stack entry is a function name (one location per name) or a tuple of names: one location
    whose lines are inlined calls, innermost first. unsymbolized adds that many locations
    without lines in a mapping of /bin/server, referenced as "?0", "?1"...
    """
    strings = [""]

    def s(text: str) -> int:
        if text not in strings:
            strings.append(text)
        return strings.index(text)

    p = profile_pb2.Profile()
    for t, u in types:
        p.sample_type.add(type=s(t), unit=s(u))
    p.mapping.add(id=1, memory_start=0x1000, memory_limit=0x9000, filename=s("/bin/server"))
    functions: dict[str, int] = {}
    locations: dict[tuple[str, ...], int] = {}

    def location(entry: str | tuple[str, ...]) -> int:
        names = (entry,) if isinstance(entry, str) else entry
        if names not in locations:
            loc = p.location.add(
                id=len(locations) + 1, mapping_id=1, address=0x1000 + len(locations)
            )
            locations[names] = loc.id
            if names[0].startswith("?"):
                return loc.id
            for name in names:
                if name not in functions:
                    functions[name] = len(functions) + 1
                    p.function.add(id=functions[name], name=s(name), system_name=s(name))
                loc.line.add(function_id=functions[name], line=len(locations))
        return locations[names]

    for i, (stack, values) in enumerate(stacks):
        sample = p.sample.add(location_id=[location(e) for e in stack], value=values)
        for k, v in (labels or {}).get(i, {}).items():
            sample.label.add(key=s(k), str=s(v))
    for k in range(unsymbolized):
        location(f"?{k}")
    p.default_sample_type = s(default) if default else 0
    p.drop_frames = s(drop_frames) if drop_frames else 0
    p.string_table.extend(strings)
    parsed = pprof.parse(gzip.compress(p.SerializeToString()), max_profile_bytes=1 << 20)
    return tables(parsed)


def top_rows(t: Tables, sample: str | None = None) -> dict[str, tuple[int, int, str]]:
    g = graph(t, t.sample_index(sample))
    return {r.name: (r.flat, r.cum, r.inline) for r in top(g).rows}


def tree(fg: dict[str, Any]) -> list[tuple[int, str, int, int]]:
    """(depth, name, value, self) in the JSON's preorder."""
    n = fg["nodes"]
    return [
        (d, fg["names"][i], v, s)
        for i, d, v, s in zip(n["name"], n["depth"], n["value"], n["self"], strict=True)
    ]


def test_flat_cum_and_sorting() -> None:
    t = build([(["c", "b", "a"], [1, 30]), (["b", "a"], [1, 20]), (["d", "a"], [1, 20])])
    rows = top_rows(t)
    assert rows == {"c": (30, 30, ""), "b": (20, 50, ""), "d": (20, 20, ""), "a": (0, 70, "")}
    names = [r.name for r in top(graph(t, 1)).rows]
    assert names == ["c", "b", "d", "a"]  # |flat| desc, then name, then |cum|


def test_recursion_counts_once_in_cum() -> None:
    t = build([(["b", "a", "b", "a", "main"], [1, 7]), (["a", "main"], [1, 3])])
    rows = top_rows(t)
    assert rows["a"] == (3, 10, "")
    assert rows["b"] == (7, 7, "")
    assert rows["main"] == (0, 10, "")


def test_inlined_frames_are_nodes_with_marks() -> None:
    # Location 1 holds f inlined into g; k calls f for real; h is only ever inlined. A call
    # edge is inline only if every traversal of it was, so g -> f for real would unmark it.
    t = build(
        [
            ([("f", "g"), "main"], [1, 40]),
            (["f", "k", "main"], [1, 10]),
            ([("h", "g"), "main"], [1, 5]),
            ([("e", "g"), "main"], [1, 1]),
            (["e", "g", "main"], [1, 1]),
        ]
    )
    rows = top_rows(t)
    assert rows["f"] == (50, 50, "(partial-inline)")
    assert rows["h"] == (5, 5, "(inline)")
    assert rows["e"] == (2, 2, "")
    assert rows["g"] == (0, 47, "")
    fg = flame.flamegraph(graph(t, 1), 0, 0)
    assert tree(fg) == [
        (0, "", 57, 0),
        (1, "main", 57, 0),
        (2, "g", 47, 0),
        (3, "f", 40, 40),
        (3, "h", 5, 5),
        (3, "e", 2, 2),
        (2, "k", 10, 0),
        (3, "f", 10, 10),
    ]


def test_diff_base_total_counts_only_base_samples() -> None:
    t = build(
        [(["a", "main"], [1, 100]), (["a", "main"], [-1, -60]), (["b", "main"], [-1, -10])],
        labels={1: {"pprof::base": "true"}, 2: {"pprof::base": "true"}},
    )
    g = graph(t, 1)
    assert g.total == 70  # |-60| + |-10|: the base, not 170
    assert top_rows(t)["a"] == (40, 40, "")


def test_identical_samples_of_both_signs_cancel_in_the_total() -> None:
    # profile.Merge sums equal samples first: +5 and -5 vanish, so the total is 10, not 20.
    t = build([(["a"], [1, 5]), (["a"], [-1, -5]), (["b"], [1, 10])])
    g = graph(t, 1)
    assert g.total == 10
    assert top_rows(t) == {"b": (10, 10, "")}  # a: flat = cum = 0, so pprof drops it


def test_samples_with_other_labels_do_not_merge() -> None:
    t = build(
        [(["a"], [1, 5]), (["a"], [-1, -5]), (["a"], [-1, -5]), (["b"], [1, 10])],
        labels={0: {"req": "1"}, 1: {"req": "2"}, 2: {"req": "2"}},
    )
    assert graph(t, 1).total == 5 + 10 + 10  # |5| + |-5 - 5| + |10|


def test_negative_values_sort_by_magnitude() -> None:
    t = build([(["a"], [1, 5]), (["b"], [-1, -50]), (["c"], [1, 20])])
    rows = top(graph(t, 1)).rows
    assert [(r.name, r.flat) for r in rows] == [("b", -50), ("c", 20), ("a", 5)]
    assert graph(t, 1).total == 75


def test_int64_sums_wrap_around_like_go() -> None:
    t = build([(["a"], [1, INT64_MAX]), (["b"], [1, INT64_MAX])])
    g = graph(t, 1)
    assert g.total == units.wrap64(2 * INT64_MAX) == -2
    assert top_rows(t)["a"] == (INT64_MAX, INT64_MAX, "")


def test_profile_without_samples() -> None:
    t = build([])
    g = graph(t, t.sample_index(None))
    assert list(top(g).rows) == []
    fg = flame.flamegraph(g)
    assert fg["no_samples"] is True and fg["total"] == 0
    assert tree(fg) == [(0, "", 0, 0)]
    assert fg["names"] == [""] and fg["files"] == [""]


def test_trimming_drops_small_subtrees_and_keeps_totals() -> None:
    t = build([(["big", "main"], [1, 90]), (["small", "main"], [1, 6]), (["tiny"], [1, 4])])
    g = graph(t, 1)
    fg = flame.flamegraph(g, node_fraction=0.05)  # cutoff 5: tiny (4) goes, small (6) stays
    assert fg["total"] == 100
    assert tree(fg) == [(0, "", 100, 0), (1, "main", 96, 0), (2, "big", 90, 90), (2, "small", 6, 6)]
    expected = {"nodes": 1, "value": 4, "max": 4, "node_fraction": 0.05}
    assert fg["trimmed"] == {**expected, "budget": flame.FLAME_NODE_BUDGET}
    fg = flame.flamegraph(g, node_fraction=0.5)
    assert tree(fg) == [(0, "", 100, 0), (1, "main", 96, 0), (2, "big", 90, 90)]
    assert fg["trimmed"]["nodes"] == 2 and fg["trimmed"]["value"] == 10
    assert fg["trimmed"]["max"] == 6


def test_budget_keeps_the_heaviest_nodes_and_their_callers() -> None:
    t = build(
        [
            (["leaf", "b", "main"], [1, 50]),
            (["c", "main"], [1, 30]),
            (["x", "y", "z", "other"], [1, 8]),
            (["w", "other"], [1, 8]),
        ]
    )
    g = graph(t, 1)
    fg = flame.flamegraph(g, budget=5)
    # main 80, b 50, leaf 50, c 30; then 'other' (16) beats its children (8 each).
    assert tree(fg) == [
        (0, "", 96, 0),
        (1, "main", 80, 0),
        (2, "b", 50, 0),
        (3, "leaf", 50, 50),
        (2, "c", 30, 30),
    ]
    assert fg["trimmed"] == {"nodes": 1, "value": 16, "max": 16, "node_fraction": 0, "budget": 5}
    # Ties at the cut go to the shallower node: w and z (8, depth 2) before y and x (8, depth 3).
    fg = flame.flamegraph(g, budget=8)
    assert [(d, n) for d, n, _, _ in tree(fg)][5:] == [(1, "other"), (2, "w"), (2, "z")]
    assert fg["trimmed"] == {"nodes": 1, "value": 8, "max": 8, "node_fraction": 0, "budget": 8}


def reference_tree(
    g: Graph, budget: int
) -> tuple[dict[tuple[str, ...], tuple[int, int]], list[int]]:
    """The budget rule by brute force over the same stacks: every node of the whole tree, the
    heaviest `budget` by (smallest |value| on the path desc, depth, first stack), which must be
    a tree. Returns {path: (value, self)} and the values of the hidden subtrees' top nodes."""
    st = g.stacks
    value: dict[tuple[str, ...], int] = {(): 0}
    own: dict[tuple[str, ...], int] = {(): 0}
    first: dict[tuple[str, ...], int] = {(): -1}
    for i in range(len(st.frame_off) - 1):
        w = int(g.stack_weights[i])
        path = tuple(st.names[n] for n in st.frame_node[st.frame_off[i] : st.frame_off[i + 1]])
        for k in range(len(path) + 1):
            value[path[:k]] = value.get(path[:k], 0) + w
            first.setdefault(path[:k], i)
        own[path] = own.get(path, 0) + w
    weight = {p: min(abs(value[p[:k]]) for k in range(1, len(p) + 1)) for p in value if p}
    ranked = sorted(value, key=lambda p: (p != (), -weight.get(p, 0), len(p), first[p]))
    kept = set(ranked[:budget] if budget else ranked)
    assert all(p[:-1] in kept for p in kept if p)
    hidden = [value[p] for p in value if p not in kept and p[:-1] in kept]
    return {p: (value[p], own.get(p, 0)) for p in kept}, hidden


def paths(fg: dict[str, Any]) -> dict[tuple[str, ...], tuple[int, int]]:
    """{path of names from the root: (value, self)} of a flame graph JSON."""
    out: dict[tuple[str, ...], tuple[int, int]] = {}
    stack: list[str] = []
    for depth, name, value, self_ in tree(fg):
        del stack[max(depth - 1, 0) :]
        if depth:
            stack.append(name)
        out[tuple(stack)] = (value, self_)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_budget_matches_a_brute_force_choice(seed: int) -> None:
    rng = np.random.default_rng(seed)
    signs = [-1, 1] if seed >= 4 else [1]  # seeds 4 and 5 mix signs, as diff profiles do
    samples = []
    for _ in range(int(rng.integers(20, 60))):
        depth = int(rng.integers(1, 12))
        frames = [str(f) for f in rng.integers(0, 6, depth)]
        samples.append((frames, [1, int(rng.choice(signs)) * int(rng.integers(1, 4))]))
    g = graph(build(samples), 1)
    whole = flame.flamegraph(g, budget=0)
    sizes = [1, 2, 3, 7, 20, 50, len(whole["nodes"]["name"]) - 1, len(whole["nodes"]["name"])]
    for budget in [0, *sizes]:
        fg = flame.flamegraph(g, budget=budget)
        expected, hidden = reference_tree(g, budget)
        assert paths(fg) == expected, budget
        assert len(fg["nodes"]["name"]) <= (budget or len(expected))
        assert fg["total"] == whole["total"]
        assert fg["nodes"]["value"][0] == whole["nodes"]["value"][0]
        trimmed = fg["trimmed"]
        assert (trimmed["nodes"], trimmed["value"]) == (len(hidden), sum(hidden)), budget
        assert trimmed["max"] == max((abs(v) for v in hidden), default=0)


def test_flame_graph_is_preorder_children_by_value() -> None:
    t = build(
        [
            (["x", "b", "main"], [1, 3]),
            (["y", "a", "main"], [1, 5]),
            (["z", "a", "main"], [1, 2]),
            (["main"], [1, 1]),
        ]
    )
    fg = flame.flamegraph(graph(t, 1), 0, 0)
    assert tree(fg) == [
        (0, "", 11, 0),
        (1, "main", 11, 1),
        (2, "a", 7, 0),
        (3, "y", 5, 5),
        (3, "z", 2, 2),
        (2, "b", 3, 0),
        (3, "x", 3, 3),
    ]
    assert fg["sample_type"] == {"type": "cpu", "unit": "nanoseconds"}
    assert fg["sample_index"] == 1 and fg["default_sample_index"] == 1


def test_sample_index_rules() -> None:
    types = (("alloc_space", "bytes"), ("space", "bytes"), ("objects", "count"))
    t = build([(["a"], [1, 2, 3])], types=types, default="space")
    assert t.sample_index(None) == 1  # default_sample_type
    assert t.sample_index("2") == 2
    assert t.sample_index("inuse_objects") == 2  # legacy inuse_ prefix
    with pytest.raises(SampleTypeError, match="'alloc_space', 'space', 'objects'"):
        t.sample_index("cpu")
    with pytest.raises(SampleTypeError, match="outside"):
        t.sample_index("3")
    assert build([(["a"], [1, 2, 3])], types=types).sample_index(None) == 2  # else the last


def test_drop_frames_prunes_beneath_the_match() -> None:
    t = build(
        [(["leaf", "runtime.x", "work", "main"], [1, 10]), (["work", "main"], [1, 5])],
        drop_frames="runtime\\..*",
    )
    rows = top_rows(t)
    assert "leaf" not in rows and "runtime.x" not in rows
    assert rows["work"] == (15, 15, "")


def test_unsymbolized_locations_are_named_by_binary() -> None:
    t = build([], unsymbolized=2)
    p = t.message
    p.sample.add(location_id=[1, 2], value=[1, 9])
    parsed = tables(
        pprof.parse(p.SerializeToString(), max_profile_bytes=1 << 20)  # via the real parser
    )
    assert top_rows(parsed) == {"[server]": (9, 9, "")}


def test_top_text_layout() -> None:
    t = build([(["c", "b", "a"], [1, 3_000_000]), (["b", "a"], [1, 1_000_000])])
    report = top(graph(t, 1))
    out = text.top_text(report.header, report.total, report.rows, orig_count=report.orig_count)
    assert out.splitlines() == [
        "File: server",
        "Type: cpu",
        "Showing nodes accounting for 4ms, 100% of 4ms total",
        "      flat  flat%   sum%        cum   cum%",
        "       3ms 75.00% 75.00%        3ms 75.00%  c",
        "       1ms 25.00%   100%        4ms   100%  b",
        "         0     0%   100%        4ms   100%  a",
    ]


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (1536, "bytes", "1.50kB"),
        (3_040_000_000, "nanoseconds", "3.04s"),
        (42, "count", "42"),
        (0, "nanoseconds", "0"),
        (-1500, "microseconds", "-1.50ms"),
        (7, "widgets", "7"),
    ],
)
def test_unit_labels(value: int, unit: str, expected: str) -> None:
    assert units.label(value, unit) == expected


def test_unknown_units_are_printed_after_the_value() -> None:
    assert units.scaled_label(7, "widgets", "widgets") == "7widgets"
    assert units.output_unit("widgets", 10, np.array([7]), np.array([7])) == "widgets"


def test_percentages_as_go_prints_them() -> None:
    assert units.percentage(1, 3) == "33.33%"
    assert units.percentage(1, 1000) == "  0.1%"
    assert units.percentage(1, 100000) == "0.001%"
    assert units.percentage(3, 3) == "  100%"
    assert units.percentage(5, 0) == "    0%"


def test_stacks_expand_root_first() -> None:
    t = build([([("f", "g"), "main"], [1, 1])])
    st = stacks(t)
    assert [st.names[n] for n in st.frame_node.tolist()] == ["main", "g", "f"]
    assert st.frame_inline.tolist() == [False, False, True]
    assert np.array_equal(st.frame_off, [0, 3])


@pytest.mark.parametrize(
    ("name", "system", "shown"),
    [  # what go tool pprof 1.19 prints for each (checked by hand)
        ("std::vector<int>::push_back(int const&)", None, "std::vector::push_back"),
        ("ns::f(std::map<int, std::vector<int> >)", None, "ns::f"),
        ("", "RawSym", "RawSym"),
        ("main.Map[...].Get", None, "main.Map[...].Get"),
        ("foo.(*Bar[...]).Baz", None, "foo.(*Bar[...]).Baz"),
        ("java.util.HashMap.<init>", None, "java.util.HashMap.<init>"),
        ("Shown", "Mangled::x<y>", "Shown"),
        ("a::b<c>>", None, "a::b>"),
    ],
)
def test_demangling_heuristic(name: str, system: str | None, shown: str) -> None:
    system = name if system is None else system
    assert names.demangled_name(name, system) == shown
    assert names.demangled_names(["x", name], ["x", system]) == ["x", shown]


def test_equal_stacks_are_stored_once_and_map_back_exactly() -> None:
    rng = np.random.default_rng(1)
    shapes = [[3, 2, 1], [3, 2, 1, 0], [7], [], [2, 3, 1], [1, 2, 3]]
    picks = rng.integers(0, len(shapes), 300).tolist()
    loc = np.array([x for i in picks for x in shapes[i]], dtype=np.int64)
    off = np.concatenate(([0], np.cumsum([len(shapes[i]) for i in picks])))
    stack_of, u_loc, u_off = unique_stacks(loc, off)
    assert len(u_off) - 1 == len(set(picks))  # one stack per distinct shape
    for sample, shape in enumerate(picks):
        u = stack_of[sample]
        assert u_loc[u_off[u] : u_off[u + 1]].tolist() == shapes[shape]


@pytest.mark.parametrize(
    "ids",
    [[1, 2, 3, 4], [5, 6, 7], [3, 1, 2], [1, 2, 4], [2**63, 2**63 + 1], [10, 1000, 10**9]],
)
def test_dense_ids_map_references_to_indices(ids: list[int]) -> None:
    refs = ids + ids[::-1] + [0, 8, 999, 2**64 - 1]
    got = _dense(np.array(ids, dtype=np.uint64), np.array(refs, dtype=np.uint64))
    assert got.tolist() == [ids.index(r) if r in ids else -1 for r in refs]


def _varint(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80)
        x >>= 7
    return bytes(out + bytes([x]))


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_messages_read_as_stored_agree_with_the_decoded_message(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Go's reading: a repeated singular field's last value wins, unknown fields are skipped,
    # field 0 too, and repeated fields may come unpacked.
    p = profile_pb2.Profile()
    p.string_table.extend(["", "samples", "count", "first", "second", "f.go", "g"])
    p.sample_type.add(type=1, unit=2)
    p.sample.add(location_id=[1, 2], value=[5])
    p.sample.add(location_id=[2], value=[7])
    p.function.add(id=2, name=6, system_name=6)
    p.location.add(id=2, line=[profile_pb2.Line(function_id=2, line=1)])
    # id 1, name "first", system_name "first", name "second", unknown field 9, filename f.go
    odd_function = b"\x08\x01\x10\x03\x18\x03\x10\x04\x48\x09\x20\x05"
    # id 1, a line of function 1, field 0, unknown field 15
    odd_location = b"\x08\x01" + _field(4, b"\x08\x01") + b"\x00\x05\x78\x01"
    raw = p.SerializeToString() + _field(5, odd_function) + _field(4, odd_location)
    parsed = pprof.parse(raw, max_profile_bytes=1 << 20)
    stored = top(graph(tables(parsed), 0))
    assert [r.name for r in stored.rows] == ["g", "second"]  # the function's second name wins
    monkeypatch.setattr(analysis_tables, "_stored_payloads", lambda parsed: None)
    again = pprof.parse(raw, max_profile_bytes=1 << 20)
    decoded = top(graph(tables(again), 0))
    assert list(stored.rows) == list(decoded.rows)
