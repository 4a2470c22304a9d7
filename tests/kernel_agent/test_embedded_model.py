"""``%%agent --kernel`` on the embedded model, in a real ipykernel (issue 20, item 1).

The 135M model is offered only the tools that need no code; its answers are the
tools' results, and it says in one line why it does not run code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support.kernel import Kernel

pytestmark = [pytest.mark.kernel, pytest.mark.local_model]

SALES = """
%load_ext nbagent
import json
import numpy as np
import pandas as pd
import nbagent

rng = np.random.default_rng(11)
sales = pd.DataFrame({
    "region": rng.choice(["north", "south", "east", "west"], 50),
    "month": np.arange(50) % 12 + 1,
    "units": rng.integers(1, 100, 50),
    "revenue": rng.uniform(10, 1000, 50).round(2),
})
agent = nbagent.Agent("local", store=None)
nbagent.magic.use(agent)
"""

LAST_RUN = """
result = agent.last_result
rounds = result.rounds
print(json.dumps({
    "calls": [[c.name, c.arguments] for r in rounds for c in r.calls],
    "results": [r.content for r in rounds for r in r.results],
    "text": str(result.output),
}))
"""


@pytest.fixture(autouse=True)
def _leave_the_shared_kernel_clean(shared_kernel: Kernel) -> Iterator[None]:
    yield
    # Other modules' tests share the kernel and rely on `sales` not existing there.
    shared_kernel.run(
        "for _n in ('sales', 'agent', 'rng', 'result', 'rounds'):\n    globals().pop(_n, None)"
    )


@pytest.mark.parametrize(
    "question",
    ["total revenue by region", "which month had the most units", "plot revenue by month"],
)
def test_sales_questions_are_answered_from_the_tool_result(
    shared_kernel: Kernel, question: str
) -> None:
    shared_kernel.run(SALES, timeout=120)
    reply, _ = shared_kernel.execute("%%agent --kernel\n" + question, timeout=300)
    assert reply["content"]["status"] == "ok"
    seen = json.loads(shared_kernel.run(LAST_RUN))
    # The question names sales' columns: the model inspects sales, and runs no code.
    assert seen["calls"] == [["inspect_variable", {"name": "sales"}]]
    (shown,) = seen["results"]
    assert "shape=(50, 4)" in shown
    # The answer is the result itself (every figure the tool gave, none invented) ...
    assert shown.strip() in seen["text"]
    assert "12 columns" not in seen["text"] and "df" not in seen["text"].split()
    # ... and one line says why no code runs and what to use instead.
    assert "does not write or run code" in seen["text"]
    assert "provider key" in seen["text"] and "local server" in seen["text"]


def test_a_question_about_no_variable_lists_them(shared_kernel: Kernel) -> None:
    shared_kernel.run(SALES, timeout=120)
    shared_kernel.execute("%%agent --kernel\nWhat do I have in my notebook?", timeout=300)
    seen = json.loads(shared_kernel.run(LAST_RUN))
    assert [name for name, _ in seen["calls"]] == ["list_variables"]
    assert "sales: DataFrame 50 rows × 4 columns" in seen["text"]
