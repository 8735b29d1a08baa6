"""Variants of profile.proto, built at import, that let upb decode profiles the way pprof does.

- FULL: profile.proto with string_table as bytes (Go keeps invalid UTF-8; proto3 strings refuse
  it). This is ParsedProfile.message.
- OUTLINE: FULL with each sample, location and function kept as its encoded bytes: the top-level
  fields, mappings and strings at a fraction of FULL's cost (ParsedProfile.outline).
- SHALLOW: every message field as bytes, so one level is decoded at a time: parsing the joined
  payloads of, say, all samples as one Sample gives every location id in one array. Singular
  fields stay singular, so a wire type pprof rejects still lands in the unknown fields. On the
  Profile, time_nanos and period_type are repeated, to see a second one.
- ALL: every field repeated (message fields as bytes), so no value is lost to "last one wins";
  used to range-check every string index in one array.
- LABELS_SHALLOW, LABELS_ALL: a Sample whose label is one message, not a list: protobuf merges
  the occurrences of a singular message field, which is the same as decoding their joined
  payloads, so decoding all samples' joined bytes yields every label as one SHALLOW (or ALL)
  Label without a Python object per label. LABELS_ALL reads location_id and value as bytes, to
  skip them cheaply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ._proto import profile_pb2

_Field = descriptor_pb2.FieldDescriptorProto
_POOL = descriptor_pool.DescriptorPool()


def _variant(package: str, change: Callable[[str, Any], None]) -> dict[str, type]:
    """Copy profile.proto into package, let change edit each field, return the classes by name."""
    proto = descriptor_pb2.FileDescriptorProto()
    profile_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = f"{package.replace('.', '/')}.proto"
    old = f".{proto.package}."
    proto.package = package
    for message in proto.message_type:
        for field in message.field:
            if field.type_name:
                field.type_name = field.type_name.replace(old, f".{package}.")
            if field.number == 6 and message.name == "Profile":
                field.type = _Field.TYPE_BYTES
            change(message.name, field)
    _POOL.Add(proto)
    return {
        m.name: message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{package}.{m.name}"))
        for m in proto.message_type
    }


def _as_bytes(field: Any) -> None:
    if field.type == _Field.TYPE_MESSAGE:
        field.type = _Field.TYPE_BYTES
        field.ClearField("type_name")


def _shallow(message: str, field: Any) -> None:
    _as_bytes(field)
    if message == "Profile" and field.name in ("time_nanos", "period_type"):
        field.label = _Field.LABEL_REPEATED


def _outline(message: str, field: Any) -> None:
    if message == "Profile" and field.name in ("sample", "location", "function"):
        _as_bytes(field)


def _all(message: str, field: Any) -> None:
    _as_bytes(field)
    field.label = _Field.LABEL_REPEATED


def _merged_labels(inner: Callable[[str, Any], None]) -> Callable[[str, Any], None]:
    """Sample.label as a singular message (its occurrences merge); other fields as inner does."""

    def change(message: str, field: Any) -> None:
        if message == "Sample" and field.name == "label":
            field.label = _Field.LABEL_OPTIONAL
        elif message == "Sample" and inner is _all:
            field.type = _Field.TYPE_BYTES  # location_id and value: not decoded again
            field.label = _Field.LABEL_OPTIONAL
        else:
            inner(message, field)

    return change


FULL = _variant("pprofshare.full", lambda message, field: None)
OUTLINE = _variant("pprofshare.outline", _outline)
SHALLOW = _variant("pprofshare.shallow", _shallow)
ALL = _variant("pprofshare.all", _all)
LABELS_SHALLOW = _variant("pprofshare.labels_shallow", _merged_labels(_shallow))
LABELS_ALL = _variant("pprofshare.labels_all", _merged_labels(_all))
