"""``@tool``, the Tool class and the kernel-wide registry."""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import at_boundary, did_you_mean
from ..messages import ToolCall, ToolSpec
from .clash import settle

if TYPE_CHECKING:
    from typing_extensions import Unpack


class Tool:
    """A Python function the model may call. Calling the Tool calls the function.

    Sync and async functions, bound methods, ``functools.partial`` objects and
    callable objects all work. ``@tool`` on a method inside a class works too:
    ``obj.method`` is then a Tool bound to ``obj``.
    """

    origin: str | None = None
    """The tool source that made it ("MCP server 'files'", "the kernel tools"); None for
    your own functions (see :mod:`nbagent.tools.sources` for what that decides)."""

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
        retries: int = 0,
        retry_on: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError),
        retry_backoff: float = 0.5,
    ) -> None:
        # Imported here, not at module level: pydantic is heavy and ``import nbagent`` stays light.
        from .schema import function_schema

        if isinstance(fn, Tool):  # decorated twice, or a Tool re-wrapped with new options
            fn = fn.fn
        self.fn: Callable[..., Any] = fn
        self.name = name or _function_name(fn)
        try:
            schema = function_schema(fn, name=self.name)
        except TypeError as exc:  # the message names the parameter and the fix
            raise at_boundary(exc) from None
        if schema.undescribed:
            _warn_undescribed(self.name, schema.undescribed, documented=bool(schema.description))
        self.description = description or schema.description
        self.parameters = schema.parameters
        self._validator = schema.validator
        self.timeout = timeout
        self.requires_approval = requires_approval
        self.max_output_chars = max_output_chars
        self.sequential = sequential
        self.retries = max(0, retries)
        self.retry_on = tuple(retry_on)
        self.retry_backoff = retry_backoff
        self.is_async = _is_async(fn)
        self.is_async_generator = _is_async_generator(fn)
        if not isinstance(fn, functools.partial):
            functools.update_wrapper(self, fn)

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool: name, description and schema."""
        return ToolSpec(self.name, self.description, self.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself (a decorated function stays callable as before)."""
        return self.fn(*args, **kwargs)

    def __get__(self, instance: Any, owner: type | None = None) -> Tool:
        """``@tool`` on a method: ``obj.method`` is a Tool bound to ``obj``."""
        if instance is None or not inspect.isfunction(self.fn):
            return self
        bound = object.__new__(Tool)
        bound.__dict__.update(self.__dict__)
        bound.fn = self.fn.__get__(instance, owner)  # the schema already skips ``self``
        return bound

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def with_function(self, fn: Callable[..., Any], *, is_async: bool) -> Tool:
        """This tool (name, schema, options) calling ``fn`` instead (for per-call wrappers)."""
        other = object.__new__(type(self))  # a subclass (MCPTool) keeps its methods
        other.__dict__.update(self.__dict__)
        other.fn = fn
        other.is_async = is_async
        return other

    def validate(self, call: ToolCall) -> dict[str, Any]:
        """Checked keyword arguments for ``call``; raises ArgumentError saying what is wrong."""
        from .schema import validate_arguments

        return validate_arguments(self._validator, call.arguments, call.raw_arguments)


def _function_name(fn: Callable[..., Any]) -> str:
    if isinstance(fn, functools.partial):
        return _function_name(fn.func)
    return getattr(fn, "__name__", type(fn).__name__)


def _is_async(fn: Callable[..., Any]) -> bool:
    """True for async functions, also behind partials, bound methods and callable objects."""
    from .schema import unwrap

    return inspect.iscoroutinefunction(unwrap(fn))


def _is_async_generator(fn: Callable[..., Any]) -> bool:
    """True for ``async def`` functions that ``yield`` (progress lines, see ``middleware``)."""
    from .schema import unwrap

    return inspect.isasyncgenfunction(unwrap(fn))


