"""The compiled decoder (share/pprof/scan.c) and the pure-Python path give the same results.

Every corpus file and seeded mutations of small ones (edits of the decoded profile that break
pprof's rules, re-encodings that keep them — fields Go skips at every level, unpacked ids, odd
field order — and raw byte damage) are parsed both ways: the same ParsedProfile (raw, strings,
columns, outline, message) or the same error, word for word. Where the compiled core reads a
file it must also give the same columns as the pure-Python path.
"""

from __future__ import annotations

import dataclasses
import gzip
import random
from typing import Any

import numpy as np
import pytest

from share import pprof
from share.analysis.model.tables import tables
from share.errors import ShareError
from share.pprof import decode, scan
from share.pprof.schema import FULL

from conftest import CORPUS

LIMIT = 1 << 26
FILES = sorted(
    p
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in (".tsv", ".md") and p.stat().st_size < 3_000_000
)


NO_LIMITS = pprof.Limits()


def outcome(data: bytes, compiled: bool, limits: pprof.Limits = NO_LIMITS) -> Any:
    """parse()'s result, or (error kind, code, message); compiled False: as without scan.c."""
    saved = scan.LIB
    scan.LIB = saved if compiled else None
    try:
        return pprof.parse(data, max_profile_bytes=LIMIT, limits=limits)
    except ShareError as exc:
        return (type(exc).__name__, exc.code, exc.message)
    finally:
        scan.LIB = saved


def assert_same(data: bytes, limits: pprof.Limits = NO_LIMITS) -> str:
    """Both paths agree on data; returns "ok" or the error kind."""
    a, b = outcome(data, True, limits), outcome(data, False, limits)
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert a == b
        return a[0]
    assert (a.raw, a.strings, a.was_gzip) == (b.raw, b.strings, b.was_gzip)
    for name in ("location_ids", "location_offsets", "values"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
    # The outline's payloads are as uploaded, or as re-encoded where the Python path had to read
    # the file with wire.py: the same fields either way, and the same tables from them.
    assert decode.message_of(a.outline) == decode.message_of(b.outline) == a.message == b.message
    ta, tb = tables(a), tables(b)
    for name in (f.name for f in dataclasses.fields(ta) if not f.name.startswith("_")):
        x, y = getattr(ta, name), getattr(tb, name)
        same = np.array_equal(x, y) if isinstance(x, np.ndarray) else name == "outline" or x == y
        assert same, name
    assert all(np.array_equal(x, y) for x, y in zip(ta.labels(), tb.labels(), strict=True))
    assert (a.n_samples, a.sample_types(), a.default_sample_index()) == (
        b.n_samples,
        b.sample_types(),
        b.default_sample_index(),
    )
    return "ok"


def test_the_compiled_core_is_built() -> None:
    assert scan.LIB is not None, (
        f"share/pprof/{scan.LIBRARY} is missing or stale: reinstall with a C compiler "
        "(`pip install -e .`; make run installs gcc) — decoding falls back to pure Python"
    )


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(CORPUS)) for p in FILES])
def test_corpus_files_read_the_same_both_ways(path: Any) -> None:
    assert_same(path.read_bytes())


def _raw(data: bytes) -> bytes:
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _nonzero(a: np.ndarray) -> list[int]:
    return sorted(a[a != 0].tolist())


@pytest.mark.parametrize(
    "name",
    ["go-runtime/cpu-labels.pb", "go-runtime/heap.pb.gz", "google-pprof-testdata/large.cpu",
     "nodejs/time-labels.pb.gz", "edge/unpacked-repeated.pb.gz", "edge/newer-fields.pb.gz",
     "edge/label-str-and-num.pb.gz", "edge/unknown-fields.pb.gz"],
)  # fmt: skip
def test_compiled_columns_match_the_python_ones(name: str) -> None:
    raw = _raw((CORPUS / name).read_bytes())
    assert scan.reason(raw) == "ok"
    ours = decode.Columns.scanned(raw)
    theirs = decode._decode_python(raw, pprof.Limits())[1]
    assert ours is not None
    for exact in ("location_ids", "values", "n_values", "n_locations", "defined_locations",
                  "defined_functions", "defined_mappings"):  # fmt: skip
        assert np.array_equal(getattr(ours, exact), getattr(theirs, exact)), exact
    # The string indices: Python's hold the fields present, the compiled ones a 0 for absent.
    for indices in ("label_key", "label_str", "label_unit", "mapping_strings", "function_strings"):
        assert _nonzero(getattr(ours, indices)) == _nonzero(getattr(theirs, indices)), indices
    assert _nonzero(ours.line_function_ids) == _nonzero(theirs.line_function_ids)
    assert ours.has_unknown == theirs.has_unknown


