"""%%agent prompt fields in a real InteractiveShell: history, the last error, images, and
the line that says what was sent when a value was shortened."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

from nbagent import Agent
from nbagent.magic import use
from nbagent.testing import ScriptedModel


def run(shell: Any, body: str, line: str = "") -> ScriptedModel:
    model = ScriptedModel(lambda r: "ok")
    use(Agent(model, tools=[], store=None), shell=shell)
    shell.display_pub.outputs.clear()
    shell.run_cell_magic("agent", line, body)
    return model


def test_in_out_and_underscore(shell: Any) -> None:
    shell.run_cell("6 * 7", store_history=True)
    number = shell.execution_count - 1
    model = run(shell, f"Input {{In[{number}]}} gave {{Out[{number}]}}; last {{_}}.")
    assert model.requests[0].prompt == "Input 6 * 7 gave 42; last 42."


def test_missing_history_entries_are_clear_errors(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"\{Out\[999\]\}.*cell 999 left no output value"):
        run(shell, "{Out[999]}")
    with pytest.raises(UsageError, match=r"\{In\[999\]\}.*there is no input 999"):
        run(shell, "{In[999]}")


def test_err_is_the_last_error(shell: Any) -> None:
    shell.run_cell("def ratio(a, b):\n    return a / b\nratio(1, 0)", store_history=True)
    model = run(shell, "Explain: {Err}")
    prompt = model.requests[0].prompt
    assert prompt.startswith("Explain: In [")
    assert "ratio(1, 0)" in prompt and "ZeroDivisionError: division by zero" in prompt


def test_shortened_dataframe_is_announced_above_the_panel(shell: Any) -> None:
    shell.user_ns["sales"] = pd.DataFrame({"revenue": range(50)})
    run(shell, "Summarise {sales}")
    first = shell.display_pub.outputs[0]["data"]
    assert first["text/plain"] == (
        "Sent to the model: sales as the first 5 of 50 rows (DataFrame, 1 columns)."
    )
    assert 'class="nbagent-sent-note"' in first["text/html"]


def test_nothing_shortened_means_no_line(shell: Any) -> None:
    shell.user_ns["small"] = pd.DataFrame({"revenue": range(3)})
    run(shell, "Summarise {small}")
    assert not any("Sent to the model" in o["data"]["text/plain"]
                   for o in shell.display_pub.outputs)  # fmt: skip


def test_fig_attaches_the_image_to_the_prompt(shell: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3), dpi=100)
    fig.add_subplot().plot([1, 2])
    shell.user_ns["fig"] = fig
    model = run(shell, "What does {fig} show?")
    assert model.requests[0].prompt == "What does [image 1: fig, 400×300 PNG, attached] show?"
    (user,) = [m for m in model.requests[0].messages if m.role == "user"]
    assert [(i.media_type, i.width, i.height) for i in user.images] == [("image/png", 400, 300)]
    note = shell.display_pub.outputs[0]["data"]["text/plain"]
    assert note == "Sent to the model: fig as a 400×300 PNG image."


def test_png_bytes_are_attached_and_other_bytes_are_text(shell: Any) -> None:
    import io

    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", (8, 6)).save(out, format="PNG")
    shell.user_ns["png"] = out.getvalue()
    shell.user_ns["blob"] = b"not an image"
    model = run(shell, "{png} and {blob}")
    assert model.requests[0].prompt == "[image 1: png, 8×6 PNG, attached] and b'not an image'"
