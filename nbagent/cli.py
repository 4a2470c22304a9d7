"""The ``nbagent`` console command.

``nbagent demo`` runs the quickstart notebook headless on the embedded model
(see :mod:`nbagent.demo`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import NbAgentError


def build_parser() -> argparse.ArgumentParser:
    """The ``nbagent`` command line (``nbagent demo``, ``--version``)."""
    parser = argparse.ArgumentParser(prog="nbagent", description="Jupyter-first agent toolkit.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command")
    demo = commands.add_parser(
        "demo",
        help="run the quickstart notebook on the embedded model",
        description=(
            "Execute notebooks/01_quickstart.ipynb in a real kernel, write the executed "
            "notebook and an HTML export, and print the transcript."
        ),
    )
    demo.add_argument(
        "-o", "--out", default="nbagent-demo", help="output directory (default: ./nbagent-demo)"
    )
    demo.add_argument("--notebook", help="run this notebook instead of the quickstart")
    demo.add_argument("--model", default="local", help="model string (default: local)")
    demo.add_argument("--timeout", type=float, default=900, help="seconds allowed per cell")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``nbagent`` command; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from . import __version__

        print(__version__)  # also right when run from a checkout that was never installed
        return 0
    if args.command != "demo":
        parser.print_help()
        return 2
    from .demo import run_demo

    try:
        return run_demo(
            Path(args.out),
            notebook=Path(args.notebook) if args.notebook else None,
            model=args.model,
            timeout=args.timeout,
        )
    except NbAgentError as exc:
        print(f"nbagent demo: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nnbagent demo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
