"""The environment variables no test may inherit from the developer's shell.

A key in the environment would send a test's requests to a real API (or make it
pick a different default model); an nbagent setting would change what a run does.
The suite's conftest removes all of these from every test's process environment;
:func:`child_environment` does the same for a process a test starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from nbagent.providers import environment_variables

# nbagent's own settings that change a run: which model, which approvals, history on/off.
# (NBAGENT_HOME is not here: the suite points it at a temporary folder instead.)
NBAGENT_SETTINGS: tuple[str, ...] = ("NBAGENT_MODEL", "NBAGENT_APPROVAL", "NBAGENT_HISTORY")


def never_inherited() -> tuple[str, ...]:
    """Every variable a registered provider reads (keys, base URLs, options), then
    nbagent's settings. Asked of the registry each time: a provider a test registers counts."""
    return tuple(dict.fromkeys((*environment_variables(), *NBAGENT_SETTINGS)))


def child_environment(
    base: Mapping[str, str] | None = None, *, drop_prefix: str = "", **values: str
) -> dict[str, str]:
    """An environment for a child process: ``base`` (default ``os.environ``) without the
    variables above (and any starting with ``drop_prefix``), looking for no local model
    server (``NBAGENT_DISCOVER=off``), then ``values`` set."""
    dropped = set(never_inherited())
    env = {
        name: value
        for name, value in (os.environ if base is None else base).items()
        if name not in dropped and not (drop_prefix and name.startswith(drop_prefix))
    }
    env["NBAGENT_DISCOVER"] = "off"  # no local server on this machine's usual ports
    env.update(values)
    return env
