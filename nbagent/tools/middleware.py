"""Tool middleware: functions wrapping every tool call, and the per-call wrapper.

A middleware is ``mw(call, arguments, proceed) -> result``: it sees the call and
its checked arguments, may change them, calls ``proceed(arguments)`` (or not) and
returns the result, which it may change too. ``Agent(tool_middleware=[a, b])``
runs ``a`` outermost. For a sync tool the chain runs on the tool's worker thread
and ``proceed`` returns the value; for an async tool it runs on the event loop and
``proceed`` returns an awaitable, which a middleware returns (or awaits inside an
``async`` wrapper of its own). :func:`cache` and :func:`rate_limit` handle both.

:func:`wrap_call` is what the loop applies to each call's tool: middleware, then
retries (:mod:`.retry`), then progress (generator tools' yields become progress
lines, and the model gets the return value or the last value yielded).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Any

from ..messages import ToolCall
from .progress import CURRENT_REPORTER, Reporter, progress
from .retry import retrying, retrying_async
from .tool import Tool

__all__ = ["Middleware", "cache", "rate_limit", "wrap_call"]

Proceed = Callable[[dict[str, Any]], Any]
Middleware = Callable[[ToolCall, dict[str, Any], Proceed], Any]


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _key(call: ToolCall, arguments: dict[str, Any]) -> str:
    return call.name + "\x00" + json.dumps(arguments, sort_keys=True, default=repr)


def cache(ttl: float | None = None, maxsize: int = 256) -> Middleware:
    """Remember results by tool name and arguments for ``ttl`` seconds (None: forever).

    Failed calls are not cached. At most ``maxsize`` results are kept (oldest out).
    """
    store: OrderedDict[str, tuple[float, Any]] = OrderedDict()
    lock = threading.Lock()

    def fresh(key: str) -> tuple[bool, Any]:
        with lock:
            hit = store.get(key)
            if hit is None or (ttl is not None and time.monotonic() - hit[0] > ttl):
                store.pop(key, None)
                return False, None
            store.move_to_end(key)
            return True, hit[1]

    def keep(key: str, value: Any) -> Any:
        with lock:
            store[key] = (time.monotonic(), value)
            while len(store) > maxsize:
                store.popitem(last=False)
        return value

    def middleware(call: ToolCall, arguments: dict[str, Any], proceed: Proceed) -> Any:
        key = _key(call, arguments)
        found, value = fresh(key)
        if found:
            progress("cached result")
            return value
        result = proceed(arguments)
        if inspect.isawaitable(result):
            awaitable = result

            async def later() -> Any:
                return keep(key, await awaitable)

            return later()
        return keep(key, result)

    return middleware


def rate_limit(calls: int, per_seconds: float) -> Middleware:
    """At most ``calls`` calls (of any wrapped tool) in any ``per_seconds`` window.

    A call over the limit waits for its slot (shown as a progress line) rather
    than failing; the wait counts toward the tool's timeout.
    """
    if calls < 1 or per_seconds <= 0:
        raise ValueError("rate_limit needs calls >= 1 and per_seconds > 0")
    starts: deque[float] = deque()
    lock = threading.Lock()

    def reserve() -> float:
        """The wait before this call's slot (the slot is taken now)."""
        with lock:
            now = time.monotonic()
            while starts and now - starts[0] >= per_seconds:
                starts.popleft()
            slot = now if len(starts) < calls else starts[-calls] + per_seconds
            starts.append(slot)
            return max(0.0, slot - now)

    def middleware(call: ToolCall, arguments: dict[str, Any], proceed: Proceed) -> Any:
        wait = reserve()
        if wait > 0:
            progress(f"rate limit: waiting {wait:.1f} s")
        if _on_loop():  # an async tool: wait without blocking the loop

            async def later() -> Any:
                await asyncio.sleep(wait)
                result = proceed(arguments)
                return await result if inspect.isawaitable(result) else result

            return later()
        time.sleep(wait)
        return proceed(arguments)

    return middleware


# --------------------------------------------------------------------------- the wrapper


def _drain(value: Any) -> Any:
    """A generator's yields as progress lines; its return value, or the last yield."""
    if not inspect.isgenerator(value):
        return value
    last = None
    while True:
        try:
            item = next(value)
        except StopIteration as stop:
            return stop.value if stop.value is not None else last
        progress(item)
        last = item


async def _adrain(value: Any) -> Any:
    if inspect.isawaitable(value):
        value = await value
    if inspect.isasyncgen(value):
        last = None
        async for item in value:
            progress(item)
            last = item
        return last
    return _drain(value)


def _chain(call: ToolCall, middleware: Sequence[Middleware], inner: Proceed) -> Proceed:
    proceed = inner
    for mw in reversed(middleware):

        def step(arguments: dict[str, Any], mw: Middleware = mw, nxt: Proceed = proceed) -> Any:
            return mw(call, arguments, nxt)

        proceed = step
    return proceed


def wrap_call(
    t: Tool, call: ToolCall, middleware: Sequence[Middleware], reporter: Reporter | None
) -> Tool:
    """``t`` for this one call: middleware, retries, progress and generator draining."""
    fn = t.fn
    retries, retry_on, backoff = t.retries, t.retry_on, t.retry_backoff
    if t.is_async_generator or t.is_async:

        async def attempt_async(args: dict[str, Any]) -> Any:
            if not retries:
                return await _adrain(fn(**args))
            return await retrying_async(lambda: _adrain(fn(**args)), retries, retry_on, backoff)

        async def run_async(**arguments: Any) -> Any:
            token = CURRENT_REPORTER.set(reporter)
            try:
                if not middleware:
                    return await attempt_async(arguments)
                result = _chain(call, middleware, attempt_async)(arguments)
                return await result if inspect.isawaitable(result) else result
            finally:
                CURRENT_REPORTER.reset(token)

        return t.with_function(run_async, is_async=True)

    def attempt(args: dict[str, Any]) -> Any:
        if not retries:
            return _drain(fn(**args))
        return retrying(lambda: _drain(fn(**args)), retries, retry_on, backoff)

    def run_sync(**arguments: Any) -> Any:
        token = CURRENT_REPORTER.set(reporter)
        try:
            return (
                _chain(call, middleware, attempt)(arguments) if middleware else attempt(arguments)
            )
        finally:
            CURRENT_REPORTER.reset(token)

    return t.with_function(run_sync, is_async=False)
