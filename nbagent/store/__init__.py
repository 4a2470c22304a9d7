"""SQLite history: conversations, messages, tool rounds, calls and results.

One file, ``history.db``, under the user data directory (``NBAGENT_HOME``
moves it; ``NBAGENT_HISTORY=off`` or ``Agent(store=None)`` turns history off),
shared by every kernel on the machine::

    nbagent.history()                      # DataFrame of recent conversations
    agent = Agent.resume("c_3f2a")         # continue one after a kernel restart
    default_store().load("c_3f2a").to_markdown()   # or read it back

One write path: a run's events. The Agent asks :meth:`Store.writer` for a
:class:`RunWriter` per run and hands it every event; the writer saves the user
message when the run starts, each finished round in its own transaction, and the
answer when the run ends, so a crash (even ``kill -9``) loses at most the round
in flight. Secrets never reach the file: the agent's API key and the values of
key-like environment variables are replaced by ``[redacted]`` in everything
written, and text that looks like a key is too.

Modules, from the file up:

- ``migrations``: the schema, as ordered migration functions;
- ``database``: the file (lazy open, WAL, busy timeout, corrupt file moved aside)
  and its transactions;
- ``rows``: the SQL for a run's rows, and for reading a conversation back;
- ``writer``: :class:`RunWriter`, a run saved from its events;
- ``export``: JSON/Markdown files and the history DataFrame;
- ``journal``: the batch journal (``Agent.map`` rows, for resume);
- ``batch_jobs``: the provider batch jobs of ``mode="batch"`` (collected after a restart);
- ``tree``: chat branches (edited messages, regenerated answers) as a tree;
- ``chat_rows``: what a chat redraws beside the messages (the text as typed, durations);
- ``queries``: :class:`Store`, the database with listing, loading, deleting;
- ``location``: where the file lives, the shared default Store, ``history()``.
"""

from .._internal.redaction import REDACTED, Scrubber, collect_secrets
from .._internal.values import PREVIEW_CHARS, preview_value
from .database import HistoryWarning
from .export import export_conversation, last_model
from .journal import Journal, JournalRow
from .location import default_store, history, history_path, resolve_store
from .migrations import SCHEMA_VERSION
from .queries import Store
from .rows import INTERRUPTED_NOTE
from .writer import RunWriter

__all__ = [
    "INTERRUPTED_NOTE",
    "PREVIEW_CHARS",
    "REDACTED",
    "SCHEMA_VERSION",
    "HistoryWarning",
    "Journal",
    "JournalRow",
    "RunWriter",
    "Scrubber",
    "Store",
    "collect_secrets",
    "default_store",
    "export_conversation",
    "history",
    "history_path",
    "last_model",
    "preview_value",
    "resolve_store",
]
