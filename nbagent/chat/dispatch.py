"""The page's messages to the chat: each key or button calls one public method.

``chat.js`` sends ``{"kind": ..., ...}``; :func:`handle` calls the
:class:`~nbagent.chat.ChatWidget` method of that name. What the user cannot do
right now (a bad model string, an image too big, a figure that is not one) shows
in the status line instead of raising in the kernel's comm handler.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError
from ..messages import ToolCall
from .controls import limits_of

if TYPE_CHECKING:
    from ..agent import Agent

_DECISIONS = ("approve", "allow_for_run", "always_allow", "deny")


class ChatMethods(Protocol):
    """The methods of :class:`~nbagent.chat.ChatWidget` the page's messages call."""

    agent: Agent
    status: str
    busy: bool
    model_name: str
    limits: dict[str, Any]

    @property
    def pending_approvals(self) -> list[ToolCall]: ...  # noqa: D102

    def send(self, content: dict[str, Any]) -> None: ...  # noqa: D102
    def submit(self, text: str) -> asyncio.Task[Any] | None: ...  # noqa: D102
    def edit(self, turn: int, text: str) -> asyncio.Task[Any] | None: ...  # noqa: D102
    def regenerate(self) -> asyncio.Task[Any] | None: ...  # noqa: D102
    def switch_branch(self, turn: int, step: int = 1) -> None: ...  # noqa: D102
    def use_model(self, model: str) -> None: ...  # noqa: D102
    def set_limits(self, **changes: Any) -> None: ...  # noqa: D102
    def stop(self) -> None: ...  # noqa: D102
    def new_chat(self) -> None: ...  # noqa: D102
    def open_conversation(self, conversation_id: str) -> None: ...  # noqa: D102
    def refresh_recent(self) -> None: ...  # noqa: D102
    def attach_image(self, data: bytes) -> None: ...  # noqa: D102
    def attach_figure(self, name: str) -> None: ...  # noqa: D102
    def remove_attachment(self, index: int) -> None: ...  # noqa: D102
    def put_in_variable(self, call_id: str, name: str) -> None: ...  # noqa: D102
    def insert_cell(self, code: str) -> str: ...  # noqa: D102
    def complete(self, prefix: str) -> list[dict[str, str]]: ...  # noqa: D102
    def explain_last_error(self) -> asyncio.Task[Any] | None: ...  # noqa: D102
    def revoke(self, tool_name: str) -> None: ...  # noqa: D102


def handle(chat: ChatMethods, content: Any, buffers: Any) -> None:
    """Run the method a key or button in the page asked for."""
    if not isinstance(content, dict):
        return
    kind = content.get("kind")
    if kind == "submit":
        submit_from_page(chat, str(content.get("text", "")))
    elif kind in ("edit", "branch", "regenerate"):
        branch_from_page(chat, content)
    elif kind in _DECISIONS:
        call_id = str(content.get("id", ""))
        if any(c.id == call_id for c in chat.pending_approvals):  # a second click: nothing
            getattr(chat, kind)(call_id)
    elif kind in ("model", "limits"):
        try:
            if kind == "model":
                chat.use_model(str(content.get("model", "")))
            else:
                chat.set_limits(**dict(content.get("limits") or {}))
        except (ConfigError, ValueError, TypeError) as error:
            chat.status = str(error)
            chat.model_name, chat.limits = chat.agent.model, limits_of(chat.agent)
    else:
        _simple(chat, kind, content, buffers)


def _simple(chat: ChatMethods, kind: Any, content: dict[str, Any], buffers: Any) -> None:
    """The messages that call one method, a refusal shown in the status line."""
    try:
        if kind == "stop":
            chat.stop()
        elif kind == "new_chat":
            chat.new_chat()
        elif kind == "open":
            chat.open_conversation(str(content.get("id", "")))
        elif kind == "refresh_recent":
            chat.refresh_recent()
        elif kind == "attach_image":
            chat.attach_image(buffers[0] if buffers else b"")
        elif kind == "attach_figure":
            chat.attach_figure(str(content.get("name", "")))
        elif kind == "remove_attachment":
            chat.remove_attachment(int(content.get("index", -1)))
        elif kind == "put_variable":
            chat.put_in_variable(str(content.get("id", "")), str(content.get("name", "")))
        elif kind == "insert_cell":
            chat.insert_cell(str(content.get("code", "")))
        elif kind == "complete":
            chat.complete(str(content.get("prefix", "")))
        elif kind == "explain_error":
            if not chat.busy:
                chat.explain_last_error()
        elif kind == "revoke":
            chat.revoke(str(content.get("tool", "")))
    except ValueError as error:
        chat.status = str(error)


def submit_from_page(chat: ChatMethods, text: str) -> None:
    """Enter or Send: submit; when that cannot happen, give the text back to the box."""
    if chat.busy:
        chat.status = "Still answering: press Stop first"
        chat.send({"kind": "restore", "text": text})
        return
    if chat.submit(text) is None and text.strip():
        chat.send({"kind": "restore", "text": text})


def branch_from_page(chat: ChatMethods, content: dict[str, Any]) -> None:
    """An edited message sent, or a turn's branch arrow clicked."""
    try:
        turn = int(content.get("turn", -1))
        if content.get("kind") == "regenerate":
            chat.regenerate()
        elif content.get("kind") == "branch":
            chat.switch_branch(turn, 1 if int(content.get("step", 1)) > 0 else -1)
        elif chat.edit(turn, str(content.get("text", ""))) is None:
            chat.send({"kind": "restore", "text": str(content.get("text", ""))})
    except (RuntimeError, ValueError, IndexError) as error:
        chat.status = str(error)
