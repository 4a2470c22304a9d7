"""Typed answers of the embedded model, checked against the text they came from.

Schema-constrained decoding always gives valid JSON of the right shape, so
validation never fails, yet SmolLM2 wrote ``[Dollar, 2, 2.99]`` for "a dozen
pencils (0.35 apiece)" (issue 20). Where it is cheap, each value is looked up in
the request: a number must be one of its figures (or a rounding of one), a string
must be found in its text. A record with a value not found is *doubtful*: it is
kept, and listed in the result's ``provider_data`` and the footer.
"""

from __future__ import annotations

import json
from typing import Any

from ..base import ModelRequest
from .honesty import KnownFigures


def source_text(request: ModelRequest) -> str:
    """What a typed answer may draw on: the user's messages and the tool results."""
    texts = []
    for message in request.messages:
        if message.role == "user":
            texts.append(message.content)
        for tool_round in message.rounds or []:
            texts += [r.content for r in tool_round.results if r.ok]
    return "\n".join(texts)


def doubtful_records(answer: str, source: str) -> list[str]:
    """One line per record with a value the source does not contain (empty: all found).

    Args:
        answer: the typed answer's JSON text.
        source: the text it was drawn from (:func:`source_text`).
    """
    try:
        data = json.loads(answer)
    except ValueError:
        return []  # not JSON: validation reports it
    if isinstance(data, dict) and set(data) == {"value"}:
        data = data["value"]  # a wrapped non-object root (output.OutputSpec)
    if isinstance(data, dict) and len(data) == 1 and isinstance(next(iter(data.values())), list):
        data = next(iter(data.values()))  # {"items": [...]}: the records are the list
    records = data if isinstance(data, list) else [data]
    known = KnownFigures()
    known.add_text(source)
    lowered = source.lower()
    out = []
    for index, record in enumerate(records, start=1):
        missing = [v for v in _leaves(record) if not _found(v, known, lowered)]
        if missing:
            shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in missing)
            out.append(f"record {index}: {shown} not in the prompt")
    return out


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _found(value: Any, known: KnownFigures, source: str) -> bool:
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        text = str(int(value)) if float(value).is_integer() else repr(float(value))
        return known.given(text)
    if isinstance(value, str):
        text = value.strip().lower()
        return not text or text in source
    return True
