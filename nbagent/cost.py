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
from typing import Any

from .errors import ConfigError
from .messages import Usage
from .providers import Provider, capabilities

logger = logging.getLogger("nbagent")

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


def output_price(provider: Provider) -> float | None:
    """USD for one output token of ``provider``'s model, or None when the price is unknown."""
    per_million = _calc(provider, 0, 1_000_000, None)
    return None if per_million is None else per_million / 1_000_000


def affordable_output(
    provider: Provider, budget: float, spent: float | None, input_tokens: int
) -> tuple[int, float]:
    """Output tokens ``budget`` pays for after a request's input, and that input's price.

    The output tokens are never negative; a model whose price is unknown affords none
    (``require_price`` refuses ``max_cost`` for it before a run starts).
    """
    input_cost = input_price(provider, input_tokens) or 0.0
    per_token = output_price(provider)
    left = budget - (spent or 0.0) - input_cost
    if per_token is None or left <= 0:
        return 0, input_cost
    if per_token == 0:
        return 1 << 30, input_cost  # a free model: only the token budget bounds it
    return math.floor(left / per_token), input_cost


def budget_note(budget: float, spent: float | None, input_cost: float, tokens: int) -> str:
    """The answer when not even a short final answer fits in ``max_cost``."""
    return (
        f"Stopped: the next request (about {format_cost(input_cost)} for ~{tokens:,} "
        f"input tokens) would exceed max_cost {format_cost(budget)} "
        f"({format_cost(spent or 0.0)} spent)."
    )
