"""Live rendering of ``%%agent``: display updates and rendering CPU, throttled vs naive.

A scripted model streams 10,000 tokens (one token = one 4-character chunk, 1 ms
apart, so the stream lasts about 10 s) spread over 5 tool rounds and a final
answer. The same run is shown twice in a real IPython shell:

- throttled: the magic's own driver and cell sink (``LiveRun`` + ``CellDisplay``,
  at most ~10 updates a second);
- naive: the same with the throttle off (one update per event), the baseline.

Reported: updates sent, the smallest gap between updates, and the CPU time
spent building and publishing updates (``thread_time`` in the cell's thread) as a
share of the stream's wall time. Goal (issue 4): <= 1 update per 100 ms and
rendering CPU under 5% of the stream.

    python benchmarks/bench_live_render.py [tokens]
"""

from __future__ import annotations

import sys
import time
from typing import Any

from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.interactiveshell import InteractiveShell

from nbagent import Agent, tool
from nbagent.live import CellDisplay, LiveRun
from nbagent.render import Transcript
from nbagent.testing import ScriptedModel, call, reply

ROUNDS = 5


class TimedDisplay(CellDisplay):
    """The cell sink, recording the CPU time and moment of each display update."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.render_cpu = 0.0
        self.sent: list[float] = []

    def update(self, transcript: Transcript) -> None:
        before_cpu = time.thread_time()
        super().update(transcript)
        self.render_cpu += time.thread_time() - before_cpu
        self.sent.append(time.monotonic())


def make_agent(tokens: int) -> Agent:
    per_request = tokens // (ROUNDS + 1)
    text = "tok " * per_request  # 4 characters = one chunk = one "token"

    @tool(register=False)
    def lookup(n: int) -> dict[str, Any]:
        """Look something up."""
        return {"n": n, "rows": [{"i": i, "v": i * i} for i in range(20)]}

    def script(request: Any) -> Any:
        if request.round_index < ROUNDS:
            return reply(text, [call("lookup", n=request.round_index)])
        return reply(text)

    return Agent(ScriptedModel(script, chunk_size=4, delay=0.001), tools=[lookup], store=None)


def measure(tokens: int, *, throttled: bool) -> dict[str, float]:
    shell = InteractiveShell.instance()
    shell.display_pub = CapturingDisplayPublisher()

    def display(bundle: dict[str, str]) -> Any:
        from IPython.display import display as show

        return show(bundle, raw=True, display_id=True)

    sink = TimedDisplay(display, interval=0.1 if throttled else 0.0)
    run = LiveRun(make_agent(tokens), "go", sink)
    started = time.monotonic()
    result = run.run()
    wall = time.monotonic() - started
    assert result is not None and result.stop_reason == "complete"
    assert len(result.rounds) == ROUNDS
    gaps = [b - a for a, b in zip(sink.sent[:-2], sink.sent[1:-1], strict=True)]  # final exempt
    return {
        "wall_s": wall,
        "updates": run.updates,
        "min_gap_ms": min(gaps) * 1000 if gaps else float("nan"),
        "render_cpu_s": sink.render_cpu,
        "render_share": sink.render_cpu / wall,
        "html_kb": len(shell.display_pub.outputs[-1]["data"]["text/html"]) / 1024,
    }


def main() -> None:
    tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    naive = measure(tokens, throttled=False)
    throttled = measure(tokens, throttled=True)
    print(f"{tokens:,}-token stream, {ROUNDS} tool rounds, real InteractiveShell display")
    for name, m in (("naive (update per event)", naive), ("throttled LiveRun", throttled)):
        print(
            f"  {name:26s} wall {m['wall_s']:5.1f} s  updates {m['updates']:6.0f}  "
            f"min gap {m['min_gap_ms']:6.1f} ms  render CPU {m['render_cpu_s']:6.3f} s "
            f"({m['render_share']:.1%} of wall)  final HTML {m['html_kb']:.0f} KB"
        )
    print(
        f"throttled/naive: updates {throttled['updates'] / naive['updates']:.3f}x, "
        f"render CPU {throttled['render_cpu_s'] / naive['render_cpu_s']:.3f}x"
    )
    rate_ok = throttled["min_gap_ms"] >= 100
    cpu_ok = throttled["render_share"] < 0.05
    print(
        f"<= 1 update per 100 ms: {'OK' if rate_ok else 'MISSED'}; "
        f"render CPU < 5% of stream: {'OK' if cpu_ok else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
