"""Token budgets, context windows and the refused-tools fallback, over loopback HTTP.

The server counts tokens itself (4 bytes of the request's messages and tools a
token, the output capped by the request's own limit) and the tests read what it
received: no request could have taken the run past its budget or its window.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from nbagent.tools import Tool
from tests.support.agents import http_agent
from tests.support.servers import Gemini, Ollama, OpenAI, RecordedRequest, Reply, WireServer


def server_tokens(body: dict[str, Any]) -> int:
    """The server's own count of a request's input tokens (4 bytes of content a token)."""
    parts = [body.get(k) for k in ("messages", "contents", "system", "systemInstruction")]
    return len("".join(json.dumps(p) for p in parts if p) + json.dumps(body.get("tools", []))) // 4


def output_cap(body: dict[str, Any]) -> int | None:
    cap = body.get("max_tokens", body.get("max_completion_tokens"))
    if cap is None:
        cap = (body.get("generationConfig") or {}).get("maxOutputTokens")
    return cap if cap is not None else (body.get("options") or {}).get("num_predict")


def search(query: str) -> str:
    """Searches the archive."""
    return f"results for {query}: " + "lorem ipsum dolor sit amet " * 40


SERVED: list[tuple[int, int]] = []
"""(input, output) tokens of each reply, as the server counted them."""


@pytest.fixture(autouse=True)
def _served() -> None:
    SERVED.clear()


def openai_responder(request: RecordedRequest) -> Reply:
    """Always one more search, until tools are forbidden; usage as the server counts it."""
    body = request.json()
    prompt = server_tokens(body)
    cap = output_cap(body) or 10_000
    if body.get("tool_choice") == "none" or not body.get("tools"):
        used = min(cap, 40)
        completion = OpenAI.completion("word " * used, usage=(prompt, used))
    else:
        used = min(cap, 12)
        calls = [(f"call_{len(body['messages'])}", "search", '{"query": "budget"}')]
        completion = OpenAI.completion(None, calls, usage=(prompt, used))
    SERVED.append((prompt, used))
    return Reply(200, completion)


def ollama_responder(request: RecordedRequest) -> Reply:
    body = request.json()
    prompt = server_tokens(body)
    cap = output_cap(body) or 10_000
    done = {**Ollama.done(), "prompt_eval_count": prompt}
    if not body.get("tools"):
        used = min(cap, 40)
        message = {"role": "assistant", "content": "word " * used}
    else:
        used = min(cap, 12)
        call = {"function": {"name": "search", "arguments": {"query": "budget"}}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
    SERVED.append((prompt, used))
    return Reply(200, {**done, "message": message, "eval_count": used})


def anthropic_responder(request: RecordedRequest) -> Reply:
    body = request.json()
    prompt, cap = server_tokens(body), output_cap(body) or 10_000
    if (body.get("tool_choice") or {}).get("type") == "none" or not body.get("tools"):
        used = min(cap, 40)
        content: list[dict[str, Any]] = [{"type": "text", "text": "word " * used}]
        stop = "end_turn"
    else:
        used = min(cap, 12)
        call_id = f"toolu_{len(body['messages'])}"
        content = [{"type": "tool_use", "id": call_id, "name": "search",
                    "input": {"query": "budget"}}]  # fmt: skip
        stop = "tool_use"
    SERVED.append((prompt, used))
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
               "content": content, "stop_reason": stop,
               "usage": {"input_tokens": prompt, "output_tokens": used}}  # fmt: skip
    return Reply(200, message)


def gemini_responder(request: RecordedRequest) -> Reply:
    body = request.json()
    prompt, cap = server_tokens(body), output_cap(body) or 10_000
    mode = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode")
    if mode == "NONE" or not body.get("tools"):
        used = min(cap, 40)
        part: dict[str, Any] = {"text": "word " * used}
    else:
        used = min(cap, 12)
        part = Gemini.call_part("search", query="budget")
    SERVED.append((prompt, used))
    return Reply(200, Gemini.chunk(part, finish="STOP", usage=(prompt, used)))


@pytest.mark.parametrize(
    ("model", "responder"),
    [
        ("openai:gpt-test", openai_responder),
        ("ollama:qwen3", ollama_responder),
        ("anthropic:claude-test", anthropic_responder),
        ("gemini:gemini-test", gemini_responder),
    ],
)
@pytest.mark.parametrize("budget", [1500, 3000, 6000])
async def test_no_request_goes_past_the_token_budget(
    wire_server: WireServer, model: str, responder: Any, budget: int
) -> None:
    wire_server.responder = responder
    key = None if model.startswith(("openai", "ollama")) else "test-key-0123456789"
    agent = http_agent(model, wire_server, api_key=key, tools=[Tool(search)], stream=False,
                       max_total_tokens=budget, max_rounds=50)  # fmt: skip
    result = await agent.run("Find everything about budgets.")

    assert result.stop_reason == "token_budget"
    spent = 0
    for body, (prompt, used) in zip(wire_server.bodies(), SERVED, strict=True):
        cap = output_cap(body)
        assert cap is not None and cap > 0
        assert spent + prompt + cap <= budget  # even a reply using all of its cap fits
        spent += prompt + used
    assert result.usage.total_tokens == spent <= budget
    # The last request asked for the answer (tools forbidden), and it is the output.
    last = wire_server.bodies()[-1]
    forbidden = (last.get("tool_choice") in ("none", {"type": "none"}) or "tools" not in last
                 or last["toolConfig"]["functionCallingConfig"]["mode"] == "NONE")  # fmt: skip
    assert forbidden
    assert result.output.startswith("word")


async def test_context_window_compacts_oldest_results_first(wire_server: WireServer) -> None:
    wire_server.responder = openai_responder
    agent = http_agent("openai:gpt-test", wire_server, api_key=None, tools=[Tool(search)],
                       stream=False, context_window=1500, max_rounds=6,
                       max_output_tokens=100)  # fmt: skip
    result = await agent.run("Search a lot.")

    assert result.stop_reason == "max_rounds"
    bodies = wire_server.bodies()
    assert len(bodies) == 7
    for body in bodies:  # every request fitted the window, its answer's room included
        assert server_tokens(body) + body["max_tokens"] <= 1500
    tool_texts = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert tool_texts[0].startswith("[compacted to fit the context window")
    assert tool_texts[-1].startswith("results for budget")  # the newest is whole
    # The stored results and the panels keep everything.
    assert result.rounds[0].results[0].content.startswith("results for budget")
    html = result.mime_bundle()["text/html"]
    assert html.count("lorem ipsum") >= 6
    assert "context " in result.notes[-1] and "/1,500 tokens" in result.notes[-1]


async def test_a_request_that_cannot_fit_is_never_sent(wire_server: WireServer) -> None:
    agent = http_agent("openai:gpt-test", wire_server, api_key=None, tools=[Tool(search)],
                       context_window=40)  # fmt: skip
    result = await agent.run("Search " * 100)
    assert wire_server.count == 0
    assert result.stop_reason == "context_window"
    assert "no longer fits the context window" in result.output


async def test_known_models_show_context_fullness_in_the_footer(wire_server: WireServer) -> None:
    wire_server.add(OpenAI.text_stream("Hello."))
    agent = http_agent("openai:gpt-4o-mini", wire_server, tools=[])
    result = await agent.run("Hi")
    (note,) = result.notes
    assert note.startswith("context ") and note.endswith("/128,000 tokens (0%)")
    assert note in result.mime_bundle()["text/plain"]


@pytest.mark.parametrize(
    "message",
    [
        "gemma:2b does not support tools",  # Ollama's /v1 (its message names the model)
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    ],
)
async def test_refused_tools_answer_without_them(wire_server: WireServer, message: str) -> None:
    error = {"error": {"message": message, "type": "invalid_request_error"}}
    wire_server.add(Reply(400, error), OpenAI.text_stream("It is 18C, I think."))
    agent = http_agent("openai:gemma", wire_server, api_key=None, tools=[Tool(search)])
    events = [e async for e in agent.stream("Weather?")]
    result = agent.last_result
    assert result is not None and result.output == "It is 18C, I think."
    first, second = wire_server.bodies()
    assert "tools" in first and "tools" not in second
    texts = [getattr(e, "text", "") for e in events if type(e).__name__ == "Status"]
    assert "This model does not support tools; answering without them…" in texts
    assert "this model does not support tools; answered without them" in result.notes
    footer = result.mime_bundle()["text/plain"]
    assert "answered without them" in footer


async def test_other_400s_still_fail(wire_server: WireServer) -> None:
    from nbagent.errors import ProviderError

    wire_server.add(Reply(400, {"error": {"message": "messages: field required"}}))
    agent = http_agent("openai:m", wire_server, api_key=None, tools=[Tool(search)])
    with pytest.raises(ProviderError):
        await agent.run("hi")
    assert wire_server.count == 1
