"""The runtime: no reachable listener, threads from cores and load, progress, a CPU hog."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import httpx
import pytest

from nbagent.providers.local import choose_threads

LOCAL_ROUND = """
import sys, time
from nbagent import Agent, tool

@tool
def get_weather(city: str) -> str:
    '''Get the current weather for a city.

    Args:
        city: the city name, e.g. Berlin
    '''
    return city + ": 18 C, light rain"

started = time.perf_counter()
result = Agent("local", tools=[get_weather]).run_sync("What's the weather in Oslo?")
print("CALLS", [c.name for r in result.rounds for c in r.calls])
print("ARGS", [c.arguments for r in result.rounds for c in r.calls])
print("SECONDS", round(time.perf_counter() - started, 2))
"""


def test_threads_follow_the_usable_cores_and_the_load():
    assert choose_threads(1, 0.0) == 1
    assert choose_threads(2, 0.1) == 1  # two idle cores: lockstep threads gain nothing
    assert choose_threads(2, 5.0) == 1  # a busy machine: one thread, never contending
    assert choose_threads(4, 0.5) == 3
    assert choose_threads(16, 1.0) == 4
    assert choose_threads(8, 7.5) == 1


def _listening_tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                inodes.add(fields[9])
    return inodes


def _own_socket_inodes() -> set[str]:
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


@pytest.mark.local_model
@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's socket tables")
def test_no_tcp_listener_and_the_private_socket_refuses_requests_without_the_key(local):
    loaded = local.load()
    assert not (_listening_tcp_inodes() & _own_socket_inodes())  # nothing on any TCP port
    mode = os.stat(loaded.socket_dir).st_mode
    assert stat.S_IMODE(mode) == 0o700  # other local users cannot reach the socket
    socket_path = os.path.join(loaded.socket_dir, "llama.sock")
    transport = httpx.HTTPTransport(uds=socket_path)
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    with httpx.Client(transport=transport, timeout=60) as client:
        refused = client.post("http://local/v1/chat/completions", json=body)
        assert refused.status_code == 401
        wrong = client.post(
            "http://local/v1/chat/completions",
            json=body,
            headers={"Authorization": "Bearer guess", "Origin": "http://evil.example"},
        )
        assert wrong.status_code == 401
        assert wrong.headers.get("access-control-allow-origin", "") == ""  # no origin allowed


FIRST_LOAD = """
import asyncio
from nbagent import Agent
from nbagent.events import Status
from nbagent.providers.local.runtime import _MODELS

async def first_status(question):
    return [e.text async for e in Agent("local").stream(question) if isinstance(e, Status)][0]

for question in ("Say hi.", "Say bye."):
    print("STATUS", asyncio.run(first_status(question)))
print("MODELS", len(_MODELS))
"""


@pytest.mark.local_model
def test_first_load_shows_in_the_status_line_and_one_model_is_shared(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", FIRST_LOAD], capture_output=True, text=True, timeout=600,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    statuses = [line for line in out.stdout.splitlines() if line.startswith("STATUS")]
    assert statuses == [
        "STATUS Loading the embedded model (first use in this process)…",
        "STATUS Analyzing request…",
    ]
    assert "MODELS 1" in out.stdout


@pytest.mark.local_model
@pytest.mark.timeout(900)
def test_one_question_finishes_under_a_cpu_hog(tmp_path):
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(3)  # let the load average notice
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", LOCAL_ROUND], capture_output=True, text=True, timeout=600,
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.getcwd()},
        )  # fmt: skip
        elapsed = time.perf_counter() - started
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert out.returncode == 0, out.stderr
    assert "CALLS ['get_weather']" in out.stdout
    assert "ARGS [{'city': 'Oslo'}]" in out.stdout
    # Generous: loading plus one question with one thread took 2-10 s on a busy
    # 2-core machine; the old two spinning threads took up to 90 s per question.
    assert elapsed < 240, out.stdout
