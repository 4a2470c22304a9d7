"""Status lines: what the run is doing, in one short line for humans.

The fixed lines ("Analyzing request…", "Processing tool results…") come from the
loop; this module words the per-call lines. ``Using Get Weather (Oslo)…`` names
the tool in Title Case with the call's main argument; an optional *status model*
writes a one-line sentence instead ("Looking up the weather in Oslo"), given at
most :data:`STATUS_MODEL_SECONDS`, falling back to the Title Case line.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

from ..messages import Message, ToolCall
from ..providers.base import ModelRequest, Provider, TextChunk

logger = logging.getLogger("nbagent")

STATUS_MODEL_SECONDS = 2.0
"""The longest a status model may take before the Title Case line is shown."""

TOOLS_REFUSED_NOTE = "this model does not support tools; answered without them"

_STATUS_PROMPT = (
    "Given this tool call:\nTool: {tool}\nArguments: {arguments}\n\n"
    "Write one clear, natural sentence (at most 10 words) describing what this action "
    "does, from the user's point of view. Only return the sentence."
)


def title_case(name: str) -> str:
    """``weather_lookup`` -> ``Weather Lookup`` (for status lines)."""
    words = name.replace("-", "_").replace(".", "_").split("_")
    return " ".join(w[:1].upper() + w[1:] for w in words if w)


def main_argument(call: ToolCall, limit: int = 40) -> str | None:
    """The call's main argument as short text: its first non-empty string value.

    Numbers alone say little ("Using Add (2)…"), so a call without a string has none.
    """
    first = next((v for v in call.arguments.values() if isinstance(v, str) and v.strip()), None)
    if first is None:
        return None
    text = " ".join(str(first).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def calls_status(calls: Sequence[ToolCall]) -> str:
    """``Using Get Weather (Oslo)…`` / ``Using Get Weather and Lookup…``."""
    if len(calls) == 1:
        argument = main_argument(calls[0])
        suffix = f" ({argument})" if argument else ""
        return f"Using {title_case(calls[0].name)}{suffix}…"
    names = list(dict.fromkeys(title_case(c.name) for c in calls))
    return f"Using {' and '.join(names)}…"


def failed_status(names: Sequence[str]) -> str:
    """``Tool Get Weather failed, trying again…``."""
    unique = list(dict.fromkeys(title_case(n) for n in names))
    return f"Tool {' and '.join(unique)} failed, trying again…"


async def model_status(provider: Provider, calls: Sequence[ToolCall]) -> str | None:
    """A status model's one-line sentence for ``calls`` (None when it fails or is slow)."""
    call = calls[0]
    arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)[:300]
    prompt = _STATUS_PROMPT.format(tool=title_case(call.name), arguments=arguments)
    request = ModelRequest(
        system=None,
        messages=[Message(role="user", content=prompt)],
        stream=False,
        max_output_tokens=24,
        text_tool_calls=False,
    )

    async def ask() -> str:
        pieces: list[str] = []
        stream: Any = provider.stream(request)
        try:
            async for event in stream:
                if isinstance(event, TextChunk):
                    pieces.append(event.text)
        finally:
            await stream.aclose()
        return "".join(pieces)

    try:
        text = await asyncio.wait_for(ask(), STATUS_MODEL_SECONDS)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # slow, failing or missing: the Title Case line stands
        logger.info("status model gave no line (%s)", type(exc).__name__)
        return None
    line = " ".join(text.split()).strip().strip('"')
    if not line or len(line) > 120:
        return None
    return line.rstrip(".…") + "…"
