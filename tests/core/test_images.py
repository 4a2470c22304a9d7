"""nbagent._internal.images: notebook images become bounded, model-ready images."""

from __future__ import annotations

import io
import struct
import zlib

import pytest

from nbagent._internal.images import MAX_SIDE, Image, image_size, is_image_like, to_image


def _png_header(width: int, height: int) -> bytes:
    """A PNG signature and IHDR chunk claiming ``width``×``height`` (no pixel data)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    crc = struct.pack(">I", zlib.crc32(chunk))
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + crc


def test_matplotlib_figure_is_rendered_within_the_longest_side() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(20, 10), dpi=100)  # 2000×1000 at its own dpi
    figure.add_subplot().plot([1, 2, 3])
    image = to_image(figure)
    assert image.media_type == "image/png"
    assert max(image.width, image.height) <= MAX_SIDE
    assert image_size(image.data) == (image.width, image.height)
    axes = figure.axes[0]
    assert is_image_like(axes) and to_image(axes).width == image.width


def test_pil_image_of_20000_pixels_a_side_is_downscaled() -> None:
    from PIL import Image as PILImage

    huge = PILImage.new("1", (20_000, 20_000))  # 50 MB in memory, one bit a pixel
    image = to_image(huge)
    assert (image.width, image.height) == (1024, 1024)


def test_encoded_image_of_20000_pixels_a_side_is_refused_before_decoding() -> None:
    with pytest.raises(ValueError, match="20000×20000 image is over 100,000,000 pixels"):
        to_image(_png_header(20_000, 20_000))


def test_jpeg_bytes_keep_their_format_and_are_downscaled() -> None:
    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", (3000, 1500), (0, 90, 200)).save(out, format="JPEG")
    assert image_size(out.getvalue()) == (3000, 1500)
    image = to_image(out.getvalue())
    assert (image.media_type, image.width, image.height) == ("image/jpeg", 1024, 512)


def test_small_png_bytes_pass_through_unchanged() -> None:
    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGBA", (10, 20)).save(out, format="PNG")
    image = to_image(out.getvalue())
    assert image.data == out.getvalue() and (image.width, image.height) == (10, 20)
    assert image.placeholder() == "[image 10×20 PNG shown to the user]"
    assert Image.from_dict(image.to_dict()) == image


def test_ipython_display_image() -> None:
    from IPython.display import Image as IPythonImage
    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", (30, 40)).save(out, format="PNG")
    image = to_image(IPythonImage(data=out.getvalue()))
    assert (image.width, image.height) == (30, 40)


@pytest.mark.parametrize("value", [{"a": 1}, "a string", 3.5, b"not an image", object()])
def test_non_images_are_refused_with_a_clear_error(value: object) -> None:
    assert not is_image_like(value)
    with pytest.raises((TypeError, ValueError), match="not"):
        to_image(value)


def test_broken_png_bytes_are_refused() -> None:
    with pytest.raises(ValueError, match="IHDR"):
        to_image(b"\x89PNG\r\n\x1a\n" + b"\0" * 30)


async def test_images_are_charged_to_the_round_budget() -> None:
    from PIL import Image as PILImage

    from nbagent import Agent
    from nbagent.testing import ScriptedModel, call, reply
    from nbagent.tools import Tool

    def photo(n: int) -> object:
        """A large photo."""
        return PILImage.new("RGB", (2048, 2048), (n * 60, 0, 0))

    def script(request: object) -> object:
        if request.round_index == 0:  # type: ignore[attr-defined]
            return reply("", [call("photo", n=i) for i in range(3)])
        return reply("seen")

    agent = Agent(ScriptedModel(script), tools=[Tool(photo)], store=None)
    result = await agent.run("show me")
    (tool_round,) = result.rounds
    sent = [len(r.images) for r in tool_round.results]
    cost = to_image(photo(0)).cost  # 1024×1024: 1,398 tokens ≈ 5,592 characters
    assert cost == 5_592
    assert sent == [1, 1, 0]  # 16,000 characters: two images fit, the third does not
    assert tool_round.results[2].content == (
        "[image 1: 1024×1024 PNG, not sent: round budget spent]"
    )


def test_figure_rendering_leaves_the_figure_as_it_was() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from PIL import Image as PILImage

    figure = Figure(figsize=(6.4, 4.8), dpi=200)  # 1280×960 at its own dpi
    figure.add_subplot().plot([3, 1, 2])
    canvas = figure.canvas
    image = to_image(figure)
    assert (image.width, image.height) == (1024, 768)
    assert figure.dpi == 200 and figure.canvas is canvas
    assert PILImage.open(io.BytesIO(image.data)).mode == "RGB"  # opaque: no alpha channel

    clear = Figure(figsize=(2, 1), dpi=100)
    clear.patch.set_alpha(0.0)  # a transparent background keeps its alpha
    decoded = PILImage.open(io.BytesIO(to_image(clear).data))
    assert decoded.mode == "RGBA" and decoded.size == (200, 100)
