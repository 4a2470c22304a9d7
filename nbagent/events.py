"""Run events: the one stream that renderers, storage and tests consume."""

from __future__ import annotations

from dataclasses import dataclass

from .messages import ToolCall, ToolResult, ToolRound
from .results import RunResult


@dataclass
class RunStarted:
    """The first event of every run."""

    prompt: str
    model: str
    conversation_id: str


@dataclass
class Status:
    """A one-line status for humans: "Analyzing request…", "Using Weather Lookup…"."""

    text: str


@dataclass
class TextDelta:
    """Model text as it streams. ``round_index`` is the 0-based request number."""

    text: str
    round_index: int


@dataclass
class ToolCallStarted:
    """A call is about to run (all calls of a round start together, in call order)."""

    call: ToolCall
    round_index: int


@dataclass
class ToolCallFinished:
    """A call's result, ``content`` exactly as the model will see it.

    Emitted in call order (a fast call waits for the slower ones before it), because
    the round's output budget is shared in call order.
    """

    result: ToolResult
    round_index: int


@dataclass
class ToolProgress:
    """A progress line from a running call.

    A generator tool's yield, ``nbagent.progress(...)``, a retry; ``fraction`` is the
    share done (0 to 1) when the tool said.
    """

    call_id: str
    text: str
    fraction: float | None
    round_index: int


@dataclass
class RoundFinished:
    """A tool round is complete: every call has its result."""

    round: ToolRound
    round_index: int


@dataclass
class RunFinished:
    """The last event of every run, however it ended (see ``result.stop_reason``)."""

    result: RunResult


Event = (
    RunStarted
    | Status
    | TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | ToolProgress
    | RoundFinished
    | RunFinished
)
