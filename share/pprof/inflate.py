"""Gunzip an upload the way Go's compress/gzip multistream reader does, within a size limit."""

from __future__ import annotations

import io
import struct
import zlib

from ..errors import BadProfile, TooLarge

GZIP_MAGIC = b"\x1f\x8b"

_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 0x02, 0x04, 0x08, 0x10
# Compressed input is fed in slices so zlib's unconsumed_tail (a copy) stays small.
_IN_CHUNK = 256 * 1024
# Output is drawn in slices so a bomb is stopped after at most this much past the limit.
_OUT_CHUNK = 1024 * 1024
# Go's gzip reader gives up on a header name or comment longer than its 512-byte buffer.
_MAX_HEADER_STRING = 512


def human_size(n: int) -> str:
    """512 MiB, 64 KiB, 100 bytes: the limit as a user would write it."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def too_large(limit: int) -> TooLarge:
    """The one TooLarge error for a profile over the decompressed-size limit."""
    return TooLarge(
        f"profile is larger than {human_size(limit)} once decompressed "
        "(limit SHARE_MAX_PROFILE_BYTES)"
    )


def _truncated() -> BadProfile:
    return BadProfile("gzip data is truncated: the upload ends before the end of the gzip stream")


def _header_end(data: bytes, pos: int) -> int:
    """Check the member header at pos as Go does and return where the deflate data starts."""
    end = len(data)
    if end - pos < 10:
        raise _truncated()
    if data[pos + 2] != 8:
        raise BadProfile(
            f"gzip header is invalid: compression method {data[pos + 2]} is not deflate"
        )
    flags = data[pos + 3]
    p = pos + 10
    if flags & _FEXTRA:
        if end - p < 2:
            raise _truncated()
        p += 2 + struct.unpack_from("<H", data, p)[0]
        if p > end:
            raise _truncated()
    for flag, what in ((_FNAME, "file name"), (_FCOMMENT, "comment")):
        if flags & flag:
            nul = data.find(b"\0", p, p + _MAX_HEADER_STRING)
            if nul < 0:
                if end - p < _MAX_HEADER_STRING:
                    raise _truncated()
                raise BadProfile(f"gzip header is invalid: its {what} is longer than 511 bytes")
            p = nul + 1
    if flags & _FHCRC:
        if end - p < 2:
            raise _truncated()
        if struct.unpack_from("<H", data, p)[0] != zlib.crc32(data[pos:p]) & 0xFFFF:
            raise BadProfile("gzip header checksum mismatch: the file is corrupt")
        p += 2
    return p


def _inflate_member(data: bytes, pos: int, out: io.BytesIO, limit: int) -> int:
    """Inflate one deflate stream into out and check the trailer; return the position after it."""
    view = memoryview(data)
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    crc = 0
    size = 0
    pending = b""
    stalled = False
    while not inflater.eof:
        if pending:
            chunk = pending
        elif pos < len(data):
            chunk = view[pos : pos + _IN_CHUNK]
            pos += len(chunk)
        elif stalled:
            raise _truncated()
        else:
            # Input is used up, but zlib may still hold output that an earlier cap held back.
            chunk = b""
        room = limit - out.tell() + 1
        try:
            piece = inflater.decompress(chunk, min(_OUT_CHUNK, room))
        except zlib.error as exc:
            raise BadProfile(f"gzip data is corrupt ({exc.args[0].split(': ', 1)[-1]})") from None
        pending = inflater.unconsumed_tail
        stalled = not chunk and not piece
        if out.tell() + len(piece) > limit:
            raise too_large(limit)
        out.write(piece)
        crc = zlib.crc32(piece, crc)
        size += len(piece)
    pos -= len(inflater.unused_data)
    if len(data) - pos < 8:
        raise _truncated()
    want_crc, want_size = struct.unpack_from("<II", data, pos)
    if want_crc != crc:
        raise BadProfile("gzip checksum mismatch: the file is corrupt")
    if want_size != size & 0xFFFFFFFF:
        raise BadProfile("gzip size check failed: the file is corrupt")
    return pos + 8


def gunzip(data: bytes, limit: int) -> bytes:
    """Every gzip member of data, inflated and concatenated; at most limit bytes.

    Like Go's reader: each member's header, CRC-32 and size are checked, and whatever follows a
    member must be another complete member (zero padding and garbage are errors).
    """
    out = io.BytesIO()
    pos = 0
    while True:
        pos = _inflate_member(data, _header_end(data, pos), out, limit)
        rest = len(data) - pos
        if rest == 0:
            break
        if data[pos : pos + 2] != GZIP_MAGIC:
            what = "zero padding" if not data[pos:].strip(b"\0") else f"{human_size(rest)}"
            raise BadProfile(f"trailing bytes after the gzip stream ({what}): remove them")
        if rest < 10:
            raise _truncated()
    # getvalue() hands over BytesIO's buffer without another copy of the profile.
    return out.getvalue()
