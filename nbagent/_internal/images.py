"""Images for the model: one value type and one conversion from what notebooks hold.

:func:`to_image` turns a matplotlib ``Figure``, a PIL image, an
``IPython.display.Image`` or PNG/JPEG bytes into an :class:`Image`: encoded bytes
plus their size, downscaled so the longest side is at most :data:`MAX_SIDE`
pixels. Each provider adapter places images as its API allows (see WIRE_FORMATS).

A leaf module: matplotlib, Pillow and IPython are imported only when a value of
theirs is converted (Pillow is optional: without it, PNG/JPEG bytes within the
size limit pass through as they are, and figures are rendered at a size that fits).
"""

from __future__ import annotations

import base64
import io
import struct
from dataclasses import dataclass
from typing import Any

MAX_SIDE = 1024
"""Longest side, in pixels, of an image sent to a model."""
MAX_PIXELS = 100_000_000
"""Encoded images larger than this are refused before decoding (a decompression bomb
costs gigabytes); an in-memory PIL image of any size is downscaled."""
CHARS_PER_IMAGE_TOKEN = 4
"""An image counts against a round's character budget as its token estimate times this."""

_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}


@dataclass(frozen=True)
class Image:
    """An encoded image ready for a model request."""

    data: bytes
    media_type: str
    """``image/png`` or ``image/jpeg``."""
    width: int
    height: int

    def __repr__(self) -> str:
        return f"Image({self.width}×{self.height} {self.format}, {len(self.data)} bytes)"

    @property
    def format(self) -> str:
        """``PNG`` or ``JPEG``."""
        return _NAMES.get(self.media_type, self.media_type)

    def base64(self) -> str:
        """The bytes as base64 text (what every API's JSON carries)."""
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """A ``data:`` URL of the image (OpenAI's ``image_url``)."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def describe(self) -> str:
        """``640×480 PNG``."""
        return f"{self.width}×{self.height} {self.format}"

    def placeholder(self) -> str:
        """The text a model that does not see images gets instead."""
        return f"[image {self.describe()} shown to the user]"

    @property
    def cost(self) -> int:
        """Characters of a round's budget this image uses (about ``w×h/750`` tokens)."""
        return max(self.width * self.height // 750, 85) * CHARS_PER_IMAGE_TOKEN

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (the bytes as base64)."""
        return {
            "media_type": self.media_type,
            "width": self.width,
            "height": self.height,
            "data": self.base64(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Image:
        """The image that :meth:`to_dict` wrote."""
        return cls(
            base64.b64decode(data["data"]),
            str(data["media_type"]),
            int(data["width"]),
            int(data["height"]),
        )

    def _repr_png_(self) -> bytes | None:
        return self.data if self.media_type == "image/png" else None

    def _repr_jpeg_(self) -> bytes | None:
        return self.data if self.media_type == "image/jpeg" else None


def is_image_like(value: Any) -> bool:
    """True for the values :func:`to_image` converts (checked without importing anything)."""
    if isinstance(value, Image):
        return True
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _sniff(bytes(value[:4])) is not None
    module = type(value).__module__ or ""
    name = type(value).__name__
    if module.startswith("matplotlib") and name in ("Figure", "SubFigure"):
        return True
    if module.startswith("matplotlib") and hasattr(value, "get_figure") and name.endswith("Axes"):
        return True
    if module.startswith("PIL.") and hasattr(value, "size") and hasattr(value, "mode"):
        return True
    return module.startswith("IPython") and name == "Image" and hasattr(value, "data")


def to_image(value: Any, *, max_side: int = MAX_SIDE) -> Image:
    """``value`` as a model-ready :class:`Image`, longest side at most ``max_side``.

    Raises TypeError for a value that is not an image, ValueError for bytes that do
    not decode or an encoded image over :data:`MAX_PIXELS`.
    """
    if max_side < 1:
        raise ValueError("max_side must be at least 1 pixel")
    if isinstance(value, Image):
        if max(value.width, value.height) <= max_side:
            return value
        return _from_bytes(value.data, max_side)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _from_bytes(bytes(value), max_side)
    module = type(value).__module__ or ""
    if module.startswith("matplotlib"):
        figure = (
            value if hasattr(value, "savefig") else getattr(value, "get_figure", lambda: None)()
        )
        if figure is not None and hasattr(figure, "savefig"):
            return _from_figure(figure, max_side)
    if module.startswith("PIL.") and hasattr(value, "size") and hasattr(value, "mode"):
        return _from_pil(value, max_side)
    if module.startswith("IPython") and type(value).__name__ == "Image":
        data = getattr(value, "data", None)
        if isinstance(data, bytes):
            return _from_bytes(data, max_side)
        raise TypeError("an IPython.display.Image that refers to a URL or file is not loaded")
    raise TypeError(
        f"{type(value).__name__} is not an image (expected a matplotlib Figure, a PIL "
        "image, IPython.display.Image or PNG/JPEG bytes)"
    )


# -- encoded bytes ---------------------------------------------------------------------


def _sniff(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    return None


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) read from a PNG or JPEG header; ValueError if it is neither."""
    media_type = _sniff(data[:4])
    if media_type == "image/png":
        if len(data) < 24 or data[12:16] != b"IHDR":
            raise ValueError("PNG bytes without an IHDR header")
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if media_type == "image/jpeg":
        return _jpeg_size(data)
    raise ValueError("not PNG or JPEG bytes")


def _jpeg_size(data: bytes) -> tuple[int, int]:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            raise ValueError("JPEG bytes with a broken marker")
        marker = data[at + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return int(width), int(height)
        at += 2 + length
    raise ValueError("JPEG bytes without a frame header")


def _from_bytes(data: bytes, max_side: int) -> Image:
    media_type = _sniff(data[:4])
    if media_type is None:
        raise ValueError("bytes that are not a PNG or JPEG image")
    width, height = image_size(data)
    if width < 1 or height < 1:
        raise ValueError(f"an image of {width}×{height} pixels")
    if max(width, height) <= max_side:
        return Image(data, media_type, width, height)
    if width * height > MAX_PIXELS:
        raise ValueError(
            f"a {width}×{height} image is over {MAX_PIXELS:,} pixels; downscale it first"
        )
    try:
        from PIL import Image as PILImage
    except ImportError:  # no Pillow: cannot downscale, send as is
        return Image(data, media_type, width, height)
    with PILImage.open(io.BytesIO(data)) as opened:
        if media_type == "image/jpeg":
            opened.draft("RGB", (max_side, max_side))  # decode at a reduced scale
        opened.load()
        return _from_pil(opened, max_side, media_type)


# -- PIL and matplotlib -----------------------------------------------------------------


def _from_pil(picture: Any, max_side: int, media_type: str = "image/png") -> Image:
    width, height = picture.size
    if width < 1 or height < 1:
        raise ValueError(f"an image of {width}×{height} pixels")
    if max(width, height) > max_side:
        scale = max_side / max(width, height)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        # reducing_gap: a fast integer reduce first, then a good resample of the rest
        picture = picture.resize(size, reducing_gap=2.0)
    mode = picture.mode
    if media_type == "image/jpeg":
        if mode not in ("RGB", "L"):
            picture = picture.convert("RGB")
        fmt = "JPEG"
    else:
        if mode not in ("RGB", "RGBA", "L", "LA", "P"):
            picture = picture.convert("RGBA" if "A" in mode else "RGB")
        fmt = "PNG"
    out = io.BytesIO()
    picture.save(out, format=fmt)
    return Image(out.getvalue(), media_type, picture.size[0], picture.size[1])


def _from_figure(figure: Any, max_side: int) -> Image:
    """Render a figure at a dpi that keeps its longest side within ``max_side``.

    Drawn on a renderer of its own (the figure's canvas is left alone) and encoded
    by Pillow with fast compression: ``savefig`` costs several times more.
    """
    inches_w, inches_h = figure.get_size_inches()
    dpi = float(figure.dpi)
    if max(inches_w, inches_h) * dpi > max_side:
        dpi = max_side / max(inches_w, inches_h)
    try:
        from matplotlib.backends.backend_agg import RendererAgg
        from PIL import Image as PILImage
    except ImportError:
        return _from_savefig(figure, dpi, max_side)
    width = max(1, min(max_side, round(inches_w * dpi)))
    height = max(1, min(max_side, round(inches_h * dpi)))
    saved_dpi = figure.dpi
    try:
        if dpi != saved_dpi:
            figure.dpi = dpi
        renderer = RendererAgg(width, height, dpi)  # type: ignore[no-untyped-call]
        figure.draw(renderer)
        pixels = renderer.buffer_rgba()  # type: ignore[no-untyped-call]
        picture = PILImage.frombuffer("RGBA", (width, height), pixels, "raw", "RGBA", 0, 1)
    finally:
        if figure.dpi != saved_dpi:
            figure.dpi = saved_dpi
    extrema: Any = picture.getextrema()
    if extrema[3][0] == 255:  # opaque: RGB is a quarter smaller to encode
        picture = picture.convert("RGB")
    out = io.BytesIO()
    picture.save(out, format="PNG", compress_level=1)
    return Image(out.getvalue(), "image/png", width, height)


def _from_savefig(figure: Any, dpi: float, max_side: int) -> Image:
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=dpi)
    data = out.getvalue()
    width, height = image_size(data)
    if max(width, height) > max_side:  # rounding in the renderer: one more pixel
        return _from_bytes(data, max_side)
    return Image(data, "image/png", width, height)


def placeholders(images: list[Image]) -> list[str]:
    """The text that stands for ``images`` when the model does not get them."""
    return [image.placeholder() for image in images]
