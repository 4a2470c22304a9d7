"""``Agent.map(..., mode="batch")``: the rows through the providers' batch APIs, at batch prices.

Each row is still one ordinary agent run; its model requests are gathered into one
batch job per request round (tools run locally between rounds), and every job is
journaled so the same call after a kernel restart collects it. Modules:

- the APIs themselves (OpenAI, Anthropic, Gemini) are the providers' own, declared
  by each adapter: :mod:`nbagent.providers.batch`;
- ``provider``: the provider rows run on (live bodies in, live decoder out);
- ``jobs``: rounds, limits, submit, poll, collect, outcomes, journal;
- ``executor``: the rows, all launched at once; ``pricing``: the batch rate;
- ``mode``: ``mode=`` into the executor and rows agent; ``handle``: ``wait=False``.

The job journal itself is :mod:`nbagent.store.batch_jobs`.
"""

from .handle import BatchHandle
from .mode import ProviderBatch, batch_api, batch_mode_options

__all__ = ["BatchHandle", "ProviderBatch", "batch_api", "batch_mode_options"]
