"""google/pprof's rules and decoder quirks, one by one, on profiles built in code.

Every test runs twice: with the compiled decoder (share/pprof/scan.c) and without it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from google.protobuf.unknown_fields import UnknownFieldSet

from share import pprof
from share.errors import BadProfile
from share.pprof import decode, scan
from share.pprof._proto import profile_pb2

Line, Label = profile_pb2.Line, profile_pb2.Label
STRINGS = ["", "samples", "count", "cpu", "nanoseconds", "main", "main.go", "/bin/app", "k", "v"]


@pytest.fixture(autouse=True, params=["compiled", "python"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test on both paths: "python" is parse() as when scan.c was not built."""
    if request.param == "python":
        monkeypatch.setattr(scan, "LIB", None)
    return request.param


def base() -> profile_pb2.Profile:
    """A small valid profile: one mapping, function, location, and two samples."""
    p = profile_pb2.Profile()
    p.string_table.extend(STRINGS)
    p.sample_type.add(type=1, unit=2)
    p.sample_type.add(type=3, unit=4)
    p.mapping.add(id=1, filename=7)
    p.function.add(id=1, name=5, filename=6)
    p.location.add(id=1, mapping_id=1, line=[Line(function_id=1, line=3)])
    p.sample.add(location_id=[1], value=[1, 10], label=[Label(key=8, str=9)])
    p.sample.add(location_id=[1, 1], value=[2, 20])
    p.period_type.type, p.period_type.unit, p.period = 3, 4, 10
    p.default_sample_type = 3
    return p


def parse(data: bytes) -> pprof.ParsedProfile:
    return pprof.parse(data, max_profile_bytes=1 << 20)


def refused(data: bytes) -> str:
    with pytest.raises(BadProfile) as info:
        parse(data)
    return info.value.message


