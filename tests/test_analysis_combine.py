"""Merges and diffs without go: the diff JSON's arithmetic, stored diffs, options, keys."""

from __future__ import annotations

import gzip

import numpy as np
import orjson
import pytest

from share import pprof
from share.analysis.combine import combine, encode, scaling
from share.analysis.combine.merge import IncompatibleProfiles
from share.analysis.measure.units import MIN64
from share.analysis.model import keys
from share.analysis.model.graph import graph
from share.analysis.model.tables import tables
from share.analysis.views import options, views
from share.pprof import scan
from share.pprof._proto import profile_pb2

from conftest import CORPUS

FLAME = {"node_fraction": 0.0, "budget": 0}
_PARSED: dict[str, pprof.ParsedProfile] = {}


def parsed(path: str) -> pprof.ParsedProfile:
    if path not in _PARSED:
        data = (CORPUS / path).read_bytes()
        _PARSED[path] = pprof.parse(data, max_profile_bytes=1 << 30)
    return _PARSED[path]


def view(name: str, paths: list[str], **opts: object) -> dict:  # type: ignore[type-arg]
    """A view's JSON; without si, a diff's default type is resolved by the view itself."""
    live = "diff_base" in opts or "base" in opts
    index = None if live else tables(parsed(paths[0])).sample_index(None)
    flame = FLAME if name == "flamegraph" else {}  # as options.parse gives each view its own
    o = {"sample_index": index, "node_count": 0, **flame, **opts}
    return orjson.loads(views.render(name, [parsed(p) for p in paths], o))


SMALL, LABELS = "go-runtime/cpu-small.pb.gz", "go-runtime/cpu-labels.pb.gz"


def _check_tree(doc: dict) -> None:  # type: ignore[type-arg]
    """Every node: value = after - before; a parent's width and sides cover its children's;
    the root's are the totals, which nothing exceeds."""
    n = doc["nodes"]
    before, after, depth = (np.array(n[k]) for k in ("before", "after", "depth"))
    assert (np.array(n["value"]) == after - before).all()
    assert (np.array(n["self"]) == np.array(n["after_self"]) - np.array(n["before_self"])).all()
    assert before[0] == doc["before_total"] and after[0] == doc["after_total"]
    assert doc["width_total"] == doc["before_total"] + doc["after_total"]
    assert (before >= 0).all() and (after >= 0).all()
    assert (before <= doc["before_total"]).all() and (after <= doc["after_total"]).all()
    parents: list[int] = []
    below = {i: [0, 0] for i in range(len(depth))}
    for i, d in enumerate(depth.tolist()):
        del parents[d:]
        if parents:
            below[parents[-1]][0] += before[i]
            below[parents[-1]][1] += after[i]
        parents.append(i)
    for i, (b, a) in below.items():
        assert b <= before[i] and a <= after[i]


def test_live_diff_flame_graph_has_both_sides() -> None:
    doc = view("flamegraph", [LABELS, SMALL], diff_base=[SMALL])
    assert doc["diff"] is True and doc["diff_mode"] == "diff_base"
    # pprof's total for -diff_base is the base's; the sides are each profile's own total.
    assert doc["total"] == doc["before_total"] == 3_040_000_000
    assert doc["after_total"] == 5_820_000_000
    assert doc["nodes"]["value"][0] == 5_820_000_000 - 3_040_000_000
    assert doc["names"][0] == "" and len(doc["nodes"]["name"]) > 100
    _check_tree(doc)


def test_diff_flame_graph_budget_cuts_by_width_and_counts_what_it_hides() -> None:
    full = view("flamegraph", [LABELS, SMALL], diff_base=[SMALL])
    cut = view("flamegraph", [LABELS, SMALL], diff_base=[SMALL], budget=40)
    assert len(cut["nodes"]["name"]) == 40 < len(full["nodes"]["name"])
    t = cut["trimmed"]
    assert t["nodes"] > 0 and t["width"] == t["before"] + t["after"]
    assert t["value"] == t["after"] - t["before"] and t["max"] <= t["width"]
    _check_tree(cut)
    # The widest frames are the ones kept: none left out is wider than one shown.
    n = cut["nodes"]
    widths = np.array(n["before"]) + np.array(n["after"])
    assert t["max"] <= widths.min()


