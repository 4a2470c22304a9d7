"""Stop reasons: one table row each, read by the loop, the surfaces and the docs.

A new stop condition touches two places: its decision (in ``nbagent.run.loop.Run``
or a step-API caller) and its row in ``nbagent.run.stops.STOPS``. These tests fail
when a rendering of a reason is written anywhere else, or when a documented list
of reasons drifts from the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest

from nbagent import Agent, tool
from nbagent.events import Status
from nbagent.results import STOPS, StopReason, stop_reason_words
from nbagent.run.stops import stop_reasons_markdown
from nbagent.testing import ScriptedModel, call, reply

ROOT = Path(__file__).resolve().parents[2]


def test_one_row_per_stop_reason_and_every_forced_final_is_fully_worded() -> None:
    assert list(STOPS) == list(get_args(StopReason))
    for reason, row in STOPS.items():
        assert row.reason == reason and row.words and row.meaning
        if row.forces_final_answer:
            assert row.status and row.log, f"{reason}: a forced final needs a status and a log"


def test_the_readme_lists_every_stop_reason_from_the_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert stop_reasons_markdown() in readme, (
        "README's stop reasons differ from nbagent.run.stops.STOPS: paste the output of "
        "`python -m nbagent.run.stops`"
    )


def test_no_module_but_the_table_spells_a_stop_reasons_words() -> None:
    sources = {
        path: path.read_text(encoding="utf-8")
        for path in (ROOT / "nbagent").rglob("*.py")
        if path.name != "stops.py"
    }
    for row in STOPS.values():
        for text in (row.instruction, row.status, row.note, row.log):
            if text is None:
                continue
            copies = [str(p.relative_to(ROOT)) for p, src in sources.items() if text in src]
            assert not copies, f"{row.reason}'s text {text!r} is repeated in {copies}"


@tool(register=False)
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(register=False)
def broken(city: str) -> str:
    """Always fails."""
    raise RuntimeError("no weather today")


def calling(name: str) -> Any:
    def script(request: Any) -> Any:
        if request.tool_choice == "none":
            return reply("")  # no text: the run words the answer itself
        return reply("", [call(name, city="Oslo")])

    return script


@pytest.mark.parametrize(
    ("reason", "tool_name", "options"),
    [
        ("max_rounds", "lookup", {"max_rounds": 1}),
        ("tool_errors", "broken", {"max_consecutive_errors": 1}),
        ("tool_only_rounds", "lookup", {"max_tool_only_rounds": 1}),
    ],
)
def test_a_forced_final_answer_reads_its_row(reason: StopReason, tool_name: str, options) -> None:
    model = ScriptedModel(calling(tool_name))
    agent = Agent(model, tools=[lookup, broken], store=None, **options)
    events = list(agent.stream_sync("Weather in Oslo?"))
    statuses = [e.text for e in events if isinstance(e, Status)]
    row = STOPS[reason]

    assert agent.last_result is not None and agent.last_result.stop_reason == reason
    assert model.requests[-1].tool_choice == "none"
    assert model.requests[-1].final_instruction == row.instruction
    assert row.status in statuses
    assert statuses[-1] == f"Stopped: {row.words}"


def test_a_stopped_run_ends_with_its_rows_note_and_words() -> None:
    agent = Agent(ScriptedModel(["a long answer " * 50], delay=0.05), store=None, timeout=0.2)
    result = agent.run_sync("Talk")
    assert result.stop_reason == "timeout"
    assert result.output.endswith(STOPS["timeout"].note or "?")
    assert stop_reason_words(result.stop_reason) == STOPS["timeout"].words
