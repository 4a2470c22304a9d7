"""Agent: a model, its tools, settings and the conversation so far."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .errors import ConfigError
from .events import Event, RunFinished
from .messages import Conversation
from .providers import Provider, get_provider, makes_http_requests, resolve_model
from .results import RunResult, set_renderer
from .run.loop import LOOP_OPTIONS, LoopSettings, Run
from .tools import Approver, Tool, as_tools

if TYPE_CHECKING:
    from .store import RunWriter, Store


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
        max_cost: float | None = None,
        output_type: Any = None,
        store: Store | str | os.PathLike[str] | None = "default",
        record: str | os.PathLike[str] | None = None,
        replay: str | os.PathLike[str] | None = None,
        replay_fallback: bool = False,
        env: Mapping[str, str] | None = None,
        images: bool = True,
        kernel: bool = False,
        **provider_options: Any,
    ) -> None:
        self._provider: Provider | None = None
        if isinstance(model, str) or model is None:
            self.model = resolve_model(model, env)
        else:
            self._provider = model
            self.model = _label(model)
        self._provider_options: dict[str, Any] = dict(provider_options)
        if base_url is not None:
            self._provider_options["base_url"] = base_url
        if api_key is not None:
            self._provider_options["api_key"] = api_key
        if env is not None:
            self._provider_options["env"] = env
        tools = None if tools is None else list(tools)
        self._tool_sources = _sources(tools)  # MCP servers: closed by close()
        self._tools = None if tools is None else as_tools(tools)
        # Loop options without a parameter of their own (text_tool_calls=, status_model=,
        # tool_middleware=, context_window=, max_tool_only_rounds=...: see LoopSettings).
        loop_options = {
            k: self._provider_options.pop(k) for k in LOOP_OPTIONS & set(provider_options)
        }
        self.settings = LoopSettings(
            **loop_options,
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
            images=images,
            max_cost=max_cost,
            output_type=output_type,
        )
        self.kernel = kernel
        """True: the kernel tools are offered and each run's system message carries the
        kernel's variable inventory (``%%agent --kernel``, see :mod:`nbagent.kernel`)."""
        self.conversation = Conversation(system=system)
        self.last_result: RunResult | None = None
        self._run: Run | None = None
        self._busy = threading.Lock()  # one turn at a time (cells, threads, the chat widget)
        self._busy_loop: asyncio.AbstractEventLoop | None = None  # the loop of the run holding it
        # History (nbagent.store): "default" is the shared file, opened on first write.
        from .store import resolve_store

        self.store: Store | None = resolve_store(store, env)
        self._writer: RunWriter | None = None
        self._provider_object = not isinstance(model, str) and model is not None
        if record is not None or replay is not None:
            self._use_recording(record=record, replay=replay, replay_fallback=replay_fallback)

    def __repr__(self) -> str:  # never shows api_key or other provider options
        return f"Agent(model={self.model!r}, tools={sorted(self.tools)!r})"

    # -- configuration -----------------------------------------------------------

    @property
    def provider(self) -> Provider:
        """The model adapter, built on first use."""
        if self._provider is None:
            self._provider = get_provider(self.model, **self._provider_options)
        return self._provider

    def use_model(self, model: str | Provider) -> None:
        """Switch to another model, keeping the conversation, tools, settings and history.

        The adapter is built at once, so an unknown provider or a missing key raises
        ConfigError here and the agent keeps its current model. Naming the current
        model (or passing the current provider object) again changes nothing, so a
        loaded embedded model is kept. ``base_url=`` and ``api_key=`` given for the
        previous model are not carried over.
        """
        if model is self._provider or (isinstance(model, str) and model == self.model):
            return
        if isinstance(model, str):
            kept = {k: v for k, v in self._provider_options.items() if k in ("env", "http_client")}
            provider = get_provider(model, **kept)
            self._provider_options = kept
            self.model = model
        else:
            provider = model
            self._provider_options = {}
            self.model = _label(model)
        self._provider = provider
        self._provider_object = not isinstance(model, str)

    @property
    def tool_selection(self) -> list[Tool] | None:
        """The tools this agent was given, or None for "every ``@tool`` in the kernel"."""
        return None if self._tools is None else list(self._tools.values())

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools of the next run by name (the kernel-wide registry if none were given)."""
        return as_tools(None) if self._tools is None else dict(self._tools)

    @tools.setter
    def tools(self, tools: Iterable[Tool | Callable[..., Any]] | None) -> None:
        # None means "every @tool in the kernel", looked up at each run.
        tools = None if tools is None else list(tools)
        self._tool_sources += _sources(tools)
        self._tools = None if tools is None else as_tools(tools)

    @property
    def system(self) -> str | None:
        """The conversation's system prompt."""
        return self.conversation.system

    @system.setter
    def system(self, text: str | None) -> None:
        self.conversation.system = text

    def reset(self) -> None:
        """Start a new conversation (same model, tools and system prompt)."""
        self.conversation = Conversation(system=self.conversation.system)
        self.last_result = None

    # -- history and record/replay ---------------------------------------------------

    @classmethod
    def resume(cls, conversation_id: str | None = None, **options: Any) -> Agent:
        """An agent continuing a stored conversation, e.g. after a kernel restart.

        ``conversation_id`` may be a unique prefix; None means the latest one.
        ``options`` are the constructor's; the model defaults to the one the
        conversation last used, the system prompt to its own.
        """
        from .store import last_model, resolve_store

        store = resolve_store(options.get("store", "default"), options.get("env"))
        if store is None:
            raise ConfigError("resume needs history: store=None or NBAGENT_HISTORY=off")
        conversation = store.load(conversation_id)
        options["store"] = store
        options.setdefault("model", last_model(conversation))
        agent = cls(**options)
        if "system" in options:
            conversation.system = options["system"]
        agent.conversation = conversation
        return agent

    def start_recording(self, path: str | os.PathLike[str]) -> None:
        """Record the provider's HTTP traffic to ``path`` (JSON Lines) from the next request on."""
        self._use_recording(record=path)

    def stop_recording(self) -> None:
        """Talk to the provider directly again (undoes ``record=`` / ``replay=``)."""
        if self._provider_options.pop("http_client", None) is not None:
            self._provider = None

    def _use_recording(self, **options: Any) -> None:
        from .recording import http_client

        if self._provider_object:
            raise ConfigError(
                "record=/replay= need a model string; for a provider object, pass "
                "http_client=nbagent.recording.http_client(record=...) to it instead"
            )
        if not makes_http_requests(self.model):
            raise ConfigError(f"record=/replay= cover HTTP APIs; {self.model!r} makes no requests")
        if options.get("replay") is not None and not options.get("replay_fallback"):
            # Replayed answers need no key; the adapter must not refuse to start without one.
            self._provider_options.setdefault("api_key", "replay-without-key")
        self._provider_options["http_client"] = http_client(**options)
        self._provider = None  # rebuilt with the new client on next use

    # -- running -----------------------------------------------------------------

    def _new_run(self, prompt: str, **overrides: Any) -> Run:
        tools = self.tools if overrides.get("tools") is None else as_tools(overrides["tools"])
        overrides.pop("tools", None)
        if overrides.pop("kernel", self.kernel):
            from .kernel import kernel_context, kernel_tools

            tools = {**{t.name: t for t in kernel_tools()}, **tools}  # the user's own win
            overrides.setdefault("context", kernel_context())
        settings = self.settings
        if overrides:
            settings = LoopSettings(**{**settings.__dict__, **overrides})
        provider = self.provider
        if settings.max_cost is not None:
            from .cost import require_price

            require_price(provider.name, provider.model)  # before any request is sent
        self._writer = None
        if self.store is not None:
            from ._internal.redaction import collect_secrets

            secrets = collect_secrets(self._provider_options, self._provider_options.get("env"))
            # The one write path into the history: stream() hands it every event.
            self._writer = self.store.writer(self.conversation, secrets=secrets, provider=provider)
        run = Run(provider, self.conversation, prompt, tools, settings, model_label=self.model)
        self._run = run
        return run

    def _holder_loop_died(self) -> bool:
        """Whether the run holding the busy lock died with its event loop (so never releases it)."""
        loop = self._busy_loop
        return loop is not None and (loop.is_closed() or not loop.is_running())

    async def stream(self, prompt: str, **overrides: Any) -> AsyncIterator[Event]:
        """Run on the current event loop, yielding events; the last one is RunFinished.

        ``overrides`` change settings for this run only (``max_rounds=2``, ``timeout=5``,
        ``tools=[...]``...).

        Raises:
            ConfigError: the agent is already running a prompt (another cell, thread or
                the chat widget): one conversation takes one turn at a time.
        """
        if not self._busy.acquire(blocking=False) and not self._holder_loop_died():
            raise ConfigError(
                "this agent is already running a prompt (another cell, thread or its chat "
                "widget); wait for it to finish, or use a second Agent"
            )
        self._busy_loop = asyncio.get_running_loop()
        try:
            run = self._new_run(prompt, **overrides)
        except BaseException:
            self._busy.release()
            raise
        from .tracing import run_tracer

        writer = self._writer
        tracer = run_tracer(
            run.provider.name, run.provider.model, self._provider_options.get("env")
        )
        events = run.events()
        try:
            async for event in events:
                if tracer is not None:
                    tracer.on_event(event)  # OpenTelemetry spans, when it is in use
                if writer is not None:
                    writer.on_event(event)  # a finished round or the run's end is saved now
                if isinstance(event, RunFinished):
                    self.last_result = event.result
                yield event
        finally:
            await events.aclose()  # a consumer that stopped early cancels the run now
            if tracer is not None and tracer.run_span is not None:
                tracer.finish(run.result)
            if run.result is not None:
                self.last_result = run.result
                if writer is not None:
                    writer.finish(run.result)
            self._busy.release()
            if "http_client" in self._provider_options:
                from .recording import settle

                await settle(self._provider_options["http_client"])  # recording saved

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
        from ._internal.sync import iterate_in_background

        if overrides.get("tools") is not None:
            # On this thread: listing an MCP server's tools may start it (a sync wait that
            # cannot happen on nbagent's loop, where the run goes).
            overrides["tools"] = list(as_tools(overrides["tools"]).values())
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

    async def aclose(self) -> None:
        """Close the provider's HTTP connections and stop the MCP servers it was given.

        The agent can still run afterwards (a server starts again on its next call).
        """
        if self._provider is not None:
            await self._provider.aclose()
        for source in self._tool_sources:
            await source.aclose()

    def close(self) -> None:
        """:meth:`aclose` for synchronous code; safe inside Jupyter's running loop."""
        from ._internal.sync import run_in_background

        run_in_background(self.aclose)

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- over every row of a table (nbagent.batch) ----------------------------------

    def map(self, rows: Any, prompt: str, **options: Any) -> Any:
        r"""Run ``prompt`` once per row of ``rows``; a DataFrame of new columns, one row each.

        Example::

            out = agent.map(df, "Classify this ticket: {subject}\n{body}", output_type=Ticket)
            df = df.join(out)

        Each row is one full run (tools included) in a conversation of its own; its
        ``{column}`` fields take the row's values. ``rows`` is a DataFrame, a list of
        dicts or a list of strings (a string row is ``{text}``).

        Options: ``output_type`` (one column per field, else ``output``),
        ``concurrency=8`` (rows in flight; halves on 429s and grows back),
        ``max_cost`` (USD: stop launching before the next row could pass it),
        ``resume=True`` (rows the journal already has are not run again),
        ``prefix=""`` (for the new columns' names), ``estimate=k`` (run k sample rows
        and return an :class:`~nbagent.batch.Estimate` instead), ``rpm=``/``tpm=``,
        ``progress`` (None: the surface's own, False: none), ``history`` (which rows'
        conversations go to the history: ``"failed"``, True for all, False for none; the
        journal is kept regardless), ``executor``; any other
        keyword is a run setting (``max_rounds=2``, ``temperature=0``...).

        The frame has the input's index and the columns ``error`` (None when the row
        succeeded), ``cost`` (NaN when unknown), ``tokens``, ``rounds``, ``seconds``.
        A kernel interrupt (or Ctrl-C) stops the batch and returns what finished.
        """
        from .batch import run_batch_sync

        result = run_batch_sync(self, rows, prompt, **self._batch_options(options))
        return result if options.get("estimate") is not None else result.frame

    async def amap(self, rows: Any, prompt: str, **options: Any) -> Any:
        """:meth:`map` on the current event loop (same options and result)."""
        from .batch import run_batch

        result = await run_batch(self, rows, prompt, **self._batch_options(options))
        return result if options.get("estimate") is not None else result.frame

    def _batch_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """``map``'s options for :mod:`nbagent.batch`: its own, the rest as run settings."""
        own = {
            "output_type", "concurrency", "max_cost", "resume", "prefix", "estimate", "rpm",
            "tpm", "progress", "history", "executor", "control",
        }  # fmt: skip
        batch = {k: v for k, v in options.items() if k in own}
        batch["settings"] = {k: v for k, v in options.items() if k not in own}
        batch["provider_options"] = self._provider_options
        batch["rebuildable"] = not self._provider_object
        return batch


def _sources(tools: list[Any] | None) -> list[Any]:
    """The items that provide several tools and own resources (MCP servers)."""
    return [t for t in tools or [] if not isinstance(t, Tool) and hasattr(t, "nbagent_tools")]


def _label(provider: Provider) -> str:
    """The model string shown for a provider object ("openai:gpt-4o", "scripted")."""
    return f"{provider.name}:{provider.model}" if provider.model else provider.name


def _render_result(result: RunResult) -> dict[str, str]:
    """The renderer behind ``RunResult``'s display (see :func:`nbagent.results.set_renderer`)."""
    from .render import result_mime_bundle

    return result_mime_bundle(result)


set_renderer(_render_result)
