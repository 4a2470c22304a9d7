"""The embedded model states only figures it was given, and says plainly what failed."""

from __future__ import annotations

import re

import pytest

from nbagent import Agent, tool
from nbagent.messages import Message, ToolCall, ToolResult, ToolRound
from nbagent.providers.base import ModelRequest
from nbagent.providers.local import DOUBTFUL, FigureGuard, failure_answer
from nbagent.providers.local.honesty import KnownFigures, known_figures
from nbagent.render import footer_text

FIGURE = re.compile(r"\d+(?:[.,:/\-]\d+)*")


def guarded(known: KnownFigures | set[str], pieces: list[str]) -> str:
    guard = FigureGuard(known)
    return "".join(guard.feed(p) for p in pieces) + guard.flush()


def test_figures_nobody_gave_are_marked_even_when_split_across_tokens():
    request = ModelRequest(
        system=None,
        messages=[
            Message("user", "What is 1234 plus 4321?"),
            Message(
                "assistant",
                "",
                rounds=[
                    ToolRound(
                        None,
                        [ToolCall("c1", "add", {"a": 1234, "b": 4321})],
                        [ToolResult("c1", "add", True, "5555")],
                    )
                ],
            ),
        ],
    )
    known = known_figures(request)
    guard = FigureGuard(known)
    pieces = ["1234 + 43", "21 = 55", "67, so the answer is 5", "555."]
    text = "".join(guard.feed(p) for p in pieces) + guard.flush()
    # The invented figure stays visible, marked; the footer lists it (guard.doubtful).
    assert text == f"1234 + 4321 = 5567{DOUBTFUL}, so the answer is 5555."
    assert guard.doubtful == ["5567"]
    # Separators and trailing zeros do not make a given figure new.
    assert guarded({"1234.5"}, ["It is 1,234.50 ", "in total"]) == "It is 1,234.50 in total"
    # A list marker is not a claim; a date nobody gave is.
    assert guarded(set(), ["1. Paris\n2) Rome, since 1999"]) == (
        f"1. Paris\n2) Rome, since 1999{DOUBTFUL}"
    )


def _known(*texts: str) -> KnownFigures:
    known = KnownFigures()
    for text in texts:
        known.add_text(text)
    return known


def test_code_spans_code_blocks_and_urls_are_left_alone():
    known = _known("total_revenue = 22560.81")
    answer = [
        "Use `round(total_revenue, 2)` or\n```python\nsales.head(10)\n```\n",
        "see https://example.org/docs/v3/page?id=42 for more.",
    ]
    assert guarded(known, answer) == "".join(answer)


def test_figures_match_with_their_units_and_the_tools_rounding():
    tool = _known("10 km = 6.214 mile")
    # The tool's figure rounded, with the unit in the plural: given.
    assert guarded(tool, ["10 km ≈ 6.21 miles"]) == "10 km ≈ 6.21 miles"
    assert guarded(tool, ["about 6.2 miles"]) == "about 6.2 miles"
    # A figure the sources state with another unit is not vouched for by that unit.
    inventory = _known("sales: DataFrame 50 rows × 4 columns", "max 12.000000")
    guard = FigureGuard(inventory)
    text = "".join(guard.feed(p) for p in ["sales has 50 rows and 1", "2 columns."]) + guard.flush()
    assert text == f"sales has 50 rows and 12 columns{DOUBTFUL}."
    assert guard.doubtful == ["12 columns"]


def test_a_doubtful_figure_never_blanks_the_answer():
    # The whole answer is one figure nobody gave: it stays, marked, not a placeholder.
    assert guarded(set(), ["42"]) == f"42{DOUBTFUL}"


def test_failed_and_denied_calls_are_answered_in_plain_words_without_results():
    failed = ToolResult("c1", "revenue", False, "Error: database offline", "database offline")
    denied = ToolResult(
        "c2",
        "delete_rows",
        False,
        "Error: The user denied this call to delete_rows (denied by policy).",
        "The user denied this call to delete_rows (denied by policy).",
        approval="denied by policy",
    )
    assert failure_answer([failed]) == (
        "The tool revenue failed: database offline\n"
        "So I have no result to give you; I will not guess one."
    )
    assert failure_answer([denied]).startswith(  # type: ignore[union-attr]
        "The call to delete_rows was not run: The user denied this call"
    )
    ok = ToolResult("c3", "revenue", True, "42")
    assert failure_answer([failed, ok]) is None  # a result exists: the model answers


@tool
def quarterly_revenue(quarter: str) -> float:
    """Get the revenue of a quarter in dollars.

    Args:
        quarter: the quarter, e.g. Q3
    """
    raise ConnectionError("the sales database is offline")


@tool(requires_approval=True)
def delete_rows(table: str) -> str:
    """Delete all rows of a table.

    Args:
        table: the table name, e.g. sales
    """
    return "deleted"


@pytest.mark.local_model
def test_after_a_tool_error_the_real_model_states_no_revenue_figure():
    agent = Agent("local", tools=[quarterly_revenue])
    result = agent.run_sync("What was the revenue in Q3?")
    (tool_round,) = result.rounds
    assert [c.name for c in tool_round.calls] == ["quarterly_revenue"]
    assert not tool_round.results[0].ok
    assert "quarterly_revenue failed" in result.output
    assert "the sales database is offline" in result.output
    assert set(FIGURE.findall(result.output)) <= {"3"}  # only the Q3 of the question


@pytest.mark.local_model
def test_after_a_denied_call_the_real_model_says_it_was_not_run():
    agent = Agent("local", tools=[delete_rows], approver=lambda call, t: False)
    result = agent.run_sync("Delete all rows of the table sales.")
    (tool_round,) = result.rounds
    assert tool_round.results[0].approval and "denied" in tool_round.results[0].approval
    assert result.output.startswith("The call to delete_rows was not run")
    assert "deleted" not in result.output.replace("delete_rows", "")


@pytest.mark.local_model
def test_answers_show_only_given_figures_and_the_footer_says_small_offline_model():
    @tool
    def add(a: float, b: float) -> float:
        """Add two numbers and return the sum.

        Args:
            a: the first number
            b: the second number
        """
        return a + b

    result = Agent("local", tools=[add]).run_sync("What is 17 plus 25?")
    (tool_round,) = result.rounds
    assert tool_round.calls[0].name == "add"
    assert tool_round.calls[0].arguments == {"a": 17, "b": 25}
    assert tool_round.results[0].content == "42.0"
    allowed = {"17", "25", "42", "42.0", "0"}
    marked = re.findall(FIGURE.pattern + r"[^\[\n]*?" + re.escape(DOUBTFUL), result.output)
    unmarked = re.sub(FIGURE.pattern + r"[^\[\n]*?" + re.escape(DOUBTFUL), "", result.output)
    assert set(FIGURE.findall(unmarked)) <= allowed
    if marked:  # each marked figure is listed in the footer
        assert "figure" in footer_text(result) and DOUBTFUL in footer_text(result)
    footer = footer_text(result)
    assert "small offline model: check important answers" in footer
    assert re.search(r"load \d+\.\d · generated in \d+\.\d s \(\d threads?\)", footer)
