"""The rows of a batch and the prompt each one gets.

``rows`` is a pandas DataFrame, a list of dicts, or a list of strings (a string row
is ``{"text": ...}``). The prompt's ``{column}`` fields take the row's values
(``str.format`` rules: ``{price:.2f}``, ``{{`` for a literal brace); a field that
names no column is an error naming the columns, since a silently unfilled field
would send every row the same text.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["Rows", "fill_prompt", "prompt_fields", "read_rows"]

_FORMATTER = string.Formatter()


@dataclass
class Rows:
    """The input as records, with the index the output frame gets."""

    records: Sequence[Mapping[str, Any]]
    index: Any
    """The input's pandas index (a plain ``range`` for lists)."""
    columns: list[str]


def read_rows(rows: Any) -> Rows:
    """The records and index of ``rows`` (a DataFrame, a list of dicts or of strings)."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns") and hasattr(rows, "index"):
        columns = [str(c) for c in rows.columns]
        if len(set(columns)) != len(columns):
            raise ConfigError("rows has duplicate column names; rename them first")
        records = rows.to_dict("records")
        if any(not isinstance(c, str) for c in rows.columns):
            records = [{str(k): v for k, v in r.items()} for r in records]
        return Rows(records, rows.index, columns)
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
        raise ConfigError(
            f"rows must be a pandas DataFrame, a list of dicts or a list of strings, "
            f"not {type(rows).__name__}"
        )
    dicts: list[Mapping[str, Any]] = []
    for number, item in enumerate(rows):
        if isinstance(item, str):
            dicts.append({"text": item})
        elif isinstance(item, Mapping):
            dicts.append({str(k): v for k, v in item.items()})
        else:
            raise ConfigError(f"row {number} is a {type(item).__name__}: use dicts or strings")
    columns = list(dict.fromkeys(k for r in dicts for k in r))
    return Rows(dicts, range(len(dicts)), columns)


def prompt_fields(template: str) -> list[str]:
    """The column names ``template`` uses (``{body}``, ``{price:.2f}``, ``{row[x]}`` -> row)."""
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise ConfigError(
            f"the prompt is not a valid template ({exc}); write {{{{ for a brace"
        ) from None
    names = []
    for _literal, field, _spec, _conversion in parsed:
        if field is None:
            continue
        root = field.split(".", 1)[0].split("[", 1)[0]
        if not root or root.isdigit():
            raise ConfigError(
                f"the prompt has a positional field {{{field}}}: name a column instead"
            )
        names.append(root)
    return list(dict.fromkeys(names))


def check_fields(fields: Iterable[str], columns: Sequence[str]) -> None:
    """Raise ConfigError naming the fields that are no column of the rows."""
    missing = [f for f in fields if f not in columns]
    if missing:
        shown = ", ".join(columns[:20]) + (" …" if len(columns) > 20 else "")
        raise ConfigError(
            f"the prompt's field(s) {', '.join('{' + m + '}' for m in missing)} name no "
            f"column of rows (columns: {shown}); write {{{{ and }}}} for literal braces"
        )


def fill_prompt(template: str, record: Mapping[str, Any]) -> str:
    """``template`` with the row's values in its fields (a missing value shows as empty)."""
    try:
        return template.format_map(_Values(record))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise ConfigError(f"the prompt could not take this row's values: {exc}") from None


class _Values(dict[str, Any]):
    """A row as format values: NaN and None show as an empty string, not "nan"."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        super().__init__(record)

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if value is None or (isinstance(value, float) and value != value):
            return ""
        return value
