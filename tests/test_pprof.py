"""share.pprof.parse over every corpus file, gzip handling, and the size limit."""

from __future__ import annotations

import csv
import gzip
import struct
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from share import pprof
from share.errors import BadProfile, ShareError, TooLarge
from share.pprof.schema import FULL
from share.pprof.wire import sanitize

CORPUS = Path(__file__).parent / "corpus"
with open(CORPUS / "MANIFEST.tsv", newline="") as _f:
    ROWS = list(csv.DictReader(_f, delimiter="\t"))
VALID = [r for r in ROWS if r["valid"] == "yes"]
INVALID = [r for r in ROWS if r["valid"] == "no"]
CONVERTED = [r for r in ROWS if r["valid"] == "converted" or r["path"].startswith("legacy/")]
SMALL_VALID = [r for r in VALID if int(r["bytes"]) < 100_000]
LIMIT = 64 * 1024 * 1024


def read(path: str) -> bytes:
    return (CORPUS / path).read_bytes()


def parse(data: bytes, limit: int = LIMIT) -> pprof.ParsedProfile:
    return pprof.parse(data, max_profile_bytes=limit)


def error(data: bytes, limit: int = LIMIT) -> ShareError:
    with pytest.raises(ShareError) as info:
        parse(data, limit)
    return info.value


@pytest.mark.parametrize("row", VALID, ids=[r["path"] for r in VALID])
def test_valid_corpus_file_parses_with_manifest_counts(row: dict[str, str]) -> None:
    p = parse(read(row["path"]))
    types = ",".join(f"{t}/{u}" for t, u in p.sample_types())
    assert types == row["sample_types"]
    assert (p.n_samples, p.n_locations, p.n_functions) == (
        int(row["n_samples"]),
        int(row["n_locations"]),
        int(row["n_functions"]),
    )
    assert p.was_gzip == (row["gzip"] == "yes")
    assert len(p.strings) == len(p.message.string_table)


@pytest.mark.parametrize("row", INVALID, ids=[r["path"] for r in INVALID])
def test_invalid_corpus_file_is_refused_with_a_message(row: dict[str, str]) -> None:
    err = error(read(row["path"]))
    assert isinstance(err, BadProfile | TooLarge)
    assert err.message.strip()
    assert "Traceback" not in err.message


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("invalid/empty.bin", "empty file"),
        ("invalid/image.png", "PNG image"),
        ("invalid/json.json", "JSON, not a pprof profile"),
        ("invalid/perf-data-header.data", "perf_to_profile"),
        ("invalid/gzip-bad-crc.pb.gz", "gzip checksum mismatch"),
        ("invalid/gzip-truncated-half.pb.gz", "gzip data is truncated"),
        ("invalid/gzip-truncated-10-bytes.pb.gz", "gzip data is truncated"),
        ("invalid/gzip-trailing-garbage.pb.gz", "trailing bytes after the gzip stream"),
        ("invalid/gzip-trailing-zero-padding.pb.gz", "zero padding"),
        ("invalid/double-gzip.pb.gz", "gzip inside gzip"),
        ("invalid/gzip-of-empty-payload.pb.gz", "empty"),
        ("invalid/concatenated-two-profiles.pb.gz", "concatenated"),
        ("invalid/concatenated-two-profiles-raw.pb", "concatenated"),
        ("invalid/wire-type-mismatch.pb", "type mismatch"),
        ("invalid/wire-unknown-wiretype-group.pb", "unknown wire type 3"),
        ("invalid/wire-bad-varint.pb", "bad varint"),
        ("invalid/wire-length-overflow.pb", "truncated"),
        ("invalid/legacy/go-runtime/goroutine-debug2.txt", "goroutine stack dump (debug=2)"),
        (
            "invalid/legacy/google-pprof/7e3c92482f6f39fc502b822ded792c589849cca8",
            "parsing profile: parsing sample 0 0 @ 0: second value must be non-zero",
        ),
        ("invalid/rule-string-table-0-not-empty.pb.gz", "string_table[0] must be the empty"),
        (
            "invalid/rule-string-index-out-of-range.pb.gz",
            "string index 159 out of range (the string table has 149 entries) in function",
        ),
        (
            "invalid/rule-sample-unknown-location.pb.gz",
            "sample 0 refers to location 999999, which is not defined",
        ),
        ("invalid/rule-sample-value-count-long.pb.gz", "sample 31 has 5 values"),
        ("invalid/rule-duplicate-location-id.pb.gz", "two locations have the same id 4"),
        ("invalid/rule-missing-sample-type.pb.gz", "no sample types"),
        ("invalid/rule-line-function-id-zero.pb.gz", "location 2 has a line with no function"),
        ("invalid/rule-no-string-table.pb.gz", "string table is empty"),
    ],
)
def test_specific_messages(path: str, words: str) -> None:
    assert words in error(read(path)).message


@pytest.mark.parametrize("row", CONVERTED, ids=[r["path"] for r in CONVERTED])
def test_converted_corpus_file_parses_with_manifest_counts(row: dict[str, str]) -> None:
    p = parse(read(row["path"]))
    assert f"converted_from: {p.converted_from};" in row["note"]
    assert ",".join(f"{t}/{u}" for t, u in p.sample_types()) == row["sample_types"]
    assert (p.n_samples, p.n_locations, p.n_functions) == (
        int(row["n_samples"]),
        int(row["n_locations"]),
        int(row["n_functions"]),
    )


