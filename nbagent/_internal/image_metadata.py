"""Image metadata removed before an image is stored or sent: pixels only.

A PNG's text chunks (``tEXt``, ``iTXt``, ``zTXt``), its ``eXIf`` and ``tIME``, a
JPEG's EXIF, XMP, ICC and Photoshop segments and comments can hold a camera's
serial number, a GPS position, a user name, a file path or any text at all. None
of it helps a model see the picture, so :func:`strip_metadata` keeps only what
decoding and display need, walking the file's chunks or segments (no decoding,
no re-encoding: the pixels are the same bytes). A leaf module (no nbagent imports).

Kept: PNG's critical chunks (``IHDR``, ``PLTE``, ``IDAT``, ``IEND``) and the
ancillary ones that change how pixels look (``tRNS``, ``gAMA``, ``cHRM``, ``sRGB``,
``sBIT``, ``bKGD``, ``pHYs``, and APNG's ``acTL``/``fcTL``/``fdAT``); JPEG's
frame, table, scan and restart segments, the ``JFIF`` APP0 header and the fixed
``Adobe`` APP14 header (it says how CMYK pixels are stored). Anything after the
end marker (``IEND``, ``EOI``) is dropped too. Bytes that are not a well-formed
PNG or JPEG are returned unchanged; the decoder downstream reports them.
"""

from __future__ import annotations

import struct

__all__ = ["strip_metadata"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_KEPT = frozenset(
    {b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"sBIT",
     b"bKGD", b"pHYs", b"acTL", b"fcTL", b"fdAT"}
)  # fmt: skip

_SOS, _EOI, _APP0, _APP14, _COM = 0xDA, 0xD9, 0xE0, 0xEE, 0xFE


def strip_metadata(data: bytes) -> bytes:
    """``data`` (PNG or JPEG bytes) without metadata; the same object when there is none."""
    if data.startswith(PNG_SIGNATURE):
        return _strip_png(data)
    if data.startswith(b"\xff\xd8"):
        return _strip_jpeg(data)
    return data


def _strip_png(data: bytes) -> bytes:
    kept: list[bytes] = [PNG_SIGNATURE]
    dropped = False
    at = len(PNG_SIGNATURE)
    while at + 8 <= len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        end = at + 12 + length  # length, type, data, CRC
        if end > len(data):
            return data  # truncated: not ours to repair
        if kind in _PNG_KEPT:
            kept.append(data[at:end])
        else:
            dropped = True
        at = end
        if kind == b"IEND":
            break
    else:  # no IEND (truncated): drop what was found, keep the rest as it is
        return b"".join([*kept, data[at:]]) if dropped else data
    if at < len(data):
        dropped = True  # bytes after IEND
    return b"".join(kept) if dropped else data


def _keep_jpeg_segment(marker: int, body: bytes) -> bool:
    if marker == _COM:
        return False
    if marker == _APP0:
        return body.startswith(b"JFIF\x00")
    if marker == _APP14:
        return body.startswith(b"Adobe")
    return not 0xE1 <= marker <= 0xEF  # APP1..APP15: EXIF, XMP, ICC, Photoshop...


def _strip_jpeg(data: bytes) -> bytes:
    kept: list[bytes] = [data[:2]]
    dropped = False
    at = 2
    size = len(data)
    while at + 1 < size:
        if data[at] != 0xFF:
            return data  # not a marker where one must be: leave it to the decoder
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker == _EOI:
            kept.append(data[at : at + 2])
            at += 2
            break
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # RSTn, TEM: no length
            kept.append(data[at : at + 2])
            at += 2
            continue
        if at + 4 > size:
            return data
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        end = at + 2 + length
        if length < 2 or end > size:
            return data
        if marker == _SOS:
            end = _scan_end(data, end)
            kept.append(data[at:end])
        elif _keep_jpeg_segment(marker, data[at + 4 : end]):
            kept.append(data[at:end])
        else:
            dropped = True
        at = end
    else:  # no EOI (truncated): drop what was found, keep the rest as it is
        return b"".join([*kept, data[at:]]) if dropped else data
    if at < size:
        dropped = True  # bytes after EOI
    return b"".join(kept) if dropped else data


def _scan_end(data: bytes, at: int) -> int:
    """Where a scan's entropy-coded data ends: the next marker that is not RSTn or FF00."""
    while True:
        found = data.find(b"\xff", at)
        if found == -1 or found + 1 >= len(data):
            return len(data)
        following = data[found + 1]
        if following == 0x00 or 0xD0 <= following <= 0xD7 or following == 0xFF:
            at = found + 1 if following == 0xFF else found + 2
            continue
        return found
