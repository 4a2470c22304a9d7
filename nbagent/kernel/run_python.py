"""``run_python``: code from the model, run in the user's namespace as a cell would.

The code runs on the kernel's main thread (see :mod:`nbagent._internal.threads`), is not added
to the notebook's history (no ``In``/``Out``/``_`` entries), and leaves the
variables it assigns in the namespace. What it printed, the value of its last
expression, what it displayed and the figures it drew come back as one
:class:`RunPythonOutput`; its ``model_text`` is what the model reads and its
``model_images`` the images the model is shown.
"""

from __future__ import annotations

import ast
import contextvars
import itertools
import linecache
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._internal.images import is_image_like
from .._internal.threads import MAIN_THREAD_POSTER, JobTimedOut, call_on_main_thread
from .._internal.values import cut_middle, to_model_text
from .capture import capture_output
from .errors import trimmed_traceback
from .namespace import KernelView

__all__ = ["PythonError", "RunPythonOutput", "run_code"]

MAX_DISPLAYS = 20
STOP_GRACE = 5.0
"""Seconds code past its limit has to stop after it was interrupted."""

_numbers = itertools.count(1)


class PythonError(Exception):
    """The code did not parse, raised, or was stopped; the message is what the model reads."""


class RunPythonOutput:
    """What one ``run_python`` call produced."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.stdout = ""
        self.stderr = ""
        self.printed = {"stdout": 0, "stderr": 0}
        """Characters printed to each stream (more than was kept, for huge output)."""
        self.value: Any = None
        """The last expression's value (a DataFrame stays a DataFrame), or None."""
        self.has_value = False
        self.displays: list[dict[str, Any]] = []
        """Mime bundles the code displayed (``display(...)``, ``plt.show()``)."""
        self.figures: list[Any] = []
        """matplotlib figures the code opened and left open."""

    @property
    def result_value(self) -> Any:
        """What the panel and ``RunResult.tool_results`` show.

        The last expression's value (a DataFrame stays a DataFrame), else the first
        figure, else this output.
        """
        if self.has_value:
            return self.value
        return self.figures[0] if self.figures else self

    def __repr__(self) -> str:
        return f"RunPythonOutput(value={type(self.value).__name__}, figures={len(self.figures)})"

    def __str__(self) -> str:
        return self.model_text(4_000)

    @property
    def model_images(self) -> list[Any]:
        """The images the model is shown: figures, an image value, displayed PNG/JPEG."""
        found: list[Any] = list(self.figures)
        if self.has_value and is_image_like(self.value):
            figure = getattr(self.value, "figure", None)
            if not any(f is self.value or f is figure for f in found):
                found.append(self.value)
        for bundle in self.displays:
            data = bundle.get("data") or {}
            for key in ("image/png", "image/jpeg"):
                if key in data:
                    raw = data[key]
                    if isinstance(raw, str):
                        import base64

                        raw = base64.b64decode(raw)
                    found.append(raw)
                    break
        return found

    def model_text(self, limit: int) -> str:
        """What the model reads: printed text, the value, displayed text, in that order."""
        parts: list[str] = []
        share = max(limit // 3, 200)
        for stream in ("stdout", "stderr"):
            text = getattr(self, stream).rstrip("\n")
            if not text:
                continue
            shown, cut = cut_middle(text, share)
            total = self.printed[stream]
            label = f"{stream} ({total:,} characters, middle cut)" if cut else stream
            parts.append(f"{label}:\n{shown}")
        for bundle in self.displays:
            text = (bundle.get("data") or {}).get("text/plain")
            if text and not any(k.startswith("image/") for k in bundle.get("data") or {}):
                parts.append("displayed:\n" + cut_middle(str(text), share)[0])
        if self.has_value and not is_image_like(self.value):
            room = max(limit - sum(len(p) + 2 for p in parts) - 10, 200)
            try:
                shown = repr(self.value) if isinstance(self.value, str) else self.value  # as Out
                text, _ = to_model_text(shown, room)
            except Exception as exc:  # noqa: BLE001 - a broken repr is reported, not raised
                text = f"<{type(self.value).__name__}: unprintable ({exc})>"
            parts.append("value:\n" + text)
        if not parts:
            parts.append("(ran without output)")
        return "\n\n".join(parts)

    def _repr_png_(self) -> bytes | None:
        """The first figure, for the round panel."""
        from .._internal.images import to_image

        for candidate in self.model_images:
            try:
                image = to_image(candidate)
            except (TypeError, ValueError):
                continue
            if image.media_type == "image/png":
                return image.data
        return None


def _open_figures() -> list[Any]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    return [_figure(n) for n in pyplot.get_fignums()]


def _close_shown_figure(output: RunPythonOutput) -> None:
    """Close the figure the round panel shows (the code's value, else its first plot).

    Left open, matplotlib's inline backend shows it again below the cell when the
    cell ends: the plot twice. A closed figure still renders (the panel, the model's
    image) and stays in the variables the code bound (``ax.figure``); the figures
    the panel does not show stay open, so the backend shows them once.
    """
    value = output.result_value
    shown = value if hasattr(value, "savefig") else getattr(value, "figure", None)
    if any(f is shown for f in output.figures):
        sys.modules["matplotlib.pyplot"].close(shown)


def _figure(number: int) -> Any:
    from matplotlib._pylab_helpers import Gcf

    manager = Gcf.get_fig_manager(number)
    return manager.canvas.figure if manager is not None else None


def _execute(view: KernelView, code: str, filename: str) -> RunPythonOutput:
    """Run ``code`` here (the caller picks the thread)."""
    output = RunPythonOutput(code)
    shell = view.shell
    source = code
    if shell is not None and hasattr(shell, "transform_cell"):
        try:
            source = shell.transform_cell(code)  # %magics and !commands, as in a cell
        except Exception:  # noqa: BLE001 - the parser below reports the problem
            source = code
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        line = f"\n    {exc.text.rstrip()}" if exc.text else ""
        raise PythonError(f"the code does not parse: SyntaxError: {exc.msg}{where}{line}") from None
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    assert last is None or isinstance(last, ast.Expr)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    flags = int(getattr(getattr(shell, "compile", None), "flags", 0))
    before = {id(f) for f in _open_figures()}
    publisher = _capture_displays(shell)
    error: BaseException | None = None
    try:
        with capture_output() as (out, err):  # this thread's prints only, undone whatever happens
            error = _run_tree(view, tree, last, filename, flags, output)
    finally:
        output.displays = _restore_displays(shell, publisher)
    output.stdout, output.stderr = out.getvalue(), err.getvalue()
    output.printed = {"stdout": out.total, "stderr": err.total}
    output.figures = [f for f in _open_figures() if f is not None and id(f) not in before]
    _close_shown_figure(output)
    if error is not None:
        text = output.model_text(2_000) if (output.stdout or output.stderr) else ""
        described = trimmed_traceback(error, skip_files=(__file__,))
        prefix = f"{text}\n\n" if text and text != "(ran without output)" else ""
        raise PythonError(f"the code raised {type(error).__name__}: {error}\n\n{prefix}{described}")
    return output


def _run_tree(
    view: KernelView,
    tree: ast.Module,
    last: ast.Expr | None,
    filename: str,
    flags: int,
    output: RunPythonOutput,
) -> BaseException | None:
    """Execute the parsed code; the exception it raised (KeyboardInterrupt propagates)."""
    try:
        exec(compile(tree, filename, "exec", flags, dont_inherit=True), view.ns)  # noqa: S102
        if last is not None:
            expression = ast.Expression(last.value)
            output.value = eval(
                compile(expression, filename, "eval", flags, dont_inherit=True), view.ns
            )  # noqa: S307
            output.has_value = output.value is not None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: the kernel must live on
        return exc
    return None


def _capture_displays(shell: Any) -> Any:
    if shell is None or not hasattr(shell, "display_pub"):
        return None
    from IPython.core.displaypub import CapturingDisplayPublisher

    saved = shell.display_pub
    publisher = CapturingDisplayPublisher()  # type: ignore[no-untyped-call]
    shell.display_pub = publisher
    return saved, publisher


def _restore_displays(shell: Any, captured: Any) -> list[dict[str, Any]]:
    if captured is None:
        return []
    saved, publisher = captured
    shell.display_pub = saved
    return [dict(o) for o in publisher.outputs[:MAX_DISPLAYS]]


def run_code(view: KernelView, code: str, timeout: float) -> RunPythonOutput:
    """Run ``code`` on the kernel's main thread, within ``timeout`` seconds.

    Without a live driver (a script, ``run_sync`` off the main thread) the code runs on
    a thread of its own, so that a call that ignores its interrupt can be given up on
    with a result saying so, instead of holding the tool until it is abandoned.
    """
    filename = f"<run_python #{next(_numbers)}>"
    finished = threading.Event()

    def job() -> RunPythonOutput:
        try:
            return _execute(view, code, filename)
        finally:
            finished.set()

    if (
        MAIN_THREAD_POSTER.get() is None
        and threading.current_thread() is not threading.main_thread()
    ):
        return _run_on_own_thread(job, finished, timeout)
    try:
        return call_on_main_thread(job, timeout)  # type: ignore[no-any-return]
    except JobTimedOut:
        raise PythonError(_past_limit(timeout, stopped=finished.is_set())) from None
    except KeyboardInterrupt:
        raise PythonError("the user interrupted the kernel; the code was stopped") from None


def _past_limit(timeout: float, *, stopped: bool) -> str:
    if stopped:
        return f"the code ran past the {timeout:g} s limit and was interrupted (KeyboardInterrupt)"
    return (
        f"the code ran past the {timeout:g} s limit and did not stop when interrupted: it is "
        "still running in the background (what it prints from now on is not captured)"
    )


def _run_on_own_thread(
    job: Callable[[], RunPythonOutput], finished: threading.Event, timeout: float
) -> RunPythonOutput:
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, job()))
        except BaseException as exc:  # noqa: BLE001 - delivered to the waiting tool
            box.append((False, exc))

    context = contextvars.copy_context()  # the tool's context (its deadline) goes along
    worker = threading.Thread(
        target=context.run, args=(run,), name="nbagent-run-python", daemon=True
    )
    worker.start()
    if not finished.wait(timeout):
        _interrupt(worker)
        finished.wait(STOP_GRACE)
        worker.join(0.5)  # the result is delivered right after `finished`
        if not box:
            raise PythonError(_past_limit(timeout, stopped=False))
        ok, payload = box[0]
        if not ok and isinstance(payload, KeyboardInterrupt):
            raise PythonError(_past_limit(timeout, stopped=True))
    else:
        worker.join()
        ok, payload = box[0]
    if ok:
        return payload  # type: ignore[no-any-return]
    raise payload


def _interrupt(worker: threading.Thread) -> None:
    """Raise KeyboardInterrupt in ``worker`` at its next Python instruction."""
    import ctypes

    if worker.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(worker.ident), ctypes.py_object(KeyboardInterrupt)
        )
