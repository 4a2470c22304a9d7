"""Anthropic's Message Batches: ``POST /v1/messages/batches`` with the Messages bodies.

The job is ``{"requests": [{"custom_id", "params": body}]}``; ``GET
/v1/messages/batches/{id}`` reports ``processing_status`` (in_progress, canceling,
ended) and ``request_counts``; ``GET /v1/messages/batches/{id}/results`` is JSONL,
one line per request in any order: ``{"custom_id", "result": {"type": "succeeded",
"message"} | {"type": "errored", "error"} | {"type": "expired"} | {"type":
"canceled"}}``. At most 100,000 requests and 256 MB per job; results are kept 29
days. The results are read from that documented path on the API's own base URL, never
from a URL the reply names (the key is not sent anywhere else).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from .api import CountedStatus, JobStatus, RequestLine, RequestResult
from .client import BatchAdapter, error_text, jsonl

__all__ = ["AnthropicBatch"]

_STATUS = CountedStatus(
    "processing_status",
    {"in_progress": "in_progress", "canceling": "cancelling", "ended": "ended"},
)
_OUTCOMES = {"succeeded": "succeeded", "errored": "errored", "expired": "expired",
             "canceled": "cancelled"}  # fmt: skip


class AnthropicBatch(BatchAdapter, provider="anthropic", max_requests=100_000, max_megabytes=256):
    """The Message Batches API of the provider's account."""

    @property
    def path(self) -> str:
        """``/v1/messages/batches``, or ``/messages/batches`` where the live path has no /v1."""
        return self.live_path + "/batches"

    async def submit(self, lines: Sequence[RequestLine]) -> JobStatus:
        """One job of the Messages bodies, ``params`` as the live API gets them."""
        requests = [{"custom_id": line.custom_id, "params": line.body} for line in lines]
        return _STATUS.read(await self.http.json("POST", self.path, body={"requests": requests}))

    async def status(self, job_id: str) -> JobStatus:
        """The job's ``processing_status`` and ``request_counts``."""
        return _STATUS.read(await self.http.json("GET", f"{self.path}/{quote(job_id, safe='')}"))

    async def results(self, job: JobStatus) -> dict[str, RequestResult]:
        """The results file's lines by custom id (in any order)."""
        response = await self.http.send("GET", f"{self.path}/{quote(job.job_id, safe='')}/results")
        found: dict[str, RequestResult] = {}
        for item in jsonl(response.text):
            custom_id, result = item.get("custom_id"), item.get("result") or {}
            if isinstance(custom_id, str) and isinstance(result, dict):
                found[custom_id] = _result(result)
        return found

    async def cancel(self, job_id: str) -> None:
        """Cancel the job (requests already done keep their results)."""
        await self.http.send("POST", f"{self.path}/{quote(job_id, safe='')}/cancel")


def _result(result: dict[str, Any]) -> RequestResult:
    outcome = _OUTCOMES.get(str(result.get("type")), "errored")
    if outcome == "succeeded" and isinstance(result.get("message"), dict):
        return RequestResult("succeeded", result["message"])
    if outcome == "errored":
        return RequestResult("errored", error=error_text("anthropic", result.get("error") or {}))
    return RequestResult(outcome, error=f"the request {result.get('type')}")  # type: ignore[arg-type]
