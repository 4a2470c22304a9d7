"""Which history file: the default path, the shared default Store, what ``store=`` means.

One file, ``history.db``, under the user data directory, shared by every kernel
on the machine. ``NBAGENT_HOME`` moves it; ``NBAGENT_HISTORY=off`` (or
``Agent(store=None)``) turns history off.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import ChainMap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .queries import Store

if TYPE_CHECKING:
    import pandas

FILENAME = "history.db"

_OFF = {"0", "off", "false", "no", "none", "disabled"}


def history_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The default database path, or None when ``NBAGENT_HISTORY`` turns history off.

    ``env`` (an Agent's ``env=``) is consulted first, then the process environment:
    an ``env=`` given to isolate keys must not move the history file by accident.
    """
    env = os.environ if env is None else ChainMap(dict(env), dict(os.environ))
    if env.get("NBAGENT_HISTORY", "").strip().lower() in _OFF:
        return None
    home = env.get("NBAGENT_HOME")
    if home:
        return Path(home).expanduser() / FILENAME
    import platformdirs

    return Path(platformdirs.user_data_dir("nbagent", appauthor=False)) / FILENAME


_defaults: weakref.WeakValueDictionary[Path, Store] = weakref.WeakValueDictionary()
"""The shared Store per default path while some agent uses it: a path no longer used (a test's
own home, a changed NBAGENT_HOME) lets its Store go, and with it its connection and files."""
_defaults_lock = threading.Lock()


def default_store(env: Mapping[str, str] | None = None) -> Store | None:
    """The shared Store of this process for the default path (no file I/O until first use)."""
    path = history_path(env)
    if path is None:
        return None
    with _defaults_lock:
        store = _defaults.get(path)
        if store is None:
            store = _defaults[path] = Store(path)
        return store


def resolve_store(store: Any, env: Mapping[str, str] | None = None) -> Store | None:
    """What ``Agent(store=...)`` means: a Store, a path, None (off) or ``"default"``.

    Raises:
        ConfigError: ``store`` is none of those.
    """
    if store is None:
        return None
    if isinstance(store, Store):
        return store
    if isinstance(store, str) and store == "default":
        return default_store(env)
    if isinstance(store, (str, os.PathLike)):
        return Store(store)
    raise ConfigError(f"store= takes a path, a Store or None, not {type(store).__name__}")


def history(
    *, all: bool = False, limit: int = 20, store: Store | str | os.PathLike[str] | None = None
) -> pandas.DataFrame:
    """Conversations in the history database as a DataFrame, newest first.

    Columns: id, title (the first prompt), model, turns, rounds, tool_calls,
    input_tokens, output_tokens, stop_reason (of the last run), created, updated (UTC).

    Raises:
        ConfigError: history is off (``NBAGENT_HISTORY``).
    """
    chosen = default_store() if store is None else resolve_store(store)
    if chosen is None:
        raise ConfigError("nbagent history is off (NBAGENT_HISTORY); unset it to keep history.")
    return chosen.history(all=all, limit=limit)
