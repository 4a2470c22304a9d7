"""Driving one run's live display: throttled updates, approvals, interrupts.

:class:`CellRun` is what ``%%agent`` does with a run, without IPython's magic
machinery (so the widget, scripts and benchmarks can reuse it): it iterates the
agent's events in the caller's thread through ``iterate_in_background``, feeds
them to a :class:`~nbagent.render.Transcript`, and updates one display at most
every ``interval`` seconds, with a final update whatever the throttle held back.

Approvals: the loop runs in nbagent's event-loop thread, but ``input()`` must run
in the cell's thread (that is where ipykernel routes stdin). So the approver only
posts an :class:`_ApprovalRequest` into the same stream as the events; the cell's
thread answers it (through ``input()``, or the ``NBAGENT_APPROVAL`` policy when
there is no stdin) and the approver's future resolves.

Terminal IPython cannot update a display (its plain DisplayPublisher prints every
update again), so with ``live=False`` a :class:`TerminalPrinter` appends progress
to stdout instead: status changes, the streamed text as it arrives and one line
per finished round; at the end it prints only what was not shown yet (the rest
of the answer, e.g. a stop note, and the footer).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .agent import Agent
from .events import RoundFinished, Status, TextDelta
from .messages import ToolCall
from .tools import Tool

if TYPE_CHECKING:
    from .results import RunResult
    from .render import Transcript

__all__ = ["UPDATE_INTERVAL", "CellRun", "TerminalPrinter"]

UPDATE_INTERVAL = 0.1
"""Seconds between live display updates (at most ~10 a second, however fast tokens come)."""


@dataclass
class _ApprovalRequest:
    """Posted by the approver (loop thread), answered in the cell's thread."""

    call: ToolCall
    tool: Tool
    answer: concurrent.futures.Future[tuple[bool, str]]


@dataclass
class _Failure:
    """The run raised: re-raised in the cell's thread after the events before it."""

    error: BaseException


class TerminalPrinter:
    """Appends a run's progress to stdout, for terminals that cannot redraw.

    Never re-prints: text already written stays, later output goes below it. Every
    piece of model or tool text goes through the same control-character filter as
    ``render_result_text`` (a model must not drive the terminal), and every write is
    flushed so progress shows while a slow model is still working.
    """

    def __init__(self) -> None:
        self.streamed = ""
        """Text streamed since the last finished round (the answer, once the run ends)."""
        self._status = ""
        self._at_line_start = True

    def _write(self, text: str) -> None:
        from .render import _terminal_safe

        if not text:
            return
        out = sys.stdout  # looked up per write: IPython and pytest swap it
        out.write(_terminal_safe(text))
        out.flush()
        self._at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """Finish a partly written line (before a status line or an input() prompt)."""
        if not self._at_line_start:
            self._write("\n")

    def _line(self, text: str) -> None:
        self.end_line()
        self._write(text + "\n")

    def feed(self, event: Any) -> None:
        from .render import round_summary

        if isinstance(event, TextDelta):
            if event.text and not self.streamed:
                self.end_line()  # the text starts on its own line, under the status
            self.streamed += event.text
            self._write(event.text)
        elif isinstance(event, Status):
            if event.text != self._status:
                self._status = event.text
                self._line(f"· {event.text}")
        elif isinstance(event, RoundFinished):
            self._line(f"▸ {round_summary(event.round, event.round_index)}")
            self.streamed = ""

    def finish(self, result: RunResult | None, *, interrupted: bool) -> None:
        """Print what the stream did not show: the rest of the answer and the footer."""
        from .render import _footer_text

        if result is None:  # interrupted before the run could report how it ended
            self._line("[run cancelled]" if interrupted else "[run ended without a result]")
            return
        output = result.output
        if output.startswith(self.streamed):
            rest = output[len(self.streamed) :]  # e.g. "\n\n[run cancelled]"
            self._write(rest.lstrip("\n") if self._at_line_start else rest)
        else:  # the final text was not streamed (or differs): show it whole
            self.end_line()
            self._write(output)
        footer = _footer_text(
            result.model, len(result.rounds), result.usage, result.elapsed_s, result.stop_reason
        )
        self.end_line()
        self._write(f"\n— {footer}\n")


_TICK = object()  # "nothing new": lets the cell's thread flush throttled updates
_END = object()


