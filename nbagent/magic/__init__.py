"""``%%agent`` and ``%agent``: run the agent from a notebook cell.

``%load_ext nbagent`` calls :func:`register`. This is the only module that
imports IPython at module level; the rest of the package stays usable in plain
Python. The magic is a thin shell over :class:`nbagent.Agent`: it keeps one
agent per shell (so consecutive cells continue one conversation), runs it with
the live-run driver (:class:`nbagent.live.LiveRun`: the loop runs in nbagent's
event-loop thread while the cell's thread draws the live display and asks
approval questions) through one of two sinks (a display updated in place, or
progress appended to stdout in terminal IPython), and leaves the
:class:`~nbagent.RunResult` in a user variable.

To make ``%%agent`` use an agent or provider object of your own (a
``ScriptedModel`` in tests, a provider with custom options)::

    nbagent.magic.use(my_agent)     # or: %agent model my_provider_variable
"""

from __future__ import annotations

import keyword
import shlex
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ..agent import Agent
from ..errors import ConfigError, NbAgentError, did_you_mean
from ..run.settings import FIELDS, RunSettings, SettingError
from ..store.export import conversation_rounds
from ..tools import REGISTRY, Tool
from .shared import (
    display_bundle,
    interpolate,
    interpolate_fields,
    unquote,
    usage_error,
    with_option_hint,
)

if TYPE_CHECKING:
    from ..live import LiveRun, Sink
    from ..results import RunResult

__all__ = [
    "AgentMagics",
    "current_agent",
    "interpolate",
    "interpolate_fields",
    "register",
    "supports_live_updates",
    "usage_error",
    "use",
]


def __getattr__(name: str) -> Any:
    # Still importable from here (CellRun is the driver's former name), but the live
    # driver itself is imported when a cell first runs: ``%load_ext`` stays cheap.
    if name in ("CellRun", "UPDATE_INTERVAL"):
        from .. import live

        return live.LiveRun if name == "CellRun" else live.UPDATE_INTERVAL
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(ipython: Any) -> AgentMagics:
    """Register ``%%agent`` / ``%agent`` on ``ipython`` (idempotent) and return the magics."""
    existing = ipython.magics_manager.registry.get("AgentMagics")
    if isinstance(existing, AgentMagics):
        return existing
    magics = AgentMagics(ipython)
    ipython.register_magics(magics)
    _load_mcp_config()
    return magics


def _load_mcp_config() -> None:
    """Start the servers of the ``mcpServers`` file ``NBAGENT_MCP_CONFIG`` names, if any."""
    import os

    path = os.environ.get("NBAGENT_MCP_CONFIG")
    if not path:
        return
    from ..mcp import load_config

    try:
        for name, tools in load_config(path).items():
            print(f"MCP server {name!r}: {len(tools)} tools")
    except NbAgentError as exc:  # a broken config must not break %load_ext
        print(f"NBAGENT_MCP_CONFIG: {exc}")


def _magics(shell: Any = None) -> AgentMagics:
    if shell is None:
        from IPython.core.getipython import get_ipython

        shell = get_ipython()
        if shell is None:
            raise ConfigError("nbagent.magic needs a running IPython shell or kernel.")
    return register(shell)


def use(agent: Agent | Any, *, shell: Any = None) -> Agent:
    """Make ``%%agent`` in this shell use ``agent``.

    ``agent`` may be an :class:`Agent` (used as is, with its own conversation), a
    provider object (``ScriptedModel(...)``, ``OpenAIProvider(...)``) or a model string;
    for the last two the current conversation is kept.
    """
    return _magics(shell).set_model(agent)


def current_agent(shell: Any = None) -> Agent:
    """The agent ``%%agent`` uses in this shell (created on first use)."""
    return _magics(shell).get_agent()


# --- prompt interpolation ----------------------------------------------------------


# --- the magics ------------------------------------------------------------------------


def _note_html(note: str) -> str:
    import html

    style = "font-size:0.85em;color:#666;margin:0 0 2px 0"
    return f'<div class="nbagent-sent-note" style="{style}">{html.escape(note)}</div>'


def supports_live_updates(shell: Any) -> bool:
    """False for terminal IPython, whose plain DisplayPublisher prints every update again."""
    from IPython.core.displaypub import DisplayPublisher

    return type(shell.display_pub) is not DisplayPublisher


