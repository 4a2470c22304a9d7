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
import itertools
import linecache
import sys
from typing import Any

from .._internal.images import is_image_like
from .._internal.threads import JobTimedOut, call_on_main_thread
from .._internal.values import cut_middle, to_model_text
from .errors import trimmed_traceback
from .namespace import KernelView

__all__ = ["PythonError", "RunPythonOutput", "run_code"]

KEPT_CHARS = 50_000
"""Captured characters kept per stream (half from the start, half from the end)."""
MAX_DISPLAYS = 20

_numbers = itertools.count(1)


class PythonError(Exception):
    """The code did not parse, raised, or was stopped; the message is what the model reads."""


class CappedText:
    """A write-only text stream keeping the first and last characters of what it gets."""

    def __init__(self, limit: int = KEPT_CHARS) -> None:
        self.half = limit // 2
        self.head: list[str] = []
        self.head_size = 0
        self.tail: list[str] = []
        self.tail_size = 0
        self.total = 0

    def write(self, text: str) -> int:
        """Keep ``text`` (or the part of it that fits)."""
        text = str(text)
        self.total += len(text)
        room = self.half - self.head_size
        if room > 0:
            self.head.append(text[:room])
            self.head_size += min(room, len(text))
            text = text[room:]
        if text:
            self.tail.append(text[-self.half :])
            self.tail_size += min(len(text), self.half)
            if self.tail_size > 2 * self.half:
                joined = "".join(self.tail)[-self.half :]
                self.tail, self.tail_size = [joined], len(joined)
        return len(text)

    def flush(self) -> None:
        """Nothing to flush."""

    def isatty(self) -> bool:
        """Not a terminal."""
        return False

    def getvalue(self) -> str:
        """What was kept, with a marker for what was not."""
        head = "".join(self.head)
        tail = "".join(self.tail)[-self.half :] if self.tail else ""
        dropped = self.total - len(head) - len(tail)
        if dropped > 0:
            return f"{head}\n[… {dropped:,} characters not kept …]\n{tail}"
        return head + tail


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
    out, err = CappedText(), CappedText()
    saved = sys.stdout, sys.stderr
    publisher = _capture_displays(shell)
    sys.stdout, sys.stderr = out, err
    error: BaseException | None = None
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
        error = exc
    finally:
        sys.stdout, sys.stderr = saved
        output.displays = _restore_displays(shell, publisher)
        output.stdout, output.stderr = out.getvalue(), err.getvalue()
        output.printed = {"stdout": out.total, "stderr": err.total}
    output.figures = [f for f in _open_figures() if f is not None and id(f) not in before]
    if error is not None:
        text = output.model_text(2_000) if (output.stdout or output.stderr) else ""
        described = trimmed_traceback(error, skip_files=(__file__,))
        prefix = f"{text}\n\n" if text and text != "(ran without output)" else ""
        raise PythonError(f"the code raised {type(error).__name__}: {error}\n\n{prefix}{described}")
    return output


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
    """Run ``code`` on the kernel's main thread, within ``timeout`` seconds."""
    filename = f"<run_python #{next(_numbers)}>"
    try:
        return call_on_main_thread(lambda: _execute(view, code, filename), timeout)  # type: ignore[no-any-return]
    except JobTimedOut:
        raise PythonError(
            f"the code ran past the {timeout:g} s limit and was interrupted (KeyboardInterrupt)"
        ) from None
    except KeyboardInterrupt:
        raise PythonError("the user interrupted the kernel; the code was stopped") from None
