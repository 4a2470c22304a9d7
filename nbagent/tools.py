"""@tool, the kernel-wide registry, argument validation, execution and result budgets."""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from .messages import ToolCall, ToolResult, ToolSpec

DEFAULT_TOOL_TIMEOUT = 60.0
PER_CALL_CHARS = 4_000
PER_ROUND_CHARS = 16_000


class Tool:
    """A Python function the model may call. Calling the Tool calls the function."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        requires_approval: bool = False,
        max_output_chars: int | None = None,
        sequential: bool = False,
    ) -> None:
        from ._schema import function_schema

        self.fn = fn
        self.name = name or _function_name(fn)
        schema = function_schema(fn)
        self.description = description or schema.description
        self.parameters = schema.parameters
        self._validator = schema.validator
        self.timeout = timeout
        self.requires_approval = requires_approval
        self.max_output_chars = max_output_chars
        self.sequential = sequential
        self.is_async = _is_async(fn)
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def validate(self, call: ToolCall) -> dict[str, Any]:
        """Checked keyword arguments for ``call``; raises ArgumentError saying what is wrong."""
        from ._schema import validate_arguments

        return validate_arguments(self._validator, call.arguments, call.raw_arguments)


def _function_name(fn: Callable[..., Any]) -> str:
    if isinstance(fn, functools.partial):
        return _function_name(fn.func)
    return getattr(fn, "__name__", type(fn).__name__)


def _is_async(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    )


class ToolRegistry(Mapping[str, Tool]):
    """Tools by name. The default registry collects every ``@tool`` in the kernel."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        # Re-running a notebook cell redefines the function: the newest wins.
        self._tools[t.name] = t

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    def clear(self) -> None:
        self._tools.clear()

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)


REGISTRY = ToolRegistry()


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    requires_approval: bool = False,
    max_output_chars: int | None = None,
    sequential: bool = False,
    register: bool = True,
) -> Any:
    """Turn a function into a :class:`Tool` and add it to the kernel-wide registry.

    Works bare (``@tool``) and with options (``@tool(timeout=5)``).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        t = Tool(
            f,
            name=name,
            description=description,
            timeout=timeout,
            requires_approval=requires_approval,
            max_output_chars=max_output_chars,
            sequential=sequential,
        )
        if register:
            REGISTRY.add(t)
        return t

    return wrap(fn) if fn is not None else wrap


def as_tools(tools: Iterable[Tool | Callable[..., Any]] | None) -> dict[str, Tool]:
    """Tools by name from a list (plain functions are wrapped), or the registry if None."""
    if tools is None:
        return dict(REGISTRY)
    out: dict[str, Tool] = {}
    for item in tools:
        t = item if isinstance(item, Tool) else Tool(item)
        out[t.name] = t
    return out


# --- execution -------------------------------------------------------------------

Approver = Callable[[ToolCall, Tool], "bool | tuple[bool, str] | Awaitable[bool | tuple[bool, str]]"]
"""Decides a ``requires_approval`` call: True/False, or (decision, who decided)."""


class _Outcome:
    __slots__ = ("value", "error", "tb", "approval")

    def __init__(self) -> None:
        self.value: Any = None
        self.error: str | None = None
        self.tb: str | None = None
        self.approval: str | None = None


async def execute_round(
    calls: list[ToolCall],
    tools: Mapping[str, Tool],
    *,
    approver: Approver | None = None,
    default_timeout: float = DEFAULT_TOOL_TIMEOUT,
    per_call_chars: int = PER_CALL_CHARS,
    per_round_chars: int = PER_ROUND_CHARS,
    on_result: Callable[[ToolResult], None] | None = None,
) -> list[ToolResult]:
    """Run one round's calls and return one result per call, in call order.

    Calls run concurrently (async tools as tasks, sync tools in daemon threads) except
    ``sequential`` tools, which run one after another. A call that exceeds its timeout
    becomes an error result; its thread is abandoned, never waited for.
    """
    from ._format import to_model_text

    results: list[ToolResult | None] = [None] * len(calls)
    budget = [per_round_chars]
    sequential_lock = asyncio.Lock()

    async def run_one(index: int, call: ToolCall) -> None:
        started = time.perf_counter()
        t = tools.get(call.name)
        outcome = _Outcome()
        if t is None:
            available = ", ".join(sorted(tools)) or "(none)"
            outcome.error = f"Unknown tool {call.name!r}. Available tools: {available}."
        else:
            if t.sequential:
                async with sequential_lock:
                    await _invoke(t, call, outcome, approver, default_timeout)
            else:
                await _invoke(t, call, outcome, approver, default_timeout)
        duration = time.perf_counter() - started
        if outcome.error is None:
            limit = min(t.max_output_chars or per_call_chars, max(budget[0], 200)) if t else 0
            content, truncated = to_model_text(outcome.value, limit)
            budget[0] -= len(content)
            result = ToolResult(
                call.id, call.name, True, content, None, duration, truncated,
                approval=outcome.approval, value=outcome.value,
            )
        else:
            result = ToolResult(
                call.id, call.name, False, f"Error: {outcome.error}", outcome.error, duration,
                traceback=outcome.tb, approval=outcome.approval,
            )
        results[index] = result
        if on_result is not None:
            on_result(result)

    await asyncio.gather(*(run_one(i, c) for i, c in enumerate(calls)))
    return [r for r in results if r is not None]


async def _invoke(
    t: Tool,
    call: ToolCall,
    outcome: _Outcome,
    approver: Approver | None,
    default_timeout: float,
) -> None:
    from ._schema import ArgumentError

    try:
        arguments = t.validate(call)
    except ArgumentError as exc:
        outcome.error = f"Invalid arguments for {t.name}: {exc}"
        return
    if t.requires_approval:
        approved, who = await _ask(approver, call, t)
        outcome.approval = f"{'approved' if approved else 'denied'} by {who}"
        if not approved:
            outcome.error = f"The user denied this call to {t.name} ({outcome.approval})."
            return
    timeout = t.timeout if t.timeout is not None else default_timeout
    try:
        if t.is_async:
            outcome.value = await asyncio.wait_for(t.fn(**arguments), timeout)
        else:
            outcome.value = await asyncio.wait_for(_in_thread(t.fn, arguments), timeout)
    except asyncio.TimeoutError:
        outcome.error = f"{t.name} timed out after {timeout:g} s"
    except Exception as exc:  # a failing tool never kills the run
        outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.tb = traceback.format_exc()


async def _ask(approver: Approver | None, call: ToolCall, t: Tool) -> tuple[bool, str]:
    if approver is None:
        from ._approval import policy_approver

        approver = policy_approver()
    decision = approver(call, t)
    if inspect.isawaitable(decision):
        decision = await decision
    if isinstance(decision, tuple):
        return bool(decision[0]), str(decision[1])
    return bool(decision), "approver"


def _in_thread(fn: Callable[..., Any], arguments: dict[str, Any]) -> asyncio.Future[Any]:
    """Run ``fn`` in a daemon thread; a hung tool cannot block the loop or interpreter exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, payload: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(payload)
        else:
            future.set_exception(payload)

    def target() -> None:
        try:
            value = fn(**arguments)
            ok = True
        except BaseException as exc:
            value, ok = exc, False
        try:
            loop.call_soon_threadsafe(deliver, ok, value)
        except RuntimeError:  # the loop closed while the tool ran (run timed out long ago)
            pass

    threading.Thread(target=target, name=f"nbagent-tool-{_function_name(fn)}", daemon=True).start()
    return future
