"""Running one round's calls: concurrency, timeouts, approval and the output budget."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from .._internal.deadline import expired, remaining
from .._internal.threads import TIMED_OUT, AsyncCall, bounded, in_thread, settle
from .._internal.values import cut_middle, preview_value, to_model_text
from ..messages import ToolCall, ToolResult
from .approval import Approver, ApproverFailed, ask
from .images import may_carry_images, with_images
from .tool import Tool

logger = logging.getLogger("nbagent")

DEFAULT_TOOL_TIMEOUT = 60.0
PER_CALL_CHARS = 4_000
PER_ROUND_CHARS = 16_000
MIN_CALL_CHARS = 200
"""Even when the round budget is spent, a result keeps this much (an error must stay readable)."""


class _Outcome:
    """What running one call produced, before it becomes model text."""

    __slots__ = (
        "value", "error", "tb", "approval", "duration", "started", "text", "preview",
        "sync", "limit_used",
    )  # fmt: skip

    def __init__(self) -> None:
        self.value: Any = None
        self.error: str | None = None
        self.tb: str | None = None
        self.approval: str | None = None
        self.duration = 0.0
        self.started: float | None = None
        """perf_counter when the tool's own code started (None: it never ran)."""
        self.text: tuple[str, bool] | None = None
        """The value's model text at the per-call limit, made off the loop."""
        self.preview: tuple[str | None, str | None] | None = None
        self.sync = True
        self.limit_used = 0
        """The limit ``text`` was made for."""


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

    Calls run concurrently (sync tools in daemon threads, async tools on a worker
    event loop: never on the caller's loop); calls of ``sequential`` tools run one
    after another, in call order. A call that exceeds its timeout becomes an error
    result; its thread (or worker loop) is abandoned, never waited for.

    Results become model text in call order, each under
    ``min(per-call limit, what is left of the round budget)``, so the text does
    not depend on which call happened to finish first (replays stay exact). The
    text is made off the loop, within :data:`FORMAT_SECONDS`.
    ``on_result`` sees each result as soon as it and all calls before it are done.
    ``wrap(tool, call)`` may replace a call's tool (middleware, retries, progress:
    see ``middleware.wrap_call``).
    """
    outcomes: list[_Outcome | None] = [None] * len(calls)
    running: dict[int, _Outcome] = {}
    results: list[ToolResult] = []
    budget = per_round_chars
    sequential_lock = asyncio.Lock()
    publishing = asyncio.Lock()

    def limit_for(call: ToolCall) -> int:
        """The most this call's text may get (the round's budget may cut it further)."""
        t = tools.get(call.name)
        limit = (t.max_output_chars if t and t.max_output_chars else None) or per_call_chars
        return max(limit, MIN_CALL_CHARS)

    async def publish_ready() -> None:
        nonlocal budget
        async with publishing:
            while len(results) < len(calls) and outcomes[len(results)] is not None:
                index = len(results)
                call, outcome = calls[index], outcomes[index]
                assert outcome is not None
                limit = max(min(limit_for(call), budget), MIN_CALL_CHARS)
                result = await _to_result(call, outcome, limit)
                budget -= len(result.content)
                if result.ok and may_carry_images(outcome.value):
                    images_left = await bounded(  # figures, run_python's plots: off the loop
                        with_images, result, outcome.value, limit, budget, seconds=_format_seconds()
                    )
                    budget = budget if images_left is TIMED_OUT else images_left
                results.append(result)
                if on_result is not None:
                    on_result(result)

    async def run_one(index: int, call: ToolCall) -> None:
        started = time.perf_counter()
        outcome = _Outcome()
        running[index] = outcome
        t = tools.get(call.name)
        if t is not None and wrap is not None:
            t = wrap(t, call)
        if t is None:
            available = ", ".join(sorted(tools)) or "(none)"
            outcome.error = f"Unknown tool {call.name!r}. Available tools: {available}."
        elif t.sequential:
            async with sequential_lock:
                started = time.perf_counter()  # waiting for the lock is not the call's time
                await _invoke(t, call, outcome, approver, default_timeout, limit_for(call))
        else:
            await _invoke(t, call, outcome, approver, default_timeout, limit_for(call))
        outcome.duration = time.perf_counter() - started
        outcomes[index] = outcome
        await publish_ready()

    try:
        if len(calls) == 1:  # the common case: no task machinery needed
            await run_one(0, calls[0])
        else:
            await asyncio.gather(*(run_one(i, c) for i, c in enumerate(calls)))
    except asyncio.CancelledError:
        # The run is stopping: hand over the calls that did finish (out of order if
        # an earlier one is stuck) so their real results are kept, and say of those
        # still running that they were interrupted (and for how long); the loop gives
        # the calls that never started a synthetic result.
        if on_result is not None:
            published = {r.call_id for r in results}
            for index, call in enumerate(calls):
                if call.id in published:
                    continue
                outcome = outcomes[index]
                if outcome is not None:
                    on_result(_text_result(call, outcome, MIN_CALL_CHARS * 5))
                elif index in running and running[index].started is not None:
                    on_result(_interrupted(call, running[index]))
        raise
    return results


def _interrupted(call: ToolCall, outcome: _Outcome) -> ToolResult:
    """The result of a call that was running when the run stopped."""
    assert outcome.started is not None
    elapsed = time.perf_counter() - outcome.started
    why = "the run timed out" if expired() else "cancelled"
    if outcome.sync:
        after = "a sync function may still finish in the background"
    else:
        after = "its coroutine was cancelled (abandoned if it blocked its event loop)"
    error = f"{why} while running after {elapsed * 1000:.0f} ms; {after}"
    return ToolResult(call.id, call.name, False, f"Error: {error}", error, elapsed)


async def _to_result(call: ToolCall, outcome: _Outcome, limit: int) -> ToolResult:
    """The call's result with its value's text at ``limit`` (made off the loop, bounded)."""
    if outcome.error is None and (outcome.text is None or limit < outcome.limit_used):
        text = await bounded(_model_text, outcome.value, limit, seconds=_format_seconds())
        outcome.text = _placeholder(outcome.value) if text is TIMED_OUT else text
        outcome.limit_used = limit
    return _text_result(call, outcome, limit)


def _text_result(call: ToolCall, outcome: _Outcome, limit: int) -> ToolResult:
    """The result from what is already known (no user code runs here)."""
    if outcome.error is None:
        content, truncated = outcome.text or _placeholder(outcome.value)
        if len(content) > limit:  # text made for a larger limit, the run stopping
            content, truncated = cut_middle(content, limit)[0], True
        return ToolResult(
            call.id, call.name, True, content, None, outcome.duration, truncated,
            approval=outcome.approval, value=outcome.value, preview=outcome.preview,
        )  # fmt: skip
    error, truncated = cut_middle(outcome.error, limit - len("Error: "))
    return ToolResult(
        call.id, call.name, False, f"Error: {error}", error, outcome.duration, truncated,
        traceback=outcome.tb, approval=outcome.approval,
    )  # fmt: skip


FORMAT_SECONDS = 5.0
"""How long a returned value may take to become text (its repr, a DataFrame's CSV)."""


def _format_seconds() -> float:
    left = remaining()
    return FORMAT_SECONDS if left is None else min(FORMAT_SECONDS, max(left, 0.05))


def _placeholder(value: Any) -> tuple[str, bool]:
    name = type(value).__name__  # a class attribute: no user code runs
    return f"<{name} object: could not be formatted within {FORMAT_SECONDS:g} s>", True


def _model_text(value: Any, limit: int) -> tuple[str, bool]:
    """:func:`to_model_text` that never raises (runs on a worker thread)."""
    try:
        return to_model_text(value, limit)
    except BaseException as exc:  # a broken __repr__ (even SystemExit) must not kill the run
        try:
            why = str(exc) if isinstance(exc, Exception) else type(exc).__name__
        except BaseException:
            why = type(exc).__name__
        return f"<{type(value).__name__}: unprintable ({why})>", False


def _format(value: Any, limit: int) -> tuple[tuple[str, bool], tuple[str | None, str | None]]:
    """Model text and stored preview of a returned value (runs on a worker thread)."""
    text = _model_text(value, limit)
    try:
        preview = preview_value(value)
    except BaseException as exc:
        preview = type(value).__name__, json.dumps({"error": f"no preview: {type(exc).__name__}"})
    return text, preview


def _describe(exc: BaseException) -> tuple[str, str | None]:
    """Error text and traceback of a tool's exception (runs on a worker thread)."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except BaseException:
        text = f"{type(exc).__name__}: (its message could not be read)"
    try:
        tb: str | None = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except BaseException:
        tb = None
    return text, tb


async def _absorb(outcome: _Outcome, result: tuple[bool, Any]) -> None:
    """Fill ``outcome`` from a worker's ``(ok, value or exception)``, formatting off the loop."""
    ok, payload = result
    if ok:
        outcome.value = payload
        made = await bounded(_format, payload, outcome.limit_used, seconds=_format_seconds())
        _take(outcome, made)
        return
    described = await bounded(_describe, payload, seconds=_format_seconds())
    if described is TIMED_OUT:
        described = f"{type(payload).__name__}: (its message could not be read in time)", None
    outcome.error, outcome.tb = described


def _take(outcome: _Outcome, made: Any) -> None:
    """Keep what :func:`_format` made (a placeholder when it did not finish in time)."""
    if made is TIMED_OUT:
        outcome.text = _placeholder(outcome.value)
        no_preview = json.dumps({"error": "no preview: it could not be formatted in time"})
        outcome.preview = type(outcome.value).__name__, no_preview
    else:
        outcome.text, outcome.preview = made


def _log_invalid(name: str, call: ToolCall, error: str) -> None:
    """A WARNING: the model sent arguments the tool cannot take (secrets redacted)."""
    from .._internal.redaction import scrub

    raw = call.raw_arguments
    if raw is None:
        raw = json.dumps(call.arguments, ensure_ascii=False, default=repr)
    logger.warning(
        "invalid arguments for %s (call %s): %s; raw arguments: %s",
        name, call.id, scrub(error), scrub(raw[:2000]),
    )  # fmt: skip


async def _invoke(
    t: Tool,
    call: ToolCall,
    outcome: _Outcome,
    approver: Approver | None,
    default_timeout: float,
    limit: int,
) -> None:
    from .schema import ArgumentError  # pydantic, loaded with the first tool anyway

    try:
        arguments = t.validate(call)
    except ArgumentError as exc:
        outcome.error = f"Invalid arguments for {t.name}: {exc}"
        _log_invalid(t.name, call, outcome.error)
        return
    if t.requires_approval:
        try:
            approved, who = await ask(approver, call, t)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a broken approver denies; it never kills the run
            text = str(exc) if isinstance(exc, ApproverFailed) else f"{type(exc).__name__}: {exc}"
            approved, who = False, f"a failing approver ({text})"
        outcome.approval = f"{'approved' if approved else 'denied'} by {who}"
        if not approved:
            outcome.error = f"The user denied this call to {t.name} ({outcome.approval})."
            return
    timeout = t.timeout if t.timeout is not None else default_timeout
    outcome.limit_used = limit
    outcome.started = time.perf_counter()
    context = contextvars.copy_context()
    if t.is_async:
        outcome.sync = False
        await _run_async(t, lambda: t.fn(**arguments), outcome, timeout, context)
        return
    lock = _SEQUENTIAL_THREADS if t.sequential else None
    future, follow = in_thread(
        t.fn, context=context, lock=lock, then=lambda o: _format(o[1], limit) if o[0] else None,
        **arguments,
    )  # fmt: skip
    if not future.done():
        done, _ = await asyncio.wait({future}, timeout=timeout)
        if not done:
            future.cancel()
            outcome.error = f"{t.name} timed out after {timeout:g} s"
            return
    ok, payload = future.result()
    if ok and inspect.isawaitable(payload):  # a sync wrapper that returned a coroutine
        outcome.sync = False
        spent = time.perf_counter() - outcome.started
        left_s = max(timeout - spent, 0.001)
        await _run_async(t, lambda: _awaited(payload), outcome, left_s, context)
        return
    if not ok:
        await _absorb(outcome, (ok, payload))
        return
    outcome.value = payload
    assert follow is not None
    _take(outcome, await settle(follow, _format_seconds()))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _run_async(
    t: Tool, make: Callable[[], Any], outcome: _Outcome, timeout: float, context: Any
) -> None:
    """Run an async tool on a worker event loop; abandon it if it outlives ``timeout``."""
    call = AsyncCall(make, context)
    try:
        if not call.future.done():
            done, _ = await asyncio.wait({call.future}, timeout=timeout)
            if not done:
                call.cancel()
                await asyncio.sleep(_GRACE_SECONDS)  # a cooperative coroutine ends at once
                outcome.error = f"{t.name} timed out after {timeout:g} s"
                if not call.finished.is_set():
                    call.abandon()  # its loop is blocked: later calls get a fresh one
                    outcome.error += (
                        " and was abandoned: it blocked its event loop (an async tool must"
                        " not call blocking code such as time.sleep); it may still finish"
                        " in the background"
                    )
                return
    except asyncio.CancelledError:
        call.abandon()
        raise
    await _absorb(outcome, call.future.result())


_GRACE_SECONDS = 0.05
"""After cancelling a timed-out async tool, how long it has to end before it counts as stuck."""


_SEQUENTIAL_THREADS = threading.Lock()
"""Held by the worker thread while a sync ``sequential`` tool runs. The round's asyncio
lock orders the calls; this one also covers a call that timed out but whose thread
is still running, so no two sequential tools ever overlap, in any round or agent."""
