"""Agent: a model, its tools, settings and the conversation so far."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

from .events import Event, RunFinished
from .loop import LoopSettings, Run, RunResult
from .messages import Conversation
from .providers import Provider, get_provider, resolve_model
from .tools import Approver, Tool, as_tools


class Agent:
    """A tool-calling agent.

    Example::

        agent = Agent("openai:gpt-4o-mini", tools=[add])
        result = agent.run_sync("What is 2 + 3?")
        result.output, result.rounds, result.stop_reason

    ``tools=None`` uses every ``@tool`` defined so far in the kernel (looked up at
    each run, so tools defined later are seen). A second run continues the same
    conversation; :meth:`reset` starts over.
    """

    def __init__(
        self,
        model: str | Provider | None = None,
        *,
        tools: Iterable[Tool | Callable[..., Any]] | None = None,
        system: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        stream: bool = True,
        max_rounds: int = 10,
        max_consecutive_errors: int = 3,
        timeout: float | None = 300.0,
        max_total_tokens: int | None = None,
        strict: bool = False,
        tool_timeout: float = 60.0,
        approver: Approver | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        env: Mapping[str, str] | None = None,
        **provider_options: Any,
    ) -> None:
        if isinstance(model, str) or model is None:
            self.model = resolve_model(model, env)
            self._provider: Provider | None = None
        else:
            self._provider = model
            self.model = f"{model.name}:{model.model}" if model.model else model.name
        self._provider_options: dict[str, Any] = dict(provider_options)
        if base_url is not None:
            self._provider_options["base_url"] = base_url
        if api_key is not None:
            self._provider_options["api_key"] = api_key
        if env is not None:
            self._provider_options["env"] = env
        self._tools = None if tools is None else as_tools(tools)
        self.settings = LoopSettings(
            max_rounds=max_rounds,
            max_consecutive_errors=max_consecutive_errors,
            timeout=timeout,
            max_total_tokens=max_total_tokens,
            strict=strict,
            stream=stream,
            tool_timeout=tool_timeout,
            approver=approver,
            max_output_tokens=max_output_tokens,
            temperature=temperature,
        )
        self.conversation = Conversation(system=system)
        self.last_result: RunResult | None = None
        self._run: Run | None = None

    def __repr__(self) -> str:  # never shows api_key or other provider options
        return f"Agent(model={self.model!r}, tools={sorted(self.tools)!r})"

    # -- configuration -----------------------------------------------------------

    @property
    def provider(self) -> Provider:
        """The model adapter, built on first use."""
        if self._provider is None:
            self._provider = get_provider(self.model, **self._provider_options)
        return self._provider

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools of the next run by name (the kernel-wide registry if none were given)."""
        return as_tools(None) if self._tools is None else dict(self._tools)

    @tools.setter
    def tools(self, tools: Iterable[Tool | Callable[..., Any]] | None) -> None:
        # None means "every @tool in the kernel", looked up at each run.
        self._tools = None if tools is None else as_tools(tools)

    @property
    def system(self) -> str | None:
        return self.conversation.system

    @system.setter
    def system(self, text: str | None) -> None:
        self.conversation.system = text

    def reset(self) -> None:
        """Start a new conversation (same model, tools and system prompt)."""
        self.conversation = Conversation(system=self.conversation.system)
        self.last_result = None

    # -- running -----------------------------------------------------------------

    def _new_run(self, prompt: str, **overrides: Any) -> Run:
        settings = self.settings
        if overrides:
            settings = LoopSettings(**{**settings.__dict__, **overrides})
        run = Run(
            self.provider, self.conversation, prompt, self.tools, settings, model_label=self.model
        )
        self._run = run
        return run

    async def stream(self, prompt: str, **overrides: Any) -> AsyncIterator[Event]:
        """Run on the current event loop, yielding events; the last one is RunFinished.

        ``overrides`` change settings for this run only (``max_rounds=2``, ``timeout=5``...).
        """
        run = self._new_run(prompt, **overrides)
        events = run.events()
        try:
            async for event in events:
                if isinstance(event, RunFinished):
                    self.last_result = event.result
                yield event
        finally:
            await events.aclose()  # a consumer that stopped early cancels the run now
            if run.result is not None:
                self.last_result = run.result

    async def run(self, prompt: str, **overrides: Any) -> RunResult:
        """Run to the end on the current event loop and return the result."""
        async for _ in self.stream(prompt, **overrides):
            pass
        assert self.last_result is not None
        return self.last_result

    def stream_sync(self, prompt: str, **overrides: Any) -> Iterator[Event]:
        """:meth:`stream` for synchronous code; works inside Jupyter's running loop too.

        A KeyboardInterrupt cancels the run; the remaining events (ending with
        RunFinished, stop_reason "cancelled") are still yielded, then it is re-raised.
        """
        from ._sync import iterate_in_background

        return iterate_in_background(lambda: self.stream(prompt, **overrides), self.cancel)

    def run_sync(self, prompt: str, **overrides: Any) -> RunResult:
        """Run to the end from synchronous code (scripts, notebook cells) and return the result.

        On KeyboardInterrupt the run is cancelled cleanly (history stays valid,
        ``agent.last_result`` holds the partial result) and the interrupt is re-raised.
        """
        events = self.stream_sync(prompt, **overrides)
        try:
            for _ in events:
                pass
        finally:
            # A Ctrl-C landing between two events is raised here, not inside the
            # iterator: closing it still cancels the run and waits for it to wrap up.
            events.close()  # type: ignore[attr-defined]
        assert self.last_result is not None
        return self.last_result

    def cancel(self) -> None:
        """Stop the current run (same as the Stop button or a kernel interrupt)."""
        if self._run is not None:
            self._run.cancel()
