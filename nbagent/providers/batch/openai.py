"""OpenAI's Batch API: the requests as a JSONL file, one job over ``/v1/chat/completions``.

``POST /v1/files`` (``purpose=batch``) uploads the lines ``{"custom_id", "method":
"POST", "url": "/v1/chat/completions", "body"}``; ``POST /v1/batches`` starts the
job; ``GET /v1/batches/{id}`` reports it (validating, in_progress, finalizing,
completed, expired, cancelling, cancelled, failed); its ``output_file_id`` and
``error_file_id`` (``GET /v1/files/{id}/content``) hold one line per request:
``{"custom_id", "response": {"status_code", "body"}, "error"}``. At most 50,000
requests and 200 MB per job.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlsplit

from ..http import HttpProvider
from .api import CountedStatus, JobStatus, RequestLine, RequestResult
from .client import BatchAdapter, error_text, jsonl

__all__ = ["OpenAIBatch"]

_STATUS = CountedStatus(
    "status",
    {
        "validating": "validating",
        "in_progress": "in_progress",
        "finalizing": "in_progress",
        "cancelling": "cancelling",
        "completed": "ended",
        "expired": "expired",
        "cancelled": "cancelled",
        "failed": "failed",
    },
)


class OpenAIBatch(BatchAdapter, provider="openai", max_requests=50_000, max_megabytes=200):
    """The Batch API of the provider's OpenAI account (its base URL, key and client)."""

    def __init__(self, provider: HttpProvider, *, completion_window: str = "24h") -> None:
        super().__init__(provider)
        self.completion_window = completion_window
        # The line's url is the endpoint's path as the API sees it: "/v1/chat/completions".
        self.endpoint = urlsplit(self.http.url(self.live_path)).path

    async def submit(self, lines: Sequence[RequestLine]) -> JobStatus:
        """Upload the lines as a file and start a job over it."""
        text = "".join(
            json.dumps(
                {
                    "custom_id": line.custom_id,
                    "method": "POST",
                    "url": self.endpoint,
                    "body": line.body,
                },
                ensure_ascii=False,
            )
            + "\n"
            for line in lines
        )
        uploaded = await self.http.json(
            "POST", "/files", data={"purpose": "batch"},
            files={"file": ("nbagent-batch.jsonl", text.encode("utf-8"), "application/jsonl")},
        )  # fmt: skip
        job = await self.http.json(
            "POST", "/batches",
            body={"input_file_id": uploaded["id"], "endpoint": self.endpoint,
                  "completion_window": self.completion_window},
        )  # fmt: skip
        return _STATUS.read(job)

    async def status(self, job_id: str) -> JobStatus:
        """The job's status and request counts."""
        return _STATUS.read(await self.http.json("GET", f"/batches/{quote(job_id, safe='')}"))

    async def results(self, job: JobStatus) -> dict[str, RequestResult]:
        """Both files' lines: answers, and requests that failed, expired or were cancelled."""
        found: dict[str, RequestResult] = {}
        for key in ("output_file_id", "error_file_id"):
            file_id = job.raw.get(key)
            if not file_id:
                continue
            response = await self.http.send("GET", f"/files/{quote(str(file_id), safe='')}/content")
            for item in jsonl(response.text):
                custom_id = item.get("custom_id")
                if isinstance(custom_id, str):
                    found[custom_id] = _result(item)
        return found

    async def cancel(self, job_id: str) -> None:
        """Cancel the job (finished requests stay in its output file)."""
        await self.http.send("POST", f"/batches/{quote(job_id, safe='')}/cancel")


def _result(item: dict[str, Any]) -> RequestResult:
    error = item.get("error")
    if error:
        code = str(error.get("code", "")) if isinstance(error, dict) else ""
        outcome = {"batch_expired": "expired", "batch_cancelled": "cancelled"}.get(code, "errored")
        return RequestResult(outcome, error=error_text("openai", error))  # type: ignore[arg-type]
    response = item.get("response") or {}
    body = response.get("body")
    if response.get("status_code") == 200 and isinstance(body, dict):
        return RequestResult("succeeded", body)
    status = response.get("status_code")
    return RequestResult("errored", error=f"HTTP {status}: {error_text('openai', body or {})}")
