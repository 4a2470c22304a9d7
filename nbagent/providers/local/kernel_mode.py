"""``--kernel`` on the embedded model: only what a 135M model does reliably.

A 135M model cannot write pandas (issue 20: it invented a ``df``, wrote
``sales.sum()`` for ``sales['units'].sum()``, said "12 columns" of a 4-column
frame). So when a request offers the kernel toolset (:data:`KERNEL_TOOLS` are all
there), the embedded model:

* is offered only ``list_variables`` and ``inspect_variable`` (:func:`kernel_candidates`),
  chosen by the constrained decision step; a request it would answer without a tool
  gets the inventory (``list_variables``) instead of a free-written answer;
* names a variable of the kernel's inventory, never an invented one
  (:func:`variable_spec`: the ``name`` parameter becomes an enum of the inventory's
  names, the ones the request points at first);
* answers with the tool's result itself (:func:`result_answer`), not a rewrite, and
  says in one line (:data:`NO_CODE_NOTE`) why it does not run code and what to use.
"""

from __future__ import annotations

import json
import re

from ...messages import ToolRound, ToolSpec
from ..base import ModelRequest
from .answers import template_answer
from .routing import request_words, words

KERNEL_TOOLS = ("list_variables", "inspect_variable", "run_python")
"""Tool names that together mean "the kernel toolset is on" (``nbagent.kernel``)."""
RELIABLE = ("list_variables", "inspect_variable")
"""The kernel tools the embedded model is offered: they need no code written."""
NO_CODE_NOTE = (
    "The embedded 135M model does not write or run code (its pandas is unreliable), so it "
    "shows what the kernel tools return instead of computing; for computed answers and "
    "plots set a provider key (e.g. OPENAI_API_KEY) or start a local server (Ollama, LM Studio)."
)
_INVENTORY_HEAD = "Its variables now:"
# One inventory line: "sales: DataFrame 50 rows × 4 columns [region: str, month: int64]".
_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): (.*)$")


def is_kernel_request(request: ModelRequest) -> bool:
    """True when the request offers the kernel toolset."""
    names = {t.name for t in request.tools}
    return all(name in names for name in KERNEL_TOOLS)


def kernel_candidates(tools: list[ToolSpec]) -> list[ToolSpec]:
    """The reliable kernel tools among ``tools`` (never ``run_python``)."""
    return [t for t in tools if t.name in RELIABLE]


def inventory_entries(system: str) -> dict[str, str]:
    """Variable name -> its inventory description, read from the run's system message."""
    if _INVENTORY_HEAD not in system:
        return {}
    entries: dict[str, str] = {}
    for line in system.split(_INVENTORY_HEAD, 1)[1].splitlines():
        match = _ENTRY.match(line.strip())
        if match:
            entries[match.group(1)] = match.group(2)
    return entries


def ranked_variables(entries: dict[str, str], request_text: str) -> list[str]:
    """The inventory's names, those sharing words with the request first (a column, the name)."""
    asked = request_words(request_text)

    def overlap(name: str) -> int:
        return len(asked & set(words(name + " " + entries[name])))

    return sorted(entries, key=lambda name: -overlap(name))


def points_at_variable(request: ModelRequest, request_text: str) -> bool:
    """True when the request shares a word with one variable (its name or a column)."""
    entries = inventory_entries(request.system or "")
    asked = request_words(request_text)
    return any(asked & set(words(n + " " + entries[n])) for n in entries)


def pick_tool(
    chosen: ToolSpec | None, candidates: list[ToolSpec], request: ModelRequest, text: str
) -> ToolSpec | None:
    """The kernel tool to call: ``inspect_variable`` for a request about one variable.

    The decision step's choice otherwise; ``list_variables`` where it chose no tool
    (an answer about the kernel is never written freely).
    """
    by_name = {t.name: t for t in candidates}
    if "inspect_variable" in by_name and points_at_variable(request, text):
        chosen = by_name["inspect_variable"]
    if chosen is None:
        chosen = by_name.get("list_variables")
    return None if chosen is None else variable_spec(chosen, request, text)


def fixed_arguments(spec: ToolSpec) -> dict[str, object] | None:
    """The call's arguments when the schema leaves one choice each (None: the model writes them).

    ``list_variables`` takes none; ``inspect_variable`` with one matching variable
    takes its name: no generation is needed, so none is spent.
    """
    properties = spec.parameters.get("properties") or {}
    arguments: dict[str, object] = {}
    for name in spec.parameters.get("required") or []:
        values = (properties.get(name) or {}).get("enum") or []
        if len(values) != 1:
            return None
        arguments[name] = values[0]
    return arguments


def variable_spec(spec: ToolSpec, request: ModelRequest, request_text: str) -> ToolSpec:
    """``inspect_variable`` whose ``name`` must be a variable the request points at.

    The best-matching variable alone when one matches better than the rest; else
    every name of the inventory, for the model to choose among.
    """
    entries = inventory_entries(request.system or "")
    if not entries or spec.name != "inspect_variable":
        return spec
    ranked = ranked_variables(entries, request_text)
    asked = request_words(request_text)
    scores = [len(asked & set(words(n + " " + entries[n]))) for n in ranked]
    choice = ranked[:1] if len(scores) == 1 or scores[0] > scores[1] else ranked
    parameters = json.loads(json.dumps(spec.parameters))
    properties = parameters.setdefault("properties", {})
    properties["name"] = {**properties.get("name", {}), "type": "string", "enum": choice}
    properties.pop("rows", None)  # the default; a small model's row count is noise
    parameters["required"] = ["name"]
    return ToolSpec(spec.name, spec.description, parameters)


def result_answer(tool_round: ToolRound) -> str | None:
    """The answer after a kernel tool round: the results themselves and the one-line note."""
    shown = template_answer(tool_round, RELIABLE)
    return None if shown is None else shown + "\n\n" + NO_CODE_NOTE
