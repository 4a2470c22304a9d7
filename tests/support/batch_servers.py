"""Loopback servers for the providers' batch APIs, each job's lifecycle from the docs.

One :class:`BatchApiServer` speaks all three APIs (by path) over a real socket
(a :class:`~tests.support.servers.WireServer` responder):

* OpenAI: ``POST /v1/files`` (multipart JSONL), ``POST /v1/batches``, ``GET
  /v1/batches/{id}``, ``GET /v1/files/{id}/content``, ``POST /v1/batches/{id}/cancel``;
* Anthropic: ``POST /v1/messages/batches``, ``GET .../{id}``, ``GET .../{id}/results``,
  ``POST .../{id}/cancel``;
* Gemini: ``POST /v1beta/models/{m}:batchGenerateContent``, ``GET /v1beta/batches/{id}``,
  ``POST /v1beta/batches/{id}:cancel``.

A job is ``validating`` when created, ``in_progress`` at the first status request and
ended at the ``polls``-th; results come back in reverse order. ``script(prompt, body)``
decides each answer as an :class:`~tests.support.scripted.Answer`; ``fail`` and
``expire`` (sets of row prompts) make a request error or expire. The same ``script``
answers live (non-streamed) requests through :func:`live_responder`, with the same
call ids and usage, so a live map and a batch map see the same answers.

Counters: ``jobs`` (created), ``lines`` (every request line received, as
``(custom_id, body)``), ``result_reads``, ``cancels``. Faults: ``status_failures``
(the next status requests get HTTP 503), ``submit_failures`` (job creations get 500).
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

from tests.support.scripted import Answer
from tests.support.servers import RecordedRequest, Reply, WireServer

Script = Callable[[str, dict[str, Any]], Answer]


def prompt_of(body: dict[str, Any]) -> str:
    """The row's prompt: the first user text of any of the three formats."""
    if "contents" in body:
        return str(body["contents"][0]["parts"][0]["text"])
    content = body["messages"][0]["content"] if body.get("messages") else ""
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content)
    return str(content)


def _turns(body: dict[str, Any]) -> int:
    return len(body.get("messages") or body.get("contents") or [])


def _call_id(body: dict[str, Any], number: int) -> str:
    digest = hashlib.sha256(f"{prompt_of(body)}|{_turns(body)}|{number}".encode()).hexdigest()
    return f"call_{digest[:12]}"


