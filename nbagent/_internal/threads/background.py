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
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from ...errors import NbAgentError
from .workers import on_async_worker

T = TypeVar("T")
logger = logging.getLogger("nbagent")

_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_lock = threading.Lock()
DRAIN_TIMEOUT = 10.0
"""After an interrupt, how long to wait for the run to wrap up (close streams, fix history)."""


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop thread used by the sync API (started on first use).

    A loop whose thread is gone (it should not happen: see :func:`_serve`) is
    replaced here, so the next call works.
    """
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed() or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=_serve, args=(loop,), name="nbagent-event-loop", daemon=True
            )
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """Run ``loop`` for good: a BaseException escaping a callback does not end the thread.

    asyncio lets KeyboardInterrupt and SystemExit out of ``run_forever``; user code
    never runs on this loop (see nbagent._internal.threads.workers), but if such an exception gets
    here anyway the loop is simply run again (its pending callbacks kept).
    """
    asyncio.set_event_loop(loop)
    while True:
        try:
            loop.run_forever()
        except BaseException as exc:  # noqa: BLE001 - the thread must outlive it
            logger.warning(
                "nbagent's event loop: %s escaped a callback; the loop goes on",
                type(exc).__name__,
            )
            continue
        return  # stopped on purpose


def _loop_thread() -> threading.Thread | None:
    return _thread


def _check_alive(thread: threading.Thread | None) -> None:
    """Raise a clear error when the loop thread a caller waits on is gone."""
    if thread is not None and not thread.is_alive():
        raise NbAgentError(
            "nbagent's event loop thread stopped while this run was going on; the run was "
            "abandoned (its history may lack this turn). The next call starts a fresh loop."
        )


def _loop_for_sync_call() -> asyncio.AbstractEventLoop:
    """The background loop, refusing a caller on that loop's own thread (it would deadlock)."""
    loop = background_loop()
    if threading.current_thread() is _thread or on_async_worker():
        raise NbAgentError(
            "a sync nbagent call (run_sync/stream_sync) was made from async code running "
            "on nbagent's own event loop (an async tool?); use `await agent.run(...)` there "
            "(and `await agent.aclose()` instead of close())"
        )
    return loop


