"""``local:/path/model.gguf``: tool calls the way the GGUF's own chat template gives them.

Everything runs through real llama.cpp (xllamacpp) on the one GGUF this machine has,
SmolLM2-135M. Its own template declares no tool support, so by path it takes the
text route for real. The native route needs a template that renders tools and calls:
a tiny one is written below (a template is text, not weights) and passed as
``chat_template=``; llama.cpp derives from it how a call is written, constrains the
call with a grammar and parses it into OpenAI-style ``tool_calls``.

A 135M model does not decide to call a tool by itself, so two tests steer its first
token or its shape through ``extra_body`` (what a user may pass to llama.cpp too):
the template's call opener is one token of SmolLM2's vocabulary (``<jupyter_code>``),
given a logit bias; on the text route a JSON schema makes the reply a call-shaped
object. What the tests check is what nbagent makes of llama.cpp's output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent import Agent, tool
from nbagent.messages import Message, ToolCall, ToolResult, ToolRound
from nbagent.providers.base import Finished, ModelRequest, TextChunk, ToolCallReady
from nbagent.providers.local import LocalProvider, smollm2_path
from nbagent.providers.local.template_calls import RouteDecoder, choose_route
from nbagent.render.summary import footer_text
from tests.support.kernel import Kernel, kernel_environment

pytestmark = pytest.mark.local_model

# A ChatML template (SmolLM2's own markers) that also renders tools and calls. A call
# opens with <jupyter_code> and closes with <jupyter_output>: single tokens of
# SmolLM2's vocabulary, so one logit bias can start a call.
TOOL_TEMPLATE = """\
{%- if tools %}<|im_start|>system
You can call these tools:
{% for tool in tools %}{{ tool.function | tojson }}
{% endfor %}To call one, write <jupyter_code>{"name": "...", "arguments": {...}}\
<jupyter_output><|im_end|>
{% endif %}
{%- for message in messages %}<|im_start|>{{ 'user' if message.role == 'tool' else message.role }}
{% if message.content %}{{ message.content }}{% endif %}
{%- for call in message.tool_calls or [] %}<jupyter_code>{{ call.function | tojson }}\
<jupyter_output>{% endfor %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}
"""
CALL_OPENER_TOKEN = 13  # "<jupyter_code>" in SmolLM2's vocabulary
START_A_CALL = {"logit_bias": [[CALL_OPENER_TOKEN, 14]]}
"""Enough for the opener to win once the model has said its sentence (measured)."""

CALL_SHAPE = {
    "json_schema": {
        "type": "object",
        "properties": {
            "name": {"const": "get_weather"},
            "arguments": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
        "required": ["name", "arguments"],
    }
}
TEXT_REASON = "its chat template declares no tool support; calls written as JSON are scanned"
NATIVE_REASON = "its chat template renders tools and calls; llama.cpp parses the calls"


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name, e.g. Berlin
    """
    return f"{city}: 18 C, light rain"


def gguf(**options: object) -> LocalProvider:
    """SmolLM2 given by path (one thread: the same tokens on every machine)."""
    return LocalProvider(str(smollm2_path()), n_ctx=2048, n_threads=1, **options)  # type: ignore[arg-type]


def weather_request(**options: object) -> ModelRequest:
    messages = [Message("user", "What is the weather in Berlin?")]
    return ModelRequest(None, messages, [get_weather.spec], **options)  # type: ignore[arg-type]


async def events_of(provider: LocalProvider, request: ModelRequest) -> list[object]:
    return [event async for event in provider.stream(request)]


def footer_note(events: list[object]) -> str:
    finished = [e for e in events if isinstance(e, Finished)]
    assert len(finished) == 1
    return str((finished[0].provider_data or {})["footer_note"])


# --------------------------------------------------------------------------- the choice


def test_the_route_follows_what_llama_cpp_read_from_the_template() -> None:
    native = {"supports_tools": True, "supports_tool_calls": True}
    assert choose_route("auto", native, embedded=False).kind == "native"
    assert choose_route("auto", {"supports_tools": True}, embedded=False).kind == "text"
    assert choose_route("auto", {}, embedded=False).note == f"tool calls: text ({TEXT_REASON})"
    assert choose_route("auto", None, embedded=True).kind == "constrained"
    asked = choose_route("constrained", native, embedded=False)
    assert asked.note == "tool calls: constrained (tool_route='constrained')"


def test_a_route_nobody_knows_is_refused() -> None:
    from nbagent.errors import ConfigError

    with pytest.raises(ConfigError, match="tool_route must be one of auto, native, text"):
        gguf(tool_route="grammar")


def test_smollm2_by_path_takes_the_text_route_because_its_template_has_no_tools() -> None:
    provider = gguf()
    caps = provider.load().template_caps()  # llama.cpp's own reading of the template
    assert caps["supports_tools"] is False and caps["supports_tool_calls"] is False
    assert provider.model_note() == f"tool calls: text ({TEXT_REASON})"
    assert LocalProvider("").model_note().startswith("tool calls: constrained (the embedded")


