"""Journal keys: what decides a row's answer, hashed.

A batch's identity hashes what all its rows share: the prompt template, the model,
the system prompt, the tools' schemas and the output schema. A row's key hashes
that identity with the row's filled prompt, so changing a column the prompt does
not use keeps the row's answer, and two identical rows share one key (run once).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from ..messages import ToolSpec

__all__ = ["batch_identity", "row_key"]


def batch_identity(
    *,
    template: str,
    model: str,
    system: str | None,
    tools: Iterable[ToolSpec],
    output_schema: Any,
) -> str:
    """The hash every row of one batch shares (the journal's ``batch`` column)."""
    parts = {
        "template": template,
        "model": model,
        "system": system,
        "tools": sorted((t.to_dict() for t in tools), key=lambda spec: str(spec.get("name"))),
        "output": output_schema,
    }
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def row_key(identity: str, prompt: str) -> str:
    """The journal key of one row: the batch identity and the row's filled prompt."""
    digest = hashlib.sha256(identity.encode("ascii"))
    digest.update(prompt.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:40]
