"""Mistakes at the magic show one line (IPython's UsageError), with a suggestion; nbagent's
own errors in a notebook are short: no frames from inside nbagent, no chained errors.

In a real ipykernel: what the notebook shows is the iopub stream (an ``error`` message is
the red traceback; IPython prints its own UsageError class as one stderr line instead).
"""

from __future__ import annotations

import pytest

from tests.support.kernel import Kernel, printed

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext nbagent
import nbagent
from nbagent.testing import ScriptedModel

@nbagent.tool
def get_weather(city: str) -> str:
    '''The weather in a city.'''
    return "11 °C, cloudy"

nbagent.magic.use(ScriptedModel(["hello"]))
"""


@pytest.fixture(scope="module")
def kernel(shared_kernel: Kernel) -> Kernel:
    shared_kernel.run(SETUP)
    return shared_kernel


def one_line_usage_error(kernel: Kernel, code: str) -> str:
    reply, messages = kernel.execute(code)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "UsageError"
    # no red traceback: IPython printed its one-line form
    assert [m for m in messages if m["msg_type"] == "error"] == []
    (line,) = printed(messages).splitlines()
    assert line.startswith("UsageError: ")
    return line


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "%%agent --kernal\nhi",
            "UsageError: unrecognized arguments: --kernal. Did you mean '--kernel'?",
        ),
        ("%agent modle", "UsageError: %agent: unknown command 'modle'. Did you mean 'model'?"),
        (
            "%%agent --tools get_wether\nhi",
            "UsageError: --tools: no tool or function named 'get_wether'. "
            "Did you mean 'get_weather'? (registered tools: get_weather)",
        ),
        ("%%agent --max-rounds x\nhi", "UsageError: argument --max-rounds: invalid int value: 'x'"),
    ],
)
def test_usage_errors_are_one_line_with_a_suggestion(
    kernel: Kernel, code: str, expected: str
) -> None:
    assert one_line_usage_error(kernel, code) == expected


def test_a_missing_key_is_one_line(kernel: Kernel) -> None:
    line = one_line_usage_error(kernel, "%%agent -m openai:gpt-4o-mini\nhi")
    assert "OpenAI needs an API key: set OPENAI_API_KEY" in line
    line = one_line_usage_error(kernel, "%agent model openai:gpt-4o-mini")
    assert "OPENAI_API_KEY" in line
    assert kernel.run("%%agent\nhi").count("hello") == 0  # the display, not print
    assert kernel.run("print(_agent.output)") == "hello\n"  # the current model stayed


def _traceback(kernel: Kernel, code: str) -> tuple[str, str]:
    """(ename, traceback text without ANSI colours) of a cell that fails."""
    import re

    reply, messages = kernel.execute(code)
    (error,) = [m["content"] for m in messages if m["msg_type"] == "error"]
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["traceback"]))
    return error["ename"], text


def test_a_tool_a_model_cannot_call_is_a_short_error(kernel: Kernel) -> None:
    ename, text = _traceback(
        kernel,
        "import pandas as pd\n@nbagent.tool\ndef f(df: pd.DataFrame, *cols, **opts):\n    pass",
    )
    assert ename == "TypeError"
    assert "parameter 'df' has type DataFrame, which a model cannot send as JSON" in text
    assert "pydantic" not in text.split("TypeError: tool 'f'")[0]  # no pydantic frame or chain
    assert "direct cause" not in text and "During handling" not in text
    assert "nbagent/tools/schema.py" not in text
    assert len(text.splitlines()) < 25, text


def test_a_run_that_cannot_start_is_a_short_error(kernel: Kernel) -> None:
    ename, text = _traceback(
        kernel, "nbagent.Agent('openai:gpt-4o-mini', store=None).run_sync('Hi')"
    )
    assert ename == "ConfigError"
    assert "OpenAI needs an API key" in text
    assert "_internal/sync.py" not in text and "run/loop.py" not in text
    assert "direct cause" not in text and "During handling" not in text
    assert len(text.splitlines()) < 25, text
