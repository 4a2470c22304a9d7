"""RunWriter: one run saved from its events, as it goes.

The only way runs reach the history. Whoever consumes a run's events (the Agent
does, for every surface) hands each one to :meth:`RunWriter.on_event`, and the
writer saves what that event completes, each in its own transaction:

- ``RunStarted``: the user message and the assistant message, still unfinished
  (plus any earlier message of the conversation the file lacks);
- ``RoundFinished``: that round, with its calls and results;
- ``RunFinished``: any round not saved yet, then the answer, stop reason, usage
  and duration.

The run's loop lets its consumer handle the events emitted so far before it sends
a model request, so a crash (even ``kill -9``) loses at most the round in flight
(``tests/store/test_crash.py``). An unfinished answer loads back with
:data:`~nbagent.store.rows.INTERRUPTED_NOTE` as its content.
"""

from __future__ import annotations

import logging
import sqlite3
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._internal.redaction import Scrubber
from ..events import Event, RoundFinished, RunFinished, RunStarted
from ..messages import Conversation, Message, new_id
from .database import Database, HistoryWarning
from .rows import (
    foreign_rows,
    insert_round,
    insert_run_start,
    message_rows,
    row_exists,
    update_answer,
)

if TYPE_CHECKING:
    from ..results import RunResult

logger = logging.getLogger("nbagent")


class RunWriter:
    """Saves one run of ``conversation`` into ``store`` from the run's events.

    Every method is safe to call repeatedly and in any order; none raises (a failed
    write is a :class:`~nbagent.store.HistoryWarning` and the run goes on).

    Args:
        store: the history database.
        conversation: the conversation the run appends to.
        scrubber: redacts secrets from everything written.
    """

    def __init__(
        self, store: Database, conversation: Conversation, scrubber: Scrubber | None = None
    ) -> None:
        self.store = store
        self.conversation = conversation
        self._scrub = scrubber or Scrubber()
        self._message: Message | None = None
        self._message_row: int | None = None
        self._rounds_written = 0
        self._generation = store.generation
        self._finished = False
        self._fork_of: str | None = None
        self._written_rows: set[int] = set()
        self._rows_unclaimed = False  # _written_rows changed since they were last claimed

    def on_event(self, event: Event) -> None:
        """Save what ``event`` completes: the run's start, a round, or the whole run."""
        if isinstance(event, RunStarted):
            self._save_progress(rounds=0)
        elif isinstance(event, RoundFinished):
            self._save_progress(rounds=event.round_index + 1)
        elif isinstance(event, RunFinished):
            self.finish(event.result)

    def finish(self, result: RunResult) -> None:
        """Save the rest of the run and its answer, stop reason, usage and duration.

        The same as the ``RunFinished`` event; for a consumer that stopped reading the
        events early (the run then ends without handing it that event).
        """
        if self._finished:
            return
        message = result.message or self._run_message()
        if message is None:
            return
        self._message = message
        rounds = len(message.rounds or [])
        self._save(lambda db: self._write(db, message, rounds, result))
        self._finished = True

    # -- steps -----------------------------------------------------------------------

    def _save_progress(self, rounds: int) -> None:
        """Save the run's start if not saved yet, and its first ``rounds`` rounds."""
        if self._finished:
            return
        message = self._run_message()
        if message is None:
            return
        if self._message_row is not None and rounds <= self._rounds_written:
            return
        self._save(lambda db: self._write(db, message, rounds, None))

    def _run_message(self) -> Message | None:
        """The run's assistant message: the conversation's last when the run started."""
        if self._message is None:
            messages = self.conversation.messages
            if len(messages) < 2 or messages[-1].role != "assistant":
                return None
            self._message = messages[-1]
        return self._message

    def _save(self, work: Callable[[sqlite3.Connection], tuple[int, int]]) -> None:
        """Run ``work`` in a transaction; adopt the state it returns only once committed."""
        outcome: list[tuple[int, int]] = []
        for _ in range(2):
            if self._generation != self.store.generation:
                # The file was replaced: everything must be written again.
                self._generation = self.store.generation
                self._message_row = None
                self._rounds_written = 0
            started = time.perf_counter()
            outcome.clear()
            if self.store.write(lambda db: outcome.append(work(db))):
                self._message_row, self._rounds_written = outcome[-1]
                if self._rows_unclaimed:  # only once committed; claims only grow (or
                    # are cleared with a new generation, which makes _write start over)
                    claims = self.store.claims(self.conversation.id, self.conversation)
                    claims.update(self._written_rows)
                    self._rows_unclaimed = False
                logger.debug("history write took %.2f ms", (time.perf_counter() - started) * 1e3)
                return
            if self._generation == self.store.generation:
                return  # a failure already reported; the run goes on without history

    def _write(
        self, db: sqlite3.Connection, message: Message, rounds: int, finished: RunResult | None
    ) -> tuple[int, int]:
        """Write what the file lacks; returns (the answer's row, rounds now saved)."""
        now = self.store.clock()
        message_row, written = self._message_row, self._rounds_written
        starting = message_row is None
        if message_row is not None and not row_exists(db, message_row, self.conversation.id):
            message_row = None  # another writer replaced this run's rows: keep ours apart
            starting = True
            self._fork()
        if message_row is None:
            position = _index_of(self.conversation.messages, message)
            known = self.store.claims(self.conversation.id, self.conversation)
            if foreign_rows(db, self.conversation.id, position, known):
                self._fork()
            message_row = insert_run_start(
                db, self._scrub, self.conversation, position, now, fork_of=self._fork_of
            )
            written = 0
        saved = message.rounds or []
        upto = min(rounds, len(saved))
        for position in range(written, upto):
            insert_round(db, self._scrub, message_row, position, saved[position], now)
        if finished is not None:
            update_answer(
                db, self._scrub, self.conversation.id, message_row, message, finished, now
            )
        if starting:  # the only write that adds message rows
            self._written_rows = message_rows(db, self.conversation.id)
            self._rows_unclaimed = True
        return message_row, max(written, upto)

    def _fork(self) -> None:
        """Continue in a new conversation: another writer continued this one meanwhile.

        Its turns stay as they are; this run (and the turns before it, from memory) go
        to a new conversation whose title names the original, and a warning says so.
        """
        original = self.conversation.id
        if self._fork_of is None:
            self._fork_of = original
        self.conversation.id = new_id("c_")
        message = (
            f"nbagent history: conversation {original} was continued elsewhere (another "
            f"kernel or agent) since this agent loaded it; this run is saved as a new "
            f"conversation {self.conversation.id} titled '[fork of {original}] …' so no "
            "turn is lost"
        )
        logger.warning(message)
        warnings.warn(message, HistoryWarning, stacklevel=2)


def _index_of(messages: list[Message], message: Message) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index] is message:
            return index
    raise ValueError("message is not part of the conversation")
