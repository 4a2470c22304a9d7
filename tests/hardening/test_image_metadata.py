"""Item 8: an image's metadata reaches neither the model nor the history.

A PNG's text chunks (tEXt, iTXt, zTXt, eXIf) and a JPEG's EXIF, ICC and comment
segments were stored and sent as they were: a GPS position, a user name or any
text rode along with the pixels. Here tools return such bytes to an agent talking
to a loopback server: the request body and the history's image rows hold the same
pixels without a byte of the metadata.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import pytest
from PIL import Image as PILImage
from PIL import PngImagePlugin

from nbagent._internal.image_metadata import strip_metadata
from nbagent.tools import Tool
from tests.support import history
from tests.support.agents import http_agent
from tests.support.servers import OpenAI, WireServer

history_home = history.history_home
SECRET = b"ALICE-59.91N-10.75E"


def png_with_metadata() -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("Author", SECRET.decode())
    info.add_itxt("Comment", "itxt " + SECRET.decode(), lang="en")
    info.add_text("Location", "ztxt " + SECRET.decode() * 20, zip=True)
    exif = PILImage.Exif()
    exif[0x013B] = "exif " + SECRET.decode()  # Artist
    out = io.BytesIO()
    PILImage.new("RGB", (40, 30), (200, 30, 30)).save(out, "PNG", pnginfo=info, exif=exif)
    return out.getvalue() + b"after IEND " + SECRET


def jpeg_with_metadata(progressive: bool = False) -> bytes:
    exif = PILImage.Exif()
    exif[0x010E] = "exif " + SECRET.decode()  # ImageDescription
    out = io.BytesIO()
    PILImage.new("RGB", (40, 30), (30, 200, 30)).save(
        out, "JPEG", exif=exif, comment=b"COM " + SECRET, icc_profile=b"icc " + SECRET * 4,
        progressive=progressive,
    )  # fmt: skip
    return out.getvalue() + b"after EOI " + SECRET


def pixels(data: bytes) -> bytes:
    with PILImage.open(io.BytesIO(data)) as picture:
        return picture.convert("RGB").tobytes()


def png_chart() -> bytes:
    """A PNG with text chunks."""
    return png_with_metadata()


def jpeg_photo() -> bytes:
    """A JPEG with EXIF."""
    return jpeg_with_metadata()


def test_neither_the_request_nor_the_history_holds_image_metadata(wire_server: WireServer):
    wire_server.add(
        OpenAI.call_stream(("call_A", "png_chart", "{}"), ("call_B", "jpeg_photo", "{}")),
        OpenAI.text_stream("Red and green."),
    )
    agent = http_agent("openai:gpt-4o", wire_server, tools=[Tool(png_chart), Tool(jpeg_photo)])
    assert agent.run_sync("Show me").output == "Red and green."
    body = wire_server.requests[1].body
    assert SECRET not in body and b"ALICE" not in body
    urls = re.findall(r"data:image/(?:png|jpeg);base64,([A-Za-z0-9+/=]+)", body.decode())
    sent = [base64.b64decode(u) for u in urls]
    assert len(sent) == 2
    assert pixels(sent[0]) == pixels(png_with_metadata())  # the same pixels
    assert pixels(sent[1]) == pixels(jpeg_with_metadata())
    stored = history.query(agent.store.path, "SELECT data FROM images ORDER BY id")
    assert len(stored) == 2 and all(SECRET not in bytes(row[0]) for row in stored)
    exported = json.dumps(agent.conversation.to_dict())
    assert base64.b64encode(SECRET).decode()[:16] not in exported


@pytest.mark.parametrize(
    "data",
    [png_with_metadata(), jpeg_with_metadata(), jpeg_with_metadata(progressive=True)],
    ids=["png", "jpeg", "progressive-jpeg"],
)
def test_stripping_keeps_the_pixels_and_is_idempotent(data: bytes):
    stripped = strip_metadata(data)
    assert SECRET not in stripped and len(stripped) < len(data)
    assert pixels(stripped) == pixels(data)
    assert strip_metadata(stripped) is stripped  # nothing left to drop: the same bytes


@pytest.mark.parametrize(
    "data", [b"\x89PNG\r\n\x1a\n\x00\x00", b"\xff\xd8\xff\xe1\xff\xff", b"GIF89a", b""]
)
def test_broken_bytes_come_back_unchanged(data: bytes):
    assert strip_metadata(data) is data


def test_an_old_history_image_with_metadata_is_stripped_when_read(tmp_path: Path):
    from nbagent._internal.images import Image

    image = Image.from_dict(
        {"media_type": "image/png", "width": 40, "height": 30,
         "data": base64.b64encode(png_with_metadata()).decode()}
    )  # fmt: skip
    assert SECRET not in image.data
