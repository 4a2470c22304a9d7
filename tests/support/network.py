"""The guard that fails a test which reaches for the network beyond this machine.

The suite's conftest installs it for the whole session (:func:`install`); another
pytest run can load it with ``-p tests.support.network``. It wraps the points every
Python client goes through (``socket.socket.connect``, ``connect_ex`` and ``sendto``,
which ``socket.create_connection``, httpx and asyncio call; ``socket.getaddrinfo`` and
``gethostbyname``, which resolve names). A non-local address or name raises
:class:`NetworkBlocked` (an ``OSError``, so code made for being offline acts offline) and
is recorded; the test phase (setup, call or teardown) in which that happened then fails
naming the address, even when the code under test swallowed the error.

Local means 127.0.0.0/8, ::1, the unspecified address (0.0.0.0, ::), ``localhost`` and
names under ``.localhost``; unix sockets and other non-IP families are never checked,
and resolving this machine's own host name is allowed (jupyter_client does it). Processes a
test starts (kernels, Chromium, nested pytest runs) are separate interpreters: the
guard does not follow them, which is what lets a kernel's ZMQ sockets alone.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Generator
from typing import Any

import pytest

PLUGIN_NAME = "nbagent-network-guard"


class NetworkBlocked(OSError):
    """Raised instead of opening a connection (or a DNS lookup) beyond this machine."""


def is_local_host(host: object) -> bool:
    """Whether ``host`` (an IP address or a name) designates this machine."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.partition("%")[0])  # fe80::1%eth0
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def own_names() -> tuple[str, ...]:
    """This machine's own names: Jupyter resolves them (``NAME.local`` when NAME is loopback)."""
    name = socket.gethostname()
    return ("", name, name + ".local")


def _is_ip_literal(host: object) -> bool:
    try:
        ipaddress.ip_address(host.decode() if isinstance(host, bytes) else str(host))
    except ValueError:
        return False
    return True


class NetworkGuard:
    """A pytest plugin: blocks and records non-local connections, fails the phase."""

    def __init__(self) -> None:
        self.blocked: list[str] = []
        """Every blocked attempt so far, as ``"connect to 192.0.2.1:80"``."""
        self._lock = threading.Lock()
        self._restore: list[Callable[[], None]] = []

    # -- patching ---------------------------------------------------------------------

    def install(self) -> None:
        """Wrap the socket functions (idempotent until :meth:`uninstall`)."""
        if self._restore:
            return
        guard = self

        def address_check(method: Callable[..., Any], what: str) -> Callable[..., Any]:
            def checked(sock: socket.socket, *args: Any) -> Any:
                address = args[-1]  # connect(addr), sendto(data, addr), sendto(data, flags, addr)
                if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
                    host, port = address[0], address[1]
                    if not is_local_host(host):
                        guard._block(f"{what} to {host}:{port}")
                return method(sock, *args)

            return checked

        def name_check(function: Callable[..., Any], what: str) -> Callable[..., Any]:
            def checked(host: Any, *args: Any, **kwargs: Any) -> Any:
                if not (
                    host is None
                    or _is_ip_literal(host)
                    or is_local_host(host)
                    or host in own_names()
                ):
                    guard._block(f"{what} of {host!r}")
                return function(host, *args, **kwargs)

            return checked

        for name in ("connect", "connect_ex", "sendto"):
            self._wrap(socket.socket, name, address_check)
        for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
            self._wrap(socket, name, name_check)

    def uninstall(self) -> None:
        """Put the original socket functions back."""
        while self._restore:
            self._restore.pop()()

    def _wrap(
        self, owner: Any, name: str, checker: Callable[[Callable[..., Any], str], Any]
    ) -> None:
        had_own = name in vars(owner)  # socket.socket inherits connect from _socket.socket
        original = getattr(owner, name)
        setattr(owner, name, checker(original, name))

        def restore() -> None:
            if had_own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

        self._restore.append(restore)

    def _block(self, attempt: str) -> None:
        with self._lock:
            self.blocked.append(attempt)
        raise NetworkBlocked(f"tests may not use the network: blocked {attempt}")

    # -- pytest hooks -----------------------------------------------------------------

    def _watch(self, when: str) -> Generator[None, Any, Any]:
        seen = len(self.blocked)
        try:
            return (yield)
        finally:
            attempts = self.blocked[seen:]
            if attempts:
                listed = "; ".join(dict.fromkeys(attempts))
                pytest.fail(
                    f"the test's {when} reached for the network beyond this machine "
                    f"({listed}); use a loopback server (tests/support/servers.py) or a "
                    "ScriptedModel",
                    pytrace=False,
                )

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, Any, Any]:
        return (yield from self._watch("setup"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        return (yield from self._watch("call"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, Any, Any]:
        return (yield from self._watch("teardown"))


def install(config: pytest.Config) -> NetworkGuard:
    """Guard this pytest session: wrap the socket functions until the session ends."""
    existing = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if isinstance(existing, NetworkGuard):
        return existing
    guard = NetworkGuard()
    guard.install()
    config.add_cleanup(guard.uninstall)
    config.pluginmanager.register(guard, PLUGIN_NAME)
    return guard


def pytest_configure(config: pytest.Config) -> None:
    """Entry point for ``-p tests.support.network``."""
    install(config)
