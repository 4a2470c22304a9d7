"""The words every view of a run shares: durations, round summaries, call states, footers.

HTML panels, the Markdown and plain-text twins, terminal progress lines and the
ChatWidget all describe a round and a run with these functions, so they never
disagree. The stop reason reads as :func:`nbagent.results.stop_reason_words` says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..messages import ToolResult, ToolRound, Usage
from ..results import stop_reason_words

if TYPE_CHECKING:
    from ..results import RunResult

__all__ = [
    "call_status",
    "duration_text",
    "footer_text",
    "round_state",
    "round_summary",
    "summary_fields",
]


def duration_text(seconds: float) -> str:
    """``120 ms``, ``1.5 s``, ``2 min 5 s``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def call_status(result: ToolResult | None) -> str:
    """``running`` (no result yet), ``ok`` or ``error``."""
    return "running" if result is None else ("ok" if result.ok else "error")


def round_state(tool_round: ToolRound) -> str:
    """``running`` until every call has a result, then ``ok`` or ``N error(s)``."""
    failed = sum(not r.ok for r in tool_round.results)
    if len(tool_round.results) < len(tool_round.calls):
        return "running"
    if failed:
        return f"{failed} error" + ("s" if failed > 1 else "")
    return "ok"


def summary_fields(tool_round: ToolRound, index: int) -> list[str]:
    """Round number, tool names, state and (once every call finished) the duration."""
    names = ", ".join(dict.fromkeys(c.name for c in tool_round.calls)) or "no calls"
    state = round_state(tool_round)
    fields = [f"Round {index + 1}", names, state]
    if state != "running":
        fields.append(duration_text(tool_round.duration_s))
    return fields


def round_summary(tool_round: ToolRound, index: int) -> str:
    """``Round 1 · get_weather, lookup · ok · 120 ms`` (plain text, unescaped)."""
    return " · ".join(summary_fields(tool_round, index))


def footer_text(result: RunResult) -> str:
    """``model · 2 rounds · 150 tokens (120 in, 30 out)[ · $0.001] · 1.5 s[ · stopped: …]``.

    A model the agent chose by itself is followed by why: ``ollama:llama3.2 (found a
    local Ollama at 127.0.0.1:11434)``.
    """
    usage, rounds = result.usage, len(result.rounds)
    model = f"{result.model} ({result.model_reason})" if result.model_reason else result.model
    parts = [
        model,
        f"{rounds} round" + ("" if rounds == 1 else "s"),
        tokens_text(usage),
        duration_text(result.elapsed_s),
    ]
    if usage.cost is not None:  # best effort from genai-prices; unknown prices show nothing
        from ..cost import format_cost

        parts.insert(3, format_cost(usage.cost))
    # A provider's own words for this answer (the embedded model: load, generation time).
    note = ((result.message.provider_data or {}) if result.message else {}).get("footer_note")
    if isinstance(note, str) and note:
        parts.append(note)
    if result.stop_reason and result.stop_reason != "complete":
        parts.append(f"stopped: {stop_reason_words(result.stop_reason)}")
    parts += result.notes
    return " · ".join(parts)


def tokens_text(usage: Usage) -> str:
    """``150 tokens (120 in, 30 out)``, or ``~150 tokens (~120 in, ~30 out, estimated)``."""
    mark = "~" if usage.estimated else ""
    total, tokens_in, tokens_out = usage.total_tokens, usage.input_tokens, usage.output_tokens
    text = f"{mark}{total:,} tokens ({mark}{tokens_in:,} in, {mark}{tokens_out:,} out"
    return text + (", estimated)" if usage.estimated else ")")


def typed_text(result: RunResult) -> str | None:
    """The typed output as indented JSON (None for a text answer or an invalid one)."""
    if result.output_type is None or result.output is None:
        return None
    import json

    import pydantic

    data = pydantic.TypeAdapter(result.output_type).dump_python(result.output, mode="json")
    return json.dumps(data, indent=2, ensure_ascii=False)
