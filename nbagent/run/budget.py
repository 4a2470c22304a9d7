"""Token budgets and context windows: estimate a request before it is sent, and fit it.

* :func:`estimate_tokens`: a tokenizer-free estimate of a request's input tokens,
  on the high side (UTF-8 bytes / 3, plus a little per message), so a budget
  computed with it holds; :class:`TokenMeter` scales it by what the provider
  reported for the previous request (the provider's own count, where it exists).
* :func:`context_window`: the context window the provider declares for its model
  (``Capabilities.context_window``; ``context_window=`` overrides it).
* :func:`fit_request`: when a request would overflow the window, earlier turns'
  tool results are replaced by a short note first (the stored values and the panels
  keep everything), then earlier turns are left out, and only then this run's own
  results, the current round's last; None when even that cannot fit.
"""

from __future__ import annotations

import dataclasses
import json
import math

from ..messages import Message, ToolResult, ToolRound
from ..providers import Provider, capabilities
from ..providers.base import ModelRequest

__all__ = [
    "TokenMeter",
    "context_window",
    "estimate_tokens",
    "fit_request",
]

PER_MESSAGE_TOKENS = 8
"""Role markers and separators a chat template adds per message (an upper guess)."""

COMPACTED_NOTE = "[compacted to fit the context window: {chars:,} characters of {name} output]"


def context_window(provider: Provider) -> int | None:
    """The context window ``provider`` declares for its model, None if unknown."""
    return capabilities(provider).context_window


def _text_size(text: str | None) -> int:
    return len(text.encode("utf-8")) if text else 0


def estimate_tokens(request: ModelRequest) -> int:
    """Input tokens of ``request``, estimated without a tokenizer (on the high side)."""
    size = _text_size(request.system) + _text_size(request.final_instruction)
    count = 1
    for message in request.messages:
        count += 1
        size += _text_size(message.content)
        for rnd in message.rounds or ():
            count += 1 + len(rnd.calls)
            size += _text_size(rnd.assistant_text)
            for call in rnd.calls:
                size += _text_size(call.name) + _text_size(call.raw_arguments or "")
                if call.raw_arguments is None:
                    size += _text_size(json.dumps(call.arguments, ensure_ascii=False))
            size += sum(_text_size(r.content) for r in rnd.results)
    for spec in request.tools:
        size += _text_size(json.dumps(spec.to_dict(), ensure_ascii=False))
    return math.ceil(size / 3) + PER_MESSAGE_TOKENS * count


class TokenMeter:
    """The estimate, scaled up by what the provider reported for earlier requests."""

    def __init__(self) -> None:
        self.scale = 1.0
        self._last: tuple[ModelRequest, int] | None = None

    def estimate(self, request: ModelRequest) -> int:
        """This request's input tokens (never below the provider-calibrated figure)."""
        raw = estimate_tokens(request)
        self._last = (request, raw)
        return math.ceil(raw * self.scale)

    def calibrate(self, request: ModelRequest, reported_input: int) -> None:
        """Learn from the provider's count of ``request`` (only ever scales up)."""
        if not reported_input:
            return
        last = self._last
        raw = last[1] if last is not None and last[0] is request else estimate_tokens(request)
        if raw and reported_input > raw * self.scale:
            self.scale = reported_input / raw * 1.05


def _compact_result(result: ToolResult) -> ToolResult:
    note = COMPACTED_NOTE.format(chars=len(result.content), name=result.name)
    return dataclasses.replace(result, content=note)


def fit_request(
    request: ModelRequest, limit: int, meter: TokenMeter
) -> tuple[ModelRequest, int] | None:
    """``request`` made to need at most ``limit`` input tokens, and its estimate.

    What the model just asked for goes last: first the tool results of earlier turns
    are compacted (oldest first), then earlier turns are left out (never the last
    user message), and only then the results of this run's rounds, oldest round
    first. Returns None when the request cannot fit. The conversation is not
    changed: the request gets copies.
    """
    estimate = meter.estimate(request)
    if estimate <= limit:
        return request, estimate
    messages = list(request.messages)
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=0)
    fitted = _compact_results(request, messages, range(last_user), limit, meter)
    if fitted is not None:
        return fitted
    # Then whole older turns: keep from the last user message on.
    while last_user > 0:
        messages = messages[1:]
        last_user -= 1
        # Never start with an assistant turn: drop up to the next user message.
        while messages and messages[0].role != "user" and last_user > 0:
            messages = messages[1:]
            last_user -= 1
        request = dataclasses.replace(request, messages=list(messages))
        estimate = meter.estimate(request)
        if estimate <= limit:
            return request, estimate
    # Last, this run's own results (the current round's after every earlier one).
    return _compact_results(request, messages, range(len(messages)), limit, meter)


def _compact_results(
    request: ModelRequest,
    messages: list[Message],
    which: range,
    limit: int,
    meter: TokenMeter,
) -> tuple[ModelRequest, int] | None:
    """Compact the results of ``messages[which]``, oldest first, until the request fits.

    ``messages`` is updated in place (with copies); None if the request never fits.
    """
    spots = [
        (mi, ri, xi)
        for mi in which
        for ri, rnd in enumerate(messages[mi].rounds or ())
        for xi, result in enumerate(rnd.results)
        if not result.content.startswith("[compacted")
    ]
    copied: set[int] = set()
    for mi, ri, xi in spots:
        message = messages[mi]
        if mi not in copied:
            rounds = [dataclasses.replace(r, results=list(r.results)) for r in message.rounds or ()]
            message = messages[mi] = dataclasses.replace(message, rounds=rounds)
            copied.add(mi)
        rounds_now: list[ToolRound] = message.rounds or []
        rounds_now[ri].results[xi] = _compact_result(rounds_now[ri].results[xi])
        request = dataclasses.replace(request, messages=list(messages))
        estimate = meter.estimate(request)
        if estimate <= limit:
            return request, estimate
    return None
