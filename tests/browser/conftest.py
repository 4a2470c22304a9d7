"""Real headless Chromium (Debian's /usr/bin/chromium) driven by Playwright.

No browser is ever downloaded: Playwright launches the system binary. Screenshots
go to ``$NBAGENT_ARTIFACTS`` (default ``tests/browser/artifacts``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("NBAGENT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    path = Path(os.environ.get("NBAGENT_ARTIFACTS", ROOT / "tests" / "browser" / "artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.fail(f"{CHROMIUM} not found: install it with `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


_CONTRAST_JS = """
(el) => {
  // Any CSS color (rgb(), color-mix(), color(srgb ...)) -> [r, g, b, alpha] by painting it.
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  const parse = (c) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = c;
    ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const over = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3]));
  const chain = [];
  for (let e = el; e; e = e.parentElement) chain.push(getComputedStyle(e).backgroundColor);
  let bg = [255, 255, 255];
  for (const c of chain.reverse()) bg = over(parse(c), bg);
  const fg = over(parse(getComputedStyle(el).color), bg);
  const lum = (rgb) => {
    const [r, g, b] = rgb.map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}
"""


@pytest.fixture(scope="session")
def contrast() -> Any:
    """``contrast(locator)``: WCAG contrast of the element's text over its painted background."""

    def measure(locator: Any) -> float:
        return float(locator.evaluate(_CONTRAST_JS))

    return measure


class PageWatch:
    """A page plus what it did behind our back: dialogs opened, page errors, requests."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda request: self.requests.append(request.url))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()


@pytest.fixture
def watched_page(browser: Any) -> Iterator[PageWatch]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield PageWatch(page)
    context.close()


# --- a real JupyterLab server ---------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Lab:
    """A running JupyterLab: its URL and the directory it serves."""

    def __init__(self, url: str, root: Path, log: Path) -> None:
        self.url = url
        self.root = root
        self.log = log

    def notebook_url(self, name: str) -> str:
        # ?reset: start from an empty workspace (no restored layout or dialogs).
        return f"{self.url}/lab/tree/{name}?reset"

    def api(self, method: str, path: str) -> Any:
        import httpx

        response = httpx.request(method, f"{self.url}{path}", timeout=10)
        response.raise_for_status()
        return response.json() if response.content else None


@pytest.fixture(scope="session")
def jupyterlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab on 127.0.0.1 (see :func:`running_jupyterlab`)."""
    try:
        with running_jupyterlab(tmp_path_factory.mktemp("jupyterlab")) as lab:
            yield lab
    except LabStartError as exc:
        pytest.fail(str(exc))


class LabStartError(RuntimeError):
    """JupyterLab exited or did not answer in time; the message holds its log."""


@contextmanager
def running_jupyterlab(base: Path, env_overrides: dict[str, str] | None = None) -> Iterator[Lab]:
    """JupyterLab on 127.0.0.1, no token, its notebook/settings/workspace dirs under ``base``.

    News and update checks are off (no network, no popup over the notebook); the
    kernel imports this checkout of nbagent through PYTHONPATH. Also used outside
    pytest, by ``notebooks/images/screenshots.py``.

    Args:
        base: an empty directory for the server's files.
        env_overrides: extra environment for the server and its kernels (a private
            HOME, NBAGENT_HOME...).

    Raises:
        LabStartError: the server exited or did not answer within 120 s.
    """
    import json
    import subprocess
    import sys
    import time

    import httpx

    root, settings, workspaces, config, runtime, data, ipython = (
        base / name
        for name in ("notebooks", "settings", "workspaces", "config", "runtime", "data", "ipython")
    )
    for path in (root, settings, workspaces, config / "labconfig", runtime, data, ipython):
        path.mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_RUNTIME_DIR=str(runtime),
        JUPYTER_DATA_DIR=str(data),  # notebook trust database, no user kernelspecs
        IPYTHONDIR=str(ipython),  # no user startup files in the kernel
        JUPYTER_PLATFORM_DIRS="1",
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    env.pop("NBAGENT_APPROVAL", None)
    env.update(env_overrides or {})
    port = _free_port()
    log = base / "jupyterlab.log"
    command = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={workspaces}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",  # never queries a package index
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    with log.open("wb") as log_file:
        server = subprocess.Popen(command, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    lab = Lab(f"http://127.0.0.1:{port}", root, log)
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                raise LabStartError(
                    f"jupyter lab exited with {server.returncode}:\n{log.read_text()}"
                )
            try:
                if httpx.get(f"{lab.url}/api/status", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise LabStartError(f"jupyter lab did not start in 120 s:\n{log.read_text()}")
            time.sleep(0.5)
        yield lab
    finally:
        # Kernels run in their own process groups: shut them down through the API.
        try:
            for kernel in lab.api("GET", "/api/kernels") or []:
                lab.api("DELETE", f"/api/kernels/{kernel['id']}")
        except Exception:
            pass
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
