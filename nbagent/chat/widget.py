"""ChatWidget: a chat panel for an Agent, an anywidget with an ES module front end.

The Python object holds the state the page draws (synced traits): the finished
turns, the turn being streamed (``live``), the status line, whether a reply is
running, and the calls waiting for approval. Because the page draws from these
traits, reloading the page with the kernel alive shows the whole chat, including
a run still streaming.

The front end (``chat.js``) owns the keys: Enter sends, Shift+Enter adds a
newline, Up in an empty box brings back the last message, Esc stops. Every key
and button sends one message (``{"kind": "submit", "text": ...}``) that calls the
public method of the same name here (:mod:`.dispatch`); tests and scripts drive
the widget through those methods.

Generation runs as an ``asyncio`` task on the kernel's own event loop, driven by
the same live-run driver as ``%%agent`` (:class:`nbagent.live.LiveRun`): the
throttle, the approval bridge, Stop and the stop text are the cell's. The kernel
keeps handling widget messages while the model streams.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..agent import Agent
from ..kernel import current_view
from ..kernel.propose import CELL_INSERTER
from ..live import stop_text
from ..messages import Conversation, ToolCall
from ..results import RunResult
from ..store.tree import mark_shown, shown_branch, start_branch
from .branches import branch_from, points_of, position_of_turn, with_branches
from .cells import cell_inserter
from .controls import approval_state, limits_of, set_limits, settle, totals_of
from .dispatch import handle
from .figures import figure_image
from .history import keep_typed, latest_id, store_of, turns_of
from .inputs import Attachments, assign, find_value, interpolate
from .mentions import suggestions
from .turn import Turn
from .twin import StaticTwin

__all__ = ["ChatWidget"]

_HERE = Path(__file__).parent
_SEND_KEYS = ("enter", "shift-enter")


class ChatWidget(anywidget.AnyWidget):
    """A chat panel for an :class:`~nbagent.Agent`.

    Example::

        chat = ChatWidget(model="openai:gpt-4o-mini", tools=[lookup])
        chat                      # shows the panel; type and press Enter
        chat.submit("Hi")         # the same as typing "Hi" and pressing Enter

    Args:
        agent: the agent to chat with; when None one is built from ``agent_options``
            (the arguments of :class:`~nbagent.Agent`: ``model``, ``tools``, ``system``...).
        conversation: the id (or a unique prefix) of a stored conversation to open,
            e.g. after a kernel restart; the agent continues it (the branch shown last
            when it has several: see :meth:`edit`).
        send_on: ``"enter"`` (Enter sends, Shift+Enter starts a new line) or
            ``"shift-enter"`` (the reverse). Ctrl/Cmd+Enter always sends.
        height: CSS max-height of the transcript, which scrolls.

    Tools with ``requires_approval=True`` get Approve/Deny buttons while their
    call waits; :meth:`approve`, :meth:`allow_for_run` and :meth:`deny` do the
    same from Python. :meth:`edit`, :meth:`regenerate` and :meth:`switch_branch`
    are the Edit, Regenerate and "‹ 2/3 ›" buttons; :meth:`insert_cell` is a code
    block's "Insert as cell" (the model's ``propose_cell`` goes the same way), and
    :meth:`attach_figure` a figure picked among the ``@`` suggestions.
    """

    _esm = _HERE / "chat.js"
    _css = _HERE / "chat.css"

    turns = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Finished turns, oldest first: ``{"prompt": str, "html": str}`` each, and
    ``"branch": {"label": "2/3", "index", "count"}`` where the turn was edited."""
    live = traitlets.Dict().tag(sync=True)
    """The turn being generated (same shape as a finished turn), or ``{}``."""
    status = traitlets.Unicode("Ready").tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)
    """True while a reply is being generated."""
    approvals = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Calls waiting for an answer: ``{"id", "question", "code_html"}`` each."""
    recent = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Recent stored conversations to reopen: ``{"id", "title", "updated"}`` each."""
    conversation_id = traitlets.Unicode("").tag(sync=True)
    """The id of the conversation shown (the history store's)."""
    always_allowed = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """Tools this conversation runs without asking ("Always allow"), shown; revocable."""
    suggestions = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``@name`` completions for the box: ``{"name", "kind", "detail"}`` each (:meth:`complete`)."""
    attachments = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Images for the next message (pasted, dropped, figures): ``{"label", "thumb"}`` each."""
    model_name = traitlets.Unicode("").tag(sync=True)
    """The agent's model, as the model picker shows it (:meth:`use_model` changes it)."""
    limits = traitlets.Dict().tag(sync=True)
    """``{"max_rounds", "max_cost"}`` of the next turns (:meth:`set_limits` changes them)."""
    totals = traitlets.Dict().tag(sync=True)
    """The conversation's ``{"tokens", "cost"}`` so far."""
    send_on = traitlets.Unicode("enter").tag(sync=True)
    height = traitlets.Unicode("520px").tag(sync=True)

    def __init__(
        self,
        agent: Agent | None = None,
        *,
        conversation: str | None = None,
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
        super().__init__(send_on=send_on, height=height)
        if agent is None:
            agent = (
                Agent(**agent_options)
                if conversation is None
                else Agent.resume(conversation, **agent_options)
            )
        elif conversation is not None:
            store = store_of(agent)
            agent.conversation = store.load(shown_branch(store, store.resolve_id(conversation)))
        self.agent = agent
        self.history: list[Turn] = []
        """Every turn of this chat, the one being generated last."""
        self.task: asyncio.Task[RunResult | None] | None = None
        self.last_result: RunResult | None = None
        self._pending: dict[str, tuple[ToolCall, asyncio.Future[bool]]] = {}
        self._allowed_this_run: set[str] = set()
        self._always: dict[str, list[str]] = {}  # conversation id -> tools always allowed
        self._attachments = Attachments()
        self.twin = StaticTwin()
        """The static HTML transcript shown next to the widget for viewers without a kernel."""
        self._cells = cell_inserter()  # made now, so its front end is ready by the first click
        self.on_msg(lambda _widget, content, buffers: handle(self, content, buffers))
        self._show_conversation(recent=conversation is not None)

    @classmethod
    def resume(cls, conversation_id: str | None = None, **options: Any) -> ChatWidget:
        """A chat continuing a stored conversation (the latest one when no id is given).

        ``options`` are :class:`ChatWidget`'s and :class:`~nbagent.Agent`'s (``store``,
        ``tools``, ``model``...); the model defaults to the one the conversation used.
        """
        return cls(conversation=conversation_id or latest_id(options), **options)

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Show the widget and, next to it, its static HTML twin (see :mod:`.twin`)."""
        from IPython.display import display

        bundle = self._repr_mimebundle_(**kwargs)  # anywidget: (data, metadata)
        if bundle is not None:
            display(bundle[0], metadata=bundle[1], raw=True)
        self.twin.show(self.turns)

    def __repr__(self) -> str:
        return f"ChatWidget(agent={self.agent!r}, turns={len(self.history)}, busy={self.busy})"

    # -- public API (each key and button calls one of these) ------------------------

    @property
    def pending_approvals(self) -> list[ToolCall]:
        """Calls waiting for :meth:`approve` or :meth:`deny`, oldest first."""
        return [call for call, _future in self._pending.values()]

    @property
    def transcript_html(self) -> str:
        """The whole transcript as the page draws it, the live turn included."""
        return "".join(t["html"] for t in [*self.turns, self.live] if t)

    def submit(self, text: str) -> asyncio.Task[RunResult | None] | None:
        """Send ``text`` as the next user message (what Enter and Send do).

        Returns the generation task (``await`` it for the RunResult), or None when
        ``text`` is blank or names an undefined ``{name}`` (the status says which).
        Raises RuntimeError while a reply is still being generated.
        """
        return self._start(text)

    def edit(self, turn: int, text: str) -> asyncio.Task[RunResult | None] | None:
        """Send ``text`` in place of turn ``turn``'s message (0-based), as a new branch.

        The turns before it stay; the ones after it stay in the branch they belong to,
        which the "2/3" arrows (:meth:`switch_branch`) show again. Returns the generation
        task, or None as :meth:`submit` does.
        """
        conversation = self.agent.conversation
        position = position_of_turn(conversation, turn)
        return self._start(text, branch=(conversation, position))

    def regenerate(self) -> asyncio.Task[RunResult | None] | None:
        """Answer the last message again, as a sibling branch of the last answer."""
        if not self.turns:
            raise RuntimeError("nothing to regenerate: the chat has no turns yet")
        return self.edit(len(self.turns) - 1, str(self.turns[-1]["prompt"]))

    def switch_branch(self, turn: int, step: int = 1) -> None:
        """Show the next (``step=1``) or previous (``-1``) branch at turn ``turn``.

        What the turn's "2/3" arrows do. The next message continues the branch shown,
        and so does :meth:`~nbagent.Agent.resume` after a restart.
        """
        if self.busy:
            raise RuntimeError("ChatWidget is still answering; call stop() first")
        conversation = self.agent.conversation
        point = points_of(self.agent.store, conversation).get(position_of_turn(conversation, turn))
        if point is None:
            raise ValueError(f"turn {turn} has no other branch")
        self.open_conversation(point.targets[(point.index + step) % len(point.targets)])

    def _start(
        self, text: str, branch: tuple[Conversation, int] | None = None
    ) -> asyncio.Task[RunResult | None] | None:
        """Start a turn: a new message, or (``branch``) one in place of an earlier one."""
        if self.busy:
            raise RuntimeError("ChatWidget is still answering; call stop() first")
        text = text.strip()
        if not text:
            return None
        fields = interpolate(text)
        if isinstance(fields, str):  # a {name} that is not defined: say so, send nothing
            self.status = fields
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "ChatWidget.submit needs a running event loop (a Jupyter kernel or an "
                "async function); in a plain script use Agent.run_sync"
            ) from None
        target = None
        if branch is not None:
            source, position = branch
            target = branch_from(source, position)
            if self.agent.store is not None:
                start_branch(self.agent.store, target.id, source.id, position)
        images = self._attachments.take()
        self.attachments = []
        turn = Turn(self, text, fields, conversation=target, images=images)
        self._allowed_this_run.clear()
        self.history.append(turn)
        if target is not None:  # the page shows the turns the branch keeps
            self.turns = turns_of(target, self.agent.store)
            self.conversation_id = target.id
        self.live = turn.state()
        self.busy = True
        self.status = "Sending…"
        self.task = loop.create_task(self._generate(turn))
        return self.task

    def complete(self, prefix: str) -> list[dict[str, str]]:
        """Kernel variables and tools whose name starts with ``prefix``, for ``@`` mentions.

        Sets (and returns) :attr:`suggestions`, which the page lists under the box. A
        mentioned variable is sent as a ``{name}`` field would be. Runs no user code.
        """
        from IPython.core.getipython import get_ipython

        shell = get_ipython()
        view = current_view(shell) if shell is not None else None
        tools = list(self.agent.tools) if self.agent.tools else []
        found = suggestions(view, tools, prefix) if view is not None else []
        if view is None:
            found = [{"name": n, "kind": "tool", "detail": "tool"} for n in sorted(tools)]
            found = [f for f in found if f["name"].lower().startswith(prefix.lower())]
        self.suggestions = found
        return found

    def attach_image(self, data: bytes) -> None:
        """Send a PNG or JPEG image with the next message (pasting or dropping one).

        Raises:
            ValueError: over the size cap, too many images, or not PNG/JPEG.
        """
        self._attachments.add(bytes(data))
        self.attachments = self._attachments.state()

    def remove_attachment(self, index: int) -> None:
        """Take back the waiting image at ``index`` (its × in the page)."""
        self._attachments.remove(index)
        self.attachments = self._attachments.state()

    def use_model(self, model: str) -> None:
        """Answer the next messages with ``model`` (the model picker), keeping the chat.

        Raises:
            ConfigError: an unknown provider or a missing key; the model stays as it was.
        """
        self.agent.use_model(model.strip())
        self.model_name = self.agent.model

    def set_limits(self, **changes: Any) -> None:
        """Change ``max_rounds`` and/or ``max_cost`` (None: no cap) for the next turns."""
        set_limits(self.agent, changes)
        self.limits = limits_of(self.agent)

    def put_in_variable(self, call_id: str, name: str) -> None:
        """Store the DataFrame tool call ``call_id`` returned in the notebook variable ``name``.

        What a DataFrame card's "Put in variable" does. Only values of this kernel
        session are there (a stored conversation keeps previews, not values).

        Raises:
            ValueError: ``name`` is not an identifier, or the call has no DataFrame here.
        """
        value = find_value(self.agent.conversation, call_id)
        assign(name, value)
        self._note(f"{name} = the {type(value).__name__} from {call_id}")

    def insert_cell(self, code: str) -> str:
        """Put ``code`` in a new notebook cell below the chat, not run (Insert as cell).

        Works where the front end runs notebook commands (JupyterLab 4, Notebook 7,
        through ipylab); elsewhere nothing is inserted. The status line says which,
        and so does the returned sentence.
        """
        said = self._cells.insert(code)
        self._note(said)
        return said

    def attach_figure(self, name: str) -> None:
        """Send the matplotlib figure in variable ``name`` as a PNG with the next message.

        What picking a figure among the ``@`` suggestions does. The figure is drawn
        now, on the kernel's main thread, and shown as a thumbnail chip.

        Raises:
            ValueError: ``name`` is not defined or not a Figure, or too many images.
        """
        from IPython.core.getipython import get_ipython

        shell = get_ipython()
        if shell is None:
            raise ValueError("figure not attached: no notebook kernel to read it from")
        self._attachments.add_image(figure_image(shell.user_ns, name), name)
        self.attachments = self._attachments.state()
        self._note(f"Attached {name}")

    def _note(self, text: str) -> None:
        """A passing notice in the status line, unless a call awaits approval (that stays)."""
        if not self.pending_approvals:
            self.status = text

    def explain_last_error(self) -> asyncio.Task[RunResult | None] | None:
        """Ask the model about the kernel's last error (the "Explain last error" button).

        The error goes as the ``{Err}`` prompt field does: type, message, the failing
        line and a bounded traceback.
        """
        return self.submit("Explain the last error and how to fix it:\n{Err}")

    def stop(self) -> None:
        """Stop the reply being generated (Stop, or Esc in the page).

        The partial reply stays, marked cancelled; the conversation stays valid for the
        next message.
        """
        if not self.busy or not self.history:
            return
        self.status = "Stopping…"
        self.history[-1].run.cancel()
        # A call waiting for approval is cancelled with the run; drop its buttons now.
        self._clear_approvals()

    def approve(self, call_id: str) -> None:
        """Let the waiting call ``call_id`` run once (its Approve button)."""
        self._decide(call_id, True)

    def allow_for_run(self, call_id: str) -> None:
        """Approve ``call_id`` and every later call of the same tool in this run."""
        entry = self._pending.get(call_id)
        if entry is not None:
            self._allowed_this_run.add(entry[0].name)
        self._decide(call_id, True)

    def always_allow(self, call_id: str) -> None:
        """Approve ``call_id`` and every later call of its tool in this conversation.

        The tool is listed in the panel (``always_allowed``) until :meth:`revoke`.
        """
        entry = self._pending.get(call_id)
        if entry is not None and entry[0].name not in self.always_allowed:
            self.always_allowed = [*self.always_allowed, entry[0].name]
            self._always[self.agent.conversation.id] = list(self.always_allowed)
        self._decide(call_id, True)

    def revoke(self, tool_name: str) -> None:
        """Ask again before ``tool_name`` runs (undoes :meth:`always_allow`)."""
        self.always_allowed = [name for name in self.always_allowed if name != tool_name]
        self._always[self.agent.conversation.id] = list(self.always_allowed)

    def deny(self, call_id: str) -> None:
        """Refuse the waiting call ``call_id`` (its Deny button); the model sees an error."""
        self._decide(call_id, False)

    def open_conversation(self, conversation_id: str) -> None:
        """Show the stored conversation ``conversation_id`` (a unique prefix will do).

        Any reply being generated is stopped; the next message continues the opened
        conversation. The list of recent chats in the page calls this.
        """
        store = store_of(self.agent)
        conversation = store.load(conversation_id)
        self._drop_run()
        self.agent.conversation = conversation
        mark_shown(store, conversation.id)
        self._show_conversation(recent=True)
        self.status = "Ready"

    def refresh_recent(self) -> None:
        """Reread the list of recent conversations from the history store."""
        store = self.agent.store
        rows = store.conversations(limit=12) if store is not None else []
        self.recent = [
            {"id": r["id"], "title": r["title"] or "(untitled)", "updated": str(r["updated"])}
            for r in rows
        ]

    def new_chat(self) -> None:
        """Stop any reply, clear the transcript and start a fresh conversation."""
        # The old task still finishes its cancelled run (quickly), but it no longer
        # touches the widget: _is_current() is false once the task is detached.
        self._drop_run()
        self.agent.reset()
        self._show_conversation()
        self.status = "New chat"

    def _drop_run(self) -> None:
        """Stop the reply being generated and let it finish without touching the widget."""
        self.stop()
        self.task = None
        self._clear_approvals()
        self.history = []
        self.last_result = None
        self.busy = False

    def _show_conversation(self, *, recent: bool = False) -> None:
        """Draw the agent's conversation (from history), and the recent list if asked.

        The list is read when the page opens it, so a new chat touches no history
        file before its first message.
        """
        with self.hold_sync():
            self.turns = self._drawn_turns()
            self.live = {}
            self.conversation_id = self.agent.conversation.id
            self.always_allowed = self._always.get(self.conversation_id, [])
            self.totals = totals_of(self.agent.conversation)
            self.model_name, self.limits = self.agent.model, limits_of(self.agent)
            if recent:
                self.refresh_recent()
        self.twin.update(self.turns)

    def _drawn_turns(self) -> list[dict[str, Any]]:
        """The agent's conversation as the page draws it: turns with their branch arrows."""
        conversation = self.agent.conversation
        points = points_of(self.agent.store, conversation)
        return with_branches(turns_of(conversation, self.agent.store), conversation, points)

    # -- generation ----------------------------------------------------------------

    async def _generate(self, turn: Turn) -> RunResult | None:
        """Run one turn through the live driver; a failed run is shown, not raised."""
        CELL_INSERTER.set(self._cells.propose)  # propose_cell in this run: a cell below
        try:
            return await turn.run.run_async()
        except Exception:  # a provider error: the turn shows it, the widget stays usable
            return turn.result

    def _is_current(self, turn: Turn) -> bool:
        """True while ``turn`` is the one being generated (not dropped by new_chat)."""
        return bool(self.history) and self.history[-1] is turn and self.task is not None

    def _turn_finished(self, turn: Turn, error: BaseException | None) -> None:
        """The turn's run ended: move it to the finished turns, say how it ended."""
        self._clear_approvals()
        result = turn.result
        self.last_result = result
        if error is not None:
            turn.error = f"{type(error).__name__}: {error}"
            self.status = "Error"
        elif result is not None:
            self.status = stop_text(result)
        # One state message for the three traits: the page never sees the turn twice.
        branch = turn.conversation
        branched = branch is not None
        if branch is not None:  # the chat goes on in the new branch, trusting the same tools
            self.agent.conversation = branch
            self._always[branch.id] = list(self.always_allowed)
        keep_typed(self.agent.store, self.agent.conversation, turn)  # for a redraw after restart
        with self.hold_sync():
            if branched:
                self.turns = self._drawn_turns()
            else:
                self.turns = [*self.turns, turn.state()]
            self.live = {}
            self.busy = False
            self.conversation_id = self.agent.conversation.id
            self.totals = totals_of(self.agent.conversation)
        self.twin.update(self.turns)

    # -- approval ------------------------------------------------------------------

    async def _ask_user(self, call: ToolCall) -> tuple[bool, str]:
        """Wait for Approve/Deny (buttons or methods) on ``call``."""
        if call.name in self._allowed_this_run:
            return True, "user (allowed for this run)"
        if call.name in self.always_allowed:
            return True, "user (always allowed in this chat)"
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[call.id] = (call, future)
        self.approvals = [*self.approvals, approval_state(call)]
        self.status = f"Waiting for approval: {call.name}"
        self._redraw_live()  # its card says "awaiting approval"
        try:
            approved = await future
        finally:
            self._remove_approval(call.id)
            self._redraw_live()
        self.status = f"{'Approved' if approved else 'Denied'}: {call.name}"
        return approved, "user"

    def _redraw_live(self) -> None:
        """Draw the turn being generated again (its cards changed state)."""
        if self.history and self._is_current(self.history[-1]):
            self.live = self.history[-1].state()

    def _decide(self, call_id: str, approved: bool) -> None:
        entry = self._pending.get(call_id)
        if entry is None:
            waiting = ", ".join(self._pending) or "none"
            raise KeyError(f"no call {call_id!r} is waiting for approval (waiting: {waiting})")
        future = entry[1]
        # The run may wait on another thread's event loop (nbagent's): wake that loop, as
        # a result set from here would sit unseen until something else woke it.
        future.get_loop().call_soon_threadsafe(settle, future, approved)
        self._remove_approval(call_id)

    def _remove_approval(self, call_id: str) -> None:
        if self._pending.pop(call_id, None) is not None:
            self.approvals = [a for a in self.approvals if a["id"] != call_id]

    def _clear_approvals(self) -> None:
        for _call, future in self._pending.values():
            if not future.done():
                future.cancel()
        self._pending.clear()
        self.approvals = []
