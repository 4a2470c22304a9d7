"""An MCP server written with the mcp SDK's server API, for nbagent's tests and tutorial.

python demo_mcp.py                       # stdio
python demo_mcp.py --http PORT           # streamable HTTP on 127.0.0.1:PORT/mcp
python demo_mcp.py --many 200            # 200 extra tools named tool_000...
python demo_mcp.py --run-python          # also a run_python tool (named like a kernel tool)
"""

from __future__ import annotations

import asyncio
import base64
import os
import struct
import sys
import time
import zlib

from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def striped_png(width: int, height: int) -> bytes:
    """An RGB PNG of vertical red/blue stripes, encoded with zlib alone."""
    row = b"".join(b"\xff\x00\x00" if (x // 8) % 2 == 0 else b"\x00\x00\xff" for x in range(width))
    raw = b"".join(b"\x00" + row for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))  # fmt: skip


app = MCPServer("demo")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def describe(name: str, scores: list[float], tags: dict[str, str] | None = None,
             active: bool = True, unit: str = "cm") -> str:  # fmt: skip
    """Describe a record from several argument types."""
    mean = sum(scores) / len(scores) if scores else 0.0
    return f"{name}: mean {mean:g} {unit}, active={active}, tags={sorted((tags or {}).items())}"


@app.tool()
def red_pixel() -> Image:
    """A tiny PNG image."""
    return Image(data=PNG, format="png")


@app.tool()
def captioned_chart(width: int = 2048, height: int = 512) -> list[types.ContentBlock]:
    """A caption, a striped chart (large: the client downscales it) and a footnote."""
    data = base64.b64encode(striped_png(width, height)).decode()
    return [
        types.TextContent(type="text", text="Stripes, red and blue."),
        types.ImageContent(type="image", data=data, mime_type="image/png"),
        types.TextContent(type="text", text="Drawn by the demo server."),
    ]


@app.tool()
def embedded_picture() -> list[types.ContentBlock]:
    """The red pixel as an embedded resource (a blob with an image MIME type)."""
    blob = types.BlobResourceContents(
        uri="demo://pixel.png", mime_type="image/png", blob=base64.b64encode(PNG).decode()
    )
    return [types.EmbeddedResource(type="resource", resource=blob)]


@app.tool()
def odd_images() -> list[types.ContentBlock]:
    """A 1x1 GIF (converted by the client) and an SVG (which no model API takes)."""
    gif = "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="
    svg = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg"/>').decode()
    return [
        types.ImageContent(type="image", data=gif, mime_type="image/gif"),
        types.ImageContent(type="image", data=svg, mime_type="image/svg+xml"),
    ]


@app.tool()
def fail(message: str) -> str:
    """Always raises."""
    raise ValueError(message)


@app.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    await asyncio.sleep(seconds)
    return f"slept {seconds:g} s"


@app.tool()
def crash() -> str:
    """Kills the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@app.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


def main(argv: list[str]) -> None:
    if "--many" in argv:
        count = int(argv[argv.index("--many") + 1])
        for i in range(count):

            def numbered(x: int, i: int = i) -> int:
                return x + i

            app.tool(name=f"tool_{i:03d}", description=f"Adds {i} to x.")(numbered)
    if "--run-python" in argv:

        def run_python(code: str) -> str:
            return f"ran on the server, unasked: {code}"

        app.tool(description="Run Python code (on the server, with no approval).")(run_python)
    if "--silent-start" in argv:  # never answers initialize
        sys.stdin.read()
        time.sleep(3600)
        return
    if "--garbage" in argv:  # answers with bytes that are not JSON-RPC
        sys.stdin.readline()
        sys.stdout.write('this is not JSON-RPC\n{"jsonrpc": "2.0", "id": \n')
        sys.stdout.flush()
        sys.stdin.read()
        return
    if "--http" in argv:
        port = int(argv[argv.index("--http") + 1])
        app.run("streamable-http", host="127.0.0.1", port=port)
    else:
        app.run()


if __name__ == "__main__":
    main(sys.argv[1:])
