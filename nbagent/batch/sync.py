"""``Agent.map`` from synchronous code: the batch on nbagent's loop, the display here.

The rows run on nbagent's background event loop; this thread (a notebook cell's,
a script's) draws the progress and is where a kernel interrupt or Ctrl-C lands.
An interrupt stops the batch (no new rows, rows in flight cancelled) and the
partial frame is returned; a second interrupt while it winds down raises.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
from collections.abc import Mapping
from typing import Any

from .._internal.threads import background_loop
from .progress import BatchStats, Display, choose_display
from .row import BatchAgent
from .runner import BatchControl, run_batch

__all__ = ["run_batch_sync"]


class _Relay:
    """The display the loop sees: it only hands the stats over to the caller's thread."""

    def __init__(self) -> None:
        self.stats: BatchStats | None = None

    def start(self, stats: BatchStats) -> None:
        self.stats = stats

    def update(self, stats: BatchStats) -> None:
        """Drawn by the caller's thread at its own pace."""

    def finish(self, stats: BatchStats) -> None:
        """Drawn by the caller's thread once the batch returns."""


def run_batch_sync(agent: BatchAgent, rows: Any, prompt: str, **options: Any) -> Any:
    """:func:`~nbagent.batch.runner.run_batch` for synchronous code (see ``Agent.map``)."""
    wait = options.pop("wait", True)
    display: Display = choose_display(options.pop("progress", None))
    control: BatchControl = options.pop("control", None) or BatchControl()
    relay = _Relay()
    loop = background_loop()
    if not wait:
        return _in_background(agent, rows, prompt, control, loop, options)
    future = asyncio.run_coroutine_threadsafe(
        run_batch(agent, rows, prompt, progress=relay, control=control, **options), loop
    )
    started = False
    interval = getattr(display, "interval", 0.2)
    try:
        while True:
            # The interrupt may land anywhere in here (waiting or drawing): either way
            # it stops the batch, which then returns what finished.
            try:
                try:
                    result = future.result(timeout=interval)
                    break
                except concurrent.futures.TimeoutError:
                    pass
                if relay.stats is not None:
                    if not started:
                        display.start(relay.stats)
                        started = True
                    display.update(relay.stats)
            except KeyboardInterrupt:
                if control.stopped:  # a second interrupt: give up waiting
                    future.cancel()
                    raise
                control.stop()
    finally:
        if relay.stats is not None and future.done() and not future.cancelled():
            if not started:
                display.start(relay.stats)
            display.finish(relay.stats)
    return result


def _in_background(
    agent: BatchAgent, rows: Any, prompt: str, control: BatchControl, loop: Any, options: Any
) -> Any:
    """``wait=False``: the batch-mode call on nbagent's loop, a handle back at once."""
    rounds = getattr(options.get("executor"), "rounds", None)
    if rounds is None:
        from ..errors import ConfigError

        raise ConfigError("wait=False is for mode='batch' (a live map runs while you wait)")
    from .provider_batch import BatchHandle

    coroutine = run_batch(agent, rows, prompt, progress=False, control=control, **options)
    return BatchHandle(asyncio.run_coroutine_threadsafe(coroutine, loop), control, rounds, loop)


BATCH_OPTIONS = frozenset((
    "output_type", "concurrency", "max_cost", "resume", "prefix", "estimate", "rpm",
    "tpm", "progress", "history", "executor", "control", "mode", "wait",
))  # fmt: skip
"""``Agent.map``'s own options; every other keyword is a run setting of the rows."""


def batch_options(agent: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """``Agent.map``'s keywords for :func:`run_batch`: its own, the rest as run settings."""
    batch = {k: v for k, v in options.items() if k in BATCH_OPTIONS}
    batch["settings"] = {k: v for k, v in options.items() if k not in BATCH_OPTIONS}
    batch["provider_options"] = agent._provider_options
    batch["rebuildable"] = not agent._provider_object
    batch["rows_agent"] = lambda provider, store: rows_agent(agent, provider, store)
    mode = batch.pop("mode", "live")
    if mode != "live":  # the providers' batch APIs (nbagent.batch.provider_batch)
        from .provider_batch import batch_mode_options

        batch = batch_mode_options(agent, mode, batch)
    elif batch.get("executor") is not None:  # "ray", "dask", an executor object
        from .distributed import cluster_options

        batch = cluster_options(agent, batch)
    return batch


def rows_agent(agent: Any, provider: Any, store: Any) -> Any:
    """The agent a batch's rows run on: ``agent`` with the batch's provider and store.

    A shallow copy: tools, settings, the runs in flight (so ``agent.cancel()`` reaches
    the rows) and the recording are shared; each row passes its own conversation.
    """
    rows = copy.copy(agent)
    rows._provider = provider
    rows.store = store
    return rows