def test_diff_top_rows_are_pprofs_with_both_sides() -> None:
    """Sorted by |flat| as pprof sorts, drops among the first rows, both sides per row."""
    doc = view("top", [SMALL, LABELS], diff_base=[LABELS])
    rows = doc["rows"]
    assert rows["flat"][0] == -1_550_000_000 and rows["name"][0] == "sort.partition"
    at = rows["name"].index("crypto/sha256.block")
    assert (rows["before_flat"][at], rows["after_flat"][at]) == (1_200_000_000, 660_000_000)
    assert rows["flat"][at] == -540_000_000 and at < 5
    flat = np.array(rows["flat"])
    assert (np.abs(flat[:-1]) >= np.abs(flat[1:])).all()  # |flat| first, as pprof sorts
    for side in ("flat", "cum"):
        delta = np.array(rows[f"after_{side}"]) - np.array(rows[f"before_{side}"])
        assert (np.array(rows[side]) == delta).all()
    assert doc["nodes"] == len(rows["name"]) > 100  # every row
    assert doc["total"] == doc["before_total"] == 5_820_000_000


def test_base_subtracts_without_labels_and_normalize_scales_the_new_side() -> None:
    plain = view("top", [LABELS, SMALL], base=[SMALL])
    assert plain["total"] == 5_820_000_000 + 3_040_000_000  # -base: sum of |v| over all
    norm = view("top", [LABELS, SMALL], base=[SMALL], normalize=True)
    assert norm["normalize"] is True  # each value rounded once scaled: totals nearly equal
    assert norm["after_total"] == pytest.approx(norm["before_total"], rel=1e-6)
    assert abs(sum(norm["rows"]["flat"])) < 0.01 * norm["before_total"]


def test_a_profile_against_itself_is_all_zero() -> None:
    doc = view("top", [SMALL, SMALL], diff_base=[SMALL])
    assert doc["rows"]["name"] == [] and doc["total"] == 3_040_000_000
    flame = view("flamegraph", [SMALL, SMALL], diff_base=[SMALL])
    assert flame["before_total"] == flame["after_total"] == 3_040_000_000
    assert set(flame["nodes"]["value"]) == {0} and flame["no_samples"] is False


def test_stored_diff_shows_as_a_diff_and_plain_profiles_do_not() -> None:
    doc = view("flamegraph", ["go-runtime/pprof-tool-diffbase-cpu.pb.gz"])
    assert doc["diff"] is True and doc["diff_mode"] == "labels"
    assert doc["total"] == doc["before_total"] == 3_040_000_000  # the base's, as pprof
    assert doc["nodes"]["value"][0] == doc["after_total"] - doc["before_total"]
    _check_tree(doc)
    top = view("top", ["go-runtime/pprof-tool-diffbase-cpu.pb.gz"])
    assert top["diff"] is True and "before_flat" in top["rows"]
    for path in ("edge/negative-values.pb.gz", SMALL):  # negative values alone: no diff
        assert view("flamegraph", [path])["diff"] is False
        assert view("top", [path])["diff"] is False


def test_incompatible_profiles_are_refused_with_pprofs_reason() -> None:
    with pytest.raises(IncompatibleProfiles) as caught:
        view("top", [SMALL, "go-runtime/heap.pb.gz"], diff_base=["go-runtime/heap.pb.gz"])
    assert caught.value.code == 400
    assert caught.value.reason == (
        "period type: incompatible types: {cpu nanoseconds 0 0} {space bytes 0 0}"
    )
    with pytest.raises(IncompatibleProfiles, match="inconsistent samples type count: 2 != 1"):
        combine.merged_profile(
            [parsed(SMALL), parsed("google-pprof-testdata/cppbench.cpu_no_samples_type")]
        )


def test_merged_bytes_are_a_profile_and_the_same_every_time() -> None:
    inputs = [parsed(SMALL), parsed(LABELS)]
    one = combine.merged_profile(inputs, "# from a test")
    assert one == combine.merged_profile(inputs, "# from a test")  # dedup by content
    again = pprof.parse(one, max_profile_bytes=1 << 30)
    assert b"# from a test" in list(again.message.string_table)
    g = graph(combine.stored(again).tables, 1)
    assert g.total == 3_040_000_000 + 5_820_000_000
    assert again.message.duration_nanos == sum(p.message.duration_nanos for p in inputs)


