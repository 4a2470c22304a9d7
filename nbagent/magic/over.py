"""``%%agent --over df``: the cell's prompt once per row of a DataFrame (nbagent.batch)."""

from __future__ import annotations

import keyword
from typing import Any

from ..errors import ConfigError
from .shared import display_bundle, interpolate_fields, unquote, usage_error

__all__ = ["agent_over"]


def agent_over(magics: Any, args: Any, cell: str) -> None:
    """Run the cell's prompt over ``--over``'s rows; the frame lands in ``--into``.

    ``magics`` is the notebook's :class:`~nbagent.magic.AgentMagics` (its agent, options
    and namespace); typed loosely so this module does not import its package back.
    """
    namespace = magics.user_namespace
    from ..batch.cell import protect_columns, run_over

    frame, into = namespace.get(unquote(args.over) or ""), unquote(args.into) or ""
    if frame is None or not hasattr(frame, "columns"):
        raise usage_error(f"--over {args.over!r}: no DataFrame of that name in the notebook.")
    if not into.isidentifier() or keyword.iskeyword(into):
        raise usage_error(f"--into {into!r} is not a valid variable name.")
    if args.tools or args.new or args.kernel:
        raise usage_error("--over runs each row on its own: no --tools, --new or --kernel.")
    options: dict[str, Any] = {**magics._overrides(args), "max_cost": args.max_cost}
    options["concurrency"] = args.concurrency
    if args.output_type:
        options["output_type"] = magics._output_type(unquote(args.output_type) or "")
    prompt = interpolate_fields(protect_columns(cell, frame.columns), namespace).text.strip()
    agent = magics.get_agent(args.model)
    agent.system = agent.system if args.system is None else args.system
    try:  # the frame lands in the notebook's namespace, then the summary shows
        into_ns = (namespace, into)
        run_over(agent.map, frame, prompt, into=into_ns, show=display_bundle, **options)
    except ConfigError as exc:
        raise usage_error(str(exc)) from None
