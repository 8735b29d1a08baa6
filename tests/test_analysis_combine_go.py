"""Diffs and merges against the real `go tool pprof` (Go 1.19), byte for byte.

For every compatible pair and triple of corpus profiles of one kind (CPU, heap/allocs,
block/mutex, Node wall time), the -top text of the diff (-diff_base, -base, each with and
without -normalize) and of the merge equals pprof's; the merged profile's bytes read in pprof
as pprof's own merge (-raw); incompatible pairs fail with pprof's reason. Go runs in the shared
pool (conftest.go_pprof), every command queued at the start, while our side computes.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from share import pprof
from share.analysis.combine import combine
from share.analysis.combine.combine import CombineError
from share.analysis.model.tables import tables
from share.analysis.views import views

from conftest import CORPUS

pytestmark = pytest.mark.go

KINDS = {
    "cpu": [
        "go-runtime/cpu-small.pb.gz",
        "go-runtime/cpu-labels.pb.gz",
        "go-runtime/cpu-large.pb.gz",
        "google-pprof-testdata/sample.cpu",  # another program: few functions in common
    ],
    "heap": ["go-runtime/heap.pb.gz", "go-runtime/allocs.pb.gz", "go-runtime/heap-large.pb.gz"],
    "contention": ["go-runtime/block.pb.gz", "go-runtime/mutex.pb.gz"],
    "node": ["nodejs/time.pb.gz", "nodejs/time-labels.pb.gz", "nodejs/time-line-numbers.pb.gz"],
}
SMALL_CPU = "go-runtime/cpu-small.pb.gz"
MODES = [("diff_base", False), ("base", False), ("diff_base", True), ("base", True)]
PAIRS = [pair for files in KINDS.values() for pair in itertools.combinations(files, 2)]
TRIPLES = [t for files in KINDS.values() for t in itertools.combinations(files, 3)]
# (new, bases, mode, normalize, sample type): each pair both ways round over the modes.
DIFFS = [
    ((a, (b,)) if (i + j) % 2 else (b, (a,))) + (mode, norm, None)
    for i, (a, b) in enumerate(PAIRS)
    for j, (mode, norm) in enumerate(MODES)
]
DIFFS += [
    ("go-runtime/heap-large.pb.gz", ("go-runtime/heap.pb.gz",), mode, False, sample)
    for sample, mode in zip(
        ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space"),
        ("diff_base", "base", "base", "diff_base"),
        strict=True,
    )
]
DIFFS += [("go-runtime/block.pb.gz", ("go-runtime/mutex.pb.gz",), "diff_base", True, "0")]
# Several bases are merged as pprof merges them (Go's go tool pprof keeps only the last
# -diff_base flag, so pprof is given them merged by itself, with -proto).
DIFFS += [(a, (b, c), "diff_base", False, None) for a, b, c in TRIPLES]
MERGES = [tuple(p) for p in PAIRS] + [tuple(t) for t in TRIPLES]

_PARSED: dict[str, pprof.ParsedProfile] = {}


def parsed(path: str) -> pprof.ParsedProfile:
    """Each corpus profile parsed once, so its analysis caches stay warm across cases."""
    if path not in _PARSED:
        data = (CORPUS / path).read_bytes()
        _PARSED[path] = pprof.parse(data, max_profile_bytes=1 << 30)
    return _PARSED[path]


def _base_file(bases: tuple[str, ...], work: Path) -> str:
    if len(bases) == 1:
        return str(CORPUS / bases[0])
    return str(work / ("+".join(Path(b).name for b in bases) + ".pb.gz"))


def _diff_command(
    new: str, bases: tuple[str, ...], mode: str, norm: bool, sample: str | None, work: Path
) -> list[str]:
    cmd = ["-top", "-nodefraction=0", *(["-normalize"] if norm else [])]
    cmd += [f"-sample_index={sample}"] if sample else []
    return [*cmd, f"-{mode}={_base_file(bases, work)}", str(CORPUS / new)]


def _merge_command(paths: tuple[str, ...]) -> list[str]:
    return ["-top", "-nodefraction=0", *(str(CORPUS / p) for p in paths)]


@pytest.fixture(scope="module")
def go(go_pprof, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The pool, with every command of this module queued (merged bases made first)."""
    work = tmp_path_factory.mktemp("bases")
    merges = [
        ["-proto", "-output", _base_file(bases, work), *(str(CORPUS / b) for b in bases)]
        for bases in sorted({d[1] for d in DIFFS if len(d[1]) > 1})
    ]
    go_pprof.start(*merges)
    for command in merges:
        code, _, err = go_pprof(command)
        assert code == 0, err
    go_pprof.start(*(_diff_command(*d, work) for d in DIFFS), *map(_merge_command, MERGES))
    go_pprof.work = work
    return go_pprof


