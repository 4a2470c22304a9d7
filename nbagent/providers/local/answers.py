"""Answers built from tool results, for a model too small to restate them faithfully.

SmolLM2-135M, given "11 °C, cloudy", wrote "cloudy, which means it's currently
sunny ... the sun has not yet set" (issue 20). After a successful tool round the
embedded model therefore answers with the result itself, in a template: the call
in words and what it returned. Nothing is rewritten, so nothing can be wrong that
the tool got right.
"""

from __future__ import annotations

import json

from ...messages import ToolCall, ToolResult, ToolRound

RESULT_CHARS = 3_000
"""Longer results are cut in the answer (the panel shows them whole)."""


def call_words(call: ToolCall | None, name: str) -> str:
    """``get_weather(city="Berlin")``: the call as the panel shows it."""
    if call is None:
        return name
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def template_answer(tool_round: ToolRound, names: tuple[str, ...] | None = None) -> str | None:
    """The answer made of the round's successful results (None when there are none).

    A one-line result reads ``get_weather(city="Berlin") returned: 11 °C, cloudy``;
    a longer one follows in a code block, so its layout (a table, describe()) stays.

    Args:
        tool_round: the round just run.
        names: only these tools' results (None: every tool's).
    """
    calls = {c.id: c for c in tool_round.calls}
    shown = [r for r in tool_round.results if r.ok and (names is None or r.name in names)]
    if not shown:
        return None
    return "\n\n".join(_one(calls.get(r.call_id), r) for r in shown)


def _one(call: ToolCall | None, result: ToolResult) -> str:
    content = result.content.strip()
    if len(content) > RESULT_CHARS:
        content = content[:RESULT_CHARS].rstrip() + "\n…"
    head = call_words(call, result.name)
    if "\n" not in content and len(content) <= 200:
        return f"{head} returned: {content}"
    fence = "````" if "```" in content else "```"
    return f"{head} returned:\n{fence}\n{content}\n{fence}"
