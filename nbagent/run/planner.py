"""The next request of a run, fitted to the context window and the token budget."""

from __future__ import annotations

import logging
import math

from ..messages import Conversation, ToolSpec, Usage
from ..providers.base import ModelRequest, Provider
from .budget import TokenMeter, context_window, fit_request
from .settings import RunSettings
from .stops import STOPS, StopReason

__all__ = ["FINAL_OUTPUT_TOKENS", "RequestPlanner"]

logger = logging.getLogger("nbagent")

FINAL_OUTPUT_TOKENS = 64
"""The fewest output tokens worth a forced final request at the token budget."""


class RequestPlanner:
    """Builds each request of a run, fitted to the context window and the token budget.

    ``overflow`` is set when a request could not fit the context window even
    compacted (the run must stop: nothing is sent).
    """

    def __init__(self, settings: RunSettings, provider: Provider) -> None:
        self.settings = settings
        self.provider = provider
        self.meter = TokenMeter()
        self.window = settings.context_window or context_window(provider)
        self.last_estimate = 0
        self.overflow = False
        self.output_cap: int | None = None
        """The output tokens ``max_total_tokens`` leaves the last built request (None: no
        budget); a stream that passes it is cut (:func:`nbagent.run.steps.send_request`)."""

    def build(
        self,
        conversation: Conversation,
        tools: list[ToolSpec],
        *,
        spent: int = 0,
        forced: StopReason | None = None,
    ) -> ModelRequest | None:
        """The next request (None: it would pass the budget, or cannot fit the window).

        Args:
            conversation: the history, ending with the in-progress assistant message.
            tools: the tool specs to offer.
            spent: tokens the run used so far (for ``max_total_tokens``).
            forced: why this is the forced final request (tools forbidden), or None.
        """
        settings = self.settings
        request = ModelRequest(
            system=conversation.system,
            messages=conversation.messages,
            tools=tools,
            tool_choice="none" if forced else "auto",
            final_instruction=STOPS[forced].instruction if forced else None,
            stream=settings.stream,
            max_output_tokens=settings.max_output_tokens,
            temperature=settings.temperature,
            text_tool_calls=settings.text_tool_calls,
        )
        budget = settings.max_total_tokens
        self.output_cap = None
        limit = None
        if self.window is not None:
            # Room for the answer: what max_output_tokens asks, or an eighth of the window.
            limit = self.window - (settings.max_output_tokens or self.window // 8)
        if budget is not None and forced:
            # The forced final request may use all that is left but a short answer's room.
            left = budget - spent - FINAL_OUTPUT_TOKENS
            limit = left if limit is None else min(limit, left)
        if limit is None and budget is None:
            return request  # nothing to fit (and no window to report fullness against)
        fitted = fit_request(request, limit if limit is not None else 1 << 62, self.meter)
        if fitted is None:
            self.overflow = budget is None
            logger.info("no request fits in %d tokens", limit)
            return None
        request, estimate = fitted
        if budget is not None:
            left = budget - spent
            if not forced and 2 * (estimate + FINAL_OUTPUT_TOKENS) > left:
                return None  # another round would leave no room for the final answer
            # Never exceed the budget: the output may use only what the input leaves, and
            # a round's reply leaves room for the final request (its input and an answer).
            room = left - estimate - (0 if forced else estimate + FINAL_OUTPUT_TOKENS)
            cap = settings.max_output_tokens
            request.max_output_tokens = room if cap is None else min(cap, room)
            self.output_cap = room
        self.last_estimate = estimate
        if request.messages is not conversation.messages:
            logger.info("request compacted to fit: about %d input tokens", estimate)
        return request

    def cost_cap(
        self, request: ModelRequest, spent: float, *, forced: bool
    ) -> tuple[int | None, str]:
        """The output tokens ``max_cost`` pays for in ``request`` (None: none), and why not.

        A round's request keeps the price of the final one (its input and a short answer)
        in reserve, as the token budget does; the final request may use what is left.
        """
        from ..cost import affordable_output, budget_note, output_price

        budget = self.settings.max_cost
        assert budget is not None
        tokens = self.meter.estimate(request)
        afford, input_cost = affordable_output(self.provider, budget, spent, tokens)
        per_token = output_price(self.provider) or 0.0
        final_cost = input_cost + FINAL_OUTPUT_TOKENS * per_token
        note = budget_note(budget, spent, input_cost, tokens)
        if (not forced and 2 * final_cost > budget - spent) or afford < FINAL_OUTPUT_TOKENS:
            return None, note
        if not forced and per_token:
            afford -= math.ceil(final_cost / per_token)
        return afford, note

    def learn(self, request: ModelRequest, usage: Usage) -> None:
        """Scale later estimates by the provider's count of this request."""
        if self.window is not None or self.settings.max_total_tokens is not None:
            self.meter.calibrate(request, usage.input_tokens)

    def context_note(self) -> str | None:
        """``context 2,100/128,000 tokens (2%)`` for the footer (None if the window is unknown)."""
        if self.window is None or not self.last_estimate:
            return None
        share = 100 * self.last_estimate / self.window
        return f"context {self.last_estimate:,}/{self.window:,} tokens ({share:.0f}%)"