@pytest.mark.parametrize(
    ("path", "origin"),
    [
        ("legacy/go-runtime/heap-debug1.txt", "Go heap (debug=1)"),
        ("legacy/go-runtime/goroutine-debug1.txt", "Go goroutine (debug=1)"),
        ("legacy/google-pprof/cppbench.cpu", "legacy CPU"),
        ("legacy/google-pprof/java.heap", "legacy Java heap"),
        ("legacy/google-pprof/cppbench.thread", "legacy thread"),
        ("formats/folded-stacks.txt", "folded"),
    ],
)
def test_formats_pprof_refuses_as_protobuf_are_converted(path: str, origin: str) -> None:
    """Once 400s with a conversion hint; now converted (tests/test_formats_*.py check how)."""
    p = parse(read(path))
    assert p.converted_from == origin and not p.was_gzip


def test_html_page_is_named() -> None:
    page = b"<!DOCTYPE html>\n<html><head><title>pprof</title></head><body>hi</body></html>\n"
    assert "HTML page" in error(page).message
    assert "HTML page" in error(gzip.compress(page)).message


def test_gzip_bomb_is_stopped_while_inflating_in_bounded_memory() -> None:
    bomb = read("invalid/gzip-bomb-1GiB-zeros.gz")
    limit = 16 * 1024 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge) as info:
            parse(bomb, limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "16 MiB" in info.value.message and "SHARE_MAX_PROFILE_BYTES" in info.value.message
    assert peak < 1.5 * limit


def test_raw_input_over_the_limit_is_too_large() -> None:
    raw = read("go-runtime/cpu-labels.pb")
    assert parse(raw, len(raw)).raw == raw
    assert isinstance(error(raw, len(raw) - 1), TooLarge)
    assert isinstance(error(gzip.compress(raw), len(raw) - 1), TooLarge)


@pytest.mark.parametrize("row", SMALL_VALID, ids=[r["path"] for r in SMALL_VALID])
def test_raw_is_the_same_however_it_was_compressed(row: dict[str, str]) -> None:
    raw = parse(read(row["path"])).raw
    for level in (1, 9):
        again = parse(gzip.compress(raw, level))
        assert again.raw == raw and again.was_gzip
    assert parse(raw).raw == raw


@pytest.mark.parametrize("row", VALID, ids=[r["path"] for r in VALID])
def test_flat_arrays_match_the_message(row: dict[str, str]) -> None:
    p = parse(read(row["path"]))
    samples = p.message.sample
    offsets = p.location_offsets
    assert offsets.shape == (len(samples) + 1,) and offsets[-1] == p.location_ids.size
    assert p.values.shape == (len(samples), len(p.message.sample_type))
    picks = np.unique(np.linspace(0, len(samples) - 1, 50).astype(int)) if len(samples) else []
    for i in picks:
        s = samples[int(i)]
        assert p.location_ids[offsets[i] : offsets[i + 1]].tolist() == list(s.location_id)
        assert p.values[i].tolist() == list(s.value)


@pytest.mark.parametrize("row", SMALL_VALID, ids=[r["path"] for r in SMALL_VALID])
def test_exact_decoder_reads_valid_files_as_upb_does(row: dict[str, str]) -> None:
    p = parse(read(row["path"]))
    assert FULL["Profile"].FromString(sanitize(p.raw)) == p.message


def test_conveniences() -> None:
    p = parse(read("go-runtime/allocs.pb.gz"))
    assert p.sample_types()[0] == ("alloc_objects", "count")
    assert p.default_sample_type() == "alloc_space"
    assert p.default_sample_index() == 1
    heap = parse(read("go-runtime/heap.pb.gz"))
    assert heap.default_sample_type() is None and heap.default_sample_index() == 3
    assert p.string(0) == "" and p.string(10**9) == "" and p.string(-1) == ""
    unknown = parse(read("edge/default-sample-type-unknown.pb.gz"))
    assert unknown.default_sample_type() is None
    assert parse(read("edge/invalid-utf8-function-name.pb.gz")).strings.count("") == 1
    assert any("\ufffd" in s for s in parse(read("edge/invalid-utf8-function-name.pb.gz")).strings)


# --- gzip details, as Go's compress/gzip reads them --------------------------------------------

PROFILE = read("go-runtime/cpu-small.pb.gz")
RAW = gzip.decompress(PROFILE)


def member(payload: bytes, flags: int = 0, extra: bytes = b"") -> bytes:
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(payload) + deflate.flush()
    header = b"\x1f\x8b\x08" + bytes([flags]) + bytes(6) + extra
    return header + body + struct.pack("<II", zlib.crc32(payload), len(payload))


def test_multi_member_gzip_reads_every_member() -> None:
    thirds = [
        RAW[: len(RAW) // 3],
        RAW[len(RAW) // 3 : 2 * len(RAW) // 3],
        RAW[2 * len(RAW) // 3 :],
    ]
    assert parse(b"".join(member(t) for t in thirds)).raw == RAW


def test_header_crc_is_checked() -> None:
    header = b"\x1f\x8b\x08\x02" + bytes(6)
    good = struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    assert parse(member(RAW, 0x02, good)).raw == RAW
    bad = struct.pack("<H", (zlib.crc32(header) + 1) & 0xFFFF)
    assert "header checksum" in error(member(RAW, 0x02, bad)).message


def test_size_trailer_is_checked() -> None:
    data = bytearray(member(RAW))
    data[-4:] = struct.pack("<I", len(RAW) + 1)
    assert "size check" in error(bytes(data)).message


def test_a_partial_second_header_is_truncation() -> None:
    assert "truncated" in error(member(RAW) + b"\x1f\x8b\x08").message


def test_not_deflate_is_named() -> None:
    data = bytearray(member(RAW))
    data[2] = 7
    assert "not deflate" in error(bytes(data)).message


def test_corrupt_deflate_is_named() -> None:
    data = bytearray(member(RAW))
    data[10] = 0xFF  # reserved block type 3
    assert "gzip data is corrupt" in error(bytes(data)).message
