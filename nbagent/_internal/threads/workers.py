"""Where user code runs: worker threads and worker event loops, never nbagent's loop.

Anything a user wrote (a tool, a returned value's ``repr``, an exception's
``str``, an approver) may block, hang or raise ``BaseException``. On nbagent's
own event loop that would stop every timeout and could kill the loop thread, so
it runs here instead, and the loop only ever awaits an ``asyncio.Future`` that
resolves to ``(ok, payload)``: a ``KeyboardInterrupt`` or ``SystemExit`` from
user code arrives as a value (``ok`` False), never raised into a loop.

* :func:`in_thread` runs a function on a daemon worker thread (reused).
* :class:`AsyncCall` runs a coroutine on a worker event loop (its own daemon
  thread); one that blocks that loop can be abandoned: the loop is retired (no
  new work) and a fresh one takes later calls.
* :func:`bounded` runs a function in a worker thread and gives up after a time
  bound (the thread is abandoned, never waited for); :func:`wait_bounded` is the
  same for a caller that is not on an event loop (a cell's own thread).
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = [
    "TIMED_OUT",
    "AsyncCall",
    "bounded",
    "in_thread",
    "on_async_worker",
    "settle",
    "submit",
    "wait_bounded",
]

Outcome = tuple[bool, Any]
"""``(True, value)`` or ``(False, the BaseException raised)``."""

TIMED_OUT: Any = object()
"""What :func:`bounded` returns when the function did not finish in time."""


class _Workers:
    """Daemon worker threads for user code, reused between calls.

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
            try:
                job()
            except BaseException:  # noqa: S110 - jobs deliver their own errors; the worker lives on
                pass
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()


def submit(job: Callable[[], None]) -> None:
    """Run ``job()`` on a worker thread now (it must deliver its own result)."""
    _WORKERS.submit(job)


def _resolver(loop: asyncio.AbstractEventLoop) -> tuple[asyncio.Future[Any], Callable[..., None]]:
    """A future on ``loop`` and ``resolve(payload)`` setting it once (call it on ``loop``)."""
    future: asyncio.Future[Any] = loop.create_future()

    def resolve(payload: Any) -> None:
        if not future.done():  # timed out or cancelled meanwhile: drop the late result
            future.set_result(payload)

    return future, resolve


