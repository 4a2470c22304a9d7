"""``Agent.map`` on a Ray or Dask cluster: ``executor="ray"``, ``"dask"`` or an executor object.

The driver (the notebook) stays what it is on one machine: it plans the rows, reads
and writes the journal (the only writer), shows progress, honours Stop and the
cost cap, and builds the frame in the input's order. What moves is the run of
each row, which happens on a worker that rebuilt the agent from a picklable spec.

The agent is built once per worker process and batch, not once per row: a Ray
actor builds it in its constructor and runs every row sent to it; a Dask worker
builds it on the batch's first row and keeps it in a per-process cache keyed by
the spec's digest (Dask tasks, unlike Dask actors, are re-run when their worker
dies). Ray runs rows on actors rather than Ray Data so that the driver keeps its
per-row loop: journal, Stop, cost cap, 429 back-off (see ``ray_executor``).
Modules, one concern each:

- ``spec``: the agent as a cloudpickled spec (an unpicklable tool is refused, named);
- ``worker``: the agent rebuilt on a worker, and one row's run there;
- ``limiter``: the one cluster-wide limiter (rpm/tpm, shared 429 pause);
- ``cluster``: the driver's executor loop over a cluster session;
- ``rows``: the rows agent that hands the driver's rows to the cluster;
- ``ray_executor`` / ``dask_executor`` (+ ``dask_plugin``): the two engines;
- ``options``: ``executor=`` turned into what the driver runs.

Neither Ray nor Dask is imported until a batch uses it.
"""

from .cluster import ClusterExecutor
from .dask_executor import DaskExecutor
from .options import cluster_options
from .ray_executor import RayExecutor

__all__ = ["ClusterExecutor", "DaskExecutor", "RayExecutor", "cluster_options"]