# --- wire-level helpers: a message as a list of (field number, wire type, encoded value) -------


def varint(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80)
        x >>= 7
    return bytes(out + bytes([x]))


def _uvarint(data: bytes, i: int) -> tuple[int, int]:
    x = shift = 0
    while True:
        b = data[i]
        i += 1
        x |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return x, i


Field = tuple[int, int, bytes]


def fields(data: bytes) -> list[Field]:
    """The fields of a well-formed message; for wire type 2 the value is the payload."""
    out, i = [], 0
    while i < len(data):
        key, i = _uvarint(data, i)
        start = i
        if key & 7 == 0:
            _, i = _uvarint(data, i)
        elif key & 7 == 2:
            size, start = _uvarint(data, i)
            i = start + size
        else:
            i += 8 if key & 7 == 1 else 4
        out.append((key >> 3, key & 7, data[start:i]))
    return out


def encode(items: list[Field]) -> bytes:
    return b"".join(
        varint(n << 3 | w) + (varint(len(v)) if w == 2 else b"") + v for n, w, v in items
    )


def _some_field(rng: random.Random, wire: int | None = None) -> Field:
    """A field: unknown to both (16..40), or field 3/15, which Line/Profile have as extras."""
    number = rng.choice((rng.randrange(16, 41), 3, 15, rng.randrange(1, 12)))
    wire = rng.choice((0, 0, 1, 2, 5)) if wire is None else wire
    value = {
        0: varint(rng.getrandbits(rng.choice((3, 20, 64)))),
        1: rng.randbytes(8),
        2: rng.randbytes(rng.randrange(4)),
        5: rng.randbytes(4),
    }[wire]
    return number, wire, value


NESTED = {2: 3, 4: 4}  # sample -> its labels, location -> its lines


def reencode(rng: random.Random, raw: bytes) -> bytes:
    """raw with an encoding change: a field added at some level, ids unpacked, a singular field
    repeated, or the top-level fields shuffled."""
    top = fields(raw)
    kind = rng.randrange(5)
    if kind == 0:
        rng.shuffle(top)
        return encode(top)
    at = rng.randrange(len(top))
    number, wire, payload = top[at]
    if kind == 1 or wire != 2 or number not in (1, 2, 3, 4, 5, 11):
        top.insert(rng.randrange(len(top) + 1), _some_field(rng))
        return encode(top)
    inner = fields(payload)
    if kind == 2 and number == 2:  # a sample's location ids, unpacked
        unpacked: list[Field] = []
        for n, w, v in inner:
            if n == 1 and w == 2:
                i = 0
                while i < len(v):
                    x, j = _uvarint(v, i)
                    unpacked.append((1, 0, v[i:j]))
                    i = j
            else:
                unpacked.append((n, w, v))
        inner = unpacked
    elif kind == 3 and inner:  # a field given twice (singular ones: Go keeps the last)
        inner.append(rng.choice(inner))
    else:  # a field in the element, or in one of its labels or lines
        child = [i for i, (n, w, _) in enumerate(inner) if n == NESTED.get(number) and w == 2]
        if child and rng.random() < 0.5:
            k = rng.choice(child)
            grand = fields(inner[k][2])
            grand.insert(rng.randrange(len(grand) + 1), _some_field(rng))
            inner[k] = (inner[k][0], 2, encode(grand))
        else:
            inner.insert(rng.randrange(len(inner) + 1), _some_field(rng))
    top[at] = (number, 2, encode(inner))
    return encode(top)


