"""ChatWidget: a chat panel for an Agent, built from plain ipywidgets.

Layout: a status line and New chat on top, the transcript (one HTML widget per
turn, made of the same round panels as ``%%agent``), approval rows for calls
that need the user's consent, and a text area with Send and Stop.

Generation runs as an ``asyncio`` task on the kernel's own event loop, driven
by the same live-run driver as ``%%agent`` (:class:`nbagent.live.LiveRun`): each
turn is a sink, so the throttle, the approval bridge, Stop and the stop text are
the cell's. The kernel keeps handling widget messages while the model streams:
Stop and Approve/Deny work mid-run. Every button calls the public method of the
same name; tests and scripts drive the widget through those methods.

Enter-to-send: ipywidgets' Textarea has no key events, so a few lines of
JavaScript (shipped once per page through a hidden Output widget) mark the
send key by appending an invisible sentinel character to the text; the value
then syncs through the normal widget state, and Python submits when it sees
the sentinel. Going through the value (instead of clicking Send from
JavaScript) avoids a race where the click reaches the kernel before the last
typed characters. Where the JavaScript cannot run (a front end that does not
execute ``application/javascript`` outputs), Enter inserts a newline and the
Send button still works.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .agent import Agent
from .kernel import current_view
from .kernel.display import code_html, code_of
from .kernel.errors import last_error_text
from .kernel.prompt import Interpolated, PromptError, interpolate_prompt
from .live import UPDATE_INTERVAL, LiveRun, stop_text
from .messages import ToolCall
from .render import APPROVAL_LIMIT, Transcript, call_signature, escape
from .results import RunResult

if TYPE_CHECKING:
    from .tools import Tool

__all__ = ["SEND_SENTINEL", "ChatWidget"]

SEND_SENTINEL = "\u2063"
"""Invisible separator appended by the front end when the send key is pressed."""

_SEND_KEYS = ("enter", "shift-enter")

# One capture-phase listener per page handles every ChatWidget on it: it runs
# before JupyterLab's shortcuts (Shift+Enter would run the cell) and before
# ipywidgets stops the event's propagation.
_KEY_SCRIPT = """
(function () {
  if (window.__nbagentChatKeys) { return; }
  window.__nbagentChatKeys = true;
  document.addEventListener('keydown', function (event) {
    if (event.key !== 'Enter' || event.isComposing || event.altKey) { return; }
    var area = event.target;
    if (!area || area.tagName !== 'TEXTAREA' || !area.closest('.nbagent-chat-input')) { return; }
    var chat = area.closest('.nbagent-chat');
    if (!chat) { return; }
    var shiftSends = chat.classList.contains('nbagent-send-shift-enter');
    var sends = (shiftSends ? event.shiftKey : !event.shiftKey) || event.ctrlKey || event.metaKey;
    event.stopPropagation();
    if (!sends) { return; }
    event.preventDefault();
    area.value = area.value + '__SENTINEL__';
    area.dispatchEvent(new Event('input', { bubbles: true }));
  }, true);
})();
""".replace("__SENTINEL__", SEND_SENTINEL)

_STYLE = """
<style>
.nbagent-chat .nbagent-turn { margin: 6px 0 10px 0; }
.nbagent-chat .nbagent-user {
  background: var(--jp-layout-color2, #f3f3f3); color: var(--jp-ui-font-color1, #222);
  border-radius: 6px; padding: 6px 10px; margin-bottom: 6px; white-space: pre-wrap;
}
.nbagent-chat .nbagent-user-label { font-weight: 600; font-size: 0.85em; opacity: 0.8; }
.nbagent-chat .nbagent-chat-error { color: var(--jp-error-color1, #c62828); white-space: pre-wrap; }
</style>
"""


class _Turn:
    """One user message and the agent's reply: the live driver's sink for this turn.

    Its view is made of the same panels as ``%%agent`` (the transcript escapes
    everything the model and the tools produced). A turn dropped by New chat keeps
    running to its (cancelled) end but no longer touches the widget.
    """

    interval = UPDATE_INTERVAL

    def __init__(self, chat: ChatWidget, prompt: str, fields: Interpolated | None = None) -> None:
        self.chat = chat
        self.prompt = prompt
        self.note = fields.summary() if fields is not None else None
        """What was sent in place of shortened ``{name}`` values, shown under the message."""
        self.view = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.view.add_class("nbagent-turn-view")
        sent = fields.text if fields is not None else prompt
        overrides = {"attachments": fields.images} if fields is not None and fields.images else {}
        self.run = LiveRun(chat.agent, sent, self, overrides=overrides)
        self.error: str | None = None
        self._status = ""

    @property
    def transcript(self) -> Transcript:
        return self.run.transcript

    @property
    def result(self) -> RunResult | None:
        return self.run.result

    def html(self) -> str:
        parts = [
            '<div class="nbagent-turn">',
            '<div class="nbagent-user"><div class="nbagent-user-label">You</div>',
            escape(self.prompt),
            "</div>",
        ]
        if self.note:
            parts.append(f'<div class="nbagent-sent-note">{escape(self.note)}</div>')
        parts += [
            self.transcript.html(),
        ]
        if self.error:
            parts.append(f'<div class="nbagent-chat-error">{escape(self.error)}</div>')
        parts.append("</div>")
        return "".join(parts)

    def draw(self) -> None:
        self.view.value = self.html()

    # -- the sink ----------------------------------------------------------------------

    def start(self, transcript: Transcript) -> None:
        if self.chat._is_current(self):
            self.draw()

    def update(self, transcript: Transcript) -> None:
        if not self.chat._is_current(self):
            return  # new_chat() dropped this turn: finish quietly
        # The run's status line; "Waiting for approval" stays while a question is open.
        if transcript.status and transcript.status != self._status:
            self._status = transcript.status
            if not self.chat.pending_approvals:
                self.chat.status.value = transcript.status
        self.draw()

    async def ask(self, call: ToolCall, tool: Tool) -> tuple[bool, str]:
        return await self.chat._ask_user(call)

    def finish(self, transcript: Transcript, *, error: BaseException | None) -> None:
        if not self.chat._is_current(self):
            return
        self.chat._turn_finished(self, error)


class ChatWidget(widgets.VBox):
    """A chat panel for an :class:`~nbagent.Agent`.

    Example::

        chat = ChatWidget(model="openai:gpt-4o-mini", tools=[lookup])
        chat                      # shows the panel; type and press Enter
        chat.submit("Hi")         # the same as typing "Hi" and clicking Send

    Args:
        agent: the agent to chat with; when None one is built from ``agent_options``
            (the arguments of :class:`~nbagent.Agent`: ``model``, ``tools``, ``system``...).
        send_on: ``"enter"`` (Enter sends, Shift+Enter starts a new line) or
            ``"shift-enter"`` (the reverse). Ctrl/Cmd+Enter always sends.
        height: CSS max-height of the transcript, which scrolls.

    Tools with ``requires_approval=True`` get Approve/Deny buttons while their
    call waits; :meth:`approve` and :meth:`deny` do the same from Python.
    """

    def __init__(
        self,
        agent: Agent | None = None,
        *,
        send_on: str = "enter",
        height: str = "520px",
        **agent_options: Any,
    ) -> None:
        if send_on not in _SEND_KEYS:
            raise ValueError(f"send_on must be one of {_SEND_KEYS}, not {send_on!r}")
        if agent is not None and agent_options:
            raise TypeError(
                "pass either an Agent or Agent options "
                f"({', '.join(sorted(agent_options))}), not both"
            )
        self.agent = agent if agent is not None else Agent(**agent_options)
        self.send_on = send_on
        self.turns: list[_Turn] = []
        self.task: asyncio.Task[RunResult | None] | None = None
        self.last_result: RunResult | None = None
        self._pending: dict[str, tuple[ToolCall, asyncio.Future[bool], widgets.Widget]] = {}
        self._allowed_this_run: set[str] = set()

        self.status = widgets.Label("Ready", layout=widgets.Layout(flex="1 1 auto"))
        self.status.add_class("nbagent-chat-status")
        self.new_chat_button = widgets.Button(description="New chat", tooltip="Start over")
        self.new_chat_button.add_class("nbagent-chat-new")
        self.transcript = widgets.VBox(layout=widgets.Layout(width="100%", flex="0 0 auto"))
        self.transcript.add_class("nbagent-chat-transcript")
        # A column-reverse scroller starts scrolled to its bottom and stays there as
        # turns grow (the browser anchors it), without any JavaScript.
        scroller = widgets.Box(
            [self.transcript],
            layout=widgets.Layout(
                display="flex",
                flex_flow="column-reverse",
                max_height=height,
                overflow="auto",
                width="100%",
            ),
        )
        scroller.add_class("nbagent-chat-scroller")
        self.approvals = widgets.VBox()
        self.approvals.add_class("nbagent-chat-approvals")
        self.input = widgets.Textarea(
            placeholder=(
                "Message (Enter to send, Shift+Enter for a new line)"
                if send_on == "enter"
                else "Message (Shift+Enter to send, Enter for a new line)"
            ),
            rows=3,
            layout=widgets.Layout(flex="1 1 auto", width="auto"),
        )
        self.input.add_class("nbagent-chat-input")
        self.send_button = widgets.Button(description="Send", button_style="primary")
        self.send_button.add_class("nbagent-chat-send")
        self.stop_button = widgets.Button(description="Stop", disabled=True)
        self.stop_button.add_class("nbagent-chat-stop")
        keys = widgets.Output(layout=widgets.Layout(display="none"))
        keys.append_display_data(_javascript(_KEY_SCRIPT))

        self.send_button.on_click(lambda _b: self._send_from_input())
        self.stop_button.on_click(lambda _b: self.stop())
        self.new_chat_button.on_click(lambda _b: self.new_chat())
        self.input.observe(self._on_input, names="value")

        super().__init__(
            [
                widgets.HTML(_STYLE),
                widgets.HBox([self.status, self.new_chat_button]),
                scroller,
                self.approvals,
                widgets.HBox(
                    [self.input, widgets.VBox([self.send_button, self.stop_button])],
                    layout=widgets.Layout(width="100%"),
                ),
                keys,
            ],
            layout=widgets.Layout(width="100%"),
        )
        self.add_class("nbagent-chat")
        self.add_class(f"nbagent-send-{send_on}")

    def __repr__(self) -> str:
        return f"ChatWidget(agent={self.agent!r}, turns={len(self.turns)}, busy={self.busy})"

    # -- public API (each button calls one of these) -------------------------------

    @property
    def busy(self) -> bool:
        """True while a reply is being generated."""
        return self.task is not None and not self.task.done()

    @property
    def pending_approvals(self) -> list[ToolCall]:
        """Calls waiting for :meth:`approve` or :meth:`deny`, oldest first."""
        return [call for call, _future, _row in self._pending.values()]

    def submit(self, text: str) -> asyncio.Task[RunResult | None] | None:
        """Send ``text`` as the next user message (what Send does with the text area).

        Returns the generation task (``await`` it for the RunResult), or None when
        ``text`` is blank. Raises RuntimeError while a reply is still being generated.
        """
        if self.busy:
            raise RuntimeError("ChatWidget is still answering; call stop() first")
        text = text.strip()
        if not text:
            return None
        fields = _interpolate(text)
        if isinstance(fields, str):  # a {name} that is not defined: say so, send nothing
            self.status.value = fields
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "ChatWidget.submit needs a running event loop (a Jupyter kernel or an "
                "async function); in a plain script use Agent.run_sync"
            ) from None
        turn = _Turn(self, text, fields)
        self._allowed_this_run.clear()
        self.turns.append(turn)
        self.transcript.children = (*self.transcript.children, turn.view)
        turn.draw()
        self._set_busy(True)
        self.status.value = "Sending…"
        self.task = loop.create_task(self._generate(turn))
        return self.task

    def stop(self) -> None:
        """Stop the reply being generated (the Stop button).

        The partial reply stays, marked cancelled; the conversation stays valid for the
        next message.
        """
        if not self.busy:
            return
        self.status.value = "Stopping…"
        self.turns[-1].run.cancel()
        # A call waiting for approval is cancelled with the run; drop its buttons now.
        self._clear_approvals()

    def approve(self, call_id: str) -> None:
        """Let the waiting call ``call_id`` run (its Approve button)."""
        self._decide(call_id, True)

    def allow_for_run(self, call_id: str) -> None:
        """Approve ``call_id`` and every later call of the same tool in this run."""
        entry = self._pending.get(call_id)
        if entry is not None:
            self._allowed_this_run.add(entry[0].name)
        self._decide(call_id, True)

    def deny(self, call_id: str) -> None:
        """Refuse the waiting call ``call_id`` (its Deny button); the model sees an error."""
        self._decide(call_id, False)

    def new_chat(self) -> None:
        """Stop any reply, clear the transcript and start a fresh conversation."""
        # The old task still finishes its cancelled run (quickly), but it no longer
        # touches the widgets: _is_current() is false once the task is detached.
        self.stop()
        self.task = None
        self._clear_approvals()
        self.agent.reset()
        self.turns = []
        self.last_result = None
        self.transcript.children = ()
        self.input.value = ""
        self._set_busy(False)
        self.status.value = "New chat"

    # -- generation ----------------------------------------------------------------

    async def _generate(self, turn: _Turn) -> RunResult | None:
        """Run one turn through the live driver; a failed run is shown, not raised."""
        try:
            return await turn.run.run_async()
        except Exception:  # a provider error: the turn shows it, the widget stays usable
            return turn.result

    def _is_current(self, turn: _Turn) -> bool:
        """True while ``turn`` is the one being generated (not dropped by new_chat)."""
        return bool(self.turns) and self.turns[-1] is turn and self.task is not None

    def _turn_finished(self, turn: _Turn, error: BaseException | None) -> None:
        """The turn's run ended: free the buttons, say how it ended."""
        self._clear_approvals()
        self._set_busy(False)
        result = turn.result
        self.last_result = result
        if error is not None:
            turn.error = f"{type(error).__name__}: {error}"
            self.status.value = "Error"
        elif result is not None:
            self.status.value = stop_text(result)
        turn.draw()

    # -- approval ------------------------------------------------------------------

    async def _ask_user(self, call: ToolCall) -> tuple[bool, str]:
        """Wait for Approve/Deny (buttons or methods) on ``call``."""
        if call.name in self._allowed_this_run:
            return True, "user (allowed for this run)"
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        row = self._approval_row(call)
        self._pending[call.id] = (call, future, row)
        self.approvals.children = (*self.approvals.children, row)
        self.status.value = f"Waiting for approval: {call.name}"
        try:
            approved = await future
        finally:
            self._remove_approval(call.id)
        self.status.value = f"{'Approved' if approved else 'Denied'}: {call.name}"
        return approved, "user"

    def _approval_row(self, call: ToolCall) -> widgets.Widget:
        question = widgets.Label(
            f"Allow {call_signature(call, limit=APPROVAL_LIMIT)}?",
            layout=widgets.Layout(flex="1 1 auto"),
        )
        approve = widgets.Button(description="Approve", button_style="success")
        approve.add_class("nbagent-chat-approve")
        deny = widgets.Button(description="Deny", button_style="danger")
        deny.add_class("nbagent-chat-deny")
        approve.on_click(lambda _b: self.approve(call.id))
        deny.on_click(lambda _b: self.deny(call.id))
        code = code_of(call)
        if code is None:
            row: widgets.Widget = widgets.HBox([question, approve, deny])
            row.add_class("nbagent-chat-approval")
            return row
        # run_python: the code, highlighted, before it runs; and "allow for this run"
        question.value = f"Allow {call.name} to run this code?"
        allow = widgets.Button(
            description="Allow for this run", layout=widgets.Layout(width="auto")
        )
        allow.add_class("nbagent-chat-allow-run")
        allow.on_click(lambda _b: self.allow_for_run(call.id))
        preview = widgets.HTML(code_html(code), layout=widgets.Layout(width="100%"))
        preview.add_class("nbagent-chat-approval-code")
        row = widgets.VBox([preview, widgets.HBox([question, approve, allow, deny])])
        row.add_class("nbagent-chat-approval")
        return row

    def _decide(self, call_id: str, approved: bool) -> None:
        entry = self._pending.get(call_id)
        if entry is None:
            waiting = ", ".join(self._pending) or "none"
            raise KeyError(f"no call {call_id!r} is waiting for approval (waiting: {waiting})")
        _call, future, _row = entry
        if not future.done():
            future.set_result(approved)
        self._remove_approval(call_id)

    def _remove_approval(self, call_id: str) -> None:
        entry = self._pending.pop(call_id, None)
        if entry is not None:
            row = entry[2]
            self.approvals.children = tuple(c for c in self.approvals.children if c is not row)

    def _clear_approvals(self) -> None:
        for _call, future, _row in self._pending.values():
            if not future.done():
                future.cancel()
        self._pending.clear()
        self.approvals.children = ()

    # -- input ---------------------------------------------------------------------

    def _send_from_input(self) -> None:
        """The Send button: submit the text area's content and clear it."""
        text = self.input.value.replace(SEND_SENTINEL, "")
        if self.busy:
            self.input.value = text
            self.status.value = "Still answering: press Stop first"
            return
        self.input.value = "" if self.submit(text) is not None else text

    def _on_input(self, change: dict[str, Any]) -> None:
        if SEND_SENTINEL in (change.get("new") or ""):
            self._send_from_input()

    def _set_busy(self, busy: bool) -> None:
        self.send_button.disabled = busy
        self.stop_button.disabled = not busy


def _interpolate(text: str) -> Interpolated | str:
    """``{name}`` fields from the kernel's namespace (an error message if one is undefined)."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    if shell is None or "{" not in text:
        return Interpolated(text)
    try:
        return interpolate_prompt(
            text, shell.user_ns, last_error=lambda: last_error_text(current_view(shell))
        )
    except PromptError as exc:
        return str(exc)


def _javascript(code: str) -> Any:
    from IPython.core.display import Javascript

    return Javascript(code)