def _post(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    """``fn(*args)`` on ``loop`` from another thread (nothing if the loop has closed)."""
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the loop closed while the user's code ran
        pass


def _deliverer(loop: asyncio.AbstractEventLoop) -> tuple[asyncio.Future[Any], Callable[..., None]]:
    """A future on ``loop`` and a thread-safe ``deliver(payload)`` that resolves it once."""
    future, resolve = _resolver(loop)
    return future, lambda payload: _post(loop, resolve, payload)


_PLAIN_SCALARS = frozenset({int, float, str, bool, type(None), bytes})


def is_plain(value: Any, depth: int = 3) -> bool:
    """Whether formatting ``value`` runs no user code (so it needs no hop of its own).

    Built-in scalars, and exact lists, tuples and dicts of them (a few levels deep,
    up to 100 items each).
    """
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return True
    if depth == 0 or kind not in (list, tuple, dict) or len(value) > 100:
        return False
    items = value.items() if kind is dict else enumerate(value)
    return all(type(k) in _PLAIN_SCALARS and is_plain(v, depth - 1) for k, v in items)


def in_thread(
    fn: Callable[..., Any],
    *args: Any,
    context: contextvars.Context | None = None,
    lock: threading.Lock | None = None,
    then: Callable[[Outcome], Any] | None = None,
    **kwargs: Any,
) -> tuple[asyncio.Future[Outcome], asyncio.Future[Any] | None]:
    """Run ``fn(*args, **kwargs)`` on a worker thread (in ``context``, holding ``lock``).

    Returns a future on the running loop resolving to ``(ok, value or exception)``
    and, when ``then`` is given, a second future with ``then(outcome)`` computed
    right after on the same thread (formatting the value without another hop).
    For a plain value (:func:`is_plain`: formatting it cannot hang) both futures
    are resolved by one wake-up of the loop; otherwise the outcome goes first, so
    a format that hangs still lets the caller time it out.
    """
    loop = asyncio.get_running_loop()
    future, resolve = _resolver(loop)
    follow, resolve_next = _resolver(loop) if then is not None else (None, None)
    context = context if context is not None else contextvars.copy_context()

    def resolve_both(outcome: Outcome, made: Outcome) -> None:
        resolve(outcome)
        if resolve_next is not None:
            resolve_next(made)

    def job() -> None:
        try:
            if lock is None:
                outcome: Outcome = (True, context.run(fn, *args, **kwargs))
            else:
                with lock:
                    outcome = (True, context.run(fn, *args, **kwargs))
        except BaseException as exc:
            outcome = (False, exc)
        if then is None:
            _post(loop, resolve, outcome)
            return
        plain = outcome[0] and is_plain(outcome[1])
        if not plain:
            _post(loop, resolve, outcome)
        try:
            made: Outcome = (True, then(outcome))
        except BaseException as exc:
            made = (False, exc)
        if plain:
            _post(loop, resolve_both, outcome, made)
        else:
            assert resolve_next is not None
            _post(loop, resolve_next, made)

    _WORKERS.submit(job)
    return future, follow


async def bounded(fn: Callable[..., Any], *args: Any, seconds: float) -> Any:
    """``fn(*args)`` computed on a worker thread, or :data:`TIMED_OUT` after ``seconds``.

    Exceptions (any BaseException) are raised here as ``RuntimeError`` wrapping
    their type name, so user code can never raise KeyboardInterrupt into a loop.
    """
    future, _ = in_thread(fn, *args)
    return await settle(future, seconds)


def wait_bounded(fn: Callable[..., Any], *args: Any, seconds: float) -> Any:
    """``fn(*args)`` computed on a worker thread, or :data:`TIMED_OUT` after ``seconds``.

    For a thread that is not running an event loop (a cell formatting a value for
    its prompt): it blocks at most ``seconds``, then leaves the worker to finish
    (or hang) on its own. An ``Exception`` from ``fn`` is raised here as is; any
    other BaseException (``SystemExit``, ``KeyboardInterrupt`` raised by user code)
    as ``RuntimeError`` naming it (its ``__cause__``), so user code cannot end the
    caller's cell by it.
    """
    finished = threading.Event()
    box: list[Outcome] = []

    def job() -> None:
        try:
            outcome: Outcome = (True, fn(*args))
        except BaseException as exc:
            outcome = (False, exc)
        box.append(outcome)
        finished.set()

    _WORKERS.submit(job)
    if not finished.wait(max(seconds, 0.0)):
        return TIMED_OUT
    ok, payload = box[0]
    if ok:
        return payload
    if isinstance(payload, Exception):
        raise payload
    raise RuntimeError(f"{type(payload).__name__} raised by the value's own code") from payload


async def settle(future: asyncio.Future[Outcome], seconds: float) -> Any:
    """The value of an :func:`in_thread` future within ``seconds`` (or :data:`TIMED_OUT`)."""
    if not future.done():
        done, _ = await asyncio.wait({future}, timeout=max(seconds, 0.0))
        if not done:
            future.cancel()
            return TIMED_OUT
    ok, payload = future.result()
    if ok:
        return payload
    raise RuntimeError(f"{type(payload).__name__} while formatting") from None


# -- async user code ------------------------------------------------------------------


class _AsyncWorker:
    """One worker event loop on its own daemon thread.

    A BaseException escaping a callback never ends the thread (the loop is run
    again); :meth:`retire` stops it once its last call has finished (a blocked call
    may keep it forever: it is a daemon thread, like an abandoned sync tool's).
    """

    count = 0

    def __init__(self) -> None:
        _AsyncWorker.count += 1
        self.loop = asyncio.new_event_loop()
        self.active = 0
        self.retired = False
        self._lock = threading.Lock()
        self.thread = threading.Thread(
            target=self._run, name=f"nbagent-async-tools-{_AsyncWorker.count}", daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        _here.async_worker = True
        while True:
            try:
                self.loop.run_forever()
            except BaseException:  # noqa: S112 - user code raised through the loop: keep serving
                continue
            with self._lock:
                if self.retired and self.active == 0:
                    break
        self.loop.close()

    def start(
        self,
        make: Callable[[], Coroutine[Any, Any, Any]],
        context: contextvars.Context,
        deliver: Callable[[Outcome], None],
    ) -> list[asyncio.Task[None]]:
        """Run ``make()`` (in ``context``) here; ``deliver`` gets its outcome.

        Returns a box that holds the task once it exists (to cancel it).
        """
        with self._lock:
            self.active += 1
        task_box: list[asyncio.Task[None]] = []

        async def guarded() -> None:
            try:
                outcome: Outcome = (True, await make())
            except BaseException as exc:  # the tool's own CancelledError included
                outcome = (False, exc)
            deliver(outcome)

        def done(task: asyncio.Task[None]) -> None:
            if task.cancelled():  # cancelled before its first step: the tool never ran
                deliver((False, asyncio.CancelledError()))
            with self._lock:
                self.active -= 1
                stop = self.retired and self.active == 0
            if stop:
                self.loop.stop()

        def begin() -> None:
            # The coroutine is made here, in the task's copy of the caller's context.
            task = context.run(self.loop.create_task, guarded())
            task.add_done_callback(done)
            task_box.append(task)

        self.loop.call_soon_threadsafe(begin)
        return task_box

    def cancel(self, task_box: list[asyncio.Task[None]]) -> None:
        def cancel_task() -> None:
            for task in task_box:
                task.cancel()

        try:
            self.loop.call_soon_threadsafe(cancel_task)
        except RuntimeError:
            pass

    def retire(self) -> None:
        """No new calls come here; the loop ends once its running calls have finished."""
        with self._lock:
            self.retired = True
            stop = self.active == 0
        if stop:
            try:
                self.loop.call_soon_threadsafe(self.loop.stop)
            except RuntimeError:
                pass


_here = threading.local()


def on_async_worker() -> bool:
    """True on a worker event loop's thread (where a blocking wait would stall async tools)."""
    return bool(getattr(_here, "async_worker", False))


_current: _AsyncWorker | None = None
_current_lock = threading.Lock()


def _worker() -> _AsyncWorker:
    global _current
    with _current_lock:
        if _current is None or _current.retired or not _current.thread.is_alive():
            _current = _AsyncWorker()
        return _current


class AsyncCall:
    """A coroutine (made by ``make``) running on a worker event loop.

    ``await call.future`` gives ``(ok, value or exception)``; :meth:`abandon`
    cancels it and retires its loop so a blocked coroutine holds up nothing else.
    """

    def __init__(
        self,
        make: Callable[[], Coroutine[Any, Any, Any]],
        context: contextvars.Context | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        self.future, deliver = _deliverer(loop)
        self.finished = threading.Event()

        def deliver_and_mark(outcome: Outcome) -> None:
            self.finished.set()
            deliver(outcome)

        context = context if context is not None else contextvars.copy_context()
        self._worker = _worker()
        self._task = self._worker.start(make, context, deliver_and_mark)

    def cancel(self) -> None:
        """Ask the coroutine to stop (it does at its next await, if its loop is free)."""
        if not self.finished.is_set():
            self._worker.cancel(self._task)

    def abandon(self) -> None:
        """Cancel the coroutine and retire its loop (later calls get a fresh one)."""
        if self.finished.is_set():
            return
        self._worker.cancel(self._task)
        with _current_lock:
            self._worker.retire()
