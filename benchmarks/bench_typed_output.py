"""Typed output: validating a 1,000-record answer and turning it into a DataFrame.

Run: ``python benchmarks/bench_typed_output.py [--records 1000] [--repeat 20]``

The answer is the JSON text a model would send for ``output_type=list[Sale]`` (wrapped
as ``{"value": [...]}``, as nbagent asks for list types). Measured, best of ``--repeat``:

* ``validate``: ``OutputSpec.validate`` (json.loads, then pydantic's TypeAdapter);
* ``to_frame``: ``RunResult.to_frame()`` on the validated list;
* ``baseline``: ``pandas.DataFrame(json.loads(text)["value"])``, no validation at all.

Goal: validation plus DataFrame under 50 ms for 1,000 records.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from nbagent.messages import Usage  # noqa: E402
from nbagent.results import RunResult  # noqa: E402
from nbagent.run.output import OutputSpec  # noqa: E402


class Sale(BaseModel):
    region: str
    product: str
    units: int
    price: float
    day: date
    returned: bool = False


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    options = parser.parse_args()
    records = [
        {"region": f"r{i % 7}", "product": f"p{i % 31}", "units": i % 50, "price": 9.99 + i % 13,
         "day": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}", "returned": i % 17 == 0}
        for i in range(options.records)
    ]  # fmt: skip
    text = json.dumps({"value": records})
    spec = OutputSpec(list[Sale])
    value, error = spec.validate(text)
    assert error is None and len(value) == options.records

    def whole() -> pd.DataFrame:
        validated, _ = spec.validate(text)
        result = RunResult(validated, [], "complete", Usage(), "m", "c", output_type=list[Sale])
        return result.to_frame()

    result = RunResult(value, [], "complete", Usage(), "m", "c", output_type=list[Sale])
    frame = whole()
    assert frame.shape == (options.records, 6)
    validate = best(lambda: spec.validate(text), options.repeat)
    to_frame = best(result.to_frame, options.repeat)
    total = best(whole, options.repeat)
    baseline = best(lambda: pd.DataFrame(json.loads(text)["value"]), options.repeat)
    print(
        f"{options.records:,} records, {len(text) / 1e3:.0f} kB of JSON, best of {options.repeat}"
    )
    for name, ms in [("validate", validate), ("to_frame", to_frame), ("validate + frame", total),
                     ("baseline (no validation)", baseline)]:  # fmt: skip
        print(f"{name:<26}{ms:>8.2f} ms")
    print(f"validation's cost over the baseline: x{total / baseline:.1f}")
    print(f"goal (under 50 ms): {'met' if total < 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