def test_units_are_converted_to_the_finest() -> None:
    """ScaleProfiles: microseconds and nanoseconds merge into nanoseconds."""
    p = profile_pb2.Profile.FromString(gzip.decompress((CORPUS / SMALL).read_bytes()))
    p.string_table.append("microseconds")
    micro = len(p.string_table) - 1
    p.sample_type[1].unit = micro
    p.period_type.unit = micro
    p.period //= 1000
    for s in p.sample:
        s.value[1] //= 1000
    coarse = pprof.parse(p.SerializeToString(), max_profile_bytes=1 << 30)
    merged = pprof.parse(combine.merged_profile([coarse, parsed(SMALL)]), max_profile_bytes=1 << 30)
    assert merged.sample_types()[1] == ("cpu", "nanoseconds")
    assert graph(combine.stored(merged).tables, 1).total == 2 * 3_040_000_000
    assert merged.message.period == 10_000_000


def test_go_round_is_half_away_from_zero() -> None:
    x = np.array([0.5, -0.5, 1.5, 2.5, -2.5, 0.49999999999999994, 2.0**62, 1e300, np.nan])
    assert scaling.go_round(x).tolist() == [1, -1, 2, 3, -3, 0, 1 << 62, MIN64, MIN64]


def test_first_occurrence_is_exact_even_when_every_hash_collides() -> None:
    tokens = np.array([1, 2, 3, 1, 2, 4, 1, 2, 3, 9], dtype=np.int64)
    off = np.array([0, 3, 6, 9, 10, 10])  # [1 2 3] [1 2 4] [1 2 3] [9] []
    expected = ([0, 1, 0, 2, 3], [0, 1, 3, 4])
    for hashes in (None, np.zeros(5, dtype=np.uint64)):
        group, first = keys.first_occurrence((tokens, off), hashes=hashes)
        assert (group.tolist(), first.tolist()) == expected


def test_merge_keys_hash_and_group_alike_with_and_without_the_compiled_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """keys takes scan.c's hash and equality passes when it was built: the same bits as the
    numpy path's, so a merge groups the same keys either way."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 6, 2000)
    off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(-3, 5, int(off[-1])).astype(np.int64)  # many equal keys
    compiled = keys._hashes(tokens, off), keys.first_occurrence((tokens, off))
    monkeypatch.setattr(scan, "LIB", None)
    plain = keys._hashes(tokens, off), keys.first_occurrence((tokens, off))
    assert np.array_equal(compiled[0], plain[0])
    assert all(np.array_equal(a, b) for a, b in zip(compiled[1], plain[1], strict=True))
    assert len(plain[1][1]) < 1500  # keys did meet


@pytest.mark.parametrize("size", [1, 7, 300, 70_000])
def test_first_order_is_the_same_with_and_without_the_compiled_core(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = np.random.default_rng(size).integers(0, size, 5000).astype(np.int64)
    compiled = keys.first_order(values, size)
    assert scan.first_order(np.array([0, size], dtype=np.int64), size) is None  # out of range
    monkeypatch.setattr(scan, "LIB", None)
    assert compiled.tolist() == keys.first_order(values, size).tolist()
    assert compiled.tolist() == list(dict.fromkeys(values.tolist()))


def test_varints_and_byte_runs_are_the_same_with_and_without_the_compiled_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """encode.py's varints and copies take scan.c's loops when it was built: the same bytes as
    numpy's passes, at every varint length, and a place outside the output is refused."""
    edges = [0, 1, 127, 128, 16383, 16384, 2**35, 2**56 - 1, 2**63, 2**64 - 1]
    values = np.array(edges + list(np.random.default_rng(3).integers(0, 2**63, 500)), np.uint64)
    per = np.random.default_rng(4).integers(0, 5, 40)
    messages = np.concatenate([[0], np.cumsum(per)]).astype(np.int64)
    values = values[: int(messages[-1])]
    runs = np.random.default_rng(5).integers(0, 256, 3000).astype(np.uint8)
    run_off = np.array([0, 5, 5, 900, 2999, 3000], dtype=np.int64)  # an empty one among them
    compiled = encode.varints(values, messages), encode.delimited(3, (runs, run_off))
    joined = encode.join([compiled[0], encode.scalar(1, values[: len(per)])])
    assert encode._varint_lengths(values[:10]).tolist() == [1, 1, 1, 2, 2, 3, 6, 8, 10, 10]
    with pytest.raises(ValueError, match="outside"):
        scan.put_varints(np.zeros(4, np.uint8), np.array([2]), values[8:9], np.array([10]))
    with pytest.raises(ValueError, match="outside"):
        scan.copy_ranges(np.zeros(4, np.uint8), np.array([1]), runs, np.array([0]), np.array([4]))
    padded = np.zeros(8, np.uint8)  # as many bytes as asked for, never more (numpy's way too)
    encode._put_varints(padded, np.array([1]), np.array([300], np.uint64), np.array([4]))
    assert padded.tolist() == [0, 0xAC, 0x82, 0x80, 0x00, 0, 0, 0]
    monkeypatch.setattr(scan, "LIB", None)
    plain_padded = np.zeros(8, np.uint8)
    encode._put_varints(plain_padded, np.array([1]), np.array([300], np.uint64), np.array([4]))
    assert plain_padded.tolist() == padded.tolist()
    plain = encode.varints(values, messages), encode.delimited(3, (runs, run_off))
    for (a, a_off), (b, b_off) in zip(compiled, plain, strict=True):
        assert a.tobytes() == b.tobytes() and a_off.tolist() == b_off.tolist()
    again = encode.join([plain[0], encode.scalar(1, values[: len(per)])])
    assert joined[0].tobytes() == again[0].tobytes()


