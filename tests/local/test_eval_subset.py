"""A fast subset of the embedded model's tool eval (benchmarks/local_eval), real model.

Every fourth case of the development half: lookups, arithmetic, conversions,
DataFrame and kernel tools, optional arguments, other languages and prompts
that need no tool. The full eval, both halves, runs from benchmarks/.
"""

from __future__ import annotations

import pytest

from benchmarks.local_eval.cases import split
from benchmarks.local_eval.run import run_case, summary

pytestmark = pytest.mark.local_model

SUBSET = split("dev")[::4]


async def test_the_eval_subset_calls_the_right_tools_with_the_right_arguments(local):
    rows = [await run_case(local, case) for case in SUBSET]
    report = summary(rows)
    wrong = [(r["prompt"], r["got"], r["args"]) for r in rows if not r["right_tool"]]
    assert len(SUBSET) >= 15
    assert report["right_tool_pct"] >= 80, wrong
    assert report["right_args_pct"] >= 70, rows
    assert report["no_tool_prompts_with_a_call_pct"] <= 25, wrong
