"""What every provider's batch API adapter does, in one vocabulary.

An adapter (``openai.py``, ``anthropic.py``, ``gemini.py``) turns a list of request
bodies, each built by the live adapter exactly as the live API would get it, into
one job of its API, reports the job's state, reads back one result per request and
cancels. It sends those requests with :class:`~.client.BatchHttp`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ...errors import ProviderError

__all__ = [
    "ENDED",
    "BatchApi",
    "CountedStatus",
    "JobState",
    "JobStatus",
    "Outcome",
    "RequestLine",
    "RequestResult",
]

JobState = Literal[
    "validating", "in_progress", "cancelling", "ended", "cancelled", "expired", "failed"
]
"""A job's state in one vocabulary, whatever its API calls it."""

ENDED: frozenset[str] = frozenset(("ended", "cancelled", "expired", "failed"))
"""States after which a job's results can be read (or it has none)."""

Outcome = Literal["succeeded", "errored", "expired", "cancelled"]
"""What became of one request of a job."""


@dataclass(frozen=True)
class RequestLine:
    """One request of a job: its id in the job and the body the live API would get."""

    custom_id: str
    body: dict[str, Any]


@dataclass
class JobStatus:
    """A job as its API reports it."""

    job_id: str
    state: JobState
    counts: dict[str, int] = field(default_factory=dict)
    """The API's own request counts (succeeded, errored...), for the listing."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    """The API's job object (where its result file or inline results are found)."""

    @property
    def ended(self) -> bool:
        """Whether the job has stopped processing."""
        return self.state in ENDED


@dataclass(frozen=True)
class CountedStatus:
    """How a job object with ``id`` and ``request_counts`` reports its state.

    The shape OpenAI's and Anthropic's batch objects share: the state is in the field
    ``state_field``, in the API's words, which ``states`` maps to a :data:`JobState`.
    """

    state_field: str
    states: Mapping[str, JobState]

    def read(self, job: dict[str, Any]) -> JobStatus:
        """The job object as a status (a state not in ``states`` reads as still in progress)."""
        counts = job.get("request_counts") or {}
        return JobStatus(
            str(job.get("id", "")),
            self.states.get(str(job.get(self.state_field)), "in_progress"),
            {k: int(v) for k, v in counts.items() if isinstance(v, int)},
            job,
        )


@dataclass(frozen=True)
class RequestResult:
    """One request's result: the response body the live API would have sent, or why not."""

    outcome: Outcome
    body: dict[str, Any] | None = None
    error: str | None = None


class BatchApi(Protocol):
    """A provider's batch API (see the module docstring).

    The three adapters build on :class:`~.client.BatchAdapter`.
    """

    provider: str
    max_requests: int
    max_bytes: int

    async def submit(self, lines: Sequence[RequestLine]) -> JobStatus:
        """Create one job of ``lines`` (within the limits); its status as accepted."""
        ...

    async def status(self, job_id: str) -> JobStatus:
        """The job's current status."""
        ...

    async def results(self, job: JobStatus) -> dict[str, RequestResult]:
        """The ended job's results by custom id (requests without one are left out)."""
        ...

    async def cancel(self, job_id: str) -> None:
        """Ask the API to cancel the job (finished requests keep their results)."""
        ...


def provider_error(provider: str, outcome: str, message: str) -> ProviderError:
    """The error a row's run raises when its request did not succeed in the job."""
    return ProviderError(provider, None, f"batch_{outcome}", message)