@pytest.mark.parametrize("path", ["go-runtime/cpu-labels.pb.gz", "go-runtime/heap-large.pb.gz"])
def test_a_merge_encodes_the_same_with_and_without_the_compiled_core(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = pprof.parse((CORPUS / path).read_bytes(), max_profile_bytes=1 << 30)
    merged = combine.merged_prof([combine.from_parsed(parsed)] * 2, "twice")
    compiled = combine.encode(merged)
    monkeypatch.setattr(scan, "LIB", None)
    assert combine.encode(merged) == compiled


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"diff_base": "AbCdEfGhIjKlMnOp"}, {"diff_base": ["AbCdEfGhIjKlMnOp"]}),
        (
            {"base": "http://h:8000/AbCdEfGhIjKlMnOp/raw,QwErTyUiOpAsDfGh", "normalize": ""},
            {"base": ["AbCdEfGhIjKlMnOp", "QwErTyUiOpAsDfGh"], "normalize": True},
        ),
        ({"diff_base": "AbCdEfGhIjKlMnOp", "normalize": "0"}, {"diff_base": ["AbCdEfGhIjKlMnOp"]}),
        ({}, {}),
    ],
)
def test_diff_options_are_canonical(query: dict[str, str], expected: dict) -> None:  # type: ignore[type-arg]
    types = [("samples", "count"), ("cpu", "nanoseconds")]
    got = options.parse("top", query, types, None)
    assert {k: v for k, v in got.items() if k in ("diff_base", "base", "normalize")} == expected
    # A diff's default type is left to the view (the combination's); a plain view resolves it.
    assert got["sample_index"] == (None if expected else 1)
    assert options.parse("top", {**query, "si": "samples"}, types, None)["sample_index"] == 0


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            {"diff_base": "AbCdEfGhIjKlMnOp", "base": "AbCdEfGhIjKlMnOp"},
            "-base and -diff_base flags cannot both be specified",
        ),
        ({"normalize": "1"}, "must have base profile to normalize by"),
        ({"base": "not a link"}, "is neither a profile id nor a link"),
        ({"diff_base": ","}, "names no profile"),
        ({"diff_base": "AbCdEfGhIjKlMnOp", "normalize": "maybe"}, "expected 1 or 0"),
    ],
)
def test_bad_diff_options_say_what_is_wrong(query: dict[str, str], message: str) -> None:
    with pytest.raises(options.OptionError, match=message):
        options.parse("flamegraph", query, [("cpu", "nanoseconds")], None)


