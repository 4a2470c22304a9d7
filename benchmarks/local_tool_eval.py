"""How well does the embedded model pick tools? An honest measurement.

Runs one model request per prompt through ``LocalProvider`` (the same request the
agent loop sends in its first round) over six realistic notebook tools, and
compares what came back with the known right answer:

* tool prompts: was the right tool called, with the right arguments?
* no-tool prompts (greetings, general knowledge): was a tool wrongly called?

A second request per tool prompt feeds the real tool result back and checks that
the answer then comes as text (not another call) and mentions the result.

Usage::

    python benchmarks/local_tool_eval.py            # SmolLM2-135M (model "local")
    python benchmarks/local_tool_eval.py --model local:/path/model.gguf --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from nbagent import tool
from nbagent.messages import Message, ToolResult, ToolRound
from nbagent.providers import get_provider
from nbagent.providers.base import ModelRequest, TextChunk, ToolCallReady
from nbagent.tools import Tool

# -- the tools a notebook user would plausibly write -----------------------------

CAPITALS = {
    "france": "Paris",
    "japan": "Tokyo",
    "kenya": "Nairobi",
    "peru": "Lima",
    "canada": "Ottawa",
    "egypt": "Cairo",
    "norway": "Oslo",
    "india": "New Delhi",
}

SALES = pd.DataFrame(
    {
        "region": ["north", "south", "east", "west", "north", "south", "east", "west"],
        "quarter": ["Q1", "Q1", "Q1", "Q1", "Q2", "Q2", "Q2", "Q2"],
        "revenue": [120.0, 95.5, 143.2, 88.0, 131.0, 101.3, 150.9, 92.4],
    }
)

FACTORS = {
    ("km", "mi"): 0.621371,
    ("mi", "km"): 1.609344,
    ("kg", "lb"): 2.204623,
    ("lb", "kg"): 0.453592,
    ("m", "ft"): 3.280840,
    ("ft", "m"): 0.3048,
}


@tool
def capital_of(country: str) -> str:
    """Look up the capital city of a country.

    Args:
        country: the country name, e.g. France
    """
    return CAPITALS.get(country.strip().lower(), f"unknown country {country}")


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product.

    Args:
        a: the first number
        b: the second number
    """
    return a * b