def edit(rng: random.Random, raw: bytes) -> bytes:
    """raw with an edit of the decoded profile, most of which break one of pprof's rules."""
    p = FULL["Profile"].FromString(raw)
    n_strings = len(p.string_table)

    def index() -> int:
        return rng.choice((0, 1, n_strings - 1, n_strings, n_strings + 5, -1))

    def ident(items: Any) -> int:
        return rng.choice((0, 1, len(items), len(items) + 1, 999))

    for _ in range(rng.choice((1, 1, 2))):
        kind = rng.randrange(10)
        if kind == 0 and len(p.sample):
            p.sample[rng.randrange(len(p.sample))].location_id.append(ident(p.location))
        elif kind == 1 and len(p.sample):
            s = p.sample[rng.randrange(len(p.sample))]
            if rng.random() < 0.5 or not len(s.value):
                s.value.append(1)
            else:
                s.value.pop()
        elif kind == 2 and len(p.sample):
            label = p.sample[rng.randrange(len(p.sample))].label.add(key=index())
            label.str, label.num_unit = rng.choice(((index(), 0), (0, index()), (0, 0)))
        elif kind == 3 and len(p.location):
            p.location[rng.randrange(len(p.location))].id = ident(p.location)
        elif kind == 4 and len(p.function):
            f = p.function[rng.randrange(len(p.function))]
            f.id, f.name = rng.choice(((ident(p.function), f.name), (f.id, index())))
        elif kind == 5 and len(p.mapping):
            m = p.mapping[rng.randrange(len(p.mapping))]
            m.id, m.filename = rng.choice(((ident(p.mapping), m.filename), (m.id, index())))
        elif kind == 6 and len(p.location):
            loc = p.location[rng.randrange(len(p.location))]
            if len(loc.line):
                loc.line[rng.randrange(len(loc.line))].function_id = ident(p.function)
        elif kind == 7:
            what = rng.choice(("drop_frames", "keep_frames", "default_sample_type"))
            setattr(p, what, index())
        elif kind == 8:
            p.comment.append(index())
        elif kind == 9 and n_strings:
            if rng.random() < 0.5:
                p.string_table.pop()
            else:
                p.string_table[0] = b"x"
    return p.SerializeToString()


def damage(rng: random.Random, raw: bytes) -> bytes:
    out = bytearray(raw)
    i = rng.randrange(len(out))
    kind = rng.randrange(4)
    if kind == 0:
        out[i] ^= 1 << rng.randrange(8)
    elif kind == 1:
        del out[i : i + rng.randrange(1, 8)]
    elif kind == 2:
        out[i:i] = rng.randbytes(rng.randrange(1, 4))
    else:
        out = out[:i]
    return bytes(out)


def test_mutations_read_the_same_both_ways() -> None:
    small = [p for p in FILES if p.stat().st_size < 32_000 and p.parent.name != "invalid"]
    seeds = sorted({r for r in map(_raw, (p.read_bytes() for p in small)) if r})
    seeds = [s for s in seeds if scan.reason(s) == "ok"]
    rng = random.Random(20250301)
    seen: dict[tuple[str, str], int] = {}
    for n in range(600):
        raw = rng.choice(seeds)
        mutate = (edit, reencode, damage)[n % 3]
        for _ in range(rng.choice((1, 1, 2))):
            raw = mutate(rng, raw)
        verdict = assert_same(raw)
        key = (scan.reason(raw), "ok" if verdict == "ok" else "refused")
        seen[key] = seen.get(key, 0) + 1
    # The compiled core must have read many of them, valid and not, and left others to Python.
    assert seen.get(("ok", "ok"), 0) > 80 and seen.get(("ok", "refused"), 0) > 80, seen
    assert sum(v for (r, _), v in seen.items() if r != "ok") > 80, seen
    assert {r for r, _ in seen} >= {"ok", "malformed", "wire type", "repeated singular"}, seen


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


