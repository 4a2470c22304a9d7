"""The frame ``Agent.map`` returns: the input's index and only new columns.

With ``output_type`` a model or dataclass, one column per field (nested values
stay objects); otherwise one column ``output``. Always ``error`` (None when the
row succeeded), ``cost`` (NaN when unknown), ``tokens``, ``rounds``, ``seconds``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from .executor import RowOutcome

__all__ = ["STAT_COLUMNS", "build_frame", "output_columns", "check_clashes"]

STAT_COLUMNS = ("error", "cost", "tokens", "rounds", "seconds")


def output_columns(output_type: Any) -> list[str] | None:
    """The field names of a model or dataclass output type; None for one ``output`` column."""
    fields = getattr(output_type, "model_fields", None)
    if isinstance(fields, dict) and isinstance(output_type, type):
        return list(fields)
    if dataclasses.is_dataclass(output_type) and isinstance(output_type, type):
        return [f.name for f in dataclasses.fields(output_type)]
    return None


def check_clashes(input_columns: Sequence[str], output_type: Any, prefix: str) -> None:
    """Raise ConfigError when a new column would have the name of an input column."""
    new = [prefix + c for c in (output_columns(output_type) or ["output"]) + list(STAT_COLUMNS)]
    clashes = [c for c in new if c in set(input_columns)]
    if clashes:
        raise ConfigError(
            f"the result would have column(s) {', '.join(map(repr, clashes))} that rows "
            f"already has, so df.join(out) would fail; pass prefix= (e.g. prefix='ai_') "
            "to name the new columns apart"
        )


def build_frame(
    outcomes: Sequence[RowOutcome | None],
    index: Any,
    output_type: Any,
    *,
    prefix: str = "",
    not_run: str = "not run",
) -> Any:
    """The output frame, one row per input row (None: the row never ran)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas ships with the notebook extra
        raise ConfigError("Agent.map returns a DataFrame: pip install pandas") from None
    fields = output_columns(output_type)
    names = fields if fields is not None else ["output"]
    data: dict[str, list[Any]] = {name: [] for name in [*names, *STAT_COLUMNS]}
    for outcome in outcomes:
        value = None if outcome is None else outcome.value
        if fields is None:
            data["output"].append(value)
        else:
            for name in fields:
                data[name].append(None if value is None else getattr(value, name, None))
        if outcome is None:
            data["error"].append(not_run)
            data["cost"].append(math.nan)
            data["tokens"].append(0)
            data["rounds"].append(0)
            data["seconds"].append(0.0)
            continue
        data["error"].append(outcome.error)
        data["cost"].append(math.nan if outcome.cost is None else float(outcome.cost))
        data["tokens"].append(outcome.tokens)
        data["rounds"].append(outcome.rounds)
        data["seconds"].append(outcome.seconds)
    columns: dict[str, Any] = {prefix + k: v for k, v in data.items()}
    # object, so a successful row's error is None (not NaN, as a string dtype would make it)
    columns[prefix + "error"] = pd.Series(data["error"], dtype=object, index=index)
    columns[prefix + "cost"] = pd.Series(data["cost"], dtype=float, index=index)
    return pd.DataFrame(columns, index=index)