def _ours(new: str, bases: tuple[str, ...], mode: str, norm: bool, sample: str | None) -> str:
    shown = parsed(new)
    index = tables(shown).sample_index(sample) if sample else None  # None: the diff's default
    options = {"sample_index": index, "node_count": 0, mode: list(bases), "normalize": norm}
    profiles = [shown, *map(parsed, bases)]
    return views.render("toptext", profiles, options).decode()


@pytest.mark.parametrize(("new", "bases", "mode", "norm", "sample"), DIFFS)
def test_diff_top_matches_go(go, new, bases, mode, norm, sample) -> None:  # type: ignore[no-untyped-def]
    code, expected, err = go(_diff_command(new, bases, mode, norm, sample, go.work))
    assert code == 0, err
    assert _ours(new, bases, mode, norm, sample) == expected


@pytest.mark.parametrize("paths", MERGES, ids=["+".join(Path(p).name for p in m) for m in MERGES])
def test_merge_top_matches_go(go, paths) -> None:  # type: ignore[no-untyped-def]
    """The merged bytes, parsed as an upload is, show pprof's -top of the inputs."""
    code, expected, err = go(_merge_command(paths))
    assert code == 0, err
    merged = combine.merged_profile([parsed(p) for p in paths])
    again = pprof.parse(merged, max_profile_bytes=1 << 30)
    index = tables(again).sample_index(None)
    ours = views.render("toptext", [again], {"sample_index": index, "node_count": 0})
    assert ours.decode() == expected


RAW_SETS = [
    KINDS["cpu"][:3],
    KINDS["heap"],
    KINDS["node"],
    ["google-pprof-testdata/go.nomappings.crash", "go-runtime/heap.pb.gz"],
    ["edge/huge-sparse-ids.pb.gz", "edge/dangling-mapping-id.pb.gz", "edge/newer-fields.pb.gz"],
    ["edge/label-multi-value-same-key.pb.gz", "edge/label-str-and-num.pb.gz"],
    [
        "edge/int64-extreme-values.pb.gz",
        "edge/negative-values.pb.gz",
        "edge/duplicate-strings.pb.gz",
    ],
    ["go-runtime/pprof-tool-diffbase-cpu.pb.gz", "go-runtime/cpu-small.pb.gz"],
]


@pytest.mark.parametrize("paths", RAW_SETS, ids=lambda s: "+".join(Path(p).name for p in s))
def test_merged_bytes_read_as_pprofs_own_merge(go, tmp_path, paths) -> None:  # type: ignore[no-untyped-def]
    """go tool pprof -raw of our merge equals its -raw of the inputs (with the comment we add
    given as -add_comment): every sample, location, mapping and id in the same order."""
    comment = "# merged by a test"
    out = tmp_path / "merged.pb"
    out.write_bytes(combine.merged_profile([parsed(p) for p in paths], comment))
    theirs = go(["-raw", f"-add_comment={comment}", *(str(CORPUS / p) for p in paths)])
    ours = go(["-raw", str(out)])
    assert theirs[0] == ours[0] == 0, (theirs[2], ours[2])
    assert ours[1] == theirs[1]


INCOMPATIBLE = [
    ("go-runtime/cpu-small.pb.gz", "go-runtime/heap.pb.gz"),
    ("go-runtime/heap.pb.gz", "nodejs/heap.pb.gz"),
    ("nodejs/time.pb.gz", "go-runtime/cpu-small.pb.gz"),
    ("google-pprof-testdata/sample.cpu", "google-pprof-testdata/cppbench.cpu_no_samples_type"),
]


