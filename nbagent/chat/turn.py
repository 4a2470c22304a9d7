"""One user message and the agent's reply: the live driver's sink for one turn."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from .._internal.images import Image
from ..kernel.prompt import Interpolated
from ..live import UPDATE_INTERVAL, LiveRun
from ..messages import Conversation, ToolCall, ToolRound
from ..render import Transcript, escape
from ..results import RunResult
from .cards import cards_html
from .code_calls import show_code_once
from .mentions import user_html

if TYPE_CHECKING:
    from ..agent import Agent
    from ..tools import Tool


class TurnHost(Protocol):
    """What a turn needs from the widget showing it (:class:`~nbagent.chat.ChatWidget`)."""

    agent: Agent
    live: dict[str, Any]
    status: str

    @property
    def pending_approvals(self) -> list[ToolCall]: ...  # noqa: D102

    def _is_current(self, turn: Turn) -> bool: ...

    async def _ask_user(self, call: ToolCall) -> tuple[bool, str]: ...

    def _turn_finished(self, turn: Turn, error: BaseException | None) -> None: ...


class Turn:
    """A turn of the chat, drawn into the widget's ``live`` state while it runs.

    Its HTML is made of the same panels as ``%%agent`` (the transcript escapes
    everything the model and the tools produced), so the front end can set it as
    markup. A turn dropped by New chat keeps running to its (cancelled) end but no
    longer touches the widget.
    """

    interval = UPDATE_INTERVAL

    def __init__(
        self,
        chat: TurnHost,
        prompt: str,
        fields: Interpolated | None = None,
        *,
        conversation: Conversation | None = None,
        images: list[Image] | None = None,
    ) -> None:
        self.chat = chat
        self.prompt = prompt
        self.note = fields.summary() if fields is not None else None
        """What was sent in place of shortened ``{name}`` values, shown under the message."""
        self.sent = fields.text if fields is not None else prompt
        """The text the model gets (``@name`` and ``{name}`` expanded)."""
        overrides: dict[str, Any] = {}
        attached = [*(fields.images if fields is not None else []), *(images or [])]
        if attached:  # {fig} fields and pasted images: the prompt's image parts
            overrides["attachments"] = attached
        self.images = list(images or [])
        """Images pasted or dropped for this message."""
        self.conversation = conversation
        """The branch this turn starts (an edited message), or None: the agent's own."""
        if conversation is not None:
            overrides["conversation"] = conversation
        self.position = len((conversation or chat.agent.conversation).messages)
        """Where the run puts this message in its conversation (the run appends it)."""
        self.run = LiveRun(chat.agent, self.sent, self, overrides=overrides)
        self.error: str | None = None
        self._status = ""
        self._started: dict[str, float] = {}  # call id -> when this turn first saw it running
        self._highlighted: dict[str, str] = {}  # code -> its highlighted block (see .code_calls)

    @property
    def transcript(self) -> Transcript:
        """The run's live transcript."""
        return self.run.transcript

    @property
    def result(self) -> RunResult | None:
        """The run's result once it has ended."""
        return self.run.result

    def html(self) -> str:
        """The whole turn as HTML: the user's message, then the run's panels."""
        parts = ['<div class="nbagent-turn">', user_html(self.prompt, self.notes())]
        parts.append(self.cards())
        parts.append(self.panels())
        if self.error:
            parts.append(f'<div class="nbagent-chat-error">{escape(self.error)}</div>')
        parts.append("</div>")
        return "".join(parts)

    def notes(self) -> list[str]:
        """The lines under the user's message: what went in place of fields, images attached."""
        notes = [self.note] if self.note else []
        if self.images:
            shown = ", ".join(f"{i.format} {i.width}×{i.height}" for i in self.images)
            notes.append(f"Attached: {shown}")
        return notes

    def panels(self) -> str:
        """The run's round panels, answer and footer, each code call's code shown once."""
        transcript = self.transcript
        finished = transcript.result.rounds if transcript.result else transcript.rounds
        calls = [c for r in finished for c in r.calls]
        if transcript.result is None:
            calls += transcript.calls
        waiting = {c.id for c in self.chat.pending_approvals}
        return show_code_once(
            transcript.html(), calls, waiting=waiting, highlighted=self._highlighted
        )

    def cards(self) -> str:
        """The tool cards of the run so far (see :mod:`.cards`)."""
        transcript = self.transcript
        now = time.monotonic()
        for call in transcript.calls:
            self._started.setdefault(call.id, now)
        pending = ToolRound(
            None,
            list(transcript.calls),
            [transcript.results[c.id] for c in transcript.calls if c.id in transcript.results],
        )
        return cards_html(
            transcript.rounds,
            pending,
            waiting={c.id for c in self.chat.pending_approvals},
            elapsed={c.id: now - self._started[c.id] for c in transcript.calls},
        )

    def state(self) -> dict[str, Any]:
        """What the front end draws: the prompt (for Up-to-edit) and the HTML."""
        return {"prompt": self.prompt, "html": self.html()}

    # -- the sink ----------------------------------------------------------------------

    def start(self, transcript: Transcript) -> None:
        """The run began: show the turn."""
        if self.chat._is_current(self):
            self.chat.live = self.state()

    def update(self, transcript: Transcript) -> None:
        """New text or a new status (throttled by the driver): redraw the live turn."""
        if not self.chat._is_current(self):
            return  # new_chat() dropped this turn: finish quietly
        # The run's status line; "Waiting for approval" stays while a question is open.
        if transcript.status and transcript.status != self._status:
            self._status = transcript.status
            if not self.chat.pending_approvals:
                self.chat.status = transcript.status
        self.chat.live = self.state()

    async def ask(self, call: ToolCall, tool: Tool) -> tuple[bool, str]:
        """A call needs consent: wait for the user's answer in the widget."""
        return await self.chat._ask_user(call)

    def finish(self, transcript: Transcript, *, error: BaseException | None) -> None:
        """The run ended: hand the turn to the widget's finished turns."""
        if not self.chat._is_current(self):
            return
        self.chat._turn_finished(self, error)
