"""Privacy before sharing: rewrite a parsed profile without what the uploader chose to drop.

`strip=` names what goes, as items separated by ";" or spaces (several strip= values add up):

    labels              every sample label
    labels:KEY,KEY      the labels with these keys only (keys run to the next ";" or space)
    comments            the profile's comments
    paths               directory prefixes of function file names and mapping file names
    build_ids           the mappings' build ids
    types:TYPE,TYPE     whole sample types, with their value in every sample

The rewrite edits the decoded message and serializes it again; the string table is then
rebuilt with only the strings still referred to, so a dropped label value or path does not
survive in the file. The result is parsed again by the same pipeline, so what is stored is a
profile google/pprof reads. Nothing to remove leaves the upload's bytes (and so its id) as they
were.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ShareError
from .pipeline import ParsedProfile, parse

ITEMS = ("labels", "comments", "paths", "build_ids", "types")
_KEYED = ("labels", "types")
_SEPARATORS = re.compile(r"[;\s]+")
USAGE = "labels, labels:KEY,KEY, comments, paths, build_ids, types:TYPE,TYPE (separated by ';')"


class StripError(ShareError):
    """A strip= value that names nothing we can remove (a 400 that says what is allowed)."""

    code = 400


@dataclass
class StripSpec:
    """What to remove; label_keys None with labels True means every label."""

    labels: bool = False
    label_keys: set[str] | None = None
    comments: bool = False
    paths: bool = False
    build_ids: bool = False
    types: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return self.labels or self.comments or self.paths or self.build_ids or bool(self.types)

    def items(self) -> list[str]:
        """The spec in its canonical text form, one item each (as the reply reports it)."""
        out = []
        if self.labels:
            keys = ",".join(sorted(self.label_keys)) if self.label_keys is not None else ""
            out.append(f"labels:{keys}" if keys else "labels")
        out.extend(name for name in ("comments", "paths", "build_ids") if getattr(self, name))
        if self.types:
            out.append("types:" + ",".join(sorted(self.types)))
        return out


def parse_spec(*values: str | None) -> StripSpec:
    """The StripSpec of one or more strip= values; raises StripError naming a bad item."""
    spec = StripSpec()
    for value in values:
        for group in _SEPARATORS.split(value or ""):
            _add_group(spec, group)
    return spec


def _add_group(spec: StripSpec, group: str) -> None:
    """One ";"-separated group: bare items joined by commas, then at most one keyed item."""
    tokens = [t for t in group.split(",")]
    while tokens:
        token = tokens.pop(0).strip()
        if not token:
            continue
        name, colon, first = token.partition(":")
        name = name.strip().lower()
        if name not in ITEMS:
            raise StripError(f"strip: unknown item {token!r}; expected {USAGE}")
        if not colon:
            if name == "types":
                raise StripError("strip: types needs the types to drop, as types:alloc_objects")
            if name == "labels":
                spec.labels, spec.label_keys = True, None
            else:
                setattr(spec, name, True)
            continue
        if name not in _KEYED:
            raise StripError(f"strip: {name} takes no keys ({token!r})")
        keys = {k.strip() for k in [first, *tokens] if k.strip()}
        tokens = []
        if not keys:
            raise StripError(f"strip: {name}: name at least one after the colon")
        if name == "types":
            spec.types |= keys
        elif not spec.labels or spec.label_keys is not None:
            spec.labels = True
            spec.label_keys = (spec.label_keys or set()) | keys


def _basename(path: bytes) -> bytes:
    """The last element of a POSIX or Windows path (b"" stays b"")."""
    return re.split(rb"[/\\]", path.rstrip(b"/\\"))[-1] if path.strip(b"/\\") else path


def strip(parsed: ParsedProfile, spec: StripSpec) -> ParsedProfile:
    """The profile without what spec names, parsed again; `parsed` itself when nothing goes."""
    if not spec:
        return parsed
    message = type(parsed.message)()
    message.CopyFrom(parsed.message)
    table: list[bytes] = list(message.string_table)
    changed = _drop_types(message, parsed, spec.types)
    changed |= _drop_labels(message, parsed, spec)
    if spec.comments and len(message.comment):
        del message.comment[:]
        changed = True
    for mapping in message.mapping:
        if spec.build_ids and mapping.build_id:
            mapping.build_id = 0
            changed = True
    if spec.paths:
        changed |= _strip_paths(message, table)
    if not changed:
        return parsed
    _compact_strings(message, table)
    raw = message.SerializeToString()
    stripped = parse(raw, max_profile_bytes=len(raw) + 1)
    stripped.converted_from = parsed.converted_from  # still what the upload was
    return stripped


def _drop_types(message: Any, parsed: ParsedProfile, types: set[str]) -> bool:
    if not types:
        return False
    names = [t for t, _ in parsed.sample_types()]
    unknown = sorted(types - set(names))
    if unknown:
        have = ", ".join(repr(n) for n in names) or "none"
        raise StripError(f"strip: no sample type {unknown[0]!r} to drop; this profile has {have}")
    keep = [i for i, n in enumerate(names) if n not in types]
    if not keep:
        raise StripError("strip: that drops every sample type; keep at least one")
    kept_types = [message.sample_type[i] for i in keep]
    kept_copies = [type(t)() for t in kept_types]
    for new, old in zip(kept_copies, kept_types, strict=True):
        new.CopyFrom(old)
    del message.sample_type[:]
    message.sample_type.extend(kept_copies)
    columns = parsed.values[:, keep].tolist()
    for sample, row in zip(message.sample, columns, strict=True):
        del sample.value[:]
        sample.value.extend(row)
    if parsed.string(message.default_sample_type) in types:
        message.default_sample_type = 0
    return True


def _drop_labels(message: Any, parsed: ParsedProfile, spec: StripSpec) -> bool:
    if not spec.labels:
        return False
    changed = False
    keys = spec.label_keys
    for sample in message.sample:
        if not len(sample.label):
            continue
        if keys is None:
            del sample.label[:]
            changed = True
            continue
        kept = [lb for lb in sample.label if parsed.string(lb.key) not in keys]
        if len(kept) != len(sample.label):
            copies = [type(lb)() for lb in kept]
            for new, old in zip(copies, kept, strict=True):
                new.CopyFrom(old)
            del sample.label[:]
            sample.label.extend(copies)
            changed = True
    return changed


def _strip_paths(message: Any, table: list[bytes]) -> bool:
    """File names down to their last element; the short names join the string table."""
    index = {s: i for i, s in enumerate(table)}
    changed = False

    def short(i: int) -> int:
        nonlocal changed
        if not 0 < i < len(table):
            return i
        base = _basename(table[i])
        if base == table[i]:
            return i
        changed = True
        if base not in index:
            index[base] = len(table)
            table.append(base)
        return index[base]

    for function in message.function:
        function.filename = short(function.filename)
    for mapping in message.mapping:
        mapping.filename = short(mapping.filename)
    return changed


def _compact_strings(message: Any, table: list[bytes]) -> None:
    """Keep only the strings still referred to (in their order); renumber every reference."""
    used = {0}
    refs: list[tuple[Any, str]] = [(message, "drop_frames"), (message, "keep_frames")]
    refs += [(message, "default_sample_type"), (message, "doc_url")]
    refs += [(vt, f) for vt in message.sample_type for f in ("type", "unit")]
    if message.HasField("period_type"):
        refs += [(message.period_type, "type"), (message.period_type, "unit")]
    refs += [(m, f) for m in message.mapping for f in ("filename", "build_id")]
    refs += [(fn, f) for fn in message.function for f in ("name", "system_name", "filename")]
    labels = [lb for s in message.sample for lb in s.label]
    refs += [(lb, f) for lb in labels for f in ("key", "str", "num_unit")]
    values = [getattr(obj, name) for obj, name in refs]
    comments = list(message.comment)
    used.update(v for v in values + comments if 0 <= v < len(table))
    order = sorted(used)
    new_index = {old: new for new, old in enumerate(order)}

    def renumber(i: int) -> int:
        return new_index.get(i, 0)  # an index outside the table meant "" already

    for (obj, name), value in zip(refs, values, strict=True):
        new = renumber(value)
        if new != value:
            setattr(obj, name, new)
    del message.comment[:]
    message.comment.extend(renumber(c) for c in comments)
    del message.string_table[:]
    message.string_table.extend(table[i] for i in order)
