"""What looking for a local model server costs an ``Agent()`` without a model.

Each case runs in a fresh interpreter (so the per-process cache is cold), with the
adapters and httpx's transport already imported, and times ``choose_model(None, env)``:

* nothing listening on any of the three addresses (the common case: no server);
* a loopback server answering ``/api/tags`` like Ollama (the others dead);
* the same call again in that process (the cached answer);
* the Ollama case without warming the imports first (the adapters' modules and
  httpcore's first import, which the first request pays anyway, land in ``Agent()``).

Each line also names the model chosen (a probe that missed its 50 ms shows ``local``).

The baseline is one plain ``httpx.Client().get`` of the same server's model list in
the same kind of process. Goal: the first probe stays under ~50 ms.

    python benchmarks/bench_discovery.py [repetitions]
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TAGS = json.dumps({"models": [{"name": "llama3.2:latest"}]}).encode()

TEMPLATE = """
import time, httpx
from nbagent.providers import choose_model, environment_variables
env = {env!r}
if {warm}:  # what the first Agent() or HTTP request pays anyway: adapters, httpcore
    environment_variables(), httpx.Client(verify=False)
_t = time.perf_counter()
{code}
print(time.perf_counter() - _t)
"""

CASES = {  # name: (warm imports first, code)
    "baseline: one httpx GET of the model list": (
        True,
        "httpx.Client(verify=False).get(env['OLLAMA_HOST'] + '/api/tags')",
    ),
    "probe, nothing listening": (
        True,
        "print(choose_model(None, {**env, 'OLLAMA_HOST': env['DEAD']}).model)",
    ),
    "probe, a local Ollama answering": (True, "print(choose_model(None, env).model)"),
    "the same, imports cold": (False, "print(choose_model(None, env).model)"),
    "second call (cached)": (
        True,
        "choose_model(None, env)\n_t = time.perf_counter()\nchoose_model(None, env)",
    ),
}


class Tags(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(TAGS)))
        self.end_headers()
        self.wfile.write(TAGS)

    def log_message(self, *args: object) -> None:
        pass


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def measure(warm: bool, code: str, env: dict[str, str]) -> tuple[float, str]:
    """(seconds, the model chosen) in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", TEMPLATE.format(env=env, warm=warm, code=code)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NBAGENT_DISCOVER": "50"},
    ).stdout
    lines = out.strip().splitlines()
    return float(lines[-1]), (lines[0] if len(lines) > 1 else "")


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    server = ThreadingHTTPServer(("127.0.0.1", 0), Tags)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    dead = dead_url()
    env = {
        "OLLAMA_HOST": f"http://127.0.0.1:{server.server_address[1]}",
        "NBAGENT_COMPATIBLE_SERVERS": f"{dead}/v1,{dead_url()}/v1",
        "DEAD": dead,
    }
    times: dict[str, list[float]] = {name: [] for name in CASES}
    chosen: dict[str, set[str]] = {name: set() for name in CASES}
    for _ in range(reps):
        for name, (warm, code) in CASES.items():  # alternate: drift hits all cases alike
            seconds, model = measure(warm, code, env)
            times[name].append(seconds)
            chosen[name].add(model)
    server.shutdown()
    base = statistics.median(times["baseline: one httpx GET of the model list"])
    print(f"first choose_model(None) per fresh process, median of {reps}")
    for name, values in times.items():
        median = statistics.median(values)
        models = ", ".join(sorted(m for m in chosen[name] if m))
        print(
            f"  {name:40s} {median * 1000:7.2f} ms {median / base:5.2f}x "
            f"max {max(values) * 1000:6.2f} ms  {models}"
        )


if __name__ == "__main__":
    main()
