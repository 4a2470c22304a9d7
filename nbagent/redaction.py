"""Secret redaction: one marker and one rule for every byte nbagent writes.

The history database, recordings and error texts all replace known secret values
(an agent's API key, the values of key-like environment variables) and text
shaped like an API key by :data:`REDACTED`. A leaf module: it imports nothing
from nbagent.
"""

from __future__ import annotations

import json
import os
import re
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"


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
        """``text`` with every known secret value replaced."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def text(self, text: str) -> str:
        """``text`` with known secrets and key-shaped text replaced."""
        return _KEY_PATTERNS.sub(REDACTED, self.exact(text))

    def json(self, value: Any) -> str | None:
        """``value`` as JSON with known secrets removed (None stays None)."""
        if value is None:
            return None
        return self.exact(json.dumps(value, ensure_ascii=False, default=str))


def scrub_optional(scrub: Callable[[str], str], text: str | None) -> str | None:
    """``scrub(text)``, keeping None as None."""
    return None if text is None else scrub(text)
