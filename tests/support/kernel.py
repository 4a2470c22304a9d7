"""One real-ipykernel helper: start a kernel, run cells, see what a front end would see.

    kernel = Kernel(kernel_environment(home), cwd)      # or the ``shared_kernel`` fixture
    reply, messages = kernel.execute("%%agent\\nhi")     # the reply and the iopub messages
    last_html(messages)                                  # the display's final HTML
    kernel.run("print(1)")                               # "1\\n" (fails on an error)
    kernel.close()

``shared_kernel`` (session scope) is one kernel for every test that never interrupts
it: import it into a conftest. Tests that interrupt a kernel start their own.
:func:`run_notebook` executes a whole notebook with nbclient (outputs land in the
cells, as a saved notebook has them).

Every kernel gets :func:`kernel_environment`: its own history folder, no inherited
keys or nbagent settings, and this checkout of nbagent importable.
"""

from __future__ import annotations

import os
import queue
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.env import child_environment

ROOT = Path(__file__).resolve().parents[2]

Message = dict[str, Any]


def kernel_environment(home: Path, **values: str) -> dict[str, str]:
    """An environment for a kernel: history under ``home``, no keys, this nbagent."""
    return child_environment(
        NBAGENT_HOME=str(home),
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
        PYTHONEXECUTABLE=sys.executable,
        **values,
    )


class Kernel:
    """A started ipykernel and a client on its channels."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        from jupyter_client import KernelManager

        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def execute(
        self,
        code: str,
        *,
        timeout: float = 60,
        allow_stdin: bool = False,
        on_message: Callable[[Message], None] | None = None,
        stdin_answer: str | None = None,
    ) -> tuple[Message, list[Message]]:
        """Run ``code``; return the execute reply and this request's iopub messages.

        Each message gets ``received`` (``time.monotonic()`` on arrival). With
        ``stdin_answer``, every ``input()`` gets that answer (``"<interrupt>"``:
        the kernel is interrupted instead; ``"<no answer>"``: nobody answers, as after
        a page reload); the input requests are in the messages.
        """
        msg_id = self.kc.execute(code, allow_stdin=allow_stdin)
        messages: list[Message] = []
        deadline = time.monotonic() + timeout
        idle = False
        while not idle:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no idle status after {timeout} s; got {len(messages)} msgs")
            if stdin_answer is not None:
                try:
                    request = self.kc.get_stdin_msg(timeout=0.01)
                except queue.Empty:
                    pass
                else:
                    assert request["msg_type"] == "input_request"
                    messages.append(request)
                    if stdin_answer == "<interrupt>":
                        self.interrupt()  # the user interrupts instead of answering
                    elif stdin_answer == "<no answer>":
                        pass  # the page that showed the input box is gone
                    else:
                        self.kc.input(stdin_answer)
            try:
                msg = self.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            msg["received"] = time.monotonic()
            messages.append(msg)
            if on_message is not None:
                on_message(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                idle = True
        while True:  # skip replies to earlier requests (wait_for_ready's kernel_info)
            reply = self.kc.get_shell_msg(timeout=10)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply, messages

    def run(self, code: str, *, timeout: float = 60) -> str:
        """Run ``code``, which must succeed; return what it printed."""
        reply, messages = self.execute(code, timeout=timeout)
        errors = [m["content"] for m in messages if m["msg_type"] == "error"]
        assert reply["content"]["status"] == "ok", errors or reply["content"]
        return printed(messages)

    def interrupt(self) -> None:
        """What the notebook's Stop button does: SIGINT to the kernel."""
        self.km.interrupt_kernel()

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def printed(messages: list[Message]) -> str:
    """Everything the code printed (stdout and stderr streams, in order)."""
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


def displays(messages: list[Message]) -> list[Message]:
    """``display_data`` and ``update_display_data`` messages, in order."""
    return [m for m in messages if m["msg_type"] in ("display_data", "update_display_data")]


def last_html(messages: list[Message]) -> str:
    """The HTML of the last display message."""
    return str(displays(messages)[-1]["content"]["data"]["text/html"])


def notebook(*cells: str) -> Any:
    """A notebook (nbformat v4) with one code cell per string, for the python3 kernel."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    return nb


def run_notebook(nb: Any, env: dict[str, str], cwd: Path) -> Any:
    """Execute every cell of ``nb`` in a fresh kernel (nbclient); the outputs land in ``nb``."""
    from jupyter_client import KernelManager
    from nbclient import NotebookClient

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(cwd))
    try:
        NotebookClient(nb, km=km, timeout=120, allow_errors=False).execute()
    finally:
        km.shutdown_kernel(now=True)
    return nb


@pytest.fixture(scope="session")
def shared_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    """One kernel for the tests that never interrupt it (each sets up what it needs)."""
    base = tmp_path_factory.mktemp("shared-kernel")
    kernel = Kernel(kernel_environment(base / "nbagent-home"), base)
    try:
        yield kernel
    finally:
        kernel.close()
