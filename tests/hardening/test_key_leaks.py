"""No fragment of an API key (10+ characters) in any byte nbagent writes.

Issue 10, item 5: error texts were cut before redaction (16 of 17 characters of a
key echoed by a server survived), recordings kept keys found in bodies, and
``NBAGENT_LOG=debug`` printed tool arguments with the key. Everything here goes
over a real loopback server; log output is read from a real child process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent
from nbagent.errors import ProviderError
from nbagent.render import render_result_html, render_result_markdown, render_result_text
from nbagent.tools import tool
from tests.support import history
from tests.support.agents import http_agent
from tests.support.env import child_environment
from tests.support.history import history_env
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import Anthropic, Gemini, Ollama, OpenAI, Reply, WireServer

history_home = history.history_home  # the suite's one private-history fixture


@contextmanager
def served(responder: Any = None) -> Iterator[WireServer]:
    server = WireServer(responder)
    try:
        yield server
    finally:
        server.close()


# Not shaped like any known key: only the configured-secret rule can catch it.
KEY = "zq-LOOPBACK-7f3a9c1e5b2d4f60a8"
SHAPED = "sk-proj-" + "Q" * 6 + "abcdefghij0123456789XYZ"  # an unconfigured key-shaped secret


def fragments(secret: str, size: int = 10) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def assert_no_fragment(where: str, data: str | bytes, secret: str = KEY) -> None:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    leaked = sorted(f for f in fragments(secret) if f in text)
    assert not leaked, f"{where} holds key fragments {leaked[:3]}"


def history_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.glob("history.db*")))


@tool(register=False)
def echo(text: str) -> str:
    """Returns its argument."""
    return f"echoed: {text}"


@pytest.mark.parametrize("cut_at", [1000 - 16, 1000 - 10, 200 - 12])
def test_a_key_echoed_in_a_long_error_body_is_redacted_before_it_is_cut(history_home, cut_at):
    body = "x" * cut_at + KEY + " more text after the key" * 10
    with served() as server:
        server.add(Reply(400, body, {"content-type": "text/plain"}))
        agent = http_agent("openai:gpt-test", server, api_key=KEY, max_retries=0)
        with pytest.raises(ProviderError) as caught:
            agent.run_sync("hello")
    assert_no_fragment("the exception", str(caught.value))
    assert_no_fragment("the history", history_bytes(history_home))


def test_a_key_echoed_in_a_json_error_and_a_stream_chunk_never_reaches_any_output(history_home):
    message = "bad request for key " + KEY + " " + "y" * 990
    with served() as server:
        server.add(Anthropic.error(400, "invalid_request_error", "p" * 985 + KEY))
        agent = http_agent("anthropic:claude-test", server, api_key=KEY, max_retries=0)
        with pytest.raises(ProviderError) as caught:
            agent.run_sync("hello")
        assert_no_fragment("anthropic error", str(caught.value))
        server.add(
            Reply(200, "data: {not json " + KEY + "\n\n", {"content-type": "text/event-stream"})
        )
        agent = http_agent("openai:gpt-test", server, api_key=KEY, max_retries=0)
        with pytest.raises(ProviderError) as caught:
            agent.run_sync("hello")
        assert_no_fragment("malformed chunk error", str(caught.value))
        server.add(Gemini.error(400, "INVALID_ARGUMENT", message))
        agent = http_agent("gemini:gemini-test", server, api_key=KEY, max_retries=0)
        with pytest.raises(ProviderError) as caught:
            agent.run_sync("hello")
        assert_no_fragment("gemini error", str(caught.value))
    assert_no_fragment("the history", history_bytes(history_home))


def test_a_key_in_a_tool_result_is_redacted_in_every_rendering_and_the_history(history_home):
    def script(body: dict[str, Any]) -> Answer:
        if body["messages"][-1]["role"] == "user":
            return Answer("checking", [("echo", {"text": "k=" + KEY + " s=" + SHAPED})])
        return Answer("The tool said " + KEY[:17] + " and " + SHAPED[:20])

    with served(ScriptedReplies(script)) as server:
        agent = http_agent("openai:gpt-test", server, api_key=KEY, tools=[echo])
        result = agent.run_sync("go")
    for where, text in [
        ("html", render_result_html(result)),
        ("markdown", render_result_markdown(result)),
        ("text", render_result_text(result)),
        ("export", agent.conversation.to_markdown()),
    ]:
        assert_no_fragment(where, text)
    assert_no_fragment("the history", history_bytes(history_home))
    assert_no_fragment("the history (shaped)", history_bytes(history_home), SHAPED[:26])


@pytest.mark.parametrize(
    ("model", "spelling"),
    [
        ("openai:gpt-test", "authorization"),
        ("anthropic:claude-test", "x-api-key"),
        ("gemini:gemini-test", "x-goog-api-key"),
    ],
)
def test_recordings_hold_no_key_in_headers_urls_or_bodies_and_still_replay(
    tmp_path, history_home, model, spelling
):
    """The key echoed by the server, in the prompt, in tool arguments and results."""
    cassette = tmp_path / "run.jsonl"
    prompt = f"my key is {KEY}, say it back"
    answer = f"Your key is {KEY} (and {SHAPED})"
    with served() as server:
        server.add(*replies_for(model, answer))
        agent = http_agent(model, server, api_key=KEY, record=cassette)
        first = agent.run_sync(prompt)
    raw = cassette.read_text(encoding="utf-8")
    assert raw.strip(), "nothing was recorded"
    assert_no_fragment(f"the recording ({spelling})", raw)
    assert_no_fragment("the recording (shaped)", raw, SHAPED[:26])
    for line in raw.splitlines():
        json.loads(line)  # still valid JSON lines
    assert_no_fragment("the live answer's history", history_bytes(history_home))
    replayed = Agent(model, replay=cassette, env={}).run_sync(prompt)
    assert (
        replayed.output == first.output.replace(KEY, "[redacted]")
        or "[redacted]" in replayed.output
    )
    assert_no_fragment("the replayed answer", replayed.output)


def test_a_key_in_a_gemini_url_query_is_not_recorded(tmp_path, history_home):
    cassette = tmp_path / "run.jsonl"
    with served() as server:
        server.add(Gemini.text_stream("hello"))
        url = server.url + "/v1beta?key=" + KEY
        agent = Agent("gemini:gemini-test", base_url=url, api_key=KEY, env={}, record=cassette)
        try:
            agent.run_sync("hi")
        except ProviderError:
            pass  # whether the odd base URL works is not the point: the bytes written are
    if cassette.exists():
        assert_no_fragment("the recording", cassette.read_bytes())


def replies_for(model: str, answer: str) -> list[Reply]:
    if model.startswith("openai"):
        return [OpenAI.text_stream(answer, piece=len(answer))]
    if model.startswith("anthropic"):
        return [Anthropic.stream(answer)]
    return [Gemini.text_stream(answer)]


CHILD = textwrap.dedent(
    """
    import sys
    from nbagent import Agent, tool

    KEY, URL = sys.argv[1], sys.argv[2]

    @tool(register=False)
    def echo(text: str) -> str:
        "Returns its argument."
        return "echoed: " + text

    agent = Agent("openai:gpt-test", base_url=URL + "/v1", api_key=KEY, env={}, tools=[echo],
                  max_retries=0)
    print(agent.run_sync("go").output)
    try:
        agent.run_sync("again")
    except Exception as exc:
        print(type(exc).__name__)
    """
)


def test_debug_log_lines_are_redacted_and_terminal_safe(tmp_path):
    """NBAGENT_LOG=debug in a real child process: tool arguments, errors, server-chosen ids."""
    hostile_id = "call_\x1b[2J\x1b]0;owned\x07\u202e"

    def script(body: dict[str, Any]) -> Answer:
        if body["messages"][-1]["role"] == "user":
            return Answer("", [("echo", {"text": KEY})])
        return Answer("done")

    replies = ScriptedReplies(script)
    state = {"n": 0}

    def responder(request):
        state["n"] += 1
        if state["n"] == 3:
            return Reply(500, "internal error for " + KEY, {"content-type": "text/plain"})
        reply = replies(request)
        for i, chunk in enumerate(reply.chunks or []):
            reply.chunks[i] = chunk.replace(b'"id": "call_', json.dumps(hostile_id)[:-1].encode())
        return reply

    with served(responder) as server:
        env = child_environment(history_env(tmp_path / "home"), NBAGENT_LOG="debug")
        done = subprocess.run(
            [sys.executable, "-c", CHILD, KEY, server.url],
            capture_output=True,
            timeout=120,
            env=env,
            cwd=Path(__file__).resolve().parents[2],
        )
    log = done.stderr.decode("utf-8", "replace")
    assert "done" in done.stdout.decode(), log[-2000:]
    assert "nbagent" in log and "echo" in log, log[-2000:]
    assert_no_fragment("the debug log", done.stderr)
    assert "\x1b" not in log and "\x07" not in log and "\u202e" not in log


def streamed_text(raw: str) -> str:
    """Every string value of every JSON event in a recording's response bodies, joined."""
    pieces: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            pieces.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for line in raw.splitlines():
        body = json.loads(line)["response"]["body"]
        for event in str(body).split("\n"):
            payload = event.removeprefix("data:").strip()
            if payload.startswith("{"):
                walk(json.loads(payload))
    return "".join(pieces)


