"""The chat panel in a real JupyterLab and headless Chromium: streaming and reopening.

1. Streaming: a scripted model streams N tokens (4-character chunks, 1 ms apart)
   into a ChatWidget shown in JupyterLab. Reported: the page's redraws of the live
   turn per second (a MutationObserver in the page), the longest gap between
   animation frames while streaming (page responsiveness), and the kernel's CPU
   time per token on the run with the widget, against the same run without one
   (``agent.run`` on the same model): the difference is the widget's share.
2. Reopen: a history file with 300 turns; ``ChatWidget.resume()`` in a cell, timed
   from the call (kernel clock) to the 300th turn drawn in the page (page clock,
   the same machine's wall clock). Goal (issue 22): under 1 s.
3. Reopen with a branch: the last message of that conversation edited (a second
   branch of 300 turns, shown last), then reopened the same way: the branch
   arrows' lookups in the history tree are part of the time.

    python benchmarks/bench_chat.py [tokens]
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import nbformat

ROOT = Path(__file__).resolve().parents[1]
TURNS = 300

SETUP = r"""
import time, asyncio
from nbagent import Agent, ChatWidget
from nbagent.testing import ScriptedModel
TOKENS = __TOKENS__
def streamer():
    return ScriptedModel(["abcd" * TOKENS], chunk_size=4, delay=0.001)
chat = ChatWidget(Agent(streamer(), tools=[], store=None))
chat
"""

STREAM = r"""
async def timed(run):
    cpu = time.process_time(); wall = time.perf_counter()
    await run
    return time.process_time() - cpu, time.perf_counter() - wall
plain_cpu, plain_wall = await timed(Agent(streamer(), tools=[], store=None).run("go"))
chat_cpu, chat_wall = await timed(chat.submit("go"))
print(json.dumps({"plain_cpu": plain_cpu, "plain_wall": plain_wall,
                  "chat_cpu": chat_cpu, "chat_wall": chat_wall}))
"""

HISTORY = r"""
from nbagent import Agent
from nbagent.testing import ScriptedModel
agent = Agent(ScriptedModel(lambda r: "An answer with **bold** text and a list:\n\n- one\n- two"),
              tools=[], store="bench-chat.db")
for i in range(__TURNS__):
    agent.run_sync(f"question {i}")
