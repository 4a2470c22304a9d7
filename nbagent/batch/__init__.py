"""An agent over every row of a table: ``Agent.map`` / ``Agent.amap`` and ``%%agent --over``.

Each row is one full agent run in a conversation of its own; the result is a
DataFrame with the input's index and only new columns. Modules, one concern each:

- ``rows``: the input (DataFrame, dicts, strings) and the prompt each row gets;
- ``keys``: the journal keys (what decides a row's answer, hashed);
- ``row``: one row's run and its outcome (the one place a row's run starts);
- ``executor``: the seam where rows run (:class:`LocalExecutor`: asyncio tasks);
- ``limits``: concurrency backing off on 429s (AIMD, retry-after), rpm/tpm;
- ``session``: the provider and connection pool the rows share;
- ``runner``: the driver (journal, limits, cost cap, Stop, progress);
- ``frame``: the output frame; ``progress``: live display; ``estimate``: ``estimate=k``;
- ``summary``: the panel ``%%agent --over`` ends with.

The journal itself is :mod:`nbagent.store.journal`.
"""

from .estimate import Estimate
from .executor import Executor, LocalExecutor, RowJob, RowOutcome
from .progress import BatchStats, Display, NotebookDisplay, NullDisplay, TerminalLine
from .runner import COST_CAP_ERROR, STOPPED_ERROR, BatchControl, BatchResult, run_batch
from .summary import summary_bundle
from .sync import batch_options, run_batch_sync

__all__ = [
    "COST_CAP_ERROR",
    "STOPPED_ERROR",
    "BatchControl",
    "BatchResult",
    "BatchStats",
    "Display",
    "Estimate",
    "Executor",
    "LocalExecutor",
    "NotebookDisplay",
    "NullDisplay",
    "RowJob",
    "RowOutcome",
    "TerminalLine",
    "batch_options",
    "run_batch",
    "run_batch_sync",
    "summary_bundle",
]
