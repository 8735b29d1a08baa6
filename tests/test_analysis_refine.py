"""What `go tool pprof` cannot show: the JSON views, canonical options, the zoomed subtree,
the sandwich, and regexes that would make a backtracking engine hang."""

from __future__ import annotations

import time
from functools import cache
from typing import Any

import numpy as np
import orjson
import pytest

from share import pprof
from share.analysis.model.tables import tables
from share.analysis.views import options, views

from conftest import CORPUS

CPU = "go-runtime/cpu-labels.pb.gz"


@cache
def parsed(path: str) -> Any:
    return pprof.parse((CORPUS / path).read_bytes(), max_profile_bytes=1 << 30)


def render(view: str, query: dict[str, str], path: str = CPU) -> Any:
    p = parsed(path)
    opts = options.parse(view, query, p.sample_types(), tables(p).default_sample_type)
    body = views.render(view, [p], opts)
    return orjson.loads(body) if views.mimetype(view) == "application/json" else body.decode()


def opts(view: str, query: dict[str, str]) -> dict[str, Any]:
    p = parsed(CPU)
    return options.parse(view, query, p.sample_types(), None)


# --- canonical options -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("view", "a", "b"),
    [
        ("top", {"f": "sort"}, {"focus": "sort"}),
        ("top", {"granularity": "functions"}, {}),
        ("top", {"cum": "t"}, {"sort": "cum"}),
        ("top", {"cum": "false", "noinlines": "0"}, {}),
        ("top", {"nodefraction": "0"}, {}),
        ("dot", {"nodecount": "80", "nodefraction": "0.005", "ef": "0.001"}, {}),
        ("tags", {"granularity": "lines", "cum": "t"}, {}),
        ("peek", {"peek": "x", "g": "lines", "rel": "yes"},
         {"peek": "x", "granularity": "lines", "relative_percentages": "1"}),
        ("flamegraph", {"si": "cpu"}, {"sample_index": "1"}),
        ("warnings", {"f": "x", "g": "lines", "si": "samples"}, {"focus": "x"}),
    ],
)  # fmt: skip
def test_equivalent_queries_share_one_cache_key(view: str, a: dict, b: dict) -> None:
    assert options.key(view, opts(view, a)) == options.key(view, opts(view, b))


def test_defaults_are_left_out_and_values_kept_as_given() -> None:
    assert opts("dot", {}) == {"sample_index": 1}
    assert opts("top", {"tagroot": "a,,b", "n": "3"}) == {
        "sample_index": 1,
        "node_count": 3,
        "tagroot": "a,,b",  # pprof warns on its own text, so it is kept as it is
    }


@pytest.mark.parametrize(
    ("view", "query", "message"),
    [
        ("top", {"focus": "["}, "parsing focus regexp: error parsing regexp: missing closing ]"),
        ("top", {"g": "x"}, 'invalid "granularity" value "x"'),
        ("tags", {"granularity": "x"}, 'invalid "granularity" value "x"'),
        ("top", {"noinlines": "maybe"}, 'illegal value "maybe" for bool variable noinlines'),
        ("top", {"sort": "name"}, 'invalid "sort" value "name"'),
        ("top", {"tagfocus": "k=a(b"}, "parsing tagfocus regexp: error parsing regexp: missing"),
        ("top", {"tagshow": "(?<x>y)"}, "parsing tagshow regexp: error parsing regexp: invalid or"),
        ("peek", {}, "?peek=REGEX is needed"),
        ("peek", {"peek": "a)"}, "parsing argument regexp a): error parsing regexp: unexpected )"),
        ("svg", {"nodecount": "0"}, "graph limit of 500 nodes"),
        ("top", {"nodefraction": "2"}, "must be between 0 and 1"),
        ("flamegraph", {"zoom": "main.main"}, "?zoom= must be a JSON list"),
    ],
)  # fmt: skip
def test_refused_options_name_the_problem(view: str, query: dict, message: str) -> None:
    with pytest.raises(options.OptionError) as caught:
        opts(view, query)
    assert message in str(caught.value)


