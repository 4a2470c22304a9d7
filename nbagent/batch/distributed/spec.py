"""The agent as a picklable spec: what a worker needs to build the same agent again.

A spec holds the model string, the provider options (``base_url``, ``api_key``,
``env``...), the system prompt, the tools, the run settings and the batch's row
options, each pickled with cloudpickle (so a tool defined in a notebook travels by
value). Everything is pickled once on the driver, before any row runs: a tool that
cannot be pickled (it holds a lock, a socket, an open MCP session) is a ConfigError
naming it, instead of a failure on every worker.

The spec's ``digest`` (a hash of its bytes) names the agent on a worker, which
builds it once and reuses it (and its connection pool) for every row it runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError

__all__ = ["AgentSpec", "build_spec"]

_LOCAL_ONLY = ("http_client",)
"""Provider options that belong to this process (a recording client): never shipped."""


@dataclass(frozen=True)
class AgentSpec:
    """An agent rebuilt on each worker: the pickled parts and their hash."""

    payload: bytes
    """cloudpickle of :class:`SpecParts`."""
    digest: str = field(default="")
    """sha256 of ``payload``: the key of the worker's cached agent."""

    def parts(self) -> SpecParts:
        """The spec's contents (unpickled on the worker)."""
        import cloudpickle

        parts: SpecParts = cloudpickle.loads(self.payload)
        return parts


@dataclass
class SpecParts:
    """What :class:`AgentSpec` carries."""

    factory: Any
    """The agent's class (``nbagent.Agent``), called on the worker with the rest."""
    model: str
    provider_options: dict[str, Any]
    system: str | None
    tools: list[Any]
    settings: Any
    """The agent's :class:`~nbagent.run.settings.RunSettings`."""
    row_options: dict[str, Any]
    """Every row's run options (``output_type=``, ``max_rounds=``...)."""


def build_spec(
    agent: Any, provider_options: Mapping[str, Any], row_options: Mapping[str, Any]
) -> AgentSpec:
    """Pickle ``agent`` for the workers; ConfigError naming the first part that cannot be.

    Args:
        agent: the :class:`nbagent.Agent` whose rows run on the cluster (a model string).
        provider_options: its provider options (``base_url``, ``api_key``, ``env``...).
        row_options: the run options each row gets (the map's settings and output type).
    """
    import cloudpickle

    if getattr(agent, "kernel", False):
        raise ConfigError(
            "kernel=True agents read this kernel's variables, which a worker does not have: "
            "leave executor= out"
        )
    options = dict(provider_options)
    if any(options.get(name) is not None for name in _LOCAL_ONLY):
        raise ConfigError(
            "record=/replay= (or http_client=) are this process's HTTP client: a cluster "
            "executor cannot record or replay; leave executor= out"
        )
    for name in _LOCAL_ONLY:
        options.pop(name, None)
    tools = list(agent.tools.values())
    for tool in tools:
        _check_pickles(f"tool {tool.name!r}", tool)
    settings = agent.settings
    for name in ("approver", "tool_middleware", "status_model"):
        _check_pickles(f"setting {name}=", getattr(settings, name))
    for name, value in row_options.items():
        _check_pickles(f"option {name}=", value)
    _check_pickles("provider options", options)
    parts = SpecParts(
        factory=type(agent),
        model=agent.model,
        provider_options=options,
        system=agent.system,
        tools=tools,
        settings=settings,
        row_options=dict(row_options),
    )
    payload = cloudpickle.dumps(parts)
    return AgentSpec(payload, hashlib.sha256(payload).hexdigest())


def _check_pickles(what: str, value: Any) -> None:
    import cloudpickle

    try:
        cloudpickle.dumps(value)
    except Exception as exc:
        raise ConfigError(
            f"{what} cannot be sent to the cluster's workers ({type(exc).__name__}: {exc}); "
            "make it picklable (create locks, clients and connections inside the function) "
            "or leave executor= out"
        ) from None