def openai_completion(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    """A chat.completion with deterministic call ids; 20 input tokens per message, 7 out."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.calls:
        message["tool_calls"] = [
            {"id": _call_id(body, n), "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for n, (name, args) in enumerate(answer.calls)
        ]  # fmt: skip
    return {
        "id": "chatcmpl-batch", "object": "chat.completion", "model": body.get("model"),
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if answer.calls else "stop"}],
        "usage": {"prompt_tokens": 20 * _turns(body), "completion_tokens": 7,
                  "total_tokens": 20 * _turns(body) + 7},
    }  # fmt: skip


def anthropic_message(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    content += [
        {"type": "tool_use", "id": "toolu_" + _call_id(body, n)[5:], "name": name, "input": args}
        for n, (name, args) in enumerate(answer.calls)
    ]
    return {
        "id": "msg_batch", "type": "message", "role": "assistant", "model": body.get("model"),
        "content": content, "stop_reason": "tool_use" if answer.calls else "end_turn",
        "usage": {"input_tokens": 20 * _turns(body), "output_tokens": 7},
    }  # fmt: skip


def gemini_response(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": answer.text}] if answer.text else []
    parts += [{"functionCall": {"name": name, "args": args}} for name, args in answer.calls]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 20 * _turns(body), "candidatesTokenCount": 7,
                          "totalTokenCount": 20 * _turns(body) + 7},
    }  # fmt: skip


def live_responder(
    script: Script, bodies: list[dict[str, Any]]
) -> Callable[[RecordedRequest], Reply]:
    """Answers live non-streamed Chat Completions requests as the batch server would."""

    def respond(request: RecordedRequest) -> Reply:
        body = request.json()
        bodies.append(body)
        return Reply(200, openai_completion(body, script(prompt_of(body), body)))

    return respond


class BatchApiServer:
    """See the module docstring."""

    def __init__(self, script: Script, *, polls: int = 2) -> None:
        self.script = script
        self.polls = polls
        self.fail: set[str] = set()
        self.expire: set[str] = set()
        self.jobs: dict[str, dict[str, Any]] = {}
        self.lines: list[tuple[str, dict[str, Any]]] = []
        self.result_reads = 0
        self.cancels = 0
        self.status_failures = 0
        """The next status requests answered with HTTP 503 (then served normally)."""
        self.submit_failures = 0
        """The next job creations answered with HTTP 500."""
        self._files: dict[str, str] = {}
        self._lock = threading.Lock()
        self.server = WireServer(responder=self._respond)
        self.url = self.server.url

    def close(self) -> None:
        self.server.close()

    # -- dispatch ------------------------------------------------------------------------

    def _respond(self, request: RecordedRequest) -> Reply:
        with self._lock:
            path, method = request.path, request.method
            if path == "/v1/files" and method == "POST":
                return self._upload(request)
            if path == "/v1/batches" and method == "POST":
                return self._create("openai", self._openai_lines(request.json()))
            if path.endswith("/content") and path.startswith("/v1/files/"):
                return self._file(path.split("/")[3])
            if path.endswith(":batchGenerateContent"):
                requests = request.json()["batch"]["inputConfig"]["requests"]["requests"]
                return self._create(
                    "gemini", [(r["metadata"]["key"], r["request"]) for r in requests]
                )
            if path == "/v1/messages/batches" and method == "POST":
                lines = [(r["custom_id"], r["params"]) for r in request.json()["requests"]]
                return self._create("anthropic", lines)
            if path.endswith(("/cancel", ":cancel")) and method == "POST":
                return self._cancel(
                    path.removesuffix("/cancel").removesuffix(":cancel").rsplit("/", 1)[-1]
                )
            if path.endswith("/results"):
                return self._anthropic_results(path.split("/")[-2])
            if method == "GET":
                return self._status(path.rsplit("/", 1)[-1])
            return Reply(404, {"error": {"message": f"no route {method} {path}"}})

    # -- jobs --------------------------------------------------------------------------

    def _create(self, api: str, lines: list[tuple[str, dict[str, Any]]]) -> Reply:
        if self.submit_failures:
            self.submit_failures -= 1
            return Reply(500, {"error": {"message": "batch service unavailable"}})
        number = len(self.jobs) + 1
        job_id = {"openai": f"batch_{number:03d}", "anthropic": f"msgbatch_{number:03d}",
                  "gemini": f"gb{number:03d}"}[api]  # fmt: skip
        self.lines += lines
        self.jobs[job_id] = {"api": api, "lines": lines, "polls": 0, "state": "validating"}
        return Reply(200, self._view(job_id))

    def _status(self, job_id: str) -> Reply:
        if self.status_failures:
            self.status_failures -= 1
            return Reply(503, {"error": {"message": "overloaded"}})
        job = self.jobs.get(job_id)
        if job is None:
            return Reply(404, {"error": {"message": f"no batch {job_id}"}})
        if job["state"] not in ("ended", "cancelled"):
            job["polls"] += 1
            job["state"] = "ended" if job["polls"] >= self.polls else "in_progress"
        return Reply(200, self._view(job_id))

    def _cancel(self, job_id: str) -> Reply:
        self.cancels += 1
        job = self.jobs[job_id]
        job["state"] = "cancelled"
        return Reply(200, self._view(job_id))

    def _outcome(self, job: dict[str, Any], body: dict[str, Any]) -> tuple[str, Any]:
        prompt = prompt_of(body)
        if job["state"] == "cancelled":
            return "cancelled", None
        if prompt in self.expire:
            return "expired", None
        if prompt in self.fail:
            return "errored", "the scripted model refuses this row"
        return "succeeded", self.script(prompt, body)

    def _view(self, job_id: str) -> dict[str, Any]:
        job = self.jobs[job_id]
        api, state, total = job["api"], job["state"], len(job["lines"])
        if api == "openai":
            status = {"validating": "validating", "in_progress": "in_progress",
                      "ended": "completed", "cancelled": "cancelled"}[state]  # fmt: skip
            view = {"id": job_id, "object": "batch", "status": status,
                    "request_counts": {"total": total, "completed": 0, "failed": 0}}  # fmt: skip
            if state in ("ended", "cancelled"):
                view["output_file_id"], view["error_file_id"] = self._openai_files(job_id)
            return view
        if api == "anthropic":
            ended = state in ("ended", "cancelled")
            return {"id": job_id, "type": "message_batch",
                    "processing_status": "ended" if ended else "in_progress",
                    "request_counts": {"processing": 0 if ended else total},
                    "results_url": f"{self.url}/v1/messages/batches/{job_id}/results"}  # fmt: skip
        gemini_state = {"validating": "PENDING", "in_progress": "RUNNING",
                        "ended": "SUCCEEDED", "cancelled": "CANCELLED"}[state]  # fmt: skip
        view = {"name": f"batches/{job_id}", "done": state in ("ended", "cancelled"),
                "metadata": {"@type": "GenerateContentBatch",
                             "state": f"BATCH_STATE_{gemini_state}"}}  # fmt: skip
        if view["done"]:
            items = []
            for key, body in reversed(job["lines"]):
                outcome, answer = self._outcome(job, body)
                if outcome == "succeeded":
                    items.append(
                        {"response": gemini_response(body, answer), "metadata": {"key": key}}
                    )
                else:
                    items.append(
                        {
                            "error": {"code": 4, "message": f"request {outcome}"},
                            "metadata": {"key": key},
                        }
                    )
            view["response"] = {"@type": "...GenerateContentBatchOutput",
                                "inlinedResponses": {"inlinedResponses": items}}  # fmt: skip
        return view

    # -- OpenAI files -----------------------------------------------------------------

    def _upload(self, request: RecordedRequest) -> Reply:
        head = f"content-type: {request.headers['content-type']}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + request.body)
        fields = {
            part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in message.iter_parts()
        }
        assert fields["purpose"] == b"batch"
        file_id = f"file-{len(self._files) + 1:03d}"
        self._files[file_id] = fields["file"].decode("utf-8")
        return Reply(200, {"id": file_id, "object": "file", "purpose": "batch"})

    def _openai_lines(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        lines = [
            json.loads(line) for line in self._files[body["input_file_id"]].splitlines() if line
        ]
        assert all(line["url"] == body["endpoint"] == "/v1/chat/completions" for line in lines)
        return [(line["custom_id"], line["body"]) for line in lines]

    def _openai_files(self, job_id: str) -> tuple[str, str]:
        job = self.jobs[job_id]
        output, errors = [], []
        for custom_id, body in reversed(job["lines"]):
            outcome, answer = self._outcome(job, body)
            if outcome == "succeeded":
                reply = {"status_code": 200, "body": openai_completion(body, answer)}
                output.append({"id": "r", "custom_id": custom_id, "error": None, "response": reply})
            elif outcome == "errored":
                error = {"message": answer, "type": "invalid_request_error"}
                reply = {"status_code": 400, "body": {"error": error}}
                errors.append({"id": "r", "custom_id": custom_id, "error": None, "response": reply})
            else:
                code = "batch_expired" if outcome == "expired" else "batch_cancelled"
                error = {"code": code, "message": f"request {outcome}"}
                errors.append({"id": "r", "custom_id": custom_id, "response": None, "error": error})
        self._files[f"{job_id}-out"] = "".join(json.dumps(line) + "\n" for line in output)
        self._files[f"{job_id}-err"] = "".join(json.dumps(line) + "\n" for line in errors)
        return f"{job_id}-out", f"{job_id}-err"

    def _file(self, file_id: str) -> Reply:
        self.result_reads += 1
        return Reply(200, self._files[file_id], headers={"content-type": "application/jsonl"})

    # -- Anthropic results ----------------------------------------------------------------

    def _anthropic_results(self, job_id: str) -> Reply:
        self.result_reads += 1
        job = self.jobs[job_id]
        out = []
        for custom_id, body in reversed(job["lines"]):
            outcome, answer = self._outcome(job, body)
            if outcome == "succeeded":
                result: dict[str, Any] = {
                    "type": "succeeded",
                    "message": anthropic_message(body, answer),
                }
            elif outcome == "errored":
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error", "message": answer}}}  # fmt: skip
            else:
                result = {"type": "canceled" if outcome == "cancelled" else "expired"}
            out.append(json.dumps({"custom_id": custom_id, "result": result}) + "\n")
        return Reply(200, "".join(out), headers={"content-type": "application/binary"})
