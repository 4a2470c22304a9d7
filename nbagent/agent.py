"""Agent: a model, its tools, settings and the conversation so far."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import threading
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, NbAgentError, at_boundary
from .events import Event, RunFinished
from .messages import Conversation
from .providers import Provider, choose_model, get_provider, makes_http_requests
from .results import RunResult, set_renderer
from .run.loop import Run
from .run.settings import FIELDS, RUN_ONLY, RunInputs, RunOptions, RunSettings, check_names
from .run.steps import RunSpec, Steps
from .tools import Approver, Middleware, Tool, ToolItem, ToolSource, as_tools, gather_tools

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .store import Store


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
        tools: Iterable[ToolItem] | None = None,
        system: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        http_timeout: float | None = None,
        stream: bool = True,
        max_rounds: int = 10,
        max_consecutive_errors: int = 3,
        max_tool_only_rounds: int | None = None,
        timeout: float | None = 300.0,
        tool_timeout: float = 60.0,
        max_total_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_cost: float | None = None,
        context_window: int | None = None,
        temperature: float | None = None,
        output_type: Any = None,
        send_images: bool = True,
        text_tool_calls: bool | None = None,
        status_model: str | Provider | None = None,
        strict: bool = False,
        approver: Approver | None = None,
        tool_middleware: Sequence[Middleware] = (),
        store: Store | str | os.PathLike[str] | None = "default",
        record: str | os.PathLike[str] | None = None,
        replay: str | os.PathLike[str] | None = None,
        replay_fallback: bool = False,
        env: Mapping[str, str] | None = None,
        kernel: bool = False,
        images: bool | None = None,
        **provider_options: Any,
    ) -> None:
        """Create an agent; its run settings are the defaults of every run.

        ``max_rounds=`` ... ``tool_middleware=`` make ``agent.settings``
        (:class:`~nbagent.run.settings.RunSettings`).

        ``http_timeout`` is the provider's HTTP timeout (connect and each read);
        ``timeout`` is the deadline of a whole run. Other keywords go to the provider
        (``anthropic_thinking=``, ``http_client=``...); one close to a setting's name is a
        TypeError naming it. ``images=`` is the old name of ``send_images=``.
        """
        if images is not None:
            warnings.warn(
                "Agent(images=...) is now Agent(send_images=...)", DeprecationWarning, stacklevel=2
            )
            send_images = images
        arguments = locals()
        self.settings = RunSettings(**{name: arguments[name] for name in SETTING_NAMES})
        """The defaults of every run (frozen: ``agent.settings = agent.settings.replace(...)``)."""
        _refuse_near_misses(provider_options)
        self._provider: Provider | None = None
        self.model_reason: str | None = None
        """Why this model was chosen when none was named ("found a local Ollama at
        127.0.0.1:11434"); None for a named model. Footers and ``%agent model`` show it."""
        chosen: dict[str, Any] = {}  # what a found local server needs (its base_url)
        if isinstance(model, str) or model is None:
            choice = choose_model(model, env)
            self.model, self.model_reason, chosen = choice.model, choice.reason, choice.options
        else:
            self._provider = model
            self.model = _label(model)
        self._provider_options: dict[str, Any] = {**chosen, **provider_options}
        for key, value in (
            ("base_url", base_url), ("api_key", api_key), ("env", env), ("timeout", http_timeout)
        ):  # fmt: skip
            if value is not None:
                self._provider_options[key] = value
        self.kernel = kernel
        """True: the kernel tools are offered and each run's system message carries the
        kernel's variable inventory (``%%agent --kernel``, see :mod:`nbagent.kernel`)."""
        self._tool_sources: list[ToolSource] = []  # closed by close()
        self._tools: list[ToolItem] | None = None
        self.tools = tools  # checked now: a name clash is a ConfigError here
        self.conversation = Conversation(system=system)
        self.last_result: RunResult | None = None
        self._runs: set[Run] = set()  # the runs in flight (cancel() stops them)
        self._busy = threading.Lock()  # one turn at a time (cells, threads, the chat widget)
        self._busy_loop: asyncio.AbstractEventLoop | None = None  # the loop of the run holding it
        self._busy_conversations: set[str] = set()  # conversation= runs in flight, by id
        self._busy_guard = threading.Lock()
        # History (nbagent.store): "default" is the shared file, opened on first write.
        from .store import resolve_store

        self.store: Store | None = resolve_store(store, env)
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
            carried = ("env", "http_client", "timeout")  # http_timeout= is not model-specific
            kept = {k: v for k, v in self._provider_options.items() if k in carried}
            provider = get_provider(model, **kept)
            self._provider_options = kept
            self.model = model
        else:
            provider = model
            self._provider_options = {}
            self.model = _label(model)
        self._provider = provider
        self._provider_object = not isinstance(model, str)
        self.model_reason = None  # named now

    @property
    def tool_selection(self) -> list[ToolItem] | None:
        """The tools and tool sources this agent was given; None: every ``@tool`` in the kernel."""
        return None if self._tools is None else list(self._tools)

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools of the next run by name (the kernel-wide registry if none were given).

        The kernel tools ``kernel=True`` adds are not included.
        """
        return as_tools(self._tools)

    @tools.setter
    def tools(self, tools: Iterable[ToolItem] | None) -> None:
        # None means "every @tool in the kernel", looked up at each run.
        items: list[ToolItem] | None = None
        if tools is not None:
            items = [t if isinstance(t, ToolSource | Tool) else Tool(t) for t in tools]
        # Listing the sources here (an MCP server starts) finds a name clash now, with
        # the kernel tools too when kernel=True; runs check again (the registry changes).
        gather_tools(items, _kernel_source(self.kernel), with_context=False)
        self._tools = items
        self._tool_sources += [t for t in items or () if isinstance(t, ToolSource)]

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

        ``conversation_id`` may be a unique prefix; None means the latest one. When
        the conversation has branches (edited messages in a chat), the agent continues
        the branch a chat showed last.
        ``options`` are the constructor's; the model defaults to the one the
        conversation last used, the system prompt to its own.
        """
        from .store import last_model, resolve_store
        from .store.tree import shown_branch

        store = resolve_store(options.get("store", "default"), options.get("env"))
        if store is None:
            raise ConfigError("resume needs history: store=None or NBAGENT_HISTORY=off")
        conversation = store.load(shown_branch(store, store.resolve_id(conversation_id)))
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

    def _plan(self, prompt: str, options: Mapping[str, Any]) -> _RunPlan:
        """Everything a run needs, from the agent's defaults and this run's ``options``."""
        check_names(options, FIELDS | RUN_ONLY, "run option")
        overrides = {k: v for k, v in options.items() if k not in RUN_ONLY}
        # -- tools: one precedence and collision rule for every source (nbagent.tools.sources)
        chosen = options.get("tools")  # this run's own tools=[...], if given
        tools, context = gather_tools(
            self._tools if chosen is None else chosen,
            _kernel_source(options.get("kernel", self.kernel)),
        )
        # -- settings and inputs
        settings = self.settings.replace(**overrides)
        inputs = RunInputs(attachments=list(options.get("attachments") or ()), context=context)
        provider = self.provider
        if settings.max_cost is not None:
            from .cost import require_price

            require_price(provider)  # before any request is sent
        conversation = options.get("conversation") or self.conversation
        return _RunPlan(provider, conversation, tools, settings, inputs)

    def _claim(self, conversation: Conversation) -> Callable[[], None]:
        """Take the conversation's turn (raises ConfigError if it is taken); returns the release."""
        if conversation is not self.conversation:
            with self._busy_guard:
                if conversation.id in self._busy_conversations:
                    raise ConfigError(
                        f"conversation {conversation.id} is already running a prompt; "
                        "one turn at a time per conversation"
                    )
                self._busy_conversations.add(conversation.id)
            return lambda: self._busy_conversations.discard(conversation.id)
        if not self._busy.acquire(blocking=False) and not self._holder_loop_died():
            raise ConfigError(
                "this agent is already running a prompt (another cell, thread or its chat "
                "widget); wait for it to finish, or use a second Agent"
            )
        try:
            self._busy_loop = asyncio.get_running_loop()
        except RuntimeError:  # a Steps driven from synchronous code
            self._busy_loop = None
        return self._busy.release

    def _spec(self, prompt: str, plan: _RunPlan) -> RunSpec:
        """The run ``plan`` describes, heard by this agent's history writer and tracer."""
        return RunSpec(
            plan.provider,
            plan.conversation,
            prompt,
            plan.tools,
            plan.settings,
            plan.inputs,
            model_label=self.model,
            listeners=self._listeners(plan),
            env=self._provider_options.get("env"),
        )

    def _listeners(self, plan: _RunPlan) -> list[Callable[[Event], None]]:
        """The run's listeners: the model's reason, the history writer and the tracer.

        They see every event as it happens, before any reader of the run's events.
        """
        listeners: list[Callable[[Event], None]] = [self._note_model_reason]
        if self.store is not None:
            from ._internal.redaction import collect_secrets

            secrets = collect_secrets(self._provider_options, self._provider_options.get("env"))
            writer = self.store.writer(plan.conversation, secrets=secrets, provider=plan.provider)
            listeners.append(writer.on_event)  # a finished round or the run's end is saved now
        from .tracing import run_tracer

        tracer = run_tracer(plan.provider, self._provider_options.get("env"))
        if tracer is not None:
            listeners.append(tracer.on_event)  # OpenTelemetry spans, when it is in use
        return listeners

    def _note_model_reason(self, event: Event) -> None:
        """Put why this model was chosen on the result, before any footer shows it."""
        if isinstance(event, RunFinished):
            event.result.model_reason = self.model_reason

    def _holder_loop_died(self) -> bool:
        """Whether the run holding the busy lock died with its event loop (so never releases it)."""
        loop = self._busy_loop
        return loop is not None and (loop.is_closed() or not loop.is_running())

    def steps(self, prompt: str, **options: Unpack[RunOptions]) -> Steps:
        """Start a run driven a step at a time (see :mod:`nbagent.run.steps`).

        It has what :meth:`run` has: this run's settings (``options``), the kernel
        context, images, typed output, the cost cap, history, tracing and the busy
        lock, which :meth:`Steps.finish` releases.
        """
        plan = self._plan(prompt, options)
        release = self._claim(plan.conversation)
        own = plan.conversation is self.conversation

        def finished(result: RunResult) -> None:
            if own:
                self.last_result = result
            release()

        try:
            return Steps(self._spec(prompt, plan), on_finish=[finished])
        except BaseException:
            release()
            raise

    def stream(
        self, prompt: str, *, paced: bool = False, **options: Unpack[RunOptions]
    ) -> AsyncIterator[Event]:
        """Run on the current event loop, yielding events; the last one is RunFinished.

        ``options`` change settings for this run only (``max_rounds=2``, ``timeout=5``,
        ``tools=[...]``, ``conversation=...``: see :class:`~nbagent.run.settings.RunOptions`).
        ``paced=True`` makes each request wait until this reader handled every earlier
        event (a live display redrawing first).

        Raises:
            ConfigError: the agent is already running a prompt (another cell, thread or
                the chat widget): one conversation takes one turn at a time.
            TypeError: an unknown option (the message names the nearest valid one).
        """
        plan = self._plan(prompt, options)  # before the first event: a typo raises here
        return self._stream(prompt, plan, paced)

    async def _stream(self, prompt: str, plan: _RunPlan, paced: bool) -> AsyncIterator[Event]:
        async with self._running(prompt, plan, paced) as run:
            events = run.events()
            try:
                async for event in events:
                    if plan.conversation is self.conversation and isinstance(event, RunFinished):
                        self.last_result = event.result
                    yield event
            finally:
                await events.aclose()  # a consumer that stopped early cancels the run now

    @contextlib.asynccontextmanager
    async def _running(self, prompt: str, plan: _RunPlan, paced: bool) -> AsyncIterator[Run]:
        """A run of ``plan`` holding its conversation's turn; afterwards, the bookkeeping."""
        release = self._claim(plan.conversation)
        try:
            run = Run(self._spec(prompt, plan), paced=paced)
        except BaseException:
            release()
            raise
        self._runs.add(run)
        try:
            yield run
        finally:
            self._runs.discard(run)
            if plan.conversation is self.conversation and run.result is not None:
                self.last_result = run.result
            release()
            if "http_client" in self._provider_options:
                from .recording import settle

                await settle(self._provider_options["http_client"])  # recording saved

    async def run(self, prompt: str, **options: Unpack[RunOptions]) -> RunResult:
        """Run to the end on the current event loop and return the result.

        Nothing reads the events (the history and traces still see each one), so the
        run wakes this caller once, at the end.
        """
        plan = self._plan(prompt, options)
        async with self._running(prompt, plan, paced=False) as run:
            return await run.outcome()

    def stream_sync(self, prompt: str, **overrides: Unpack[RunOptions]) -> Iterator[Event]:
        """:meth:`stream` for synchronous code; works inside Jupyter's running loop too.

        A KeyboardInterrupt cancels the run; the remaining events (ending with
        RunFinished, stop_reason "cancelled") are still yielded, then it is re-raised.
        """
        from ._internal.threads import iterate_in_background

        chosen = overrides.get("tools")
        if chosen is not None:
            # On this thread: listing an MCP server's tools may start it (a sync wait that
            # cannot happen on nbagent's loop, where the run goes).
            overrides["tools"] = chosen = list(chosen)
            as_tools(chosen)  # the servers list their tools (cached) here
        return iterate_in_background(lambda: self.stream(prompt, **overrides), self.cancel)

    def run_sync(self, prompt: str, **overrides: Unpack[RunOptions]) -> RunResult:
        """Run to the end from synchronous code (scripts, notebook cells) and return the result.

        On KeyboardInterrupt the run is cancelled cleanly (history stays valid,
        ``agent.last_result`` holds the partial result) and the interrupt is re-raised.
        """
        from ._internal.threads import run_in_background

        chosen = overrides.get("tools")
        if chosen is not None:
            overrides["tools"] = chosen = list(chosen)
            as_tools(chosen)  # see stream_sync
        # One hand-off each way: the events stay on the loop thread (nothing shows them).
        try:
            result: RunResult = run_in_background(
                lambda: self.run(prompt, **overrides), on_interrupt=self.cancel
            )
        except NbAgentError as exc:  # its message says it all: not the loop thread's frames
            raise at_boundary(exc) from None
        return result

    def cancel(self) -> None:
        """Stop the runs in flight (same as the Stop button or a kernel interrupt)."""
        for run in list(self._runs):
            run.cancel()

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
        from ._internal.threads import run_in_background

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

        Options (the README's "An agent over every row" has them all): ``output_type``,
        ``concurrency=8``, ``max_cost`` (USD for the batch), ``resume=True``, ``prefix``,
        ``estimate=k`` (an :class:`~nbagent.batch.Estimate` instead of the frame),
        ``rpm``/``tpm``, ``progress``, ``history="failed"``, ``executor``, ``mode="batch"``
        (the providers' batch APIs, at their batch price; ``wait=False`` returns a
        :class:`~nbagent.batch.provider_batch.BatchHandle` at once); any other
        keyword is a run setting (``max_rounds=2``...). The frame has the input's index
        and ``error``, ``cost``, ``tokens``, ``rounds``, ``seconds`` beside the answers.
        A kernel interrupt (or Ctrl-C) stops the batch and returns what finished.
        """
        from .batch import batch_options, run_batch_sync

        result = run_batch_sync(self, rows, prompt, **batch_options(self, options))
        if options.get("estimate") is not None or options.get("wait") is False:
            return result  # an Estimate, or the handle of a batch-mode call
        return result.frame

    async def amap(self, rows: Any, prompt: str, **options: Any) -> Any:
        """:meth:`map` on the current event loop (same options and result)."""
        from .batch import batch_options, run_batch

        batch = batch_options(self, options)
        batch.pop("wait", None)  # awaiting is the caller's choice here
        result = await run_batch(self, rows, prompt, **batch)
        return result if options.get("estimate") is not None else result.frame


SETTING_NAMES = tuple(sorted(FIELDS))
"""The Agent keywords that are run settings (the rest configure the agent itself)."""


@dataclass
class _RunPlan:
    """What one run is made of: resolved from the agent's defaults and the run's options."""

    provider: Provider
    conversation: Conversation
    tools: dict[str, Tool]
    settings: RunSettings
    inputs: RunInputs


def _refuse_near_misses(provider_options: Mapping[str, Any]) -> None:
    """A provider option spelt like an Agent keyword is a typo: say which one was meant."""
    if not provider_options:
        return
    import inspect

    known = [p for p in inspect.signature(Agent.__init__).parameters if p != "self"]
    for name in provider_options:
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        if near:
            raise TypeError(
                f"Agent() got an unexpected keyword {name!r}; did you mean {near[0]!r}?"
            )


def _kernel_source(on: bool) -> list[ToolSource]:
    """The kernel toolset when ``kernel=True`` (imported only then)."""
    if not on:
        return []
    from .kernel import KernelTools

    return [KernelTools()]


def _label(provider: Provider) -> str:
    """The model string shown for a provider object ("openai:gpt-4o", "scripted")."""
    return f"{provider.name}:{provider.model}" if provider.model else provider.name


def _render_result(result: RunResult) -> dict[str, str]:
    """The renderer behind ``RunResult``'s display (see :func:`nbagent.results.set_renderer`)."""
    from .render import result_mime_bundle

    return result_mime_bundle(result)


set_renderer(_render_result)
