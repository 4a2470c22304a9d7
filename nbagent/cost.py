"""Dollar cost of model requests, from the ``genai-prices`` package (extra ``cost``).

A best-effort USD price for one request's :class:`~nbagent.messages.Usage`, looked
up by the provider's declared pricing id (``Capabilities.pricing_id``) and its
model; ``None`` whenever the price is not known (an unknown model, a local server,
genai-prices not installed). nbagent never makes a number up. ``genai_prices`` is
imported on the first priced request, never by ``import nbagent``.

The price is what the pricing id's API charges for that model name: a compatible
server reached through the OpenAI adapter with an OpenAI model name is priced as
OpenAI.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Any

from .errors import ConfigError
from .messages import Message, ToolSpec, Usage
from .providers import Provider, capabilities

logger = logging.getLogger("nbagent")

CHARS_PER_TOKEN = 4
"""The estimate of a request's input tokens before it is sent: characters / 4."""

_unknown: set[tuple[str, str]] = set()
_missing_package = False


def price(provider: Provider, usage: Usage) -> float | None:
    """USD for ``usage`` of ``provider``'s model, or None when the price is unknown."""
    if usage.total_tokens == 0:
        return 0.0
    return _calc(provider, usage.input_tokens, usage.output_tokens, usage)


def input_price(provider: Provider, tokens: int) -> float | None:
    """USD for ``tokens`` input tokens (no cache), or None when the price is unknown."""
    if tokens <= 0:
        return 0.0
    return _calc(provider, tokens, 0, None)


def known(provider: Provider) -> bool:
    """Whether genai-prices has a price for this provider's model."""
    return _calc(provider, 1, 1, None) is not None


def require_price(provider: Provider) -> None:
    """Raise ConfigError when ``max_cost`` cannot be enforced for this model."""
    if known(provider):
        return
    if _missing_package:
        raise ConfigError("max_cost needs the genai-prices package: pip install 'nbagent[cost]'")
    raise ConfigError(
        f"max_cost cannot be enforced: genai-prices has no price for "
        f"{provider.name}:{provider.model} (nbagent never guesses a price); "
        "use max_total_tokens instead"
    )


def estimate_input_tokens(
    system: str | None, messages: Iterable[Message], tools: Iterable[ToolSpec]
) -> int:
    """A rough count of a request's input tokens (characters / 4) before it is sent."""
    import json

    chars = len(system or "")
    for message in messages:
        chars += len(message.content)
        for tool_round in message.rounds or []:
            chars += len(tool_round.assistant_text or "")
            chars += sum(len(json.dumps(c.arguments)) + len(c.name) for c in tool_round.calls)
            chars += sum(len(r.content) for r in tool_round.results)
    for spec in tools:
        chars += len(spec.name) + len(spec.description) + len(json.dumps(spec.parameters))
    return chars // CHARS_PER_TOKEN + 1


def format_cost(cost: float | None) -> str:
    """``$0.0000204``, ``$0.0123``, ``$1.50`` (no exponents); ``"unknown"`` for None."""
    if cost is None:
        return "unknown"
    if cost == 0:
        return "$0"
    if cost >= 1:
        return f"${cost:,.2f}"
    # Three significant digits, never in exponent notation: $0.0000204, $0.0123.
    digits = max(2, 2 - math.floor(math.log10(cost)))
    return f"${cost:.{digits}f}"


def _calc(
    provider: Provider, input_tokens: int, output_tokens: int, usage: Usage | None
) -> float | None:
    global _missing_package
    pricing_id, model = capabilities(provider).pricing_id, provider.model
    if pricing_id is None or not model:
        return None  # the provider declares no list price (a local server, a test double)
    key = (pricing_id, model)
    if key in _unknown:
        return None
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError:
        if not _missing_package:
            logger.info("no cost shown: the genai-prices package is not installed")
        _missing_package = True
        return None
    fields: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if usage is not None:
        if usage.cache_read_tokens:
            fields["cache_read_tokens"] = usage.cache_read_tokens
        if usage.cache_write_tokens:
            fields["cache_write_tokens"] = usage.cache_write_tokens
    try:
        result = calc_price(PriceUsage(**fields), model, provider_id=pricing_id)
    except LookupError:
        logger.info("no price known for %s:%s; its cost shows as unknown", pricing_id, model)
        _unknown.add(key)
        return None
    return float(result.total_price)


def budget_stop(
    budget: float,
    spent: float | None,
    provider: Provider,
    conversation: Any,
    tools: list[ToolSpec],
) -> str | None:
    """Why the next request would pass ``max_cost`` (None: it fits).

    The request's price is estimated from its input (system, messages, tool specs).
    """
    tokens = estimate_input_tokens(conversation.system, conversation.messages, tools)
    estimate = input_price(provider, tokens) or 0.0
    spent = spent or 0.0
    if spent + estimate <= budget:
        return None
    return (
        f"Stopped: the next request (about {format_cost(estimate)} for ~{tokens:,} "
        f"input tokens) would exceed max_cost {format_cost(budget)} ({format_cost(spent)} spent)."
    )
