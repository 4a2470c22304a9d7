"""Gemini's Batch Mode: inline requests to ``models/{model}:batchGenerateContent``.

The job is ``{"batch": {"displayName", "inputConfig": {"requests": {"requests":
[{"request": body, "metadata": {"key": custom_id}}]}}}}``; the reply is a
long-running operation (``name``: ``batches/...``) polled with ``GET
/v1beta/batches/{id}`` until ``done``; its ``metadata.state`` is
``BATCH_STATE_PENDING``/``RUNNING``/``SUCCEEDED``/``FAILED``/``CANCELLED``/``EXPIRED``
and ``response.inlinedResponses.inlinedResponses`` holds ``{"response"}`` or
``{"error"}`` per request with its metadata. Inline requests are capped at 20 MB per job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..http import HttpProvider
from .api import JobState, JobStatus, RequestLine, RequestResult
from .client import BatchAdapter, error_text

__all__ = ["GeminiBatch"]

_STATES: dict[str, JobState] = {
    "PENDING": "validating",
    "RUNNING": "in_progress",
    "SUCCEEDED": "ended",
    "FAILED": "failed",
    "CANCELLED": "cancelled",
    "EXPIRED": "expired",
}


class GeminiBatch(BatchAdapter, provider="gemini", max_requests=50_000, max_megabytes=20):
    """Gemini's batch mode for the provider's model (its base URL, key and client)."""

    def __init__(self, provider: HttpProvider) -> None:
        super().__init__(provider)
        self.create_path = self.live_path.rsplit(":", 1)[0] + ":batchGenerateContent"
        self.version = self.live_path.split("/models/", 1)[0]  # "/v1beta", "" in the base URL

    async def submit(self, lines: Sequence[RequestLine]) -> JobStatus:
        """One batch of inline requests; the reply is its operation."""
        requests = [{"request": line.body, "metadata": {"key": line.custom_id}} for line in lines]
        batch = {"displayName": "nbagent map", "inputConfig": {"requests": {"requests": requests}}}
        return _status(await self.http.json("POST", self.create_path, body={"batch": batch}))

    async def status(self, job_id: str) -> JobStatus:
        """The operation, with the results inline once it is done."""
        return _status(await self.http.json("GET", f"{self.version}/{job_id}"))

    async def results(self, job: JobStatus) -> dict[str, RequestResult]:
        """The inlined responses by their metadata key (in any order)."""
        response = job.raw.get("response") or {}
        inlined = (response.get("inlinedResponses") or {}).get("inlinedResponses") or []
        found: dict[str, RequestResult] = {}
        for item in inlined:
            if not isinstance(item, dict):
                continue
            key = (item.get("metadata") or {}).get("key")
            if not isinstance(key, str):
                continue
            if isinstance(item.get("response"), dict):
                found[key] = RequestResult("succeeded", item["response"])
            else:
                found[key] = RequestResult(
                    "errored", error=error_text("gemini", {"error": item.get("error") or {}})
                )
        return found

    async def cancel(self, job_id: str) -> None:
        """Cancel the batch."""
        await self.http.send("POST", f"{self.version}/{job_id}:cancel")


def _status(operation: dict[str, Any]) -> JobStatus:
    metadata = operation.get("metadata") or {}
    state = str(metadata.get("state", "")).rsplit("_STATE_", 1)[-1]
    mapped: JobState = _STATES.get(state, "in_progress")
    if operation.get("done") and operation.get("error"):
        mapped = "failed"
    elif operation.get("done") and mapped not in ("failed", "cancelled", "expired"):
        mapped = "ended"
    stats = metadata.get("batchStats") or {}
    counts = {k: int(v) for k, v in stats.items() if str(v).isdigit()}
    return JobStatus(str(operation.get("name", "")), mapped, counts, operation)
