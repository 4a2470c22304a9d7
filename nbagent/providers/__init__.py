"""Providers: the registry that turns ``"openai:gpt-4o-mini"`` into an adapter.

Every provider, built in or not, is added with one :func:`register` line::

    from nbagent.providers import register
    register("madeup", MadeUpProvider)                      # a class or factory
    register("openai", "nbagent.providers.openai:OpenAIProvider")   # or its path

Registering by path imports nothing: the module is imported when the provider is
first used or one of its attributes is needed (``import nbagent`` imports no
adapter). What the rest of nbagent asks of providers comes from here and from
the adapters' class attributes (see ``http/template.py``), never from a list of
names: :func:`resolve_model` (the default model), :func:`secret_headers` and
:func:`invented_id_patterns` (recordings), :func:`makes_http_requests` (whether
recording applies), :func:`environment_variables` (what tests clear), and of a
provider object :func:`capabilities` (typed output, context window, images,
pricing, tracing name: see ``base.Capabilities``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .base import (
    Capabilities,
    Finished,
    ModelRequest,
    OutputMode,
    Provider,
    ProviderEvent,
    StructuredOutput,
    TextChunk,
    ToolCallReady,
    UsageReport,
)

__all__ = [
    "Capabilities",
    "Finished",
    "ModelRequest",
    "OutputMode",
    "Provider",
    "ProviderEvent",
    "StructuredOutput",
    "TextChunk",
    "ToolCallReady",
    "UsageReport",
    "accepts_images",
    "capabilities",
    "environment_variables",
    "get_provider",
    "how_to_choose",
    "invented_id_patterns",
    "key_variables",
    "makes_http_requests",
    "register",
    "registered",
    "resolve_model",
    "secret_headers",
    "split_model",
    "unregister",
]

MODEL_VARIABLE = "NBAGENT_MODEL"
"""The environment variable naming the default model string."""

ATTRIBUTES: dict[str, Any] = {
    "makes_http_requests": True,
    "key_variables": (),
    "bearer_token_variables": (),
    "base_url_variable": None,
    "other_variables": (),
    "secret_headers": (),
    "invented_id_pattern": None,
    "default_model": None,
    "installed": None,
    "install_hint": None,
    "listed": True,
}
"""What the registry reads of a provider, with the value assumed when it declares nothing.

``makes_http_requests``: False for models run in process (recording does not apply).
``key_variables`` / ``bearer_token_variables`` / ``base_url_variable`` /
``other_variables``: the environment variables it reads. ``secret_headers``: request
headers recordings redact. ``invented_id_pattern``: a regex of the call ids it makes
up. ``default_model``: the model (after the prefix) used when one of its
``key_variables`` is set ("" for a provider named by its prefix alone, such as
``local``); ``installed``: a function saying whether it can run with no key at all,
the last resort of :func:`resolve_model`; ``install_hint``: how to make it
installed. ``listed``: named in the "how to choose" message.
"""

GENERIC_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
"""Headers that may carry credentials whatever the API."""


@dataclass
class Registration:
    """One registered provider: its prefix, its factory and what it declared."""

    prefix: str
    factory: Callable[..., Provider] | str
    declared: dict[str, Any] = field(default_factory=dict)
    _loaded: Callable[..., Provider] | None = None

    def load(self) -> Callable[..., Provider]:
        """The factory (a ``"module:Class"`` path is imported on first use)."""
        if self._loaded is None:
            if isinstance(self.factory, str):
                module_name, _, attribute = self.factory.partition(":")
                self._loaded = getattr(importlib.import_module(module_name), attribute)
            else:
                self._loaded = self.factory
        return self._loaded

    def get(self, name: str) -> Any:
        """A declared attribute: given to :func:`register`, else the factory's own."""
        if name in self.declared:
            return self.declared[name]
        return getattr(self.load(), name, ATTRIBUTES[name])


_REGISTRY: dict[str, Registration] = {}


def register(prefix: str, factory: Callable[..., Provider] | str, **attributes: Any) -> None:
    """Make ``"prefix:model"`` strings build providers with ``factory``.

    Args:
        prefix: the part before ``:`` in model strings (lower case).
        factory: a provider class or any callable ``factory(model, **options)``, or its
            ``"module:attribute"`` path (imported when first needed).
        **attributes: any of :data:`ATTRIBUTES`, for a factory that does not declare
            them itself (``makes_http_requests=False`` for an in-process model...).

    Registering a prefix again replaces the earlier provider.
    """
    unknown = set(attributes) - set(ATTRIBUTES)
    if unknown:
        raise TypeError(f"register() got unknown attributes: {', '.join(sorted(unknown))}")
    name = prefix.strip().lower()
    if not name or ":" in name:
        raise ValueError(f"a provider prefix is a non-empty name without ':', not {prefix!r}")
    _REGISTRY[name] = Registration(name, factory, dict(attributes))


def unregister(prefix: str) -> None:
    """Forget a provider (no error when it was not registered)."""
    _REGISTRY.pop(prefix.strip().lower(), None)


def registered() -> list[str]:
    """The registered prefixes, in registration order."""
    return list(_REGISTRY)


# -- model strings ------------------------------------------------------------------


