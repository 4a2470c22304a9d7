"""What is written to the history file: secrets redacted, live values previewed."""

from __future__ import annotations

import json
import os
import re
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
PREVIEW_CHARS = 4000
"""Upper bound of the JSON preview stored for one returned value."""


# Shapes of common API keys and bearer tokens. Only applied to free text (prompts,
# answers, tool output), never to opaque provider data such as signatures.
_KEY_PATTERNS = re.compile(
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"
    r"|\bAIza[0-9A-Za-z_\-]{30,}"
    r"|\b(?:ghp|gho|ghu|ghs|github_pat|xox[abp]|hf)_[A-Za-z0-9_]{16,}"
    r"|(?i:\bbearer\s+)[A-Za-z0-9._\-]{16,}"
)
_SECRET_NAMES = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)


def collect_secrets(
    options: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> list[str]:
    """Secret values an agent knows: its ``api_key`` option and key-like environment variables.

    Both ``env`` and the process environment are searched: redacting more is harmless.
    """
    env = os.environ if env is None else ChainMap(dict(env), dict(os.environ))
    found = [str(v) for k, v in (options or {}).items() if "key" in k.lower() and v]
    found += [v for k, v in env.items() if _SECRET_NAMES.search(k) and v]
    # Short values ("1", "true") would redact ordinary text; real keys are long.
    return sorted({s for s in found if len(s) >= 8}, key=len, reverse=True)


class Scrubber:
    """Replaces known secret values (and key-shaped text) by ``[redacted]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= 8}, key=len, reverse=True)

    def exact(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def text(self, text: str) -> str:
        return _KEY_PATTERNS.sub(REDACTED, self.exact(text))

    def json(self, value: Any) -> str | None:
        """``value`` as JSON with known secrets removed (None stays None)."""
        if value is None:
            return None
        return self.exact(json.dumps(value, ensure_ascii=False, default=str))


def scrub_optional(scrub: Callable[[str], str], text: str | None) -> str | None:
    return None if text is None else scrub(text)


# -- previews of returned values ----------------------------------------------------------


def preview_value(value: Any, limit: int = PREVIEW_CHARS) -> tuple[str | None, str | None]:
    """A bounded JSON preview of a tool's live return value, and its type name.

    DataFrames keep shape, dtypes and their first rows; text and containers are cut
    to ``limit`` characters. Never raises: an object that cannot be previewed gets
    its type only.
    """
    if value is None:
        return None, None
    kind = type(value)
    type_name = kind.__qualname__
    if kind.__module__ != "builtins":
        type_name = f"{kind.__module__}.{type_name}"
    try:
        data = _preview_data(value, limit)
        text = json.dumps(data, ensure_ascii=False, default=str)
    except Exception as error:  # a user object's repr or export failed
        text = json.dumps({"error": f"no preview: {type(error).__name__}"})
    if len(text) > limit:
        text = json.dumps({"truncated": text[: limit - 40]}, ensure_ascii=False)[: limit + 40]
    return type_name, text


def _preview_data(value: Any, limit: int) -> Any:
    module = type(value).__module__.split(".")[0]
    if module == "pandas" and hasattr(value, "head") and hasattr(value, "shape"):
        head = value.head(5)
        frame = head.to_frame() if getattr(head, "ndim", 2) == 1 else head
        return {
            "shape": list(value.shape),
            "columns": [str(c) for c in frame.columns],
            "dtypes": [str(t) for t in frame.dtypes],
            "head": json.loads(
                frame.to_json(orient="values", date_format="iso", default_handler=str)
            ),
        }
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, (list, tuple, dict, set)):
        text = json.dumps(
            list(value) if isinstance(value, (set, tuple)) else value,
            ensure_ascii=False,
            default=str,
        )
        return json.loads(text) if len(text) <= limit else {"text": text[:limit]}
    return {"repr": repr(value)[:limit]}