def test_merging_reads_the_outline_not_every_sample_as_upb_objects() -> None:
    """A merge's columns come from the outline and the columns: the full message (upb objects
    for every sample, several times the profile's size and not in the warm cache's footprint)
    is not decoded, and what the columns hold is what the message would have said."""
    fresh = pprof.parse((CORPUS / LABELS).read_bytes(), max_profile_bytes=1 << 30)
    columns = combine.from_parsed(fresh)
    assert fresh._message is None
    message = fresh.message
    assert columns.strings == list(message.string_table)
    assert columns.sample_types == [(t.type, t.unit) for t in message.sample_type]
    assert (columns.period, columns.time_nanos) == (message.period, message.time_nanos)
    assert columns.map_start.tolist() == [m.memory_start for m in message.mapping]


# Corpus profiles of many shapes (labels numeric and text, no mappings, inlined frames, negative
# and extreme values, duplicate strings), each merged with a second compatible profile or itself.
MERGED_AGAIN = [
    ("go-runtime/cpu-labels.pb.gz", "go-runtime/cpu-small.pb.gz"),
    ("go-runtime/heap.pb.gz", "go-runtime/heap-large.pb.gz"),
    ("edge/label-str-and-num.pb.gz", "edge/label-str-and-num.pb.gz"),
    ("edge/label-num-zero-no-unit.pb.gz", "edge/label-num-zero-no-unit.pb.gz"),
    ("edge/duplicate-strings.pb.gz", "edge/duplicate-strings.pb.gz"),
    ("edge/negative-values.pb.gz", "edge/negative-values.pb.gz"),
    ("edge/int64-extreme-values.pb.gz", "edge/int64-extreme-values.pb.gz"),
    ("edge/sample-with-no-locations.pb.gz", "edge/sample-with-no-locations.pb.gz"),
    ("nodejs/time-labels.pb.gz", "nodejs/time-line-numbers.pb.gz"),
    ("google-pprof-testdata/go.nomappings.crash", "google-pprof-testdata/go.nomappings.crash"),
    ("google-pprof-testdata/large.cpu", "google-pprof-testdata/sample.cpu"),
]


def half(path: str, which: int) -> pprof.ParsedProfile:
    """Every other sample of a profile, its tables whole: as a fleet's members are slices of
    one binary's profile, whose merges leave strings unused that the next merge uses."""
    message = profile_pb2.Profile.FromString(gzip.decompress((CORPUS / path).read_bytes()))
    kept = list(message.sample)[which::2]
    del message.sample[:]
    message.sample.extend(kept)
    return pprof.parse(message.SerializeToString(), max_profile_bytes=1 << 30)


@pytest.mark.parametrize(("first", "second"), [*MERGED_AGAIN, ("even", "odd")])
def test_a_merge_kept_as_columns_merges_as_its_bytes_read_back(first: str, second: str) -> None:
    """merged_prof is what a merge process keeps of a merge it made (share.compute.worker): its
    bytes are the merge's, and merging it again gives the bytes that merging those bytes, read
    back, gives: the columns stand for the stored profile."""
    if first == "even":  # the merge of one half; the next merge adds the other
        a = b = half("go-runtime/cpu-large.pb.gz", 0)
        c = half("go-runtime/cpu-large.pb.gz", 1)
    else:
        a, b, c = parsed(first), parsed(second), parsed(first)
    made = combine.merged_prof([combine.from_parsed(a), combine.from_parsed(b)], "# a block")
    stored = combine.merged_profile([a, b], "# a block")
    assert combine.encode(made) == stored
    read_back = combine.from_parsed(pprof.parse(stored, max_profile_bytes=1 << 30))
    other = combine.from_parsed(c)
    for parts in ([made, other], [other, made], [made]):
        kept = combine.merged_columns(parts, "# the next block")
        again = [read_back if p is made else p for p in parts]
        assert kept == combine.merged_columns(again, "# the next block")
    assert made.origin is None  # it does not hold its parts' tables in memory