class CellRun:
    """One ``%%agent`` cell: runs the agent, throttles display updates, answers approvals.

    Independent of IPython's magic machinery: ``display(bundle)`` must show a mime
    bundle and return a handle with ``update(bundle, raw=True)``. With ``live=False``
    (terminal IPython, where every update would print again) ``display`` is not
    used: a :class:`TerminalPrinter` appends the progress to stdout instead.
    """

    def __init__(
        self,
        agent: Agent,
        prompt: str,
        overrides: dict[str, Any],
        *,
        display: Any,
        live: bool = True,
        interval: float = UPDATE_INTERVAL,
    ) -> None:
        from .render import Transcript

        self.agent = agent
        self.prompt = prompt
        self.overrides = overrides
        self.interval = interval
        self.transcript: Transcript = Transcript()
        self.transcript.status = "Starting…"
        self.display = display
        self.live = live
        self.handle: Any = None
        self.printer: TerminalPrinter | None = None if live else TerminalPrinter()
        self.updates = 0
        """Display updates sent after the first display (for tests and benchmarks)."""
        self.interrupted = False
        self._dirty = False
        self._last = 0.0
        self._cancel_requested = False

    # -- loop-thread side --------------------------------------------------------------

    async def _events(self) -> AsyncIterator[Any]:
        """The agent's events, plus approval requests and ticks, in one stream."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        overrides = dict(self.overrides)
        if self.agent.settings.approver is None and "approver" not in overrides:

            async def ask_in_cell(call: ToolCall, tool: Tool) -> tuple[bool, str]:
                answer: concurrent.futures.Future[tuple[bool, str]] = concurrent.futures.Future()
                # The run's events before this call (its text, "Using ...") still sit in
                # the run's own queue: one turn of the event loop lets pump() move them
                # into ours first, so the question comes after them, not before.
                await asyncio.sleep(0)
                await queue.put(_ApprovalRequest(call, tool, answer))
                return await asyncio.wrap_future(answer)

            overrides["approver"] = ask_in_cell

        async def pump() -> None:
            try:
                async for event in self.agent.stream(self.prompt, **overrides):
                    await queue.put(event)
                    if self._cancel_requested:
                        self.agent.cancel()  # an interrupt that came before the run existed
            except BaseException as exc:
                await queue.put(_Failure(exc))
            finally:
                queue.put_nowait(_END)

        task = asyncio.ensure_future(pump())
        try:
            while True:
                if queue.empty():  # wait_for costs a task: only pay it when idle
                    try:
                        item = await asyncio.wait_for(queue.get(), self.interval)
                    except asyncio.TimeoutError:
                        yield _TICK
                        continue
                else:
                    item = queue.get_nowait()
                if item is _END:
                    break
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:
            if not task.done():
                self.agent.cancel()
                await asyncio.wait([task], timeout=5)

    def _cancel(self) -> None:
        self._cancel_requested = True
        self.agent.cancel()

    # -- cell-thread side --------------------------------------------------------------

    def run(self) -> RunResult | None:
        """Run to the end; a KeyboardInterrupt cancels the run and is swallowed here."""
        from ._sync import background_loop, iterate_in_background

        if self.live:
            self.handle = self.display(self.transcript.bundle())
        items = iterate_in_background(self._events, self._cancel)
        while True:
            try:
                item = next(items)
            except StopIteration:
                break
            except KeyboardInterrupt:
                # iterate_in_background re-raises after the remaining events were delivered
                self.interrupted = True
                break
            except Exception:
                # The run failed (provider error...): its RunFinished (stop_reason "error")
                # came first, so show the final state before the error surfaces.
                self._finish_display()
                raise
            try:
                self._handle(item)
            except KeyboardInterrupt:
                # The interrupt landed in our own code: cancel, keep draining the events.
                self.interrupted = True
                background_loop().call_soon_threadsafe(self._cancel)
        self._finish_display()
        return self.transcript.result

    def _finish_display(self) -> None:
        if self.interrupted:
            self.transcript.mark_interrupted()
        if self.printer is not None:
            self.printer.finish(self.transcript.result, interrupted=self.interrupted)
        else:
            self._refresh(force=True)  # always a final update, whatever the throttle held back

    def _handle(self, item: Any) -> None:
        if isinstance(item, _ApprovalRequest):
            if self.printer is not None:
                self.printer.end_line()  # the question gets a line of its own
            self._refresh(force=True)
            decision = self._ask(item)
            try:
                item.answer.set_result(decision)
            except concurrent.futures.InvalidStateError:
                pass  # the run was cancelled while we asked; nobody waits for the answer
        elif item is not _TICK:
            self._dirty = self.transcript.feed(item) or self._dirty
            if self.printer is not None:
                self.printer.feed(item)
        self._refresh()

    def _ask(self, request: _ApprovalRequest) -> tuple[bool, str]:
        """Ask the user through input(); without stdin, the NBAGENT_APPROVAL policy decides."""
        from .render import call_signature

        question = f"nbagent: allow {call_signature(request.call, limit=200)}? [y/N] "
        try:
            answer = input(question)
        except (NotImplementedError, EOFError, OSError):  # IPython's StdinNotImplementedError
            from .tools.approval import policy_approver

            approved, who = policy_approver()(request.call, request.tool)
            return approved, f"{who} (no stdin)"
        except KeyboardInterrupt:
            self.interrupted = True
            self._cancel_requested = True
            from ._sync import background_loop

            background_loop().call_soon_threadsafe(self.agent.cancel)
            return False, "user (interrupted)"
        return answer.strip().lower() in ("y", "yes"), "user"

    def _refresh(self, *, force: bool = False) -> None:
        if not self.live:
            return
        now = time.monotonic()
        if not force and (not self._dirty or now - self._last < self.interval):
            return
        self.handle.update(self.transcript.bundle(), raw=True)
        self.updates += 1
        self._last = time.monotonic()  # from the send, so sends are >= interval apart
        self._dirty = False