@pytest.mark.parametrize(
    ("model", "reply"),
    [
        ("openai:gpt-test", lambda text: OpenAI.text_stream(text, piece=3)),
        ("ollama:llama-test", lambda text: Reply.ndjson(ollama_pieces(text))),
    ],
)
def test_a_key_streamed_a_few_characters_per_event_is_not_recorded(
    tmp_path, history_home, model, reply
):
    cassette = tmp_path / "run.jsonl"
    answer = f"Your key is {KEY}, keep it safe."
    with served() as server:
        server.add(reply(answer))
        agent = http_agent(model, server, api_key=KEY, record=cassette)
        first = agent.run_sync("what is my key?")
    assert first.output == answer  # the live answer is the user's own business
    raw = cassette.read_text(encoding="utf-8")
    assert_no_fragment("the recording", raw)
    assert_no_fragment("the recording's streamed text", streamed_text(raw))
    replayed = Agent(model, replay=cassette, env={}).run_sync("what is my key?")
    assert replayed.output == "Your key is [redacted], keep it safe."


def ollama_pieces(text: str) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = [
        {"model": "llama-test", "message": {"role": "assistant", "content": text[i : i + 3]},
         "done": False}
        for i in range(0, len(text), 3)
    ]  # fmt: skip
    chunks.append(Ollama.done())
    return chunks


