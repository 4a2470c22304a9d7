"""Which thread code runs on: the one place that decides it (import from here).

Three places, one rule: user code (a tool, a value's ``repr``, an approver) never
runs on nbagent's event loop, and the caller's thread stays the one a Ctrl-C or a
kernel interrupt reaches.

* :mod:`.background`: nbagent's own event-loop thread, and the sync API's hand-off
  to it (``run_in_background`` waits for a result, ``iterate_in_background``
  pulls a stream's items, both cancelling cleanly on Ctrl-C). Jupyter's kernel
  already runs a loop, so sync calls go here instead of patching asyncio.
* :mod:`.workers`: worker threads and worker event loops for user code, time
  bounds for formatting values, and :func:`is_plain` (values whose formatting runs
  no user code, so they need no extra hop).
* :mod:`.mainthread`: code that must run where a cell runs (``run_python``),
  posted to the live driver's consumer loop on the kernel's main thread.
"""

from __future__ import annotations

from .background import background_loop, iterate_in_background, run_in_background
from .mainthread import MAIN_THREAD_POSTER, JobTimedOut, MainThreadJob, call_on_main_thread
from .workers import (
    TIMED_OUT,
    AsyncCall,
    bounded,
    in_thread,
    is_plain,
    on_async_worker,
    settle,
    submit,
    wait_bounded,
)

__all__ = [
    "MAIN_THREAD_POSTER",
    "TIMED_OUT",
    "AsyncCall",
    "JobTimedOut",
    "MainThreadJob",
    "background_loop",
    "bounded",
    "call_on_main_thread",
    "in_thread",
    "is_plain",
    "iterate_in_background",
    "on_async_worker",
    "run_in_background",
    "settle",
    "submit",
    "wait_bounded",
]
