"""strip=: the spec's syntax, and profiles rewritten without labels, comments, paths, build ids
or sample types — checked on the message, and read back by the real `go tool pprof`."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from share import pprof
from share.pprof._proto import profile_pb2
from share.pprof.strip import StripError, parse_spec, strip

from conftest import CORPUS, unavailable

LABELS = CORPUS / "go-runtime/cpu-labels.pb.gz"
HEAP = CORPUS / "go-runtime/heap.pb.gz"


def parsed(path: Path) -> pprof.ParsedProfile:
    return pprof.parse(path.read_bytes(), max_profile_bytes=1 << 30)


def message(p: pprof.ParsedProfile) -> profile_pb2.Profile:
    return profile_pb2.Profile.FromString(p.raw)


def label_keys(m: profile_pb2.Profile) -> set[str]:
    return {m.string_table[lb.key] for s in m.sample for lb in s.label}


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("labels", ["labels"]),
        ("labels:b,a", ["labels:a,b"]),
        ("comments,paths", ["comments", "paths"]),
        ("labels:a,b;comments build_ids", ["labels:a,b", "comments", "build_ids"]),
        ("comments,labels:a,b; types:alloc_space", ["labels:a,b", "comments", "types:alloc_space"]),
        ("labels:a;labels", ["labels"]),  # every label wins over some
        ("", []),
    ],
)
def test_spec_syntax(text: str, items: list[str]) -> None:
    assert parse_spec(text).items() == items


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("secrets", "unknown item 'secrets'"),
        ("types", "types needs the types"),
        ("paths:x", "paths takes no keys"),
        ("labels:", "at least one"),
    ],
)
def test_bad_spec_names_the_problem(text: str, words: str) -> None:
    with pytest.raises(StripError, match=words) as info:
        parse_spec(text)
    assert info.value.code == 400


def test_nothing_to_remove_keeps_the_upload_as_it_was() -> None:
    p = parsed(CORPUS / "go-runtime/cpu-small.pb.gz")  # no labels, no comments
    assert strip(p, parse_spec("labels;comments")) is p


def test_labels_go_from_samples_and_from_the_string_table() -> None:
    p = parsed(LABELS)
    before = message(p)
    values = {before.string_table[lb.str] for s in before.sample for lb in s.label if lb.str}
    assert label_keys(before) and values
    out = strip(p, parse_spec("labels"))
    after = message(out)
    assert not label_keys(after)
    strings = set(after.string_table)
    assert not (values - {before.string_table[t.type] for t in before.sample_type}) & strings
    # Everything else is as it was: samples, values, stacks.
    assert [list(s.value) for s in after.sample] == [list(s.value) for s in before.sample]
    assert [list(s.location_id) for s in after.sample] == [
        list(s.location_id) for s in before.sample
    ]


def test_labels_by_key_keep_the_others() -> None:
    p = parsed(LABELS)
    keys = sorted(label_keys(message(p)))
    assert len(keys) >= 2, keys
    out = strip(p, parse_spec(f"labels:{keys[0]}"))
    assert label_keys(message(out)) == set(keys[1:])


def test_paths_keep_only_file_names() -> None:
    p = parsed(LABELS)
    before = message(p)
    assert any("/" in before.string_table[f.filename] for f in before.function)
    after = message(strip(p, parse_spec("paths")))
    names = [after.string_table[f.filename] for f in after.function]
    names += [after.string_table[m.filename] for m in after.mapping]
    assert names and not [n for n in names if "/" in n or "\\" in n]
    old = {os.path.basename(before.string_table[f.filename]) for f in before.function}
    assert set(names) >= old - {""}


def test_comments_build_ids_and_types() -> None:
    base = message(parsed(HEAP))
    base.string_table.extend(["a comment", "abc123"])
    base.comment.append(len(base.string_table) - 2)
    base.mapping[0].build_id = len(base.string_table) - 1
    p = pprof.parse(base.SerializeToString(), max_profile_bytes=1 << 30)
    out = message(strip(p, parse_spec("comments;build_ids;types:alloc_objects,alloc_space")))
    assert not out.comment and not any(m.build_id for m in out.mapping)
    assert "a comment" not in out.string_table and "abc123" not in out.string_table
    types = [out.string_table[t.type] for t in out.sample_type]
    assert types == ["inuse_objects", "inuse_space"]
    assert all(len(s.value) == 2 for s in out.sample)
    assert [s.value[1] for s in out.sample] == [s.value[3] for s in base.sample]


@pytest.mark.parametrize(
    ("text", "words"),
    [("types:bogus", "no sample type 'bogus'"), ("types:samples,cpu", "every sample type")],
)
def test_types_must_exist_and_one_must_stay(text: str, words: str) -> None:
    with pytest.raises(StripError, match=words):
        strip(parsed(LABELS), parse_spec(text))


@pytest.mark.go
def test_go_tool_pprof_reads_the_stripped_profile(tmp_path: Path) -> None:
    go = shutil.which("go")
    if go is None:
        unavailable("go is not installed (make test installs golang-go)")
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"))
    out = strip(parsed(LABELS), parse_spec("labels;paths;comments;build_ids"))
    path = tmp_path / "stripped.pb.gz"
    path.write_bytes(gzip.compress(out.raw))

    def pprof_says(*flags: str, source: Path = path) -> str:
        result = subprocess.run(
            [go, "tool", "pprof", *flags, str(source)],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert "endpoint: Total" in pprof_says("-tags", source=LABELS)
    assert pprof_says("-tags").strip() == ""  # pprof prints no tag at all
    raw = pprof_says("-raw")
    assert "Samples:" in raw and "Locations" in raw
    # -top agrees with the original: stripping changed names of files, not the numbers.
    assert pprof_says("-top").splitlines()[3:] == pprof_says("-top", source=LABELS).splitlines()[3:]
