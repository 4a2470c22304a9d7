"""The ``nbagent`` logger and ``NBAGENT_LOG``.

A leaf module. ``import nbagent`` calls :func:`configure_logging` once, so
``NBAGENT_LOG=debug`` (or info, warning...) shows the loop's log on stderr:
round start, calls started, each result with its outcome, round end, run end.

Every record of the ``nbagent`` loggers passes :class:`~nbagent._internal.redaction.RedactingFilter`
first: secrets redacted, control and bidi characters made visible, one line per
record (so a server-chosen tool name cannot forge or recolour a log line).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

from .redaction import RedactingFilter
from .safe_text import one_line

logger = logging.getLogger("nbagent")
_filter = RedactingFilter(one_line)
for _name in ("nbagent", "nbagent.providers"):
    if _filter not in logging.getLogger(_name).filters:
        logging.getLogger(_name).addFilter(_filter)


def configure_logging(env: Mapping[str, str] | None = None) -> None:
    """``NBAGENT_LOG=debug`` (or info, warning...) sends the ``nbagent`` logger to stderr."""
    level_name = (os.environ if env is None else env).get("NBAGENT_LOG", "").strip().upper()
    level = logging.getLevelName(level_name) if level_name else None
    if not isinstance(level, int):
        return
    if not any(getattr(h, "_nbagent", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s nbagent %(levelname)s %(message)s"))
        handler.addFilter(_filter)  # records of any child logger too
        handler._nbagent = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level)