def _print_tool(t: Tool, flags: str = "") -> None:
    """One line of ``%agent tools``: name, flags, first line of the description."""
    if t.requires_approval:
        flags += " [asks approval]"
    if getattr(t, "server", None):
        flags += f" [MCP server {t.server}]"  # type: ignore[attr-defined]
    summary = (t.description or "").strip().splitlines()[:1]
    print(f"{t.name}{flags}: {summary[0] if summary else ''}")


def _is_provider(value: Any) -> bool:
    return (
        callable(getattr(value, "stream", None))
        and hasattr(value, "name")
        and not isinstance(value, (str, Agent))
    )


_LINE_HELP = """%agent                 show the model, conversation and tools
%agent model [NAME]    show or set the model (a model string, or a variable holding an
                       Agent or a provider object); the conversation is kept
%agent tools           list the tools %%agent offers the model (and --kernel's)
%agent reset           start a new conversation
%agent usage           tokens used in this conversation
%agent history [--all] rounds of this conversation (or all stored conversations) as a DataFrame
%agent resume ID       continue a stored conversation
%agent batches         provider batch jobs (mode='batch'): state, counts, cost
%agent export PATH     save this conversation as .json or .md
%agent record PATH     record provider traffic to PATH (JSON Lines; %agent record off stops)
%agent mcp ...         MCP servers: add NAME -- COMMAND ARGS... | list | remove NAME | load PATH"""


