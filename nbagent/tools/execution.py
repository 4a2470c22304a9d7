"""Running one round's calls: concurrency, timeouts, approval and the output budget."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import queue
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from ..messages import ToolCall, ToolResult
from ..values import cut_middle, to_model_text
from .approval import Approver, ask
from .tool import Tool

DEFAULT_TOOL_TIMEOUT = 60.0
PER_CALL_CHARS = 4_000
PER_ROUND_CHARS = 16_000
MIN_CALL_CHARS = 200
"""Even when the round budget is spent, a result keeps this much (an error must stay readable)."""


class _Outcome:
    """What running one call produced, before it becomes model text."""

    __slots__ = ("value", "error", "tb", "approval", "duration")

    def __init__(self) -> None:
        self.value: Any = None
        self.error: str | None = None
        self.tb: str | None = None
        self.approval: str | None = None
        self.duration = 0.0


async def execute_round(
    calls: list[ToolCall],
    tools: Mapping[str, Tool],
    *,
    approver: Approver | None = None,
    default_timeout: float = DEFAULT_TOOL_TIMEOUT,
    per_call_chars: int = PER_CALL_CHARS,
    per_round_chars: int = PER_ROUND_CHARS,
    on_result: Callable[[ToolResult], None] | None = None,
    wrap: Callable[[Tool, ToolCall], Tool] | None = None,
) -> list[ToolResult]:
    """Run one round's calls and return one result per call, in call order.

    Calls run concurrently (async tools as tasks, sync tools in daemon threads);
    calls of ``sequential`` tools run one after another, in call order. A call
    that exceeds its timeout becomes an error result; its thread is abandoned,
    never waited for.

    Results become model text in call order, each under
    ``min(per-call limit, what is left of the round budget)``, so the text does
    not depend on which call happened to finish first (replays stay exact).
    ``on_result`` sees each result as soon as it and all calls before it are done.
    ``wrap(tool, call)`` may replace a call's tool (middleware, retries, progress:
    see ``middleware.wrap_call``).
    """
    outcomes: list[_Outcome | None] = [None] * len(calls)
    results: list[ToolResult] = []
    budget = per_round_chars
    sequential_lock = asyncio.Lock()

    def publish_ready() -> None:
        nonlocal budget
        while len(results) < len(calls) and outcomes[len(results)] is not None:
            index = len(results)
            call, outcome = calls[index], outcomes[index]
            assert outcome is not None
            t = tools.get(call.name)
            limit = (t.max_output_chars if t and t.max_output_chars else None) or per_call_chars
            limit = max(min(limit, budget), MIN_CALL_CHARS)
            result = _to_result(call, outcome, limit)
            budget -= len(result.content)
            results.append(result)
            if on_result is not None:
                on_result(result)

    async def run_one(index: int, call: ToolCall) -> None:
        started = time.perf_counter()
        outcome = _Outcome()
        t = tools.get(call.name)
        if t is not None and wrap is not None:
            t = wrap(t, call)
        if t is None:
            available = ", ".join(sorted(tools)) or "(none)"
            outcome.error = f"Unknown tool {call.name!r}. Available tools: {available}."
        elif t.sequential:
            async with sequential_lock:
                started = time.perf_counter()  # waiting for the lock is not the call's time
                await _invoke(t, call, outcome, approver, default_timeout)
        else:
            await _invoke(t, call, outcome, approver, default_timeout)
        outcome.duration = time.perf_counter() - started
        outcomes[index] = outcome
        publish_ready()

    try:
        if len(calls) == 1:  # the common case: no task machinery needed
            await run_one(0, calls[0])
        else:
            await asyncio.gather(*(run_one(i, c) for i, c in enumerate(calls)))
    except asyncio.CancelledError:
        # The run is stopping: hand over the calls that did finish (out of order if
        # an earlier one is stuck) so their real results are kept; the loop gives
        # the unfinished ones a synthetic result.
        for index, outcome in enumerate(outcomes):
            if index >= len(results) and outcome is not None and on_result is not None:
                on_result(_to_result(calls[index], outcome, MIN_CALL_CHARS * 5))
        raise
    return results


def _to_result(call: ToolCall, outcome: _Outcome, limit: int) -> ToolResult:
    if outcome.error is None:
        try:
            content, truncated = to_model_text(outcome.value, limit)
        except Exception as exc:  # a broken __repr__ must not kill the run
            content, truncated = f"<{type(outcome.value).__name__}: unprintable ({exc})>", False
        return ToolResult(
            call.id, call.name, True, content, None, outcome.duration, truncated,
            approval=outcome.approval, value=outcome.value,
        )  # fmt: skip
    error, truncated = cut_middle(outcome.error, limit - len("Error: "))
    return ToolResult(
        call.id, call.name, False, f"Error: {error}", error, outcome.duration, truncated,
        traceback=outcome.tb, approval=outcome.approval,
    )  # fmt: skip


async def _invoke(
    t: Tool,
    call: ToolCall,
    outcome: _Outcome,
    approver: Approver | None,
    default_timeout: float,
) -> None:
    from .schema import ArgumentError  # pydantic, loaded with the first tool anyway

    try:
        arguments = t.validate(call)
    except ArgumentError as exc:
        outcome.error = f"Invalid arguments for {t.name}: {exc}"
        return
    if t.requires_approval:
        try:
            approved, who = await ask(approver, call, t)
        except Exception as exc:  # a broken approver denies; it never kills the run
            approved, who = False, f"a failing approver ({type(exc).__name__}: {exc})"
        outcome.approval = f"{'approved' if approved else 'denied'} by {who}"
        if not approved:
            outcome.error = f"The user denied this call to {t.name} ({outcome.approval})."
            return
    timeout = t.timeout if t.timeout is not None else default_timeout
    try:
        if t.is_async:
            outcome.value = await asyncio.wait_for(t.fn(**arguments), timeout)
        else:
            started = time.perf_counter()
            lock = _SEQUENTIAL_THREADS if t.sequential else None
            outcome.value = await asyncio.wait_for(_in_thread(t.fn, arguments, lock), timeout)
            if inspect.isawaitable(outcome.value):  # a sync wrapper that returned a coroutine
                left = max(timeout - (time.perf_counter() - started), 0.001)
                outcome.value = await asyncio.wait_for(outcome.value, left)
    except asyncio.TimeoutError:
        outcome.error = f"{t.name} timed out after {timeout:g} s"
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # a failing tool never kills the run (not even SystemExit)
        outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


_SEQUENTIAL_THREADS = threading.Lock()
"""Held by the worker thread while a sync ``sequential`` tool runs. The round's asyncio
lock orders the calls; this one also covers a call that timed out but whose thread
is still running, so no two sequential tools ever overlap, in any round or agent."""


def _in_thread(
    fn: Callable[..., Any], arguments: dict[str, Any], lock: threading.Lock | None = None
) -> asyncio.Future[Any]:
    """Run ``fn`` on a daemon worker thread; the returned future resolves on the loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(ok: bool, payload: Any) -> None:
        if future.done():  # timed out or cancelled meanwhile: drop the late result
            return
        if ok:
            future.set_result(payload)
        elif isinstance(payload, StopIteration):  # futures refuse StopIteration itself
            future.set_exception(RuntimeError(f"StopIteration: {payload}"))
        else:
            future.set_exception(payload)

    def job() -> None:
        try:
            if lock is None:
                value, ok = context.run(fn, **arguments), True
            else:
                with lock:
                    value, ok = context.run(fn, **arguments), True
        except BaseException as exc:
            value, ok = exc, False
        try:
            loop.call_soon_threadsafe(deliver, ok, value)
        except RuntimeError:  # the loop closed while the tool ran (run timed out long ago)
            pass

    _WORKERS.submit(job)
    return future


class _Workers:
    """Daemon worker threads for sync tools, reused between calls.

    Not a ThreadPoolExecutor: its workers are joined at interpreter exit (one stuck
    tool would hang the process) and its size is fixed (stuck tools would starve
    the rest). Here a job always starts at once: an idle worker takes it, or a
    new daemon thread is started. Reuse matters because starting a thread costs
    far more than calling an instant tool. Idle workers exit after a while.
    """

    IDLE_SECONDS = 30.0

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._count = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1  # reserve that worker for this job
                start = False
            else:
                self._count += 1
                start = True
            self._jobs.put(job)
        if start:
            name = f"nbagent-tool-worker-{self._count}"
            threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0 and self._jobs.empty():
                        self._idle -= 1
                        self._count -= 1
                        return
                continue  # a job was reserved for this worker meanwhile
            job()
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()
