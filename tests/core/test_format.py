"""What the model sees for different return values (``to_model_text``)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd

from nbagent import Agent, tool
from nbagent._internal.values import cut_middle, to_model_text
from nbagent.testing import ScriptedModel, call, reply


def test_cut_middle_marker_counts_what_was_cut():
    text = "".join(chr(ord("a") + i % 26) for i in range(1000))
    out, cut = cut_middle(text, 100)
    head, marker, tail = out.split("\n")
    assert cut and len(out) <= 100
    assert text.startswith(head) and text.endswith(tail)
    assert marker == f"[… {1000 - len(head) - len(tail)} characters cut …]"
    assert cut_middle("short", 100) == ("short", False)


def test_big_frame_is_formatted_without_copying_it():
    frame = pd.DataFrame({"a": np.arange(1_000_000), "b": np.ones(1_000_000)})
    tracemalloc.start()
    text, partial = to_model_text(frame, 4000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert partial
    assert peak < 1_000_000  # the frame holds 16 MB
    assert text.startswith("DataFrame shape=(1000000, 2); dtypes: a: int64, b: float64\n")


def test_wide_rows_are_dropped_to_fit_and_a_named_index_is_kept():
    frame = pd.DataFrame({f"col{i}": ["x" * 30] * 50 for i in range(10)})
    frame.index = pd.Index([f"row{i}" for i in range(50)], name="key")
    text, partial = to_model_text(frame, 1200)
    assert partial and len(text) <= 1200
    lines = text.splitlines()
    shown = int(lines[1].split()[1])
    assert lines[1] == f"(first {shown} of 50 rows)" and 1 <= shown < 10
    assert lines[2].startswith("key,col0,col1")
    assert lines[3].startswith("row0,")


def test_series_numpy_bytes_and_containers():
    s = pd.Series([1.5, 2.5], name="price")
    assert to_model_text(s, 4000) == (
        "Series shape=(2, 1); dtypes: price: float64\nprice\n1.5\n2.5\n",
        False,
    )
    arr_text, _ = to_model_text(np.arange(10_000).reshape(100, 100), 4000)
    assert arr_text.startswith("array shape=(100, 100) dtype=int64\narray([[")
    assert "..." in arr_text and len(arr_text) < 4000
    assert to_model_text(b"\x00\xff", 100) == ("<2 bytes> 00 ff", False)
    big = {f"k{i}": i for i in range(1000)}
    dict_text, partial = to_model_text(big, 100_000)
    assert partial and '"k199": 199' in dict_text and '"k200"' not in dict_text
    assert '"…": "800 more keys"' in dict_text


def test_an_unprintable_result_does_not_break_the_run():
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def __str__(self) -> str:
            raise RuntimeError("no str")

    @tool
    def weird() -> object:
        """Returns something unprintable."""
        return Broken()

    def script(request):
        return reply(calls=[call("weird")]) if not request.tool_results else "fine"

    model = ScriptedModel(script)
    result = Agent(model, tools=[weird]).run_sync("go")
    seen = model.requests[1].tool_results[0]
    assert seen.ok and seen.content == "<Broken: unprintable (no str)>"
    assert result.output == "fine"
    assert isinstance(result.tool_results[0], Broken)


def test_long_text_cells_are_shortened_so_all_preview_rows_fit():
    docs = pd.DataFrame({"id": range(20), "text": [f"doc{i} " + "word " * 2000 for i in range(20)]})
    text, partial = to_model_text(docs, 4000)
    lines = text.splitlines()
    assert lines[1] == "(first 10 of 20 rows)"
    assert lines[3].startswith("0,doc0 word word") and lines[3].endswith("… [10005 chars]")
    assert len(lines) == 13 and len(text) <= 4000
    assert docs["text"].str.len().min() > 10_000  # the frame itself is untouched
