"""Fixtures for the notebook-surface tests: a real IPython shell, a fake OpenAI server, kernels.

The HTML inspector lives in ``html_facts.py``: test modules import it from there, since
``from conftest import ...`` picks up whichever conftest was imported last when pytest
is given several test directories.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test writes its history database under its own temporary directory."""
    home = tmp_path / "nbagent-home"
    monkeypatch.setenv("NBAGENT_HOME", str(home))
    monkeypatch.delenv("NBAGENT_HISTORY", raising=False)
    return home


class _ChatCompletions(BaseHTTPRequestHandler):
    """Speaks OpenAI's streamed Chat Completions: answers every request with one text reply."""

    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        last = body["messages"][-1]["content"]
        chunks = [
            {"role": "assistant", "content": ""},
            {"content": "Echo: "},
            {"content": str(last)},
        ]
        events = [
            {"id": "chatcmpl-1", "object": "chat.completion.chunk", "usage": None,
             "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
            for d in chunks
        ]  # fmt: skip
        events.append(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "usage": None,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        )
        events.append(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
            }
        )
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def openai_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local server speaking the OpenAI streaming wire format; yields (base_url, bodies)."""
    _ChatCompletions.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1", _ChatCompletions.bodies
    server.shutdown()
    server.server_close()


@pytest.fixture
def shell() -> Iterator[Any]:
    """A fresh real IPython InteractiveShell with nbagent loaded."""
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    import nbagent

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    # What a front end would receive: every display and update_display, in order.
    sh.display_pub = CapturingDisplayPublisher()
    sh.run_line_magic("load_ext", "nbagent")
    saved = dict(nbagent.REGISTRY)
    nbagent.REGISTRY.clear()
    yield sh
    nbagent.REGISTRY.clear()
    for t in saved.values():
        nbagent.REGISTRY.add(t)
    InteractiveShell.clear_instance()


@pytest.fixture
def kernel_env(private_history: Path) -> dict[str, str]:
    """Environment for a real ipykernel that imports this checkout of nbagent."""
    env = dict(os.environ)
    env["NBAGENT_HOME"] = str(private_history)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("NBAGENT_APPROVAL", None)
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env["PYTHONEXECUTABLE"] = sys.executable
    return env