BASE = _raw((CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes())


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (tag(100, 0) + b"\x05", "ok"),  # unknown to both: skipped
        (tag(15, 0) + b"\x05", "ok"),  # doc_url: upb reads it, Go skips it
        (tag(15, 2) + b"\x01x", "ok"),  # doc_url with another wire type: unknown to both
        (tag(40, 1) + bytes(8) + tag(41, 5) + bytes(4), "ok"),
        (tag(7, 0) + b"\xff" * 9 + b"\x01", "ok"),  # drop_frames -1 (out of range), ten bytes
        (tag(7, 0) + b"\xff" * 9 + b"\x7f", "long varint"),  # bits past 64: left to Python
        (tag(0, 0) + b"\x01", "field zero"),
        (b"\x88\x00\x01", "odd tag"),  # a needless continuation byte
        (tag(12, 2) + b"\x01\x05", "wire type"),  # period packed: Go's type mismatch
        (tag(7, 3) + tag(7, 4), "wire type"),  # a group
        (tag(9, 0) + b"\x05", "repeated singular"),  # time_nanos again
        (tag(6, 2) + b"\x10ab", "malformed"),  # cut off
    ],
)
def test_what_the_compiled_core_reads_and_leaves(extra: bytes, reason: str) -> None:
    assert scan.reason(BASE + extra) == reason
    assert_same(BASE + extra)


@pytest.mark.parametrize(
    "limits",
    [
        pprof.Limits(samples=10),
        pprof.Limits(locations=10, functions=10),
        pprof.Limits(strings=10),
        pprof.Limits(frames=100),
        pprof.Limits(labels=3),
        pprof.Limits(mappings=0),
    ],
)
def test_limits_are_refused_the_same_both_ways(limits: pprof.Limits) -> None:
    raw = _raw((CORPUS / "go-runtime/cpu-labels.pb").read_bytes())
    assert scan.reason(raw) == "ok"
    assert assert_same(raw, limits) == "TooLarge"


def test_the_message_is_decoded_only_when_asked_for() -> None:
    p = pprof.parse(BASE, max_profile_bytes=LIMIT)
    assert p._message is None  # the upload's job never needs it
    assert p.message == FULL["Profile"].FromString(BASE)
    assert p.message is p.message


def test_labels_are_read_by_the_compiled_core_as_it_parses() -> None:
    """The analysis takes every label (sample, key, str, num, unit) from the pass that parsed
    the file instead of walking the samples' bytes again (half of a heap profile's columns
    in a collection's merges); the two readings are compared on every corpus file above."""
    parsed = pprof.parse((CORPUS / "go-runtime/heap.pb.gz").read_bytes(), max_profile_bytes=LIMIT)
    assert parsed.labels is not None and len(parsed.labels[0]) > 0
    assert tables(parsed).labels() is parsed.labels
    sample, key, _, num, unit = parsed.labels
    assert np.all(np.diff(sample) >= 0) and sample[-1] < parsed.n_samples
    strings = parsed.strings
    assert {strings[k] for k in key} == {"bytes"} and np.all(num > 0)
    assert {strings[u] for u in unit} <= {"", "bytes"}


def test_locations_and_functions_are_read_by_the_compiled_core_as_it_parses() -> None:
    """The tables take every location, line and function field from the parse's pass (a
    fleet member's columns cost a fifth of walking their bytes again); assert_same compares
    the tables of both paths on the corpus and the mutations."""
    parsed = pprof.parse(
        (CORPUS / "go-runtime/cpu-large.pb.gz").read_bytes(), max_profile_bytes=LIMIT
    )
    el = parsed.elements
    assert el is not None
    message = parsed.message
    assert el.loc_id.tolist() == [loc.id for loc in message.location]
    assert el.loc_address.tolist() == [loc.address for loc in message.location]
    assert el.loc_lines.tolist() == [len(loc.line) for loc in message.location]
    assert el.line_no.tolist() == [line.line for loc in message.location for line in loc.line]
    assert el.function_start.tolist() == [f.start_line for f in message.function]
    assert el.function_names[:, 0].tolist() == [f.name for f in message.function]
    t = tables(parsed)
    assert t.func_start == [f.start_line for f in message.function]