def split_model(model: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` -> ``("openai", "gpt-4o")``; ``"local"`` -> ``("local", "")``."""
    name, _, rest = model.partition(":")
    name = name.strip().lower()
    if name not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise ConfigError(f"Unknown provider {name!r} in model {model!r}; known: {known}.")
    return name, rest.strip()


def get_provider(model: str, **options: Any) -> Provider:
    """Build the adapter for ``model`` (``"provider:model-name"``)."""
    name, model_name = split_model(model)
    provider: Provider = _REGISTRY[name].load()(model_name, **options)
    return provider


def makes_http_requests(model: str) -> bool:
    """Whether the provider of ``model`` talks HTTP (False for in-process models)."""
    return bool(_REGISTRY[split_model(model)[0]].get("makes_http_requests"))


def resolve_model(model: str | None, env: Mapping[str, str] | None = None) -> str:
    """The model string to use when the caller may not have named one.

    In order: ``model``; ``NBAGENT_MODEL``; the ``default_model`` of the first
    provider (in registration order) one of whose ``key_variables`` is set; a
    provider that reports itself ``installed`` (the embedded model).
    """
    if model:
        return model
    env = os.environ if env is None else env
    if env.get(MODEL_VARIABLE):
        return env[MODEL_VARIABLE]
    for entry in list(_REGISTRY.values()):
        default = entry.get("default_model")
        if default is None:
            continue
        if any(env.get(variable) for variable in entry.get("key_variables")):
            return _model_string(entry.prefix, default)
    for entry in list(_REGISTRY.values()):
        installed = entry.get("installed")
        if installed is not None and entry.get("default_model") is not None and installed():
            return _model_string(entry.prefix, entry.get("default_model"))
    raise ConfigError("No model configured. " + how_to_choose())


def how_to_choose() -> str:
    """What to do when no model is configured, from the registered providers."""
    listed = [entry for entry in _REGISTRY.values() if entry.get("listed")]
    named = [e for e in listed if e.get("default_model")]
    parts = []
    if named:
        first = named[0]
        others = [e.prefix if e.get("default_model") == "" else e.prefix + ":" for e in listed]
        others.remove(first.prefix + ":")
        also = f" (or {', '.join(others)})" if others else ""
        example = _model_string(first.prefix, first.get("default_model"))
        parts.append(f"Choose a model with Agent({example!r}){also}")
    parts.append(f"set {MODEL_VARIABLE}")
    keys = [e.get("key_variables")[0] for e in named if e.get("key_variables")]
    if keys:
        parts.append("set one of " + " / ".join(keys))
    hints = [e.get("install_hint") for e in listed if e.get("install_hint")]
    text = ", ".join(parts)
    if hints:
        text += ", or " + " or ".join(hints)
    return text + "."


def _model_string(prefix: str, model: str) -> str:
    return f"{prefix}:{model}" if model else prefix


# -- what other parts of nbagent ask of the providers -----------------------------------


def secret_headers() -> frozenset[str]:
    """Request headers that may carry a secret, for every registered provider (lower case)."""
    names = set(GENERIC_SECRET_HEADERS)
    for entry in list(_REGISTRY.values()):
        names.update(h.lower() for h in entry.get("secret_headers"))
    return frozenset(names)


def invented_id_patterns() -> list[str]:
    """Regular expressions of the call ids providers make up (random in every run)."""
    patterns = [entry.get("invented_id_pattern") for entry in list(_REGISTRY.values())]
    return sorted({p for p in patterns if p})


def key_variables() -> tuple[str, ...]:
    """Environment variables that hold a provider's key or token."""
    found: dict[str, None] = {}
    for entry in list(_REGISTRY.values()):
        found.update(dict.fromkeys(entry.get("key_variables")))
        found.update(dict.fromkeys(entry.get("bearer_token_variables")))
    return tuple(found)


def environment_variables() -> tuple[str, ...]:
    """Every environment variable providers read (keys, addresses, options, the model)."""
    found: dict[str, None] = dict.fromkeys(key_variables())
    for entry in list(_REGISTRY.values()):
        if entry.get("base_url_variable"):
            found[entry.get("base_url_variable")] = None
        found.update(dict.fromkeys(entry.get("other_variables")))
    found[MODEL_VARIABLE] = None
    return tuple(found)


def capabilities(provider: Provider) -> Capabilities:
    """What ``provider``'s model can do, as its adapter declares it.

    A provider that declares nothing (a user's own object with ``name``, ``model`` and
    ``stream``) gets its model family's facts (``families.py``), typed output in
    the prompt, no price, and its own name in traces.
    """
    declare = getattr(provider, "capabilities", None)
    if callable(declare):
        declared = declare()
        if not isinstance(declared, Capabilities):
            raise ConfigError(
                f"{type(provider).__name__}.capabilities() returned {declared!r}, "
                "not a nbagent.providers.Capabilities"
            )
        return declared
    from .families import family_capabilities

    return family_capabilities(provider.model or "")


def accepts_images(provider: Provider) -> bool:
    """Whether ``provider``'s model takes images (else tool results' images become text)."""
    return capabilities(provider).images


# -- the built-in providers ----------------------------------------------------------------

register("openai", "nbagent.providers.openai:OpenAIProvider")
register("anthropic", "nbagent.providers.anthropic:AnthropicProvider")
register("gemini", "nbagent.providers.gemini:GeminiProvider")
register("ollama", "nbagent.providers.ollama:OllamaProvider")
register("local", "nbagent.providers.local:LocalProvider")
register("scripted", "nbagent.testing:ScriptedModel", makes_http_requests=False, listed=False)