@tool
def add(a: float, b: float) -> float:
    """Add two numbers and return the sum.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


@tool
def total_revenue(region: str) -> float:
    """Total revenue of one sales region from the sales DataFrame.

    Args:
        region: one of north, south, east, west
    """
    return float(SALES.loc[SALES.region == region.lower(), "revenue"].sum())


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a value from one unit to another (km, mi, kg, lb, m, ft).

    Args:
        value: the number to convert
        from_unit: the unit of value, e.g. km
        to_unit: the unit to convert to, e.g. mi
    """
    return round(value * FACTORS[(from_unit, to_unit)], 3)


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name, e.g. Berlin
    """
    return f"{city}: 18 C, light rain"


TOOLS: list[Tool] = [capital_of, multiply, add, total_revenue, convert_units, get_weather]

# -- the cases ---------------------------------------------------------------------


@dataclass
class Case:
    prompt: str
    tool: str | None  # None: no tool should be called
    args: dict[str, Any] = field(default_factory=dict)


CASES = [
    Case("What is the capital of France?", "capital_of", {"country": "France"}),
    Case("Which city is the capital of Japan?", "capital_of", {"country": "Japan"}),
    Case("Look up the capital of Kenya.", "capital_of", {"country": "Kenya"}),
    Case("Tell me Peru's capital city.", "capital_of", {"country": "Peru"}),
    Case("capital of norway?", "capital_of", {"country": "Norway"}),
    Case("What is 17 times 23?", "multiply", {"a": 17, "b": 23}),
    Case("Multiply 4.5 by 8.", "multiply", {"a": 4.5, "b": 8}),
    Case("Compute 12 * 12.", "multiply", {"a": 12, "b": 12}),
    Case("What is the product of 250 and 3?", "multiply", {"a": 250, "b": 3}),
    Case("What is 1234 plus 4321?", "add", {"a": 1234, "b": 4321}),
    Case("Add 19.99 and 5.01.", "add", {"a": 19.99, "b": 5.01}),
    Case("What's the sum of 88 and 12?", "add", {"a": 88, "b": 12}),
    Case("Compute 700 + 45.", "add", {"a": 700, "b": 45}),
    Case("What is the total revenue of the north region?", "total_revenue", {"region": "north"}),
    Case(
        "How much revenue did the east region make in total?", "total_revenue", {"region": "east"}
    ),
    Case("Sum the sales revenue for the west region.", "total_revenue", {"region": "west"}),
    Case("Total revenue for south?", "total_revenue", {"region": "south"}),
    Case(
        "Convert 10 km to miles.",
        "convert_units",
        {"value": 10, "from_unit": "km", "to_unit": "mi"},
    ),
    Case(
        "How many pounds is 3 kg?",
        "convert_units",
        {"value": 3, "from_unit": "kg", "to_unit": "lb"},
    ),
    Case(
        "Convert 26.2 mi to km.",
        "convert_units",
        {"value": 26.2, "from_unit": "mi", "to_unit": "km"},
    ),
    Case(
        "How many feet are in 100 m?",
        "convert_units",
        {"value": 100, "from_unit": "m", "to_unit": "ft"},
    ),
    Case(
        "Convert 150 lb to kg please.",
        "convert_units",
        {"value": 150, "from_unit": "lb", "to_unit": "kg"},
    ),
    Case("What's the weather in Berlin?", "get_weather", {"city": "Berlin"}),
    Case("Is it raining in London right now?", "get_weather", {"city": "London"}),
    Case("Weather forecast for Tokyo today?", "get_weather", {"city": "Tokyo"}),
    Case("How warm is it in Madrid?", "get_weather", {"city": "Madrid"}),
    Case("Check the current weather in Oslo.", "get_weather", {"city": "Oslo"}),
    Case("What is the capital city of Egypt?", "capital_of", {"country": "Egypt"}),
    Case("Multiply 9 and 6 for me.", "multiply", {"a": 9, "b": 6}),
    Case("Convert 5 ft to m.", "convert_units", {"value": 5, "from_unit": "ft", "to_unit": "m"}),
    # no tool needed
    Case("Hello! How are you?", None),
    Case("Thanks, that was helpful.", None),
    Case("Write a haiku about autumn.", None),
    Case("What does the acronym CPU stand for?", None),
    Case("Who wrote Romeo and Juliet?", None),
    Case("Give me one tip for writing clean Python code.", None),
    Case("What is a Jupyter notebook?", None),
    Case("Say goodbye in French.", None),
    Case("What color is the sky on a clear day?", None),
    Case("Explain what a list is in Python in one sentence.", None),
]


def args_match(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Same keys for the expected arguments; strings compared case-insensitively,
    numbers within 1e-6."""
    for key, value in want.items():
        if key not in got:
            return False
        other = got[key]
        if isinstance(value, str):
            if not isinstance(other, str) or other.strip().lower() != value.lower():
                return False
        elif isinstance(other, bool) or not isinstance(other, int | float):
            return False
        elif abs(float(other) - float(value)) > 1e-6:
            return False
    return True


def key_fact(content: str) -> str:
    """What an answer built on this result must mention: its first number (without a
    trailing ".0"), else the whole result text."""
    match = re.search(r"-?\d+(?:\.\d+)?", content)
    if match is None:
        return content.strip()
    number = match.group(0)
    return number[:-2] if number.endswith(".0") else number


