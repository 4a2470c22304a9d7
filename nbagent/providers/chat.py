"""The role/content message list that Chat Completions and Ollama's /api/chat share.

Both APIs take the same outline: the system prompt, the user turns as they are,
each assistant message expanded by the adapter (its rounds' calls and results in
that API's own form, then the answer), and the forced-final-answer prompt last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._internal.images import placeholders
from ..messages import Message
from .base import ModelRequest


def chat_messages(
    request: ModelRequest,
    expand_assistant: Callable[[Message, bool], list[dict[str, Any]]],
    expand_user: Callable[[Message], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The compact history as role/content messages (see providers/base.py).

    ``expand_assistant(message, send_images)`` expands an assistant turn and its
    rounds; ``expand_user`` encodes a user message that has images (``{fig}``), when the
    request sends images; otherwise the message's text names them.
    """
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role == "assistant":
            out += expand_assistant(message, request.send_images)
        elif message.images and not request.send_images:  # images off: the text names them
            text = "\n".join([message.content, *placeholders(message.images)])
            out.append({"role": message.role, "content": text})
        elif message.images and expand_user is not None:
            out.append(expand_user(message))
        else:
            out.append({"role": message.role, "content": message.content})
    if request.final_instruction:
        out.append({"role": "user", "content": request.final_instruction})
    return out
