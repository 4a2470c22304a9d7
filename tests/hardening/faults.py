"""Running a hostile scenario in a real child process, with a hard deadline.

A scenario that hangs (the bug it guards against) must fail its test, not hang
the suite: the child is SIGKILLed at the deadline and the test fails saying so.
The child prints one JSON line last; :func:`run_child` returns it parsed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.support.env import child_environment

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = """
import asyncio, json, os, signal, socket, sys, threading, time
from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply
from tests.core.helpers import assert_history_valid

def first_call(*calls):
    # A model that calls them for the prompt "go", then answers with their results;
    # any other prompt is echoed.
    def script(request):
        if request.tool_results:
            return " | ".join(r.content for r in request.tool_results)
        if request.prompt != "go":
            return request.prompt
        return reply(calls=[call(name, **args) for name, args in calls])
    return script

def done(**facts):
    print(json.dumps(facts), flush=True)
    os._exit(0)  # abandoned daemon threads (stuck tools) must not hold the exit
"""


def run_child(code: str, home: Path, *, deadline: float = 60.0) -> dict[str, Any]:
    """Run ``PRELUDE + code`` in a fresh interpreter; its last printed line, as JSON."""
    env = child_environment(
        NBAGENT_HOME=str(home),
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    source = PRELUDE + textwrap.dedent(code)
    try:
        done = subprocess.run(
            [sys.executable, "-c", source],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=deadline,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:  # subprocess.run SIGKILLs the child
        raise AssertionError(
            f"the scenario hung: killed after {deadline:g} s\nstderr: {exc.stderr!r}"
        ) from None
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"rc={done.returncode}\n{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


FAMILIES: dict[str, tuple[str, ...]] = {
    # Issue 19: consent and secrets in the leaf modules. Each family's tests attack it
    # over real loopback HTTP, real kernels or real child processes.
    "inspection runs no user code": (
        "test_kernel_consent.py::test_inspection_reads_without_running_the_users_code",
        "test_inspect_reads.py::test_hostile_values_are_read_without_their_code",
        "test_inspect_reads.py::test_a_missing_key_of_a_defaultdict_adds_nothing",
        "../core/test_kernel_tools.py::test_inspect_runs_no_repr_or_len_of_a_user_class",
        "../core/test_kernel_tools.py::test_a_hanging_repr_does_not_hold_inspection",
    ),
    "the approval shows exactly what runs": (
        "test_kernel_consent.py::test_the_approval_shows_the_whole_code_visibly_and_names_its_hash",
        "test_kernel_consent.py::test_code_too_long_to_show_is_refused_without_asking",
        "test_kernel_consent.py::test_the_question_for_other_tools_is_whole_with_hidden_characters_marked",
        "test_approval_exact.py::test_a_call_changed_while_asked_is_denied",
        "test_approval_exact.py::test_the_bridge_refuses_arguments_too_long_to_show_without_asking",
        "../browser/test_kernel_approval.py::test_long_code_with_hidden_characters_is_shown_whole_and_visibly",
    ),
    "no key in a trace span": ("test_trace_redaction.py::test_no_key_fragment_reaches_a_span",),
    "files only their owner can read": (
        "test_private_files.py::test_history_raw_logs_and_recordings_are_0600_in_0700_folders",
        "test_private_files.py::test_an_existing_history_file_others_can_read_is_tightened",
    ),
    "image metadata": (
        "test_image_metadata.py::test_neither_the_request_nor_the_history_holds_image_metadata",
        "test_image_metadata.py::test_stripping_keeps_the_pixels_and_is_idempotent",
        "test_image_metadata.py::test_broken_bytes_come_back_unchanged",
        "test_image_metadata.py::test_an_old_history_image_with_metadata_is_stripped_when_read",
    ),
    "the inventory never stalls the loop": (
        "test_kernel_consent.py::test_a_slow_shape_cannot_stall_the_runs",
        "test_kernel_consent.py::test_inspection_reads_without_running_the_users_code",
    ),
    "run_python keeps the process's streams": (
        "test_run_python_streams.py::test_prints_after_and_beside_run_python_reach_the_process_streams",
    ),
    "unbounded thinking in panels": (
        "test_thinking_cap.py::test_a_huge_think_block_is_capped_in_the_panel_and_kept_whole",
    ),
    "license metadata": (
        "test_license_metadata.py::test_license_is_an_spdx_string_and_the_build_needs_a_setuptools_that_reads_it",
    ),
    # Issue 19, part B: quoted text, budgets that hold, compaction, refusals, seed edges.
    "quoted text runs a tool": (
        "test_quoted_calls.py::test_prose_that_shows_a_call_runs_nothing",
        "test_quoted_calls.py::test_a_tool_result_quoted_back_runs_nothing",
        "test_quoted_calls.py::test_the_prompt_quoted_back_runs_nothing",
        "test_quoted_calls.py::test_a_real_text_call_still_runs",
        "test_quoted_calls.py::test_the_per_agent_switch_turns_recognition_off",
        "test_quoted_calls.py::test_a_call_to_a_tool_not_offered_gets_an_error_result",
        "test_quoted_calls.py::test_the_forced_final_answer_never_shows_call_markup",
        "test_quoted_calls.py::test_hosted_openai_never_reads_calls_from_text",
    ),
    "a budget passed by one reply": (
        "test_budgets_hold.py::test_one_streamed_reply_cannot_pass_max_cost",
        "test_budgets_hold.py::test_a_run_at_the_cost_cap_ends_with_a_real_answer",
        "test_budgets_hold.py::test_no_usage_in_the_stream_is_estimated_and_enforced",
        "test_budgets_hold.py::test_a_stream_past_the_token_budget_is_cut",
    ),
    "compaction drops the current result": (
        "test_compaction_order.py::test_the_current_rounds_result_is_compacted_last",
    ),
    "tool refusals": (
        "test_tool_refusals.py::test_a_refusal_retries_without_tools_and_is_remembered",
        "test_tool_refusals.py::test_another_server_error_is_not_a_refusal",
    ),
    "seed edge cases": (
        "test_seed_edges.py::test_the_answer_after_think_starts_the_same_at_every_boundary",
        "test_seed_edges.py::test_strict_from_the_agents_env_mapping",
        "test_seed_edges.py::test_the_process_environment_is_not_read_when_env_is_given",
        "test_seed_edges.py::test_invalid_arguments_are_a_redacted_warning",
    ),
}
"""Fault families and the tests (paths relative to tests/hardening) that attack them."""
