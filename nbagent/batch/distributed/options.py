"""``Agent.map(..., executor="ray" | "dask" | RayExecutor(...))``: what the driver is handed.

:func:`cluster_options` turns the ``executor=`` option into what
:func:`~nbagent.batch.runner.run_batch` takes: a cluster executor bound to the
agent's spec (pickled now, so an unpicklable tool fails before any row runs), and
the rows agent that sends each row to the cluster.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ..._internal.redaction import collect_secrets
from ...errors import ConfigError
from ...providers import makes_http_requests
from .cluster import ClusterExecutor
from .dask_executor import DaskExecutor
from .ray_executor import RayExecutor
from .rows import ClusterRowsAgent
from .spec import build_spec

__all__ = ["cluster_options"]

LOCAL = "local"
"""executor= name of the default, one-machine executor (an executor's, not a provider's)."""

ENGINES: dict[str, tuple[str, str, type[ClusterExecutor]]] = {
    "ray": ("ray", "ray", RayExecutor),
    "dask": ("distributed", "dask", DaskExecutor),
}
"""executor= name: (module it needs, nbagent extra that installs it, executor class)."""


def cluster_options(agent: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` (``run_batch``'s) with ``executor=`` made ready to run.

    ``"local"`` is the default executor; ``"ray"``/``"dask"`` or a
    :class:`ClusterExecutor` get the agent's spec and the rows agent; any other
    executor object is passed through.
    """
    executor = options.get("executor")
    if isinstance(executor, str):
        executor = _named(executor)
    if not isinstance(executor, ClusterExecutor):
        return {**options, "executor": executor}
    if not options.get("rebuildable") or not makes_http_requests(agent.model):
        raise ConfigError(
            f"a cluster executor rebuilds the agent on each worker from its model string; "
            f"{agent.model!r} is a provider object or an in-process model: leave executor= out"
        )
    provider_options = dict(options.get("provider_options") or {})
    output_type = options.get("output_type")
    row_options = {**dict(options.get("settings") or {}), "output_type": output_type}
    spec = build_spec(agent, provider_options, row_options)
    bound = executor.bind(spec, rpm=options.get("rpm"), tpm=options.get("tpm"))
    secrets = collect_secrets(provider_options, provider_options.get("env"))

    def rows_agent(_provider: Any, store: Any) -> ClusterRowsAgent:
        return ClusterRowsAgent(agent, bound, store, secrets, output_type)

    return {**options, "executor": bound, "rows_agent": rows_agent}


def _named(name: str) -> ClusterExecutor | None:
    if name == LOCAL:
        return None
    if name not in ENGINES:
        raise ConfigError(
            f"executor= takes 'local', 'ray', 'dask' or an executor object, not {name!r}"
        )
    module, extra, executor = ENGINES[name]
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"executor={name!r} needs {module}: pip install 'nbagent[{extra}]'")
    return executor()