@pytest.mark.parametrize(("new", "base"), INCOMPATIBLE)
@pytest.mark.parametrize(("mode", "norm"), [("diff_base", False), ("base", True)])
def test_incompatible_profiles_fail_with_pprofs_reason(go, new, base, mode, norm) -> None:  # type: ignore[no-untyped-def]
    code, _, err = go(_diff_command(new, (base,), mode, norm, None, go.work))
    assert code != 0
    reason = err.strip().splitlines()[-1]
    with pytest.raises(CombineError) as caught:
        _ours(new, (base,), mode, norm, None)
    if "[0xc" in reason:  # Go prints the sample types as pointers; we write them out
        reason = reason.split(" [")[0]
        assert caught.value.reason.startswith(reason + " [samples/count cpu/nanoseconds] and")
    else:
        assert caught.value.reason == reason
    assert caught.value.code == 400 and reason in caught.value.message
    code, _, err = go(_merge_command((new, base)))
    merge_reason = err.strip().splitlines()[-1].removeprefix("problem fetching source profiles: ")
    with pytest.raises(CombineError) as caught:
        combine.merged_profile([parsed(new), parsed(base)])
    assert code != 0 and caught.value.reason == merge_reason


def test_stored_base_diff_shows_as_the_live_one(go) -> None:  # type: ignore[no-untyped-def]
    """pprof-tool-base-heap.pb.gz is `go tool pprof -proto -base=heap heap-large`: shown as
    stored, it has pprof's -top, which is the live -base diff's."""
    stored = "go-runtime/pprof-tool-base-heap.pb.gz"
    code, expected, err = go(["-top", "-nodefraction=0", str(CORPUS / stored)])
    assert code == 0, err
    index = tables(parsed(stored)).sample_index(None)
    as_stored = views.render("toptext", [parsed(stored)], {"sample_index": index, "node_count": 0})
    live = _ours("go-runtime/heap-large.pb.gz", ("go-runtime/heap.pb.gz",), "base", False, None)
    assert as_stored.decode() == expected == live


def test_stored_diff_base_shows_as_the_live_one(go, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """pprof-tool-diffbase-cpu.pb.gz is `go tool pprof -proto -diff_base=cpu-small X`, with X
    the other half of pprof-tool-merged-cpu.pb.gz (got back as that merge -base cpu-small: the
    same samples, but the two's durations summed, so only the Duration line differs)."""
    stored = "go-runtime/pprof-tool-diffbase-cpu.pb.gz"
    x = tmp_path / "x.pb.gz"
    merged, small = CORPUS / "go-runtime/pprof-tool-merged-cpu.pb.gz", CORPUS / SMALL_CPU
    code, _, err = go(["-proto", "-output", str(x), f"-base={small}", str(merged)])
    assert code == 0, err
    code, expected, err = go(["-top", "-nodefraction=0", str(CORPUS / stored)])
    assert code == 0, err
    index = tables(parsed(stored)).sample_index(None)
    as_stored = views.render("toptext", [parsed(stored)], {"sample_index": index, "node_count": 0})
    assert as_stored.decode() == expected
    other = pprof.parse(x.read_bytes(), max_profile_bytes=1 << 30)
    options = {"sample_index": None, "node_count": 0, "diff_base": ["cpu-small"]}
    live = views.render("toptext", [other, parsed(SMALL_CPU)], options).decode()

    def lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("Duration:")]

    assert lines(live) == lines(expected) and len(lines(expected)) > 50


def test_more_than_64_profiles_merge_in_chunks_as_pprof(go) -> None:  # type: ignore[no-untyped-def]
    """go tool pprof merges 64 sources at a time, then the chunks pairwise: so do we."""
    paths = [SMALL_CPU, "go-runtime/cpu-labels.pb.gz"] * 33  # 66 sources
    code, expected, err = go(_merge_command(tuple(paths)))
    assert code == 0, err
    merged = combine.merged_profile([parsed(p) for p in paths])
    again = pprof.parse(merged, max_profile_bytes=1 << 30)
    index = tables(again).sample_index(None)
    ours = views.render("toptext", [again], {"sample_index": index, "node_count": 0})
    assert ours.decode() == expected
