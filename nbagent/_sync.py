"""Running async runs from synchronous code, including inside Jupyter.

Jupyter already runs an event loop in the kernel's main thread, so
``asyncio.run`` is not allowed there. Instead of patching asyncio
(nest-asyncio), sync calls hand the coroutine to one long-lived background
event loop thread and wait on a thread-safe queue. The caller's thread stays
the one that receives KeyboardInterrupt (kernel interrupt, Ctrl-C).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()
_DONE = object()


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop thread used by the sync API (started on first use)."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="nbagent-event-loop", daemon=True
            )
            thread.start()
            _loop = loop
        return _loop


def iterate_in_background(
    make_stream: Callable[[], AsyncIterator[T]],
    on_interrupt: Callable[[], None],
) -> Iterator[T]:
    """Iterate an async stream from sync code.

    On KeyboardInterrupt in the caller's thread, ``on_interrupt`` is called (in the
    loop thread), the remaining items are still yielded (so the consumer sees how
    the stream ended), and then KeyboardInterrupt is re-raised.
    """
    loop = background_loop()
    items: queue.Queue[Any] = queue.Queue()

    async def pump() -> None:
        try:
            async for item in make_stream():
                items.put(("item", item))
        except BaseException as exc:  # delivered to the caller's thread
            items.put(("error", exc))
        finally:
            items.put(("done", _DONE))

    asyncio.run_coroutine_threadsafe(pump(), loop)
    interrupted = False
    while True:
        try:
            kind, payload = items.get(timeout=0.05)
        except queue.Empty:
            continue
        except KeyboardInterrupt:
            if not interrupted:
                interrupted = True
                loop.call_soon_threadsafe(on_interrupt)
            continue
        if kind == "done":
            break
        if kind == "error":
            raise payload
        try:
            yield payload
        except GeneratorExit:
            loop.call_soon_threadsafe(on_interrupt)
            raise
    if interrupted:
        raise KeyboardInterrupt
