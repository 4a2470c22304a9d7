"""Running code on the kernel's main thread while the agent's loop runs elsewhere.

The agent loop runs on nbagent's background event loop; sync tools run on worker
threads. ``run_python`` must run where a cell runs: the kernel's main thread, so
libraries that need it work and a kernel interrupt (SIGINT, which Python delivers
to the main thread) stops the code. While a cell drives a run, the main thread
sits in the live driver's consumer loop; the driver installs a *poster* in a
context variable, every tool call inherits it, and :func:`call_on_main_thread`
posts a :class:`MainThreadJob` into the driver's stream, which runs it between
two events. Without a driver (a plain ``Agent.run_sync`` in a script) the code
runs on the calling thread.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["MAIN_THREAD_POSTER", "MainThreadJob", "call_on_main_thread"]

MAIN_THREAD_POSTER: contextvars.ContextVar[Callable[[MainThreadJob], object] | None] = (
    contextvars.ContextVar("nbagent_main_thread_poster", default=None)
)
"""Set by the live driver for the run it drives: posts a job to its consumer (thread-safe)."""


class JobTimedOut(Exception):
    """The job ran past its timeout and was interrupted."""


class MainThreadJob:
    """One function to run on the driver's consumer thread; the caller waits for it."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._lock = threading.Lock()
        self._state = "waiting"  # -> running -> done
        self._timed_out = False

    def run(self, on_interrupt: Callable[[], object] | None = None) -> None:
        """Run the function here.

        A KeyboardInterrupt that was not our timeout calls ``on_interrupt`` (before
        the waiting tool gets its answer), then is re-raised.
        """
        with self._lock:
            if self._state != "waiting":  # withdrawn (timed out before it started)
                return
            self._state = "running"
        try:
            value = self.fn()
        except KeyboardInterrupt as exc:
            with self._lock:
                self._state = "done"
                timed_out = self._timed_out
            if not timed_out and on_interrupt is not None:
                on_interrupt()
            self.future.set_exception(JobTimedOut() if timed_out else exc)
            if not timed_out:
                raise
            return
        except BaseException as exc:
            with self._lock:
                self._state = "done"
            self.future.set_exception(exc)
            return
        with self._lock:
            self._state = "done"
        self.future.set_result(value)

    def interrupt(self) -> bool:
        """Stop the job: withdraw it if it has not started, else interrupt the main thread.

        Returns True if the job will not produce a normal result.
        """
        with self._lock:
            if self._state == "waiting":
                self._state = "done"
                self.future.set_exception(JobTimedOut())
                return True
            if self._state == "running":
                self._timed_out = True
                _thread.interrupt_main()
                return True
            return False


def call_on_main_thread(fn: Callable[[], Any], timeout: float) -> Any:
    """``fn()`` on the driver's consumer thread (or here, without a driver).

    Raises :class:`JobTimedOut` after ``timeout`` seconds (the code is interrupted),
    KeyboardInterrupt if the user interrupted the kernel, else whatever ``fn`` raised.
    """
    post = MAIN_THREAD_POSTER.get()
    if post is None or threading.current_thread() is threading.main_thread():
        return fn()
    job = MainThreadJob(fn)
    post(job)
    try:
        return job.future.result(timeout)
    except concurrent.futures.TimeoutError:
        if job.interrupt():
            try:
                return job.future.result(10.0)
            except concurrent.futures.TimeoutError:
                raise JobTimedOut() from None
        return job.future.result()
