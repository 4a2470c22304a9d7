"""Why a run stopped: every stop reason and every rendering of it, in one table.

A stop condition is a decision (in :class:`nbagent.run.loop.Run`, or a caller of the
step API) plus one row here. The loop's status lines, log lines, forced-final
instructions and partial-answer notes, the traces' error flag and the words every
surface shows all read the row; the README's list of stop reasons is checked
against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

StopReason = Literal[
    "complete",
    "max_rounds",
    "tool_errors",
    "tool_only_rounds",
    "token_budget",
    "cost_budget",
    "context_window",
    "output_invalid",
    "timeout",
    "cancelled",
    "error",
]
"""Every value of ``RunResult.stop_reason``."""

_LAST_ROUNDS = (
    "Do not call any more tools. Answer the user's request now, as well as you can, "
    "from the information gathered so far."
)


@dataclass(frozen=True)
class Stop:
    """One stop reason and how each part of nbagent words it."""

    reason: StopReason
    meaning: str
    """What happened, for the docs (one sentence)."""
    words: str
    """How the surfaces name it: ``Stopped: max rounds`` in the footer and status line."""
    instruction: str | None = None
    """The user text of the forced final request (tools forbidden) this reason triggers;
    None: the run ends without one."""
    status: str | None = None
    """The status line while that forced final request runs."""
    log: str | None = None
    """The warning logged before the forced final request (``{n}``: rounds run)."""
    note: str | None = None
    """Appended to a partial answer when the run ends this way with no text of its own."""
    is_error: bool = False
    """Traces mark the run span failed."""

    @property
    def forces_final_answer(self) -> bool:
        """Whether this reason ends with one more request, tools forbidden, for the answer."""
        return self.instruction is not None


STOPS: dict[StopReason, Stop] = {
    stop.reason: stop
    for stop in (
        Stop("complete", "the model answered without asking for tools", "complete"),
        Stop(
            "max_rounds",
            "`max_rounds` tool rounds ran; one more request (tools forbidden) asked for the answer",
            "max rounds",
            instruction="You have used the maximum number of tool rounds. " + _LAST_ROUNDS,
            status="Maximum tool rounds reached. Generating final response…",
            log="Maximum tool rounds reached ({n})",
        ),
        Stop(
            "tool_errors",
            "every call failed in `max_consecutive_errors` rounds in a row; the final "
            "request asked the model to say what failed",
            "tool errors",
            instruction=(
                "The tool calls keep failing. Do not call any more tools. Tell the user what "
                "failed and answer as well as you can from the information gathered so far."
            ),
            status="Tools keep failing. Generating final response…",
            log="Tool calls failed in the last rounds ({n} rounds run)",
            is_error=True,
        ),
        Stop(
            "tool_only_rounds",
            "`max_tool_only_rounds` rounds of calls without any text; the final request "
            "asked for the answer",
            "tool only rounds",
            instruction="You have used the maximum number of tool rounds. " + _LAST_ROUNDS,
            status="Too many rounds without text. Generating final response…",
            log="{n} rounds of tool calls without text",
        ),
        Stop(
            "token_budget",
            "`max_total_tokens` was nearly spent; one last request answered within it",
            "token budget",
            instruction=(
                "The token budget for this request is nearly spent. Do not call any more "
                "tools. Answer the user's request now, briefly, from the information "
                "gathered so far."
            ),
            status="Token budget reached. Generating final response…",
            log="Token budget reached after {n} rounds",
            note="[stopped: token budget reached]",
        ),
        Stop(
            "cost_budget",
            "`max_cost` was nearly spent; one last request answered within it (nothing "
            "is sent when not even that fits)",
            "cost budget",
            instruction=(
                "The cost budget for this request is nearly spent. Do not call any more "
                "tools. Answer the user's request now, briefly, from the information "
                "gathered so far."
            ),
            status="Cost budget reached. Generating final response…",
            log="Cost budget reached after {n} rounds",
            note="[stopped: cost budget reached]",
        ),
        Stop(
            "context_window",
            "the conversation no longer fits the context window, even compacted",
            "context window",
            note="[stopped: the conversation no longer fits the context window]",
        ),
        Stop(
            "output_invalid",
            "the answer never matched `output_type` after the retries; the raw text is kept",
            "output invalid",
            note="[stopped: the answer never matched the output type]",
            is_error=True,
        ),
        Stop(
            "timeout",
            "the run passed `timeout` seconds; work in flight was cancelled",
            "timeout",
            note="[run timed out]",
            is_error=True,
        ),
        Stop(
            "cancelled",
            "`cancel()`, the Stop button or a kernel interrupt stopped the run",
            "cancelled",
            note="[run cancelled]",
            is_error=True,
        ),
        Stop(
            "error",
            "a provider error (after its retries) or, with `strict=True`, a tool error",
            "error",
            note="[run failed]",
            is_error=True,
        ),
    )
}
"""One row per stop reason, in the order the docs list them."""

assert list(STOPS) == list(get_args(StopReason)), "one row per StopReason, in order"


def stop_reason_words(stop_reason: str) -> str:
    """``"max_rounds"`` -> ``"max rounds"``: how every surface names a stop reason."""
    row = STOPS.get(stop_reason)  # type: ignore[call-overload]
    return row.words if row is not None else stop_reason.replace("_", " ")


def stop_reasons_markdown() -> str:
    """The table of stop reasons for the README (``python -m nbagent.run.stops``)."""
    lines = ["| `stop_reason` | what happened |", "|---|---|"]
    lines += [f"| `{s.reason}` | {s.meaning} |" for s in STOPS.values()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(stop_reasons_markdown())