def test_backtracking_patterns_run_in_linear_time() -> None:
    """Go's regexp (RE2) has no backtracking: a pattern that is exponential for Python's re
    finishes at once on long names, and what RE2 lacks (backreferences) is refused."""
    long_name = "a" * 5000
    start = time.perf_counter()
    doc = render("top", {"focus": "(a+)+$", "ignore": "(a|aa)+b", "tagfocus": "(x+x+)+y"})
    assert time.perf_counter() - start < 5
    assert doc["warnings"] == [
        "Focus expression matched no samples",
        "TagFocus expression matched no samples",
    ]
    from share.analysis.model import goregexp

    assert goregexp.compile("(a+)+b").search(long_name) is None
    for bad in (r"(a)\1", "(?=a)", "(?<!a)b"):
        with pytest.raises(options.OptionError, match="parsing focus regexp"):
            opts("top", {"focus": bad})


# --- JSON views ------------------------------------------------------------------------------
def test_top_json_sorted_by_cum_has_running_sums_in_that_order() -> None:
    doc = render("top", {"cum": "t", "focus": "sort"})
    rows = doc["rows"]
    assert doc["sort"] == "cum" and doc["filters"] == ["focus=sort"]
    cums = rows["cum"]
    assert cums == sorted(cums, key=lambda v: -abs(v)) and len(cums) == doc["nodes"]
    running = np.cumsum(rows["flat"]) / doc["total"] * 100
    assert np.allclose(rows["sum_pct"], np.abs(running))
    assert doc["total"] == 5_820_000_000  # before the filter, as pprof


def test_flamegraph_json_with_filters_and_relative_percentages() -> None:
    plain = render("flamegraph", {})
    focused = render("flamegraph", {"tagfocus": "endpoint=/api/users"})
    relative = render("flamegraph", {"tagfocus": "endpoint=/api/users", "rel": "t"})
    assert plain["warnings"] == [] and focused["filters"] == ["tagfocus=endpoint=/api/users"]
    assert focused["total"] == plain["total"] == 5_820_000_000
    assert relative["total"] == relative["nodes"]["value"][0] == focused["nodes"]["value"][0]
    assert relative["total"] < plain["total"]
    lines = render("flamegraph", {"granularity": "lines"})
    assert any(":" in n for n in lines["names"][1:])
    rooted = render("flamegraph", {"tagroot": "endpoint"})
    nodes = rooted["nodes"]
    first = [
        rooted["names"][n] for n, d in zip(nodes["name"], nodes["depth"], strict=True) if d == 1
    ]
    assert sorted(first) == ["/api/orders", "/api/users", "/healthz", "<unknown>"]  # no label


def test_peek_json_callers_callees_and_sandwich() -> None:
    doc = render("peek", {"peek": r"^sort\.pdqsort$"})
    names = doc["names"]
    (match,) = doc["matches"]
    assert names[match["name"]] == "sort.pdqsort"
    callers = [names[i] for i in match["callers"]["name"]]
    callees = [names[i] for i in match["callees"]["name"]]
    assert callers == ["sort.Sort"] and "sort.partition" in callees
    assert match["callers"]["weight"] == [match["cum"]]  # recursion adds no self edge
    weights = match["callees"]["weight"]
    assert weights == sorted(weights, reverse=True)
    sandwich = doc["sandwich"]
    assert names[sandwich["name"]] == "sort.pdqsort"
    for side in ("callers", "callees"):
        tree = sandwich[side]
        assert tree["depth"][0] == 0 and tree["value"][0] == match["cum"]
        assert names[tree["name"][1]] == "sort.pdqsort" and tree["depth"][1] == 1
    callers_tree = sandwich["callers"]
    assert names[callers_tree["name"][2]] == "sort.Sort"  # the caller, above the focal frame
    leaf_depths = max(sandwich["callees"]["depth"])
    assert leaf_depths > 2


def test_peek_json_without_a_match_is_empty_not_an_error() -> None:
    doc = render("peek", {"peek": "zz_none"})
    assert doc["matches"] == [] and doc["sandwich"] is None and doc["names"] == []


