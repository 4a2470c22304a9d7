"""The providers' batch APIs: one job of many requests, answered within a day at a lower rate.

A provider with a batch API declares it (:meth:`HttpProvider.batch_api`); the
driver that uses it, ``Agent.map(..., mode="batch")``, is
:mod:`nbagent.batch.provider_batch`. Modules:

- ``api``: what a batch API adapter does; ``client``: the HTTP it sends on the live client;
- ``openai``, ``anthropic``, ``gemini``: the three APIs, from their documented formats.
"""

from .api import BatchApi, JobStatus, Outcome, RequestLine, RequestResult

__all__ = ["BatchApi", "JobStatus", "Outcome", "RequestLine", "RequestResult"]
