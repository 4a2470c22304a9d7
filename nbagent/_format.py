"""Turning tool return values into model text under a character budget."""

from __future__ import annotations

import json
from typing import Any


def cut_middle(text: str, limit: int) -> tuple[str, bool]:
    """Keep head and tail of ``text`` with a marker saying how much was cut."""
    if len(text) <= limit:
        return text, False
    keep = max(limit - 40, 20)
    head, tail = keep * 2 // 3, keep // 3
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut} characters cut …]\n{text[len(text) - tail:]}", True


def to_model_text(value: Any, limit: int) -> tuple[str, bool]:
    """The text the model sees for ``value``, at most about ``limit`` characters."""
    if value is None:
        return "null", False
    if isinstance(value, str):
        return cut_middle(value, limit)
    module = type(value).__module__
    if module.startswith("pandas"):
        return cut_middle(_pandas_text(value), limit)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return cut_middle(text, limit)


def _pandas_text(value: Any) -> str:
    import pandas as pd

    if isinstance(value, pd.Series):
        value = value.to_frame()
    if isinstance(value, pd.DataFrame):
        rows, cols = value.shape
        head = value.head(10)
        dtypes = ", ".join(f"{c}: {t}" for c, t in value.dtypes.items())
        return f"DataFrame shape=({rows}, {cols}); dtypes: {dtypes}\n{head.to_csv()}"
    return str(value)