class ToolRegistry(Mapping[str, Tool]):
    """Tools by name. The default registry collects every ``@tool`` in the kernel."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        """Add ``t`` (a tool of the same name is replaced: the newest definition wins).

        Raises:
            ConfigError: ``t`` would replace a tool of another origin (an MCP server's)
                against the rule of :mod:`nbagent.tools.sources`.
        """
        held = self._tools.get(t.name)
        if held is not None and held.origin is not None and held.origin != t.origin:
            settle(t.name, (held.origin, held), (t.origin, t))
        # Re-running a notebook cell redefines the function: the newest wins.
        self._tools[t.name] = t

    def remove(self, name: str) -> None:
        """Remove the tool called ``name`` if there is one."""
        self._tools.pop(name, None)

    def clear(self) -> None:
        """Remove every tool."""
        self._tools.clear()

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)


REGISTRY = ToolRegistry()


class ToolOptions(TypedDict, total=False):
    """The keywords of :class:`Tool` after the function, as ``@tool(...)`` passes them on."""

    name: str | None
    description: str | None
    timeout: float | None
    requires_approval: bool
    max_output_chars: int | None
    sequential: bool
    retries: int
    retry_on: tuple[type[BaseException], ...]
    retry_backoff: float


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    register: bool = True,
    **options: Unpack[ToolOptions],
) -> Any:
    """Turn a function into a :class:`Tool` and add it to the kernel-wide registry.

    Works bare (``@tool``) and with options (``@tool(timeout=5)``).

    Args:
        fn: the function (sync or async), method, partial or callable object.
        register: add the tool to the kernel-wide registry (``REGISTRY``).
        name: the name the model sees (default: the function's name).
        description: what the model is told the tool does (default: the docstring).
        timeout: seconds before a call becomes a "timed out" error result.
        requires_approval: ask a human (or the ``NBAGENT_APPROVAL`` policy) first.
        max_output_chars: per-call limit of the text the model sees.
        sequential: never run two calls of sequential tools at the same time.
        retries: attempts after the first when it raises one of ``retry_on`` (default
            none), after an exponential backoff with jitter starting at
            ``retry_backoff`` seconds; each retry is a progress line of the call.
        retry_on: the exceptions worth a retry (default ConnectionError, TimeoutError).
        retry_backoff: the first wait between attempts, in seconds.
    """
    unknown = sorted(options.keys() - ToolOptions.__optional_keys__)
    if unknown:  # raised here, at tool(), as for a misspelt parameter of any function
        hint = did_you_mean(unknown[0], sorted(ToolOptions.__optional_keys__))
        raise TypeError(f"tool() got an unexpected keyword argument {unknown[0]!r}.{hint}")

    def wrap(f: Callable[..., Any]) -> Tool:
        try:
            t = Tool(f, **options)
        except TypeError as exc:  # a parameter a model cannot send: one frame, one line
            raise at_boundary(exc) from None
        # Methods are registered only once bound (``obj.method``): unbound they lack ``self``.
        if register and not _looks_like_method(f):
            REGISTRY.add(t)
        return t

    __tracebackhide__ = True  # IPython shows the user's line and wrap's raise, not this
    return wrap(fn) if fn is not None else wrap


def _warn_undescribed(name: str, params: list[str], *, documented: bool) -> None:
    """Warn, at the user's line, that the model is told nothing about ``params``."""
    names = ", ".join(repr(p) for p in params)
    subject = f"parameter {names} has" if len(params) == 1 else f"parameters {names} have"
    where = "no description in the docstring" if documented else "no docstring"
    warnings.warn(
        f"tool {name!r}: {subject} no type hint and {where}, so the model sees only the "
        "name. Add type hints (city: str) and a docstring with an Args: section.",
        UserWarning,
        stacklevel=_first_frame_outside_nbagent(),
    )


def _first_frame_outside_nbagent() -> int:
    """The ``stacklevel`` that makes a warning point at the code that called nbagent."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = inspect.currentframe()
    level = 0
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
        level += 1
    return level


def _looks_like_method(f: Callable[..., Any]) -> bool:
    if not inspect.isfunction(f):
        return False
    params = list(inspect.signature(f).parameters)
    return bool(params) and params[0] in ("self", "cls") and "." in f.__qualname__