def test_tags_json_hides_pprof_keys_and_caps_values() -> None:
    doc = render("tags", {})
    keys = {k["key"]: k for k in doc["keys"]}
    assert set(keys) == {"endpoint", "worker"}
    endpoint = keys["endpoint"]
    assert endpoint["values"]["value"][0] == "/api/users"
    assert endpoint["total"] == 5_750_000_000  # samples without the key do not count
    assert endpoint["count"] == 3 and endpoint["other"] == {"count": 0, "weight": 0}
    capped = render("tags", {"values": "1"})
    capped_endpoint = next(k for k in capped["keys"] if k["key"] == "endpoint")
    assert capped_endpoint["values"]["value"] == ["/api/users"]
    assert capped_endpoint["other"]["count"] == 2
    shown = capped_endpoint["values"]["weight"][0]
    assert capped_endpoint["other"]["weight"] + shown == endpoint["total"]
    diff = render("tags", {}, "go-runtime/pprof-tool-diffbase-cpu.pb.gz")
    assert not any(k["key"].startswith("pprof::") for k in diff["keys"])
    heap = render("tags", {"si": "alloc_space"}, "go-runtime/heap.pb.gz")
    (size,) = heap["keys"]
    assert size["key"] == "bytes" and size["numeric"] and size["unit"] == "bytes"
    assert "16kB" in size["values"]["value"]


def test_warnings_json_lists_what_pprof_prints() -> None:
    doc = render("warnings", {"focus": "zz", "tagfocus": "1kb:", "tagroot": "nokey"})
    assert doc["warnings"] == [
        "TagRoot expression matched no samples",
        "tagfocus:Interpreted '1kb:' as range, not regexp",
        "Focus expression matched no samples",
        "TagFocus expression matched no samples",
    ]
    assert render("warnings", {})["warnings"] == []


# --- the zoomed subtree ----------------------------------------------------------------------
def _path_to_deepest(doc: dict[str, Any]) -> list[str]:
    """The frame path (names from the root) to the deepest node of a flame graph document."""
    names, nodes = doc["names"], doc["nodes"]
    deepest = int(np.argmax(nodes["depth"]))
    path, depth = [], nodes["depth"][deepest]
    for i in range(deepest, -1, -1):
        if nodes["depth"][i] == depth and depth > 0:
            path.append(names[nodes["name"][i]])
            depth -= 1
    return path[::-1]


def test_zoom_rebuilds_a_trimmed_subtree_with_a_fresh_budget() -> None:
    path = "go-runtime/cpu-xl.pb.gz"
    full = render("flamegraph", {"budget": "0"}, path)
    small = render("flamegraph", {"budget": "300"}, path)
    shallow = max(small["nodes"]["depth"])
    deep = _path_to_deepest(full)
    assert small["trimmed"]["nodes"] > 0 and len(deep) > shallow + 2
    frames = deep[: shallow - 1]
    query = {"budget": "300", "zoom": orjson.dumps(frames).decode()}
    zoomed = render("flamegraph", query, path)
    assert zoomed["zoom"] == {"path": frames, "found": True}
    nodes = zoomed["nodes"]
    k = len(frames)
    assert [zoomed["names"][n] for n in nodes["name"][1 : k + 1]] == frames
    assert nodes["depth"][: k + 1] == list(range(k + 1))
    assert len(nodes["name"]) == k + 300  # the chain, then a whole budget under its last frame
    assert max(nodes["depth"]) > shallow  # deeper than the unzoomed graph reaches
    # The zoomed frame weighs what it weighs in the whole graph.
    names, depth = full["names"], full["nodes"]["depth"]
    at = next(
        i
        for i, d in enumerate(depth)
        if d == k and [names[full["nodes"]["name"][j]] for j in _ancestors(full, i)] == frames
    )
    assert nodes["value"][k] == full["nodes"]["value"][at]
    missing = render("flamegraph", {"zoom": '["no.such.frame"]'}, path)
    assert missing["zoom"]["found"] is False and missing["nodes"]["depth"] == [0]


def _ancestors(doc: dict[str, Any], i: int) -> list[int]:
    depth = doc["nodes"]["depth"]
    out = [i]
    for j in range(i - 1, -1, -1):
        if depth[j] == depth[out[-1]] - 1 and depth[j] > 0:
            out.append(j)
    return out[::-1]