print("ok")
"""

REOPEN = r"""
reopen_started = time.time()
again = ChatWidget.resume(store="bench-chat.db", model=ScriptedModel(), tools=[])
print(json.dumps({"kernel_started": reopen_started, "kernel_built": time.time()}))
again
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_lab(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), JUPYTER_PLATFORM_DIRS="1")
    for name in ("config", "runtime", "data", "ipython", "settings", "workspaces"):
        (root.parent / name).mkdir(exist_ok=True)
    env.update(
        JUPYTER_CONFIG_DIR=str(root.parent / "config"),
        JUPYTER_RUNTIME_DIR=str(root.parent / "runtime"),
        JUPYTER_DATA_DIR=str(root.parent / "data"),
        IPYTHONDIR=str(root.parent / "ipython"),
        HOME=str(root.parent),  # no user history, settings or startup files
    )
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", "--IdentityProvider.token=", "--ServerApp.password=",
        f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={root.parent / 'settings'}",
        f"--LabApp.workspaces_dir={root.parent / 'workspaces'}", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly", "--allow-root",
    ]  # fmt: skip
    log = (root.parent / "lab.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            if httpx.get(f"{url}/api/status", timeout=2).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(0.5)
    raise SystemExit("JupyterLab did not start")


def output_json(cell: object) -> dict[str, float]:
    text = cell.locator(".jp-OutputArea-output").first.inner_text()  # type: ignore[attr-defined]
    return json.loads(text.strip().splitlines()[-1])


def run_cell(page: object, index: int, source: str) -> object:
    """Type ``source`` into a new cell at ``index`` and run it."""
    cells = page.locator(".jp-Notebook .jp-Cell")  # type: ignore[attr-defined]
    cells.nth(index - 1).click()
    page.keyboard.press("Escape")  # type: ignore[attr-defined]
    page.keyboard.press("b")  # type: ignore[attr-defined]
    page.keyboard.press("Enter")  # type: ignore[attr-defined]
    page.keyboard.insert_text(source.strip())  # type: ignore[attr-defined]
    page.keyboard.press("Control+Enter")  # type: ignore[attr-defined]
    return cells.nth(index)


BRANCH = r"""
edited = ChatWidget.resume(store="bench-chat.db", model=ScriptedModel(["edited"]), tools=[])
await edited.edit(__LAST__, "the last question, edited")
print("branched")
"""


def time_reopen(page: object, cell: int, label: str) -> None:
    """Run REOPEN in cell ``cell`` and print the time until the 300th turn is drawn."""
    reopen = run_cell(page, cell, REOPEN)
    reopen.locator(".nbagent-turn").nth(TURNS - 1).wait_for(state="attached")  # type: ignore[attr-defined]
    drawn = page.evaluate("Date.now() / 1000")  # type: ignore[attr-defined]
    opened = output_json(reopen)
    in_kernel = opened["kernel_built"] - opened["kernel_started"]
    to_drawn = drawn - opened["kernel_started"]
    print(
        f"reopen {TURNS} turns{label}: ChatWidget.resume() {in_kernel:.3f} s in the kernel, "
        f"{to_drawn:.3f} s to the transcript drawn (goal < 1 s)"
    )


def main(tokens: int) -> None:
    from playwright.sync_api import sync_playwright

    base = Path(tempfile.mkdtemp(prefix="bench-chat-"))
    root = base / "notebooks"
    root.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import json\n" + SETUP.replace("__TOKENS__", str(tokens)).strip()
        )
    ]
    nbformat.write(nb, root / "bench.ipynb")
    server, url = start_lab(root)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(300_000)
            page.goto(f"{url}/lab/tree/bench.ipynb?reset")
            page.get_by_text("| Idle").first.wait_for(timeout=120_000)
            first = page.locator(".jp-Notebook .jp-Cell").first
            first.click()
            page.keyboard.press("Control+Enter")
            first.locator(".nbagent-chat textarea").wait_for()
            # Count redraws of the live turn and the longest frame gap while it streams.
            page.evaluate("""() => {
              const live = document.querySelector('.nbagent-chat-live');
              window.__redraws = 0; window.__maxGap = 0; window.__streaming = true;
              new MutationObserver(() => { window.__redraws += 1; })
                .observe(live, { childList: true });
              let last = performance.now();
              const frame = (now) => {
                window.__maxGap = Math.max(window.__maxGap, now - last); last = now;
                if (window.__streaming) requestAnimationFrame(frame);
              };
              requestAnimationFrame(frame);
            }""")
            kernel = output_json(run_cell(page, 1, STREAM))
            page.evaluate("() => { window.__streaming = false; }")
            redraws = page.evaluate("window.__redraws")
            max_gap = page.evaluate("window.__maxGap")
            per_token_us = (kernel["chat_cpu"] - kernel["plain_cpu"]) / tokens * 1e6
            print(f"streaming {tokens} tokens over {kernel['chat_wall']:.1f} s:")
            rate = redraws / kernel["chat_wall"]
            print(f"  page redraws of the live turn: {redraws} ({rate:.1f}/s)")
            print(f"  longest gap between animation frames: {max_gap:.0f} ms")
            print(
                f"  kernel CPU: {kernel['chat_cpu']:.2f} s with the widget, "
                f"{kernel['plain_cpu']:.2f} s without; widget share {per_token_us:.1f} µs/token "
                f"(ratio {kernel['chat_cpu'] / kernel['plain_cpu']:.2f})"
            )

            run_cell(page, 2, HISTORY.replace("__TURNS__", str(TURNS)))
            page.get_by_text("ok", exact=True).first.wait_for()
            time_reopen(page, 3, "")
            run_cell(page, 4, BRANCH.replace("__LAST__", str(TURNS - 1)))
            page.get_by_text("branched", exact=True).first.wait_for()
            time_reopen(page, 5, " with a branch")
            browser.close()
    finally:
        for kernel in httpx.get(f"{url}/api/kernels").json():
            httpx.delete(f"{url}/api/kernels/{kernel['id']}")
        server.terminate()
        server.wait(20)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