@magics_class
class AgentMagics(Magics):
    """``%%agent`` (run a prompt) and ``%agent`` (model, tools, history...)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.agent: Agent | None = None
        self.last_run: LiveRun | None = None

    @property
    def user_namespace(self) -> dict[str, Any]:
        """The notebook's variables (the shell's user namespace)."""
        assert self.shell is not None
        return self.shell.user_ns

    # -- the agent ---------------------------------------------------------------------

    def get_agent(self, model: str | None = None) -> Agent:
        """The agent ``%%agent`` uses (created on first use), switched to ``model`` if given."""
        if model is not None:
            self.set_model(model)
        if self.agent is None:
            try:
                self.agent = Agent()
            except ConfigError as exc:
                raise usage_error(str(exc)) from None
        return self.agent

    def set_model(self, spec: Any) -> Agent:
        """Switch model, keeping the conversation (an Agent object is adopted whole)."""
        if isinstance(spec, str) and spec.isidentifier():
            value = self.user_namespace.get(spec)
            if isinstance(value, Agent) or _is_provider(value):
                spec = value  # else a model string such as "local" or "scripted"
        if isinstance(spec, Agent):
            self.agent = spec
            return spec
        if isinstance(spec, str):
            from ..providers import split_model

            try:
                split_model(spec)
            except ConfigError as exc:
                raise usage_error(str(exc)) from None
        elif not _is_provider(spec):
            raise usage_error(
                f"%agent model: expected a model string, an Agent or a provider, got "
                f"{type(spec).__name__}."
            )
        try:
            if self.agent is None:
                agent = Agent(spec)
                agent.provider  # noqa: B018 - build the adapter now: a missing key shows here
                self.agent = agent
            else:
                # Conversation, tools and settings stay; naming the current model (or
                # provider object) again keeps its adapter, e.g. a loaded embedded model.
                self.agent.use_model(spec)
        except ConfigError as exc:
            raise usage_error(str(exc)) from None  # and the current model stays
        return self.agent

    # -- %%agent -----------------------------------------------------------------------

    @magic_arguments("%agent")  # usage line reads "%%agent [-m MODEL] ..."
    @argument("-m", "--model", help="model string, or a variable holding an Agent / provider")
    @argument("--tools", help="comma-separated tool names (default: every @tool)")
    @argument("--max-rounds", type=int, help="tool rounds before a forced final answer")
    @argument("--timeout", type=float, help="seconds before the run is stopped")
    @argument("--new", action="store_true", help="start a new conversation")
    @argument("--system", help="system prompt (kept for the rest of the conversation)")
    @argument("--out", default="_agent", help="variable receiving the RunResult")
    @argument("--no-stream", action="store_true", help="ask the model for a non-streamed reply")
    @argument(
        "-k", "--kernel", action="store_true", help="kernel tools, and the variables as context"
    )
    @argument(
        "--output-type", help="a type in the notebook: the result's output is validated to it"
    )
    # -- %%agent --over (nbagent.batch): the prompt once per row of a DataFrame --------
    @argument("--over", help="a DataFrame in the notebook: run the prompt once per row")
    @argument("--into", default="_agent_map", help="variable receiving the --over result frame")
    @argument("--concurrency", type=int, default=8, help="--over: rows in flight at most")
    @argument("--max-cost", type=float, help="--over: USD cap; rows past it are not run")
    @cell_magic("agent")  # type: ignore[arg-type, unused-ignore]
    def agent_cell(self, line: str, cell: str) -> None:
        """Send the cell to the agent; tool rounds show live and the result lands in ``_agent``."""
        try:
            args = parse_argstring(self.agent_cell, line)
        except UsageError as exc:  # quotes the unknown option as typed
            raise usage_error(with_option_hint(str(exc), self.agent_cell.parser)) from None
        for name in ("model", "tools", "system", "out"):
            setattr(args, name, unquote(getattr(args, name)))
        if args.over is not None:
            from .over import agent_over

            return agent_over(self, args, cell)
        overrides = self._overrides(args)
        if not args.out.isidentifier() or keyword.iskeyword(args.out):
            raise usage_error(f"--out {args.out!r} is not a valid variable name.")
        fields = interpolate_fields(cell, self.user_namespace)
        prompt = fields.text.strip()
        if not prompt:
            raise usage_error("%%agent: write the prompt in the cell body.")
        agent = self.get_agent(args.model)
        if args.tools:
            overrides["tools"] = self._tools(args.tools)  # this cell only
        if args.new:
            agent.reset()
        if args.system is not None:
            agent.system = args.system
        try:
            agent.provider  # noqa: B018 - builds the adapter now so config errors are short
        except ConfigError as exc:
            raise usage_error(str(exc)) from None
        from ..live import CellDisplay, LiveRun, TerminalPrinter

        sink: Sink = (
            CellDisplay(display_bundle) if supports_live_updates(self.shell) else TerminalPrinter()
        )
        if fields.images:
            overrides["attachments"] = fields.images  # {fig}: the images go with the prompt
        note = fields.summary()
        if note is not None:  # the user sees what was sent in place of their values
            display_bundle({"text/plain": note, "text/html": _note_html(note)})
        run = LiveRun(agent, prompt, sink, overrides=overrides)
        self.last_run = run
        try:
            result = run.run()
        except ConfigError as exc:
            raise usage_error(str(exc)) from None
        except NbAgentError as exc:
            self._store(args.out, agent.last_result)
            raise usage_error(f"the run failed: {exc}") from None
        self._store(args.out, result if result is not None else agent.last_result)

    def _store(self, name: str, result: RunResult | None) -> None:
        if result is not None:
            self.user_namespace[name] = result

    def _overrides(self, args: Any) -> dict[str, Any]:
        """This cell's run options: each argument named after a run setting, checked by it."""
        overrides = {
            name: value
            for name in FIELDS
            if (value := getattr(args, name, None)) is not None and value != ""
        }
        if "output_type" in overrides:  # a type in the notebook, named in the option
            overrides["output_type"] = self._output_type(unquote(overrides["output_type"]) or "")
        if args.no_stream:
            overrides["stream"] = False
        try:
            RunSettings().replace(**overrides)  # the settings type checks the ranges
        except SettingError as exc:
            raise usage_error(f"--{exc.setting.replace('_', '-')} {exc.problem}.") from None
        if getattr(args, "kernel", False):
            overrides["kernel"] = True
        return overrides

    def _output_type(self, spec: str) -> Any:
        """``--output-type City`` or ``list[City]``: evaluated in the notebook's namespace."""
        try:
            return eval(
                spec, self.user_namespace
            )  # the user's own expression, on the cell's thread
        except Exception as exc:
            raise usage_error(f"--output-type {spec!r}: {type(exc).__name__}: {exc}") from None

    def _tools(self, spec: str) -> list[Tool]:
        """Tools named in ``--tools a,b``: from the @tool registry, else from the notebook."""
        found: list[Tool] = []
        for name in (n.strip() for n in spec.split(",")):
            if not name:
                continue
            if name in REGISTRY:
                found.append(REGISTRY[name])
                continue
            value = self.user_namespace.get(name)
            if isinstance(value, Tool):
                found.append(value)
            elif callable(value) and not isinstance(value, type):
                try:
                    found.append(Tool(value, name=name))
                except Exception as exc:  # a schema that cannot be built from the signature
                    raise usage_error(f"--tools: {name!r} cannot be a tool: {exc}") from None
            else:
                known = ", ".join(sorted(REGISTRY)) or "none"
                functions = [
                    n
                    for n, v in self.user_namespace.items()
                    if callable(v) and not n.startswith("_")
                ]
                hint = did_you_mean(name, [*REGISTRY, *functions])
                raise usage_error(
                    f"--tools: no tool or function named {name!r}.{hint} "
                    f"(registered tools: {known})"
                )
        if not found:
            raise usage_error("--tools: name at least one tool.")
        return found

    # -- %agent ------------------------------------------------------------------------

    @line_magic("agent")  # type: ignore[arg-type, unused-ignore]
    def agent_line(self, line: str) -> Any:
        """``%agent model|tools|reset|usage|history|resume|export|record`` (``%agent help``)."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise usage_error(f"%agent: {exc}") from None
        if not words:
            return self._show()
        command, rest = words[0], words[1:]
        handler = getattr(self, f"_cmd_{command}", None)
        if handler is None:
            commands = [n[len("_cmd_") :] for n in dir(self) if n.startswith("_cmd_")]
            hint = did_you_mean(command, commands) or f" Commands: {', '.join(commands)}."
            raise usage_error(f"%agent: unknown command {command!r}.{hint}")
        return handler(rest)

    # IPython 9's typed magic decorators make mypy infer Never for the decorated methods
    # (IPython 8 is untyped): hence the tolerated-if-unused ignores here and above.
    _agent_line_doc = "Settings and history of the notebook's agent.\n\n" + _LINE_HELP
    agent_line.__doc__ = _agent_line_doc  # type: ignore[assignment, unused-ignore]

    def _expect(self, command: str, rest: list[str], at_most: int) -> None:
        if len(rest) > at_most:
            raise usage_error(f"%agent {command}: too many arguments: {' '.join(rest)}")

    def _show(self) -> None:
        agent = self.get_agent()
        turns = sum(m.role == "user" for m in agent.conversation.messages)
        print(f"model: {_model_line(agent)}")
        print(f"conversation: {agent.conversation.id} ({turns} turns)")
        print(f"tools: {', '.join(sorted(agent.tools)) or '(none)'}")
        if agent.kernel:
            print("kernel tools: on for every run (kernel=True)")

    def _cmd_help(self, rest: list[str]) -> None:
        print(_LINE_HELP)

    def _cmd_model(self, rest: list[str]) -> None:
        self._expect("model", rest, 1)
        agent = self.set_model(rest[0]) if rest else self.get_agent()
        print(f"model: {_model_line(agent)}")

    def _cmd_tools(self, rest: list[str]) -> None:
        self._expect("tools", rest, 0)
        # No model needed just to list tools.
        tools = self.agent.tools if self.agent is not None else dict(REGISTRY)
        if not tools:
            print("No tools. Decorate a function with @nbagent.tool to offer it to the model.")
        for name in sorted(tools):
            _print_tool(tools[name])
        # The kernel tools a --kernel cell (or Agent(kernel=True)) adds to those above.
        from ..kernel import kernel_tools

        always = self.agent is not None and self.agent.kernel
        when = "on for every run: kernel=True" if always else "added by %%agent --kernel (-k)"
        print(f"Kernel tools ({when}):")
        for t in kernel_tools(self.shell):
            shadowed = " [not used: your tool of this name replaces it]" if t.name in tools else ""
            _print_tool(t, f" [kernel tool]{shadowed}")

    def _cmd_mcp(self, rest: list[str]) -> None:
        from ..mcp.commands import mcp_command

        try:
            print(mcp_command(rest))
        except ConfigError as exc:
            raise usage_error(str(exc)) from None

    def _cmd_reset(self, rest: list[str]) -> None:
        self._expect("reset", rest, 0)
        agent = self.get_agent()
        agent.reset()
        print(f"New conversation {agent.conversation.id}.")

    def _cmd_usage(self, rest: list[str]) -> None:
        self._expect("usage", rest, 0)
        from ..messages import Usage

        agent = self.get_agent()
        total, runs, rounds = Usage(), 0, 0
        for message in agent.conversation.messages:
            if message.role == "assistant":
                runs += 1
                rounds += len(message.rounds or [])
                total = total + (message.usage or Usage())
        from ..cost import format_cost

        print(
            f"{runs} runs, {rounds} tool rounds, {total.total_tokens:,} tokens "
            f"({total.input_tokens:,} input, {total.output_tokens:,} output), "
            f"cost {format_cost(total.cost)}"
        )

    def _cmd_history(self, rest: list[str]) -> Any:
        if rest == ["--all"]:
            from ..store import history

            store = self.agent.store if self.agent is not None else None
            return history(all=True, store=store)
        self._expect("history", rest, 0)
        agent = self.get_agent()
        rounds = conversation_rounds(agent.conversation)
        if rounds.empty:  # say so, rather than show a table of headers
            turns = sum(m.role == "user" for m in agent.conversation.messages)
            plural = "" if turns == 1 else "s"
            print(
                f"No tool calls in this conversation yet ({turns} turn{plural}). "
                "%agent history --all lists the stored conversations."
            )
            return None
        return rounds

    def _cmd_batches(self, rest: list[str]) -> None:
        self._expect("batches", rest, 0)
        from .batches import batches_text

        print(batches_text(self.get_agent().store))

    def _cmd_resume(self, rest: list[str]) -> None:
        if len(rest) != 1:
            raise usage_error("%agent resume ID: name one conversation id (or a unique prefix).")
        current = self.agent
        options: dict[str, Any] = {}
        if current is not None:
            options["store"] = current.store
        try:
            resumed = Agent.resume(rest[0], **options)
        except ConfigError as exc:
            raise usage_error(f"%agent resume: {exc}") from None
        if current is not None:  # keep this notebook's settings and tool choice
            resumed.settings = current.settings
            resumed.tools = current.tool_selection
        self.agent = resumed
        turns = sum(m.role == "user" for m in resumed.conversation.messages)
        print(
            f"Resumed conversation {resumed.conversation.id} ({turns} turns) "
            f"with model {resumed.model}."
        )

    def _cmd_export(self, rest: list[str]) -> None:
        if len(rest) != 1:
            raise usage_error("%agent export PATH: name one .json or .md file.")
        from pathlib import Path

        path = Path(rest[0]).expanduser()
        conversation = self.get_agent().conversation
        if path.suffix.lower() == ".json":
            text = conversation.to_json(indent=2)
        elif path.suffix.lower() in (".md", ".markdown"):
            text = conversation.to_markdown()
        else:
            raise usage_error("%agent export: the file name must end in .json or .md.")
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise usage_error(f"%agent export: {exc}") from None
        print(f"Saved conversation {conversation.id} to {path}.")

    def _cmd_record(self, rest: list[str]) -> None:
        if len(rest) != 1:
            raise usage_error("%agent record PATH: name one file (or 'off').")
        agent = self.get_agent()
        if rest[0] == "off":
            agent.stop_recording()
            print("Recording stopped.")
            return
        try:
            agent.start_recording(rest[0])
        except ConfigError as exc:
            raise usage_error(f"%agent record: {exc}") from None
        print(f"Recording provider traffic to {rest[0]}.")


def _model_line(agent: Agent) -> str:
    """``ollama:llama3.2 (found a local Ollama at 127.0.0.1:11434)``: the model, and why.

    A provider with more to say about how it runs the model (``model_note``: the
    embedded runtime's tool-call route) adds it after a `` · ``.
    """
    line = f"{agent.model} ({agent.model_reason})" if agent.model_reason else agent.model
    try:
        note = getattr(agent.provider, "model_note", None)
        return f"{line} · {note()}" if callable(note) else line
    except NbAgentError:  # no key yet, a file that does not load: the run says what is wrong
        return line
