"""Running async runs from synchronous code, including inside Jupyter.

Jupyter already runs an event loop in the kernel's main thread, so
``asyncio.run`` is not allowed there. Instead of patching asyncio
(nest-asyncio), sync calls hand the coroutine to one long-lived background
event loop thread and wait on a thread-safe queue. The caller's thread stays
the one that receives KeyboardInterrupt (kernel interrupt, Ctrl-C).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from .errors import NbAgentError

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_lock = threading.Lock()
DRAIN_TIMEOUT = 10.0
"""After an interrupt, how long to wait for the run to wrap up (close streams, fix history)."""


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop thread used by the sync API (started on first use)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="nbagent-event-loop", daemon=True
            )
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def iterate_in_background(
    make_stream: Callable[[], AsyncIterator[T]],
    on_interrupt: Callable[[], None],
) -> Iterator[T]:
    """Iterate an async stream from sync code.

    On KeyboardInterrupt in the caller's thread, ``on_interrupt`` is called (in the
    loop thread), the remaining items are still yielded (so the consumer sees how
    the stream ended), and then KeyboardInterrupt is re-raised. Closing the
    iterator early (``break``) cancels the same way and waits for the stream to
    wrap up, so the run's history is valid once ``close()`` returns.
    """
    loop = background_loop()
    if threading.current_thread() is _thread:
        raise NbAgentError(
            "a sync nbagent call (run_sync/stream_sync) was made from async code running "
            "on nbagent's own event loop (an async tool?); use `await agent.run(...)` there"
        )
    items: queue.Queue[tuple[str, Any]] = queue.Queue()

    async def pump() -> None:
        try:
            async for item in make_stream():
                items.put(("item", item))
        except BaseException as exc:  # delivered to the caller's thread
            items.put(("error", exc))
        finally:
            items.put(("done", None))

    future = asyncio.run_coroutine_threadsafe(pump(), loop)
    seen_item = False
    interrupted = False

    def interrupt() -> None:
        # Before the first item the run may not exist yet: stop the pump itself.
        if seen_item:
            loop.call_soon_threadsafe(on_interrupt)
        else:
            future.cancel()

    while True:
        try:
            # A timeout keeps the wait interruptible by Ctrl-C on every platform.
            kind, payload = items.get(timeout=0.1)
            if kind == "done":
                break
            if kind == "error":
                if interrupted and isinstance(payload, asyncio.CancelledError):
                    break
                raise payload
            seen_item = True
            try:
                yield payload
            except GeneratorExit:
                interrupt()
                _drain(items)
                raise
        except queue.Empty:
            continue
        except KeyboardInterrupt:
            if interrupted:  # a second Ctrl-C: stop waiting for the run to wrap up
                raise
            interrupted = True
            interrupt()
    if interrupted:
        raise KeyboardInterrupt


def _drain(items: queue.Queue[tuple[str, Any]]) -> None:
    """Wait (bounded) until the pump has finished, discarding what it still produces."""
    try:
        while True:
            kind, _ = items.get(timeout=DRAIN_TIMEOUT)
            if kind == "done":
                return
    except queue.Empty:
        return


def run_in_background(coro_factory: Callable[[], Any]) -> Any:
    """Run a coroutine on the background loop and return its result (Ctrl-C cancels it)."""
    loop = background_loop()
    future = asyncio.run_coroutine_threadsafe(coro_factory(), loop)
    try:
        while True:
            try:
                return future.result(timeout=0.1)
            except concurrent.futures.TimeoutError:
                continue
    except KeyboardInterrupt:
        future.cancel()
        raise
