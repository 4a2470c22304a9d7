"""One real image exchange with llama-cpp-python's OpenAI-compatible server, when it can.

The server accepts images only with a vision model and its projector
(``--clip_model_path``). This machine's only local weights are SmolLM2-135M, a
text-only model, so the test skips unless ``NBAGENT_TEST_VISION_GGUF`` and
``NBAGENT_TEST_VISION_MMPROJ`` name a vision model (e.g. a LLaVA-1.5 GGUF and its
mmproj) and llama-cpp-python is installed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from nbagent import Agent
from nbagent.tools import Tool

pytestmark = pytest.mark.llama_server

GGUF = os.environ.get("NBAGENT_TEST_VISION_GGUF", "")
MMPROJ = os.environ.get("NBAGENT_TEST_VISION_MMPROJ", "")


def _skip_reason() -> str | None:
    if not (GGUF and MMPROJ and Path(GGUF).is_file() and Path(MMPROJ).is_file()):
        return (
            "no vision model here: llama.cpp accepts images only with a vision GGUF and its "
            "mmproj (set NBAGENT_TEST_VISION_GGUF and NBAGENT_TEST_VISION_MMPROJ); the local "
            "SmolLM2 weights are text-only"
        )
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return "llama-cpp-python is not installed"
    return None


def test_real_server_answers_about_a_tool_image() -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    from PIL import Image as PILImage

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", GGUF,
        "--clip_model_path", MMPROJ, "--chat_format", "llava-1-5",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(url + "/models", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("the llama.cpp server did not start")
                time.sleep(0.5)

        def chart() -> Any:
            """Draw the chart."""
            return PILImage.new("RGB", (64, 64), (220, 20, 20))

        agent = Agent(
            "openai:vision", base_url=url, api_key="none", env={}, tools=[Tool(chart)],
            store=None, tool_choice="required", max_rounds=1,
        )  # fmt: skip
        result = agent.run_sync("Call chart, then say which colour the chart is.")
        assert result.rounds and result.rounds[0].results[0].images
        assert result.output.strip()
    finally:
        server.terminate()
        server.wait(10)