def test_a_template_with_tools_gives_the_native_route() -> None:
    provider = gguf(chat_template=TOOL_TEMPLATE)
    caps = provider.load().template_caps()
    assert caps["supports_tools"] is True and caps["supports_tool_calls"] is True
    assert provider.model_note() == f"tool calls: native ({NATIVE_REASON})"
    assert provider.load() is not gguf().load()  # another template, another loaded model


# --------------------------------------------------------------------------- text route


async def test_text_route_turns_the_json_the_model_wrote_into_a_call() -> None:
    events = await events_of(gguf(extra_body=CALL_SHAPE), weather_request())
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Berlin"})]
    assert calls[0].id.startswith("call_")  # named by the scanner: llama.cpp parsed nothing
    assert not [e for e in events if isinstance(e, TextChunk)]  # the JSON is not the answer
    assert f"tool calls: text ({TEXT_REASON})" in footer_note(events)


def test_text_route_prose_is_the_answer_and_the_footer_says_why() -> None:
    agent = Agent(
        f"local:{smollm2_path()}", tools=[get_weather], store=None, n_ctx=2048, n_threads=1
    )
    result = agent.run_sync("Write one sentence about rain.")
    assert result.stop_reason == "complete" and result.rounds == []
    assert result.output.strip() and "{" not in result.output
    assert f"tool calls: text ({TEXT_REASON})" in footer_text(result)
    assert "tool calls: text" in result.mime_bundle()["text/html"]


# --------------------------------------------------------------------------- native route


async def test_native_route_calls_arrive_as_llama_cpps_tool_calls() -> None:
    provider = gguf(chat_template=TOOL_TEMPLATE, extra_body=START_A_CALL)
    events = await events_of(provider, weather_request(max_output_tokens=150))
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert calls and {(c.name, json.dumps(c.arguments)) for c in calls} == {
        ("get_weather", '{"city": "Berlin"}')
    }
    # llama.cpp's own call ids (the scanner would have named them "call_..."), and no
    # call markup in the text: the template's format was parsed by llama.cpp.
    assert not any(c.id.startswith("call_") for c in calls)
    text = "".join(e.text for e in events if isinstance(e, TextChunk))
    assert "jupyter" not in text and '"arguments"' not in text
    assert f"tool calls: native ({NATIVE_REASON})" in footer_note(events)


async def test_native_route_sends_the_round_back_in_the_templates_form() -> None:
    call = ToolCall("call_1", "get_weather", {"city": "Berlin"}, '{"city": "Berlin"}')
    result = ToolResult("call_1", "get_weather", True, "Berlin: 18 C, light rain")
    answer = Message("assistant", "", rounds=[ToolRound(None, [call], [result])])
    messages = [Message("user", "What is the weather in Berlin?"), answer]
    request = ModelRequest(None, messages, [get_weather.spec], tool_choice="none")
    events = await events_of(gguf(chat_template=TOOL_TEMPLATE), request)
    assert not [e for e in events if isinstance(e, ToolCallReady)]
    assert "".join(e.text for e in events if isinstance(e, TextChunk)).strip()


# --------------------------------------------------------------------------- decoding


def decode(chunks: list[dict[str, object]]) -> list[object]:
    request = ModelRequest(None, [Message("user", "Weather in Oslo?")], [get_weather.spec])
    out: list[object] = []
    decoder = RouteDecoder(request, out.append)
    for chunk in chunks:
        decoder.feed(chunk)
    decoder.close()
    return out


def delta(**fields: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def test_calls_llama_cpp_did_not_parse_are_found_in_the_text() -> None:
    written = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    events = decode([delta(role="assistant", content=None), delta(content=written)])
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Oslo"})]
    assert not [e for e in events if isinstance(e, TextChunk)]


def test_parsed_calls_win_over_text_that_only_looks_like_one() -> None:
    native = {"index": 0, "id": "abc", "type": "function",
              "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}  # fmt: skip
    quoted = '```json\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n```'
    events = decode([delta(content=quoted), delta(tool_calls=[native])])
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [(c.id, c.arguments) for c in calls] == [("abc", {"city": "Oslo"})]
    assert "Rome" in "".join(e.text for e in events if isinstance(e, TextChunk))


# --------------------------------------------------------------------------- %agent model


def test_agent_model_in_a_kernel_names_the_route_and_why(tmp_path: Path) -> None:
    kernel = Kernel(kernel_environment(tmp_path / "home"), tmp_path)
    try:
        out = kernel.run(f"%load_ext nbagent\n%agent model local:{smollm2_path()}", timeout=120)
    finally:
        kernel.close()
    assert out == f"model: local:{smollm2_path()} · tool calls: text ({TEXT_REASON})\n"
