"""The network guard: a test reaching beyond this machine fails; loopback keeps working."""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.network import is_local_host

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter with the suite's conftest as its only plugin, so these
# attempts fail the inner tests and not this one. 192.0.2.1 is TEST-NET-1: reserved for
# documentation, routed nowhere; were the guard missing, the inner tests would time out
# with a different message.
INNER_TESTS = """
import asyncio
import os
import socket

import httpx
import pytest

REMOTE = ("192.0.2.1", 80)


def test_socket_connect():
    socket.create_connection(REMOTE, timeout=3)


def test_an_error_swallowed_by_the_code_still_fails_the_test():
    try:
        socket.create_connection(REMOTE, timeout=3)
    except OSError:
        pass


def test_name_lookup():
    try:
        socket.getaddrinfo("example.com", 443)
    except OSError:
        pass


def test_httpx():
    with httpx.Client(timeout=3) as client:
        client.get("http://192.0.2.1/v1/models")


def test_asyncio():
    async def go():
        await asyncio.wait_for(asyncio.open_connection("192.0.2.1", 443), 3)

    asyncio.run(go())


@pytest.fixture
def remote_socket():
    sock = socket.socket()
    try:
        sock.connect_ex(("192.0.2.1", 80))
    finally:
        sock.close()


def test_in_a_fixture(remote_socket):
    pass


def test_loopback_is_allowed():
    server = socket.create_server(("127.0.0.1", 0))
    with server, socket.create_connection(server.getsockname(), timeout=3):
        pass


def test_keys_are_gone():
    assert "OPENAI_API_KEY" not in os.environ and "NBAGENT_MODEL" not in os.environ
"""


def test_a_non_loopback_connection_fails_the_test(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")  # the inner run must not see it
    monkeypatch.setenv("NBAGENT_MODEL", "openai:gpt-4o")
    pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest_subprocess("-p", "tests.conftest", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=5, errors=1)
    result.stdout.fnmatch_lines_random(
        [
            "FAILED test_inner.py::test_socket_connect *",
            "FAILED test_inner.py::test_an_error_swallowed_by_the_code_still_fails_the_test*",
            "FAILED test_inner.py::test_name_lookup *",
            "FAILED test_inner.py::test_httpx *",
            "FAILED test_inner.py::test_asyncio *",
            "ERROR test_inner.py::test_in_a_fixture *",
            "the test's call reached for the network beyond this machine"
            " (connect to 192.0.2.1:80); use a loopback server*",
            "*call reached for the network beyond this machine (getaddrinfo of 'example.com')*",
            "*call reached for the network beyond this machine (connect to 192.0.2.1:443)*",
            "*setup reached for the network beyond this machine (connect_ex to 192.0.2.1:80)*",
        ]
    )
    assert "timed out" not in result.stdout.str()


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from loopback"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def loopback_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_loopback_http_works_under_the_guard(loopback_url: str) -> None:
    assert httpx.get(loopback_url, timeout=5).text == "hello from loopback"
    by_name = loopback_url.replace("127.0.0.1", "localhost")
    assert httpx.get(by_name, timeout=5).text == "hello from loopback"


async def test_loopback_works_from_asyncio_under_the_guard(loopback_url: str) -> None:
    async with httpx.AsyncClient(timeout=5) as client:
        assert (await client.get(loopback_url)).text == "hello from loopback"
    port = int(loopback_url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("localhost", port)
    writer.close()
    await writer.wait_closed()


def test_ipv6_loopback_and_unix_sockets_work_under_the_guard(tmp_path: Path) -> None:
    if socket.has_ipv6:
        try:
            server6 = socket.create_server(("::1", 0), family=socket.AF_INET6)
        except OSError:
            server6 = None  # no IPv6 loopback in this container
        if server6 is not None:
            with server6, socket.create_connection(server6.getsockname()[:2], timeout=5):
                pass
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(path)


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", True),
        ("localhost", True),
        ("LocalHost.", True),
        ("kernel.localhost", True),
        (b"127.0.0.1", True),
        ("192.0.2.1", False),
        ("10.0.0.1", False),
        ("2001:db8::1", False),
        ("example.com", False),
        ("localhost.example.com", False),
        (None, False),
    ],
)
def test_what_counts_as_this_machine(host: object, local: bool) -> None:
    assert is_local_host(host) is local