def tag(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def varint(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80)
        x >>= 7
    return bytes(out + bytes([x]))


def field_bytes(field: int, payload: bytes) -> bytes:
    return tag(field, 2) + varint(len(payload)) + payload


def test_base_profile_is_valid() -> None:
    p = parse(base().SerializeToString())
    assert p.sample_types() == [("samples", "count"), ("cpu", "nanoseconds")]
    assert p.default_sample_type() == "cpu"
    assert p.values.tolist() == [[1, 10], [2, 20]]
    assert p.location_offsets.tolist() == [0, 1, 3]


def _set(attr: str, value: int) -> Callable[[profile_pb2.Profile], None]:
    def change(p: profile_pb2.Profile) -> None:
        obj_path, name = attr.rsplit(".", 1) if "." in attr else ("", attr)
        obj = p
        for part in filter(None, obj_path.split(".")):
            obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
        setattr(obj, name, value)

    return change


RULES: list[tuple[str, Callable[[profile_pb2.Profile], None], str]] = [
    ("value count", lambda p: p.sample[1].value.append(5), "sample 1 has 3 values"),
    (
        "unknown location",
        lambda p: p.sample[1].location_id.append(7),
        "sample 1 refers to location 7",
    ),
    ("location 0", lambda p: p.sample[0].location_id.append(0), "sample 0 refers to location 0"),
    ("no sample types", lambda p: p.ClearField("sample_type"), "2 samples but no sample types"),
    ("mapping id 0", _set("mapping.0.id", 0), "mapping number 1 in the file has id 0"),
    ("dup mapping", lambda p: p.mapping.add(id=1), "two mappings have the same id 1"),
    ("function id 0", lambda p: p.function.add(id=0), "function number 2 in the file has id 0"),
    ("dup function", lambda p: p.function.add(id=1), "two functions have the same id 1"),
    ("location id 0", lambda p: p.location.add(id=0), "location number 2 in the file has id 0"),
    ("dup location", lambda p: p.location.add(id=1), "two locations have the same id 1"),
    ("line fn 0", _set("location.0.line.0.function_id", 0), "location 1 has a line with no func"),
    ("line fn 9", _set("location.0.line.0.function_id", 9), "refers to function 9, which is not"),
    ("mapping file", _set("mapping.0.filename", 10), "in mapping 1's filename"),
    ("build id", _set("mapping.0.build_id", 99), "string index 99 out of range"),
    ("fn name", _set("function.0.name", -2), "string index -2 out of range"),
    ("fn system name", _set("function.0.system_name", 10), "function 1's system_name"),
    ("fn filename", _set("function.0.filename", 10), "function 1's filename"),
    ("type", _set("sample_type.1.unit", 10), "sample_type 1's unit"),
    ("label key", _set("sample.0.label.0.key", 10), "a label key of sample 0"),
    ("label str", _set("sample.0.label.0.str", 10), "a label value of sample 0"),
    ("drop", _set("drop_frames", 10), "in drop_frames"),
    ("keep", _set("keep_frames", 10), "in keep_frames"),
    ("period type", _set("period_type.unit", 10), "period_type's unit"),
    ("comment", lambda p: p.comment.extend([1, 10]), "in a comment"),
    ("default type", _set("default_sample_type", 10), "in default_sample_type"),
    ("table[0]", lambda p: p.string_table.__setitem__(0, "x"), "string_table[0] must be"),
]


@pytest.mark.parametrize(("change", "words"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_each_rule_is_enforced_with_a_message(
    change: Callable[[profile_pb2.Profile], None], words: str
) -> None:
    p = base()
    change(p)
    assert words in refused(p.SerializeToString())


def test_the_first_problem_in_gos_order_is_reported() -> None:
    p = base()
    p.sample[1].value.append(3)  # CheckValid: second
    p.function[0].name = 50  # postDecode comes before CheckValid
    assert "string index 50" in refused(p.SerializeToString())


def test_label_unit_is_only_looked_up_without_a_string_value() -> None:
    p = base()
    p.sample[0].label[0].num_unit = 99  # str is set: Go never reads num_unit
    parse(p.SerializeToString())
    p.sample[0].label.add(key=8, num=5, num_unit=99)
    assert "a label unit of sample 0" in refused(p.SerializeToString())


def test_what_pprof_does_not_check_is_accepted() -> None:
    p = base()
    p.location[0].mapping_id = 42  # dangling: Go treats it as unmapped
    p.doc_url = 1000  # google/pprof of Go 1.19 does not read doc_url
    p.location.add(id=2**64 - 1)
    p.sample[0].location_id.append(2**64 - 1)
    p.sample[0].value[0] = -(2**63)
    assert parse(p.SerializeToString()).string(p.doc_url) == ""


def test_no_string_table_with_data_is_refused_and_empty_input_named() -> None:
    p = base()
    p.ClearField("string_table")
    assert "string table is empty" in refused(p.SerializeToString())
    assert "no profile data" in refused(b"\x00\x00" * 100)


# --- decoder quirks: where upb alone would differ from Go ---------------------------------------


def test_field_number_zero_is_skipped() -> None:
    raw = tag(0, 0) + b"\x05" + base().SerializeToString() + tag(0, 2) + b"\x01x"
    assert parse(raw).values.tolist() == [[1, 10], [2, 20]]


def test_unknown_fields_are_skipped_and_dropped() -> None:
    sample = tag(1, 0) + b"\x01" + tag(9, 1) + bytes(8) + tag(10, 5) + bytes(4) + tag(2, 0)
    sample += b"\x07" + tag(2, 0) + b"\x08" + tag(11, 2) + b"\x01z"
    raw = base().SerializeToString() + field_bytes(2, sample) + tag(100, 0) + b"\x01"
    p = parse(raw)
    assert p.values.tolist() == [[1, 10], [2, 20], [7, 8]]
    assert p.location_offsets.tolist() == [0, 1, 3, 4]
    assert not UnknownFieldSet(p.message) and not UnknownFieldSet(p.message.sample[2])


@pytest.mark.parametrize(
    "extra",
    [
        field_bytes(2, tag(1, 1) + bytes(8)),  # location_id as fixed64
        tag(12, 2) + b"\x01\x05",  # period (singular int64) packed
        field_bytes(2, tag(3, 0) + b"\x01"),  # label (a message) as a varint
        tag(1, 0) + b"\x01",  # sample_type (a message) as a varint
    ],
)
def test_known_field_with_wrong_wire_type_is_a_type_mismatch(extra: bytes) -> None:
    assert "type mismatch" in refused(base().SerializeToString() + extra)


def test_groups_are_refused_even_in_unknown_fields() -> None:
    sample = tag(1, 0) + b"\x01" + tag(2, 0) + b"\x01" + tag(2, 0) + b"\x01" + tag(7, 3) + tag(7, 4)
    assert "unknown wire type 3" in refused(base().SerializeToString() + field_bytes(2, sample))


def test_second_time_nanos_after_a_non_zero_one_is_concatenation() -> None:
    raw = base().SerializeToString()
    assert "concatenated" in refused(raw + tag(9, 0) + b"\x05" + tag(9, 0) + b"\x06")
    p = parse(raw + tag(9, 0) + b"\x00" + tag(9, 0) + b"\x06")
    assert p.message.time_nanos == 6


def test_repeated_period_type_replaces_rather_than_merges() -> None:
    first = field_bytes(11, tag(1, 0) + b"\x03" + tag(2, 0) + b"\x63")  # unit 99: out of range
    second = field_bytes(11, tag(1, 0) + b"\x01")
    p = parse(base().SerializeToString() + first + second)
    assert (p.message.period_type.type, p.message.period_type.unit) == (1, 0)


def test_invalid_utf8_is_kept_and_decoded_with_replacement() -> None:
    raw = base().SerializeToString() + field_bytes(6, b"bad\xff")
    p = parse(raw)
    assert p.strings[-1] == "bad\ufffd"
    assert p.message.string_table[-1] == b"bad\xff"


def test_ten_byte_varints_drop_high_bits_as_go_does() -> None:
    raw = base().SerializeToString() + tag(10, 0) + b"\xff" * 9 + b"\x7f"
    assert parse(raw).message.duration_nanos == -1


def test_unpacked_non_minimal_and_long_samples_are_counted() -> None:
    p = base()
    raw = p.SerializeToString()
    odd_tag = b"\x88\x00"  # field 1, varint, with a needless continuation byte
    sample = odd_tag + b"\x01" + tag(2, 0) + b"\x04" + tag(2, 0) + b"\x05"
    long = b"".join(tag(1, 0) + b"\x01" for _ in range(40)) + tag(2, 0) + b"\x06" + tag(2, 0)
    long += b"\x07"
    parsed = parse(raw + field_bytes(2, sample) + field_bytes(2, long))
    assert parsed.location_offsets.tolist() == [0, 1, 3, 4, 44]
    assert parsed.values.tolist()[2:] == [[4, 5], [6, 7]]


def test_malformed_protobuf_is_named() -> None:
    raw = base().SerializeToString()
    assert "truncated" in refused(raw + tag(6, 2) + b"\x10ab")
    assert "bad varint" in refused(raw + b"\x80" * 11)
    assert "unknown wire type 7" in refused(raw + b"\x0f")


def test_exact_decoder_has_a_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "MAX_EXACT_BYTES", 10)
    assert "only up to" in refused(tag(0, 0) + b"\x05" + base().SerializeToString())
    parse(base().SerializeToString())  # the fast path has no such cap


def test_labels_of_every_sample_are_checked() -> None:
    # Labels are read from all samples' bytes at once: one in a later sample is looked up too.
    p = base()
    p.sample.add(location_id=[1], value=[3, 30], label=[Label(key=8, str=9)])
    p.sample.add(location_id=[1], value=[4, 40], label=[Label(key=8, str=9), Label(key=8)])
    assert parse(p.SerializeToString()).values.tolist()[2:] == [[3, 30], [4, 40]]
    p.sample[3].label[1].str = 77
    assert "string index 77 out of range" in refused(p.SerializeToString())
    assert "a label value of sample 3" in refused(p.SerializeToString())


def test_label_field_with_wrong_wire_type_is_a_type_mismatch() -> None:
    label = tag(1, 2) + b"\x01\x08"  # key (a singular int64) packed
    sample = tag(1, 0) + b"\x01" + tag(2, 0) + b"\x01" + tag(2, 0) + b"\x01"
    raw = base().SerializeToString() + field_bytes(2, sample + field_bytes(3, label))
    assert "type mismatch" in refused(raw)


def test_location_ids_after_labels_are_counted() -> None:
    # Not Go's field order: the walk over samples cannot stop once labels begin.
    # Every value is read by the second field of each sample, the last location ids much later.
    label = field_bytes(3, tag(1, 0) + b"\x08" + tag(2, 0) + b"\x09")
    first = tag(2, 0) + b"\x05" + tag(2, 0) + b"\x06" + label + tag(1, 0) + b"\x01"
    second = tag(2, 0) + b"\x07" + tag(2, 0) + b"\x08" + label + label + field_bytes(1, b"\x01\x01")
    parsed = parse(base().SerializeToString() + field_bytes(2, first) + field_bytes(2, second))
    assert parsed.location_offsets.tolist() == [0, 1, 3, 4, 6]
    assert parsed.values.tolist()[2:] == [[5, 6], [7, 8]]
