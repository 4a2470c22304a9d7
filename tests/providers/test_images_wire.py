"""Images in tool results: the exact request bodies of all four APIs, on loopback servers.

A tool returns a PIL image; the next request carries it where each API allows:
Anthropic image blocks inside the tool_result, Gemini inlineData parts beside the
function response, Ollama ``images`` on the tool message, OpenAI a user message
after the tool messages with a data URL naming the call. ``Agent(send_images=False)``
and a text-only model get the placeholder instead.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from PIL import Image as PILImage

from nbagent import Agent
from nbagent._internal.images import to_image
from nbagent.tools import Tool
from tests.support.agents import http_agent
from tests.support.servers import Anthropic, Gemini, Ollama, OpenAI, Reply, WireServer


def _picture() -> Any:
    picture = PILImage.new("RGB", (64, 48), (200, 30, 30))
    return picture


def _expected_png() -> bytes:
    return to_image(_picture()).data


def chart() -> Any:
    """Draw the chart."""
    return _picture()


TOOL = Tool(chart)
B64 = base64.b64encode(_expected_png()).decode()
ATTACHED = "[image 1: 64×48 PNG, attached]"
PLACEHOLDER = "[image 64×48 PNG shown to the user]"


def _agent(kind: str, server: WireServer, **options: Any) -> Agent:
    models = {"openai": "openai:gpt-4o", "anthropic": "anthropic:claude-test",
              "gemini": "gemini:gemini-test", "ollama": "ollama:qwen3"}  # fmt: skip
    return http_agent(models[kind], server, tools=[TOOL], store=None, **options)


def _script(kind: str, server: WireServer) -> None:
    if kind == "openai":
        server.add(OpenAI.call_stream(("call_A", "chart", "{}")), OpenAI.text_stream("Red."))
    elif kind == "anthropic":
        server.add(Anthropic.stream(calls=[("call_A", "chart", "{}")]), Anthropic.stream("Red."))
    elif kind == "gemini":
        first = Reply.sse([Gemini.chunk(Gemini.call_part("chart", call_id="call_A"),
                                        finish="STOP", usage=(5, 2))])  # fmt: skip
        server.add(first, Gemini.text_stream("Red."))
    else:
        server.add(
            Reply.ndjson([Ollama.call_chunk("chart", {}), Ollama.done()]),
            Reply.ndjson([*Ollama.text_chunks("Red."), Ollama.done()]),
        )


def _call_id(kind: str, body: dict[str, Any]) -> str:
    if kind == "ollama":
        return str(body["messages"][1]["tool_calls"][0]["id"])
    return "call_A"


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "ollama"])
async def test_image_reaches_the_model_in_each_wire_format(
    wire_server: WireServer, kind: str
) -> None:
    _script(kind, wire_server)
    agent = _agent(kind, wire_server)
    result = await agent.run("What colour is the chart?")
    assert result.output == "Red."
    _, second = wire_server.bodies()
    call_id = _call_id(kind, second)
    if kind == "anthropic":
        assert second["messages"][-1] == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_A",
                    "content": [
                        {"type": "text", "text": ATTACHED},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": B64},
                        },
                    ],
                }
            ],
        }
    elif kind == "gemini":
        assert second["contents"][-1] == {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "chart",
                        "response": {"output": ATTACHED},
                        "id": "call_A",
                    }
                },
                {"inlineData": {"mimeType": "image/png", "data": B64}},
            ],
        }
    elif kind == "ollama":
        assert second["messages"][-1] == {
            "role": "tool",
            "tool_name": "chart",
            "tool_call_id": call_id,
            "content": ATTACHED,
            "images": [B64],
        }
    else:
        assert second["messages"][-2:] == [
            {"role": "tool", "tool_call_id": "call_A", "content": ATTACHED},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Image 1 from tool call call_A (chart):"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + B64}},
                ],
            },
        ]
    # Kept in the history: the next request expands the image the same way.
    _script(kind, wire_server)
    await agent.run("And now?")
    third = wire_server.bodies()[2]
    assert B64 in json.dumps(third)
    # The conversation's JSON round trip keeps the image.
    again = type(agent.conversation).from_json(agent.conversation.to_json())
    assert again.messages[1].rounds[0].results[0].images[0].data == _expected_png()


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "ollama"])
async def test_images_false_sends_the_placeholder(wire_server: WireServer, kind: str) -> None:
    _script(kind, wire_server)
    agent = _agent(kind, wire_server, send_images=False)
    await agent.run("What colour is the chart?")
    second = json.dumps(wire_server.bodies()[1], ensure_ascii=False)
    assert B64 not in second
    assert PLACEHOLDER in second
    assert "image_url" not in second and "inlineData" not in second


async def test_text_only_model_gets_the_placeholder(wire_server: WireServer) -> None:
    wire_server.add(OpenAI.call_stream(("call_A", "chart", "{}")), OpenAI.text_stream("Red."))
    agent = http_agent("openai:gpt-3.5-turbo", wire_server, tools=[TOOL], store=None)
    await agent.run("What colour is the chart?")
    second = wire_server.bodies()[1]
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_A",
        "content": ATTACHED + "\n" + PLACEHOLDER,
    }


async def test_non_image_from_an_image_tool_is_text(wire_server: WireServer) -> None:
    def maybe_chart() -> Any:
        """Returns no image after all."""
        return {"rows": 0}

    wire_server.add(
        OpenAI.call_stream(("call_A", "maybe_chart", "{}")), OpenAI.text_stream("None.")
    )
    agent = http_agent("openai:gpt-4o", wire_server, tools=[Tool(maybe_chart)], store=None)
    result = await agent.run("Chart?")
    assert result.tool_results == [{"rows": 0}]
    second = wire_server.bodies()[1]
    assert second["messages"][-1]["content"] == '{"rows": 0}'
    assert all(m["role"] != "user" or m["content"] == "Chart?" for m in second["messages"])


def test_png_bytes_of_the_round_trip_decode() -> None:
    decoded = PILImage.open(io.BytesIO(_expected_png()))
    assert decoded.size == (64, 48)


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "ollama"])
async def test_image_attached_to_the_prompt(wire_server: WireServer, kind: str) -> None:
    """``{fig}`` in %%agent: the prompt's images, in each API's user turn."""
    answers = {"openai": OpenAI.text_stream("Red."), "anthropic": Anthropic.stream("Red."),
               "gemini": Gemini.text_stream("Red."),
               "ollama": Reply.ndjson([*Ollama.text_chunks("Red."), Ollama.done()])}  # fmt: skip
    wire_server.add(answers[kind])
    agent = _agent(kind, wire_server)
    await agent.run("Colour?", attachments=[to_image(_picture())])
    (body,) = wire_server.bodies()
    if kind == "anthropic":
        assert body["messages"] == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Colour?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": B64},
                    },
                ],
            }
        ]
    elif kind == "gemini":
        assert body["contents"] == [
            {
                "role": "user",
                "parts": [
                    {"text": "Colour?"},
                    {"inlineData": {"mimeType": "image/png", "data": B64}},
                ],
            }
        ]
    elif kind == "ollama":
        assert body["messages"] == [{"role": "user", "content": "Colour?", "images": [B64]}]
    else:
        assert body["messages"] == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Colour?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + B64}},
                ],
            }
        ]