def test_a_logged_traceback_is_redacted_too(caplog):
    import logging

    from nbagent._internal.redaction import Scrubber

    Scrubber([KEY])  # the process now knows the key, as an agent's provider makes it
    logger = logging.getLogger("nbagent")
    try:
        raise ValueError(f"server said: invalid key {KEY}")
    except ValueError:
        with caplog.at_level(logging.ERROR, logger="nbagent"):
            logger.exception("write failed for %s", KEY)
    handler_text = caplog.handler.format(caplog.records[-1])
    assert "invalid key" in handler_text
    assert_no_fragment("a logged traceback", handler_text)


@pytest.mark.parametrize("suffix", [".json", ".md"])
def test_an_exported_conversation_holds_no_key(tmp_path, history_home, suffix):
    def script(body: dict[str, Any]) -> Answer:
        if body["messages"][-1]["role"] == "user":
            return Answer("checking", [("echo", {"text": KEY})])
        return Answer("The tool said " + KEY)

    with served(ScriptedReplies(script)) as server:
        agent = http_agent("openai:gpt-test", server, api_key=KEY, tools=[echo])
        agent.run_sync("go")
    target = agent.store.export(agent.conversation.id, tmp_path / f"out{suffix}")
    assert_no_fragment(f"the {suffix} export", target.read_bytes())
    memory = tmp_path / f"memory{suffix}"
    from nbagent.store import export_conversation

    export_conversation(agent.conversation, memory)  # the in-memory conversation too
    assert_no_fragment(f"the in-memory {suffix} export", memory.read_bytes())