async def one_request(provider: Any, messages: list[Message]) -> tuple[str, list[Any], float]:
    request = ModelRequest(system=None, messages=messages, tools=[t.spec for t in TOOLS])
    started = time.perf_counter()
    text, calls = "", []
    async for event in provider.stream(request):
        if isinstance(event, TextChunk):
            text += event.text
        elif isinstance(event, ToolCallReady):
            calls.append(event.call)
    return text, calls, time.perf_counter() - started


async def evaluate(model: str, verbose: bool) -> dict[str, Any]:
    provider = get_provider(model)
    load_started = time.perf_counter()
    await asyncio.to_thread(provider.load)  # type: ignore[attr-defined]
    load_s = time.perf_counter() - load_started
    by_name = {t.name: t for t in TOOLS}
    rows = []
    for case in CASES:
        user = Message("user", case.prompt)
        text, calls, seconds = await one_request(provider, [user])
        call = calls[0] if calls else None
        row: dict[str, Any] = {
            "prompt": case.prompt,
            "want": case.tool,
            "got": call.name if call else None,
            "args": call.arguments if call else None,
            "text": text[:120],
            "seconds": seconds,
        }
        row["tool_ok"] = row["got"] == case.tool
        row["args_ok"] = bool(call and row["tool_ok"] and args_match(call.arguments, case.args))
        # Second round: feed the real result back; the model should now answer in text.
        if call is not None and call.name in by_name:
            try:
                value = by_name[call.name].fn(**call.arguments)
                result = ToolResult(call.id, call.name, True, str(value))
            except Exception as exc:  # a wrong unit pair, for instance
                result = ToolResult(call.id, call.name, False, f"Error: {exc}", str(exc))
            done = Message("assistant", "", rounds=[ToolRound(None, [call], [result])])
            text2, calls2, seconds2 = await one_request(provider, [user, done])
            row["followup_text"] = bool(text2.strip()) and not calls2
            row["followup_uses_result"] = result.ok and key_fact(result.content) in text2
            row["followup_seconds"] = seconds2
            row["followup"] = (text2 or str(calls2))[:160]
        rows.append(row)
        if verbose:
            mark = "ok " if row["tool_ok"] and (case.tool is None or row["args_ok"]) else "BAD"
            print(
                f"{mark} {seconds:5.2f}s {case.prompt!r:55} -> {row['got']} {row['args']} "
                f"{row['text'][:50]!r}",
                file=sys.stderr,
            )
    tool_rows = [r for r in rows if r["want"]]
    plain_rows = [r for r in rows if not r["want"]]
    follow = [r for r in rows if "followup_text" in r]
    pct = lambda part, whole: round(100.0 * part / whole, 1) if whole else 0.0  # noqa: E731
    round_seconds = [r["seconds"] for r in rows] + [r["followup_seconds"] for r in follow]
    return {
        "model": model,
        "cases": len(rows),
        "tool_cases": len(tool_rows),
        "no_tool_cases": len(plain_rows),
        "correct_tool_pct": pct(sum(r["tool_ok"] for r in tool_rows), len(tool_rows)),
        "correct_args_pct": pct(sum(r["args_ok"] for r in tool_rows), len(tool_rows)),
        "wrong_call_pct": pct(sum(r["got"] is not None for r in plain_rows), len(plain_rows)),
        "any_call_on_tool_prompt_pct": pct(
            sum(r["got"] is not None for r in tool_rows), len(tool_rows)
        ),
        "followup_answers_in_text_pct": pct(sum(r["followup_text"] for r in follow), len(follow)),
        "followup_uses_result_pct": pct(
            sum(r["followup_uses_result"] for r in follow), len(follow)
        ),
        "median_round_s": round(statistics.median(round_seconds), 3),
        "model_load_s": round(load_s, 3),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--json", help="also write the full results here")
    parser.add_argument("-q", "--quiet", action="store_true")
    options = parser.parse_args(argv)
    report = asyncio.run(evaluate(options.model, not options.quiet))
    summary = {k: v for k, v in report.items() if k != "rows"}
    print(json.dumps(summary, indent=2))
    if options.json:
        with open(options.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
