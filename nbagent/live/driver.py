"""The one live-run driver: runs an agent and shows the run through a sink.

:class:`LiveRun` owns what every surface needs and none should repeat: it feeds
the run's events to a :class:`~nbagent.render.Transcript`, redraws through one
:class:`~nbagent.live.throttle.Throttle`, installs the approval bridge (the sink
asks the user), and handles Ctrl-C and Stop. Surfaces are sinks
(:class:`~nbagent.live.sink.Sink`): the cell display, terminal IPython and the
ChatWidget.

Two ways to drive it:

- :meth:`LiveRun.run` from sync code (a cell): the run goes on nbagent's background
  event loop while the sink is called in the caller's thread, where ``input()``
  and KeyboardInterrupt land. Ctrl-C cancels the run; the events it still produces
  are shown, then ``run`` returns.
- :meth:`LiveRun.run_async` from async code on the caller's loop (the ChatWidget
  on the kernel's loop): the kernel keeps serving widget messages while it runs,
  and :meth:`LiveRun.cancel` (Stop) works mid-stream.

Both consume the same stream: the run's events, the approval requests the bridge
posts between them, and idle ticks that let a held-back redraw go out on time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import AsyncGenerator, Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._internal.threads import (
    MAIN_THREAD_POSTER,
    MainThreadJob,
    iterate_in_background,
    run_in_background,
)
from ..events import ToolCallFinished
from ..render import Transcript
from .approval import ApprovalRequest, approval_bridge
from .throttle import Throttle

if TYPE_CHECKING:
    from ..agent import Agent
    from ..results import RunResult
    from ..tools import Decision
    from .sink import Sink

__all__ = ["LiveRun"]

_TICK = object()  # "nothing new": lets the consumer flush a held-back redraw
_END = object()


@dataclass
class _Failure:
    """The run raised: raised again in the consumer after the events before it."""

    error: BaseException


async def _awaited(awaitable: Awaitable[Decision]) -> Decision:
    return await awaitable


class LiveRun:
    """One run of ``agent`` on ``prompt``, shown live through ``sink``.

    Args:
        agent: the agent to run (its conversation continues).
        prompt: the user's message.
        sink: the surface (cell display, terminal printer, chat turn...).
        overrides: per-run settings for ``agent.stream`` (``max_rounds=``, ``tools=``...).
            Without an ``approver`` here or on the agent, the sink answers approvals.
        interval: seconds between redraws; defaults to the sink's ``interval``.
    """

    def __init__(
        self,
        agent: Agent,
        prompt: str,
        sink: Sink,
        *,
        overrides: dict[str, Any] | None = None,
        interval: float | None = None,
    ) -> None:
        self.agent = agent
        self.prompt = prompt
        self.sink = sink
        self.overrides = dict(overrides or {})
        self.transcript = Transcript()
        self.throttle = Throttle(
            lambda: sink.update(self.transcript), sink.interval if interval is None else interval
        )
        self.interrupted = False
        """True once Ctrl-C or :meth:`cancel` stopped the run."""
        self._cancel_requested = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_on_result = threading.Event()
        """Set when a kernel interrupt stopped run_python's code: stop at its result."""

    @property
    def result(self) -> RunResult | None:
        """The run's result, once it reported how it ended."""
        return self.transcript.result

    @property
    def updates(self) -> int:
        """Redraws sent after the first display (for tests and benchmarks)."""
        return self.throttle.updates

    # -- stopping ------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the run (Stop button, Ctrl-C); from any thread, even before it started."""
        self.interrupted = True
        self._cancel_requested = True  # a run that does not exist yet is cancelled at once
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self.agent.cancel()
        else:
            loop.call_soon_threadsafe(self.agent.cancel)

    def _cancel_on_loop(self) -> None:
        self._cancel_requested = True
        self.agent.cancel()

    # -- the stream (on the run's event loop) ----------------------------------------------

    async def _items(self) -> AsyncGenerator[Any, None]:
        """The agent's events, approval requests and idle ticks, in one stream."""
        self._loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        overrides = dict(self.overrides)
        if self.agent.settings.approver is None and "approver" not in overrides:
            overrides["approver"] = approval_bridge(queue.put)
        # run_python's code runs here, in the consumer (the cell's main thread): the
        # run's tool threads inherit this poster (see nbagent._internal.threads.mainthread).
        loop = asyncio.get_running_loop()
        MAIN_THREAD_POSTER.set(lambda job: loop.call_soon_threadsafe(queue.put_nowait, job))

        async def pump() -> None:
            try:
                async for event in self.agent.stream(self.prompt, paced=True, **overrides):
                    await queue.put(event)
                    if (
                        self._stop_on_result.is_set()
                        and isinstance(event, ToolCallFinished)
                        and event.result.name == "run_python"
                    ):
                        self._stop_on_result.clear()
                        self._cancel_on_loop()  # before the loop can send another request
                    if self._cancel_requested:
                        self.agent.cancel()  # a cancel that came before the run existed
            except BaseException as exc:
                await queue.put(_Failure(exc))
            finally:
                queue.put_nowait(_END)

        interval = self.throttle.interval
        task = asyncio.ensure_future(pump())
        try:
            while True:
                if queue.empty() and interval > 0:  # wait_for costs a task: pay only when idle
                    try:
                        item = await asyncio.wait_for(queue.get(), interval)
                    except asyncio.TimeoutError:
                        yield _TICK
                        continue
                else:
                    item = await queue.get()
                if item is _END:
                    break
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:
            if not task.done():  # the consumer stopped early: so does the run
                self._cancel_on_loop()
                await asyncio.wait([task], timeout=5)

    def _take(self, item: Any) -> None:
        """Feed an event to the transcript (a tick only lets the throttle catch up)."""
        if item is not _TICK and self.transcript.feed(item):
            self.throttle.changed()

    def _run_job(self, job: MainThreadJob) -> None:
        """Run ``run_python``'s code here, in the consumer (the cell's main thread).

        A kernel interrupt stops the code; its result (saying so) is on its way, and
        the pump stops the run as soon as it passes by, before any further request
        (so the history keeps what really happened).
        """
        self.throttle.poll(force=True)
        try:
            job.run(on_interrupt=self._stop_on_result.set)
        except KeyboardInterrupt:
            self.interrupted = True

    def _finish(self, error: BaseException | None) -> None:
        if self.interrupted:
            self.transcript.mark_interrupted()
        self.throttle.poll(force=True)  # always a final redraw, whatever the throttle held
        self.sink.finish(self.transcript, error=error)

    # -- from sync code --------------------------------------------------------------------

    def run(self) -> RunResult | None:
        """Run to the end from sync code; Ctrl-C cancels the run and is swallowed here.

        Returns the result (None if the run was cancelled before it could report one).
        If the run fails (a provider error), the final state is shown, then the error
        is raised.
        """
        self.sink.start(self.transcript)
        items = iterate_in_background(self._items, self._cancel_on_loop)
        error: BaseException | None = None
        try:
            while True:
                try:
                    item = next(items)
                except StopIteration:
                    break
                except KeyboardInterrupt:
                    # iterate_in_background raises it after the remaining events came
                    self.interrupted = True
                    break
                except Exception as exc:
                    # The run failed; its RunFinished (stop_reason "error") came first.
                    error = exc
                    break
                try:
                    self._handle(item)
                except KeyboardInterrupt:
                    # The interrupt landed in our own code: cancel, keep showing the events.
                    self.cancel()
        finally:
            items.close()  # type: ignore[attr-defined]
        self._finish(error)
        if error is not None:
            raise error
        return self.transcript.result

    def _handle(self, item: Any) -> None:
        if isinstance(item, ApprovalRequest):
            self.throttle.poll(force=True)  # the question comes after what led to it
            self._ask(item)
        elif isinstance(item, MainThreadJob):
            self._run_job(item)
        else:
            self._take(item)
        self.throttle.poll()

    def _ask(self, request: ApprovalRequest) -> None:
        try:
            decision = self.sink.ask(request.call, request.tool)
            if inspect.isawaitable(decision):  # an async sink driven from sync code
                pending = decision
                decision = run_in_background(lambda: _awaited(pending))
        except KeyboardInterrupt:
            self.cancel()
            request.decide((False, "user (interrupted)"))
        except Exception as exc:
            request.fail(exc)
        else:
            request.decide(decision)

    # -- from async code ---------------------------------------------------------------------

    async def run_async(self) -> RunResult | None:
        """Run to the end on the running event loop (Stop: :meth:`cancel`).

        Returns the result; if the run fails, the final state is shown, then the error
        is raised.
        """
        self.sink.start(self.transcript)
        items = self._items()
        error: Exception | None = None
        try:
            async for item in items:
                if isinstance(item, ApprovalRequest):
                    self.throttle.poll(force=True)
                    await self._ask_async(item)
                elif isinstance(item, MainThreadJob):
                    self._run_job(item)
                else:
                    self._take(item)
                self.throttle.poll()
        except Exception as exc:
            error = exc
        finally:
            await items.aclose()
        self._finish(error)
        if error is not None:
            raise error
        return self.transcript.result

    async def _ask_async(self, request: ApprovalRequest) -> None:
        try:
            decision = self.sink.ask(request.call, request.tool)
        except Exception as exc:
            request.fail(exc)
            return
        if not inspect.isawaitable(decision):
            request.decide(decision)
            return
        loop = asyncio.get_running_loop()
        asking: asyncio.Future[Decision] = asyncio.ensure_future(decision)
        withdrawn = asyncio.Event()  # set when the run stops waiting for this answer

        def on_answer(answer: concurrent.futures.Future[Decision]) -> None:
            if answer.cancelled():
                loop.call_soon_threadsafe(withdrawn.set)

        request.answer.add_done_callback(on_answer)
        watching: asyncio.Future[Any] = asyncio.ensure_future(withdrawn.wait())
        try:
            await asyncio.wait({asking, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
        if not asking.done():  # the run no longer waits (Stop): withdraw the question
            asking.cancel()
            await asyncio.wait([asking])
            return
        if asking.cancelled():  # the surface dropped the question without an answer
            request.decide((False, "user (no answer)"))
        elif (failure := asking.exception()) is not None:
            request.fail(failure)
        else:
            request.decide(asking.result())
