"""The settings of a run, typed: one frozen value, grouped as users think of them.

``Agent(...)`` holds the defaults (``agent.settings``); ``run``, ``run_sync``,
``stream``, ``stream_sync`` and ``%%agent`` override them for one run with the
same keyword names (:class:`RunOptions` types those keywords for editors and
mypy). A misspelt name is a ``TypeError`` naming the nearest valid one.

Limits come in groups: rounds (``max_rounds``, ``max_consecutive_errors``,
``max_tool_only_rounds``), time (``timeout``, ``tool_timeout``), tokens
(``max_total_tokens``, ``max_output_tokens``), cost (``max_cost``) and context
(``context_window``). The run deadline is ``timeout``; the HTTP read timeout is the
provider's own option, ``Agent(http_timeout=...)``.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from .._internal.images import Image
from ..messages import Conversation
from ..tools import PER_CALL_CHARS, PER_ROUND_CHARS, Approver, Middleware, ToolItem

if TYPE_CHECKING:
    from ..providers.base import Provider

__all__ = [
    "GROUPS", "RunInputs", "RunOptions", "RunSettings", "SettingError", "check_names"
]  # fmt: skip


@dataclass(frozen=True)
class RunSettings:
    """Limits and options of a run (see the stop-reason table in :mod:`nbagent.run.stops`)."""

    # -- rounds
    max_rounds: int = 10
    """Tool rounds before one forced final request with tools forbidden."""
    max_consecutive_errors: int = 3
    """Rounds in a row in which every call failed before the forced final answer."""
    max_tool_only_rounds: int | None = None
    """Force the final answer after this many consecutive rounds of calls without text."""
    # -- time
    timeout: float | None = 300.0
    """Seconds for the whole run (its deadline); None: no limit."""
    tool_timeout: float = 60.0
    """Seconds per tool call, unless the tool sets its own ``timeout``."""
    # -- tokens
    max_total_tokens: int | None = None
    """Tokens for the whole run; one last request answers within them."""
    max_output_tokens: int | None = None
    """The output cap of each request (the provider's default when None)."""
    # -- cost
    max_cost: float | None = None
    """USD: stop before a request whose estimated price would exceed it (``nbagent.cost``)."""
    # -- context
    context_window: int | None = None
    """The model's context window in tokens (default: the table in ``nbagent.run.budget``)."""
    # -- the model's reply
    stream: bool = True
    """Ask the provider for a streamed reply (the events are the same either way)."""
    temperature: float | None = None
    """Sampling temperature (the provider's default when None)."""
    output_type: Any = None
    """The type of ``result.output`` (``nbagent.run.output``); None for the answer text."""
    send_images: bool = True
    """False: images in tool results reach the model as a text placeholder."""
    text_tool_calls: bool | None = None
    """Recognise tool calls written as text (and ``<think>`` blocks) in replies; None: as
    the provider declares (on for local/compatible servers, off for hosted APIs)."""
    status_model: str | Provider | None = None
    """A model writing one-line statuses ("Looking up the weather in Oslo"), 2 s at most."""
    # -- tools
    strict: bool = False
    """A failing tool raises ToolError instead of going back to the model."""
    approver: Approver | None = None
    """Decides ``requires_approval`` calls (default: the ``NBAGENT_APPROVAL`` policy)."""
    tool_middleware: Sequence[Middleware] = field(default_factory=tuple)
    """Functions wrapping every tool call (``nbagent.tools.cache``, ``rate_limit``...)."""

    def __post_init__(self) -> None:
        checks = (
            ("max_rounds", self.max_rounds >= 0, "must be 0 or more"),
            ("max_consecutive_errors", self.max_consecutive_errors >= 1, "must be 1 or more"),
            ("timeout", self.timeout is None or self.timeout > 0,
             "must be a positive number of seconds"),
            ("tool_timeout", self.tool_timeout > 0, "must be a positive number of seconds"),
            ("max_cost", self.max_cost is None or self.max_cost >= 0, "must be 0 or more"),
        )  # fmt: skip
        for name, ok, problem in checks:
            if not ok:
                raise SettingError(name, problem)

    def replace(self, **changes: Any) -> RunSettings:
        """A copy with ``changes`` (a misspelt name is a TypeError naming the nearest)."""
        check_names(changes, FIELDS, "setting")
        return dataclasses.replace(self, **changes) if changes else self


class SettingError(ValueError):
    """A setting out of its range (``max_rounds=-1``); ``setting`` names it."""

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"{setting} {problem}")
        self.setting = setting
        self.problem = problem


FIELDS = frozenset(f.name for f in dataclasses.fields(RunSettings))

GROUPS: dict[str, tuple[str, ...]] = {
    "rounds": ("max_rounds", "max_consecutive_errors", "max_tool_only_rounds"),
    "time": ("timeout", "tool_timeout"),
    "tokens": ("max_total_tokens", "max_output_tokens"),
    "cost": ("max_cost",),
    "context": ("context_window",),
    "reply": (
        "stream", "temperature", "output_type", "send_images", "text_tool_calls", "status_model"
    ),
    "tools": ("strict", "approver", "tool_middleware"),
}  # fmt: skip
"""The settings by group, as the README's "Agent options" table lists them."""


class RunOptions(TypedDict, total=False):
    """The per-run keywords of ``Agent.run``/``run_sync``/``stream``/``stream_sync``.

    Every :class:`RunSettings` field, plus what a run takes besides settings.
    """

    max_rounds: int
    max_consecutive_errors: int
    max_tool_only_rounds: int | None
    timeout: float | None
    tool_timeout: float
    max_total_tokens: int | None
    max_output_tokens: int | None
    max_cost: float | None
    context_window: int | None
    stream: bool
    temperature: float | None
    output_type: Any
    send_images: bool
    text_tool_calls: bool | None
    status_model: str | Provider | None
    strict: bool
    approver: Approver | None
    tool_middleware: Sequence[Middleware]
    tools: Iterable[ToolItem] | None
    """This run's tools instead of the agent's."""
    kernel: bool
    """Offer the kernel tools and the variables as context (``%%agent --kernel``)."""
    conversation: Conversation | None
    """Continue this conversation instead of the agent's own (``agent.conversation`` and
    ``agent.last_result`` stay as they are); one turn at a time per conversation."""
    attachments: Sequence[Image] | None
    """Images sent with the prompt (``{fig}`` in a cell)."""


RUN_ONLY = frozenset(("tools", "kernel", "conversation", "attachments"))
"""RunOptions keys that are not settings."""


@dataclass(frozen=True)
class RunInputs:
    """What a run takes besides its settings, filled by nbagent itself (not user keywords)."""

    attachments: Sequence[Image] = ()
    """Images sent with the prompt."""
    context: str | None = None
    """Text added to the system message of this run's requests (the kernel inventory)."""
    per_call_chars: int = PER_CALL_CHARS
    """Characters of one tool result the model sees (later calls get what is left)."""
    per_round_chars: int = PER_ROUND_CHARS
    """Characters of one round's results the model sees."""


def check_names(given: Mapping[str, Any], valid: Iterable[str], kind: str) -> None:
    """Raise TypeError for a name in ``given`` that is not ``valid``, naming the nearest."""
    valid = sorted(valid)
    for name in given:
        if name not in valid:
            near = difflib.get_close_matches(name, valid, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f" (valid: {', '.join(valid)})"
            raise TypeError(f"unknown {kind} {name!r}{hint}")
