"""The batch rate of a request: genai-prices' ``processing: batch`` price variant.

Where genai-prices knows no batch price for a model, the standard price is used and
the basis says so (``"standard"``): nbagent never makes a discount up.
"""

from __future__ import annotations

from typing import Literal

from ...cost import price
from ...messages import Usage
from ...providers import Provider, capabilities

__all__ = ["PriceBasis", "batch_price"]

PriceBasis = Literal["batch", "standard", "unknown"]


def batch_price(provider: Provider, usage: Usage) -> tuple[float | None, PriceBasis]:
    """USD for ``usage`` at the batch rate, and which rate that was."""
    standard = price(provider, usage)
    if standard is None:
        return None, "unknown"
    pricing_id = capabilities(provider).pricing_id
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price

        fields = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        if usage.cache_read_tokens:
            fields["cache_read_tokens"] = usage.cache_read_tokens
        if usage.cache_write_tokens:
            fields["cache_write_tokens"] = usage.cache_write_tokens
        result = calc_price(
            PriceUsage(**fields), provider.model, provider_id=pricing_id,
            price_context={"processing": "batch"},
        )  # fmt: skip
    except (ImportError, LookupError, TypeError):  # TypeError: a genai-prices without contexts
        return standard, "standard"
    batch = float(result.total_price)
    if standard and batch >= standard:
        return standard, "standard"  # no batch variant known for this model
    return batch, "batch"