class _Pump:
    """Moves a stream's items from the loop thread to the caller's thread.

    ``stop`` may be called from any thread at any moment (a Ctrl-C can land
    anywhere, even while the pump is being scheduled); the decision is taken on
    the loop thread, where it cannot race with the pump itself.
    """

    def __init__(
        self, make_stream: Callable[[], AsyncIterator[Any]], on_interrupt: Callable[[], None]
    ) -> None:
        self.items: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.make_stream = make_stream
        self.on_interrupt = on_interrupt
        self.started = threading.Event()
        self._stopped = False
        self._streaming = False
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        self._task = asyncio.current_task()
        self.started.set()
        try:
            if self._stopped:  # interrupted before it began: never start the run
                return
            async for item in self.make_stream():
                self._streaming = True
                self.items.put(("item", item))
        except asyncio.CancelledError:
            pass  # stopped before the stream produced anything
        except BaseException as exc:  # delivered to the caller's thread
            self.items.put(("error", exc))
        finally:
            self.items.put(("done", None))

    def stop(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.call_soon_threadsafe(self._stop_on_loop)

    def _stop_on_loop(self) -> None:
        self._stopped = True
        if self._streaming:
            self.on_interrupt()  # the run exists: cancel it and let it report how it ended
        elif self._task is not None:
            self._task.cancel()  # the run may not exist yet: stop the pump itself

    def drain(self) -> None:
        """Wait (bounded) until the pump has finished, discarding what it still produces."""
        began = time.monotonic()
        while time.monotonic() - began < DRAIN_TIMEOUT:
            try:
                if self.items.get(timeout=0.1)[0] == "done":
                    return
            except queue.Empty:
                # A Ctrl-C inside run_coroutine_threadsafe may mean it was never
                # scheduled; an idle loop thread starts a scheduled pump at once.
                if not self.started.is_set() and time.monotonic() - began > 1.0:
                    return


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
    loop = _loop_for_sync_call()
    thread = _loop_thread()
    pump = _Pump(make_stream, on_interrupt)
    interrupted = False
    try:
        asyncio.run_coroutine_threadsafe(pump.run(), loop)
    except KeyboardInterrupt:
        pump.stop(loop)
        pump.drain()
        raise
    while True:
        # Everything between two items sits inside this try, the queue.Empty handler
        # included: a Ctrl-C landing while that handler runs must still cancel the run
        # instead of escaping with the run left going.
        try:
            try:
                # A timeout keeps the wait interruptible by Ctrl-C on every platform.
                kind, payload = pump.items.get(timeout=0.1)
            except queue.Empty:
                _check_alive(thread)
                continue
            if kind == "done":
                break
            if kind == "error":
                raise payload
            try:
                yield payload
            except GeneratorExit:
                pump.stop(loop)
                pump.drain()
                raise
        except KeyboardInterrupt:
            if interrupted:  # a second Ctrl-C: stop waiting for the run to wrap up
                raise
            interrupted = True
            pump.stop(loop)
    if interrupted:
        raise KeyboardInterrupt


def run_in_background(
    coro_factory: Callable[[], Any], on_interrupt: Callable[[], None] | None = None
) -> Any:
    """Run a coroutine on the background loop and return its result: one hand-off each way.

    On Ctrl-C the coroutine is stopped: by ``on_interrupt`` (called on the loop
    thread; a run's ``cancel``) if given and the coroutine has begun, else by
    cancelling it (one that has not begun never starts). With ``on_interrupt`` the
    caller then waits (bounded; a second Ctrl-C stops waiting) for it to wrap up
    (streams closed, history written). Either way the interrupt is re-raised.
    """
    loop = _loop_for_sync_call()
    thread = _loop_thread()
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    scheduled = threading.Event()
    # Touched on the loop thread only, so "has it begun" cannot race with the stop.
    state: dict[str, Any] = {"task": None, "stopped": False}

    async def begin() -> None:
        if state["stopped"]:  # interrupted before it began: never start it
            done.cancel()
            return
        try:
            value = await coro_factory()
        except asyncio.CancelledError:
            done.cancel()
        except BaseException as exc:  # delivered to the caller's thread
            done.set_exception(exc)
        else:
            done.set_result(value)

    def start() -> None:
        state["task"] = loop.create_task(begin())
        scheduled.set()

    def stop_on_loop() -> None:
        state["stopped"] = True
        task = state["task"]
        if task is None or task.done():
            return
        if on_interrupt is not None:
            on_interrupt()  # the run exists: it ends with stop_reason "cancelled"
        else:
            task.cancel()

    try:
        loop.call_soon_threadsafe(start)
        return _result(done, thread)
    except KeyboardInterrupt:
        loop.call_soon_threadsafe(stop_on_loop)
        if on_interrupt is not None:
            _wrap_up(done, thread, scheduled)
        raise


def _wrap_up(
    done: concurrent.futures.Future[Any],
    thread: threading.Thread | None,
    scheduled: threading.Event,
) -> None:
    """Wait (at most :data:`DRAIN_TIMEOUT`) for an interrupted coroutine to finish."""
    began = time.monotonic()
    while time.monotonic() - began < DRAIN_TIMEOUT:
        # A Ctrl-C inside call_soon_threadsafe may mean it was never scheduled; an idle
        # loop thread starts a scheduled coroutine at once.
        if not scheduled.is_set() and time.monotonic() - began > 1.0:
            return
        try:
            done.result(timeout=0.1)
            return
        except concurrent.futures.TimeoutError:
            _check_alive(thread)
        except (Exception, concurrent.futures.CancelledError):
            return  # how it ended is in its result; the caller sees the interrupt


def _result(future: concurrent.futures.Future[Any], thread: threading.Thread | None) -> Any:
    """``future``'s result, waited for in short slices (so Ctrl-C stays deliverable)."""
    while True:
        try:
            return future.result(timeout=0.1)
        except concurrent.futures.TimeoutError:
            _check_alive(thread)
