"""MCP servers that misbehave: broken bytes, stubborn processes, causes only on stderr,
credentials on the command line. Real child processes: a raw JSON-RPC server
(tests/ecosystem/servers/raw_mcp.py) and the SDK's server API (demo_mcp.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nbagent import ConfigError
from nbagent._internal.threads import run_in_background
from nbagent.mcp import KERNEL_SERVERS, MCPError, MCPServer, add_server, servers_from_config
from nbagent.mcp.commands import mcp_command
from nbagent.testing import call, reply
from tests.ecosystem.test_mcp import DEMO, alive, wait_gone
from tests.support.agents import scripted_agent
from tests.support.registry import empty_registry


@pytest.fixture(autouse=True)
def no_other_tools():
    """Servers are added kernel-wide: other modules' @tool functions (a `fail`) stay out."""
    with empty_registry():
        yield


RAW = str(Path(__file__).parent / "servers" / "raw_mcp.py")
KEY = "sk-proj-" + "Q" * 8 + "hostile" + "7" * 20


def raw(*flags: str, **options) -> MCPServer:
    options.setdefault("timeout", 20)
    return MCPServer.stdio(sys.executable, [RAW, *flags], **options)


def call_now(server: MCPServer, name: str, **arguments):
    return run_in_background(lambda: server.call(name, arguments))


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    # Members may be zombies whose parent has not reaped them yet: not running.
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return False
    return True


# -- item 12: one invalid byte on stdout ----------------------------------------------


def test_an_invalid_utf8_byte_on_stdout_never_stalls_the_server():
    server = raw("--bad-utf8", timeout=10)
    try:
        for n in range(3):
            # Each answer follows a line holding byte 0xff and carries 0xfe in its own text.
            text = call_now(server, "echo", text=f"ECHO:{n}")
            assert text == f"ECHO:\ufffd{n}"
        assert server.starts == 1
    finally:
        server.close()


def test_a_call_ends_when_the_server_dies_even_without_a_timeout():
    server = MCPServer.stdio(sys.executable, [DEMO], timeout=None)
    try:
        with pytest.raises(MCPError, match="stopped during the call.*started again"):
            call_now(server, "crash")
        assert call_now(server, "add", a=1, b=2) == "3"
        assert server.starts == 2
    finally:
        server.close()


# -- item 13: process groups ----------------------------------------------------------


def stubborn_pids(server: MCPServer) -> tuple[int, int]:
    server_pid = int(call_now(server, "pid"))
    helper_pid = int(call_now(server, "helper_pid"))
    assert alive(server_pid) and alive(helper_pid)
    return server_pid, helper_pid


def test_close_ends_a_server_that_ignores_eof_and_sigterm_and_its_helper():
    server = raw("--stubborn")
    server_pid, helper_pid = stubborn_pids(server)
    pgid = os.getpgid(server_pid)
    assert pgid != os.getpgrp()  # its own process group, not the kernel's
    assert os.getpgid(helper_pid) == pgid
    server.close()
    assert wait_gone(server_pid) and wait_gone(helper_pid)
    assert group_gone(pgid)


def test_a_helper_left_behind_by_a_server_that_exits_is_ended_too():
    server = raw("--leave-helper")
    server_pid, helper_pid = stubborn_pids(server)
    server.close()  # the server exits on stdin EOF at once; its helper would stay
    assert wait_gone(server_pid) and wait_gone(helper_pid)


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_no_stubborn_process_survives_its_parent(how):
    # "exit" runs atexit (a kernel shut down); "kill" does not (a kernel restart past its
    # grace period, the OOM killer): the guard ends the group.
    code = textwrap.dedent(
        f"""
        import sys, time
        from nbagent.mcp import MCPServer
        from nbagent._internal.threads import run_in_background
        server = MCPServer.stdio(sys.executable, [{RAW!r}, "--stubborn"])
        print(run_in_background(lambda: server.call("pid", {{}})), flush=True)
        print(run_in_background(lambda: server.call("helper_pid", {{}})), flush=True)
        if {how!r} == "kill":
            time.sleep(60)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    try:
        server_pid = int(process.stdout.readline())
        helper_pid = int(process.stdout.readline())
        pgid = os.getpgid(server_pid)
        if how == "kill":
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        assert wait_gone(server_pid, 20), "the server outlived its parent"
        assert wait_gone(helper_pid, 20), "the server's helper outlived its parent"
        assert group_gone(pgid)
    finally:
        process.kill()
        process.wait()


# -- issue 20 item 9: the cause reaches the model; stderr never reaches the cell --------


def test_a_tools_cause_on_stderr_reaches_the_model_and_not_the_cells_stderr(capfd):
    server = raw()
    seen: list[str] = []

    def script(request):
        if not request.tool_results:
            return reply(calls=[call("fail", unit="miles")])
        seen.append(request.tool_results[0].content)
        return reply("retrying with mile")

    try:
        agent = scripted_agent(script, tools=[server], store=None)
        result = agent.run_sync("convert 10 km")
        failed = result.rounds[0].results[0]
        assert not failed.ok
        assert "Error executing tool fail" in failed.error
        assert "ValueError: unknown unit 'miles'; known: m, km, mile" in failed.error
        assert "unknown unit 'miles'" in seen[0]  # what the model was sent
    finally:
        server.close()
    captured = capfd.readouterr()
    assert "unknown unit" not in captured.err and "Traceback" not in captured.err


def test_stderr_goes_to_the_nbagent_log(caplog):
    server = raw()
    try:
        with caplog.at_level("INFO", logger="nbagent"), pytest.raises(MCPError):
            call_now(server, "fail", unit="parsec")
    finally:
        server.close()
    logged = [r.getMessage() for r in caplog.records]
    assert any("stderr: ValueError: unknown unit 'parsec'" in line for line in logged)


def test_a_server_that_cannot_start_says_why_in_the_error(tmp_path):
    # The cause is only on the server's stderr: it reaches the error.
    script = tmp_path / "needs_config.py"
    script.write_text("import sys\nsys.exit('needs_config: set DEMO_ROOT first')\n")
    server = MCPServer.stdio(sys.executable, [str(script)])
    with pytest.raises(MCPError, match="(?s)failed to start.*needs_config: set DEMO_ROOT first"):
        server.get_tools()

    missing = tmp_path / "missing_server.py"
    server = MCPServer.stdio(sys.executable, [str(missing)])
    with pytest.raises(MCPError, match=r"failed to start: .* cannot open .*missing_server\.py"):
        server.get_tools()

    nowhere = MCPServer.stdio("nbagent-no-such-command", [])
    with pytest.raises(MCPError, match="no executable 'nbagent-no-such-command' on the PATH"):
        nowhere.get_tools()


def test_agent_mcp_add_of_a_missing_script_names_the_cause(tmp_path):
    missing = str(tmp_path / "gone.py")
    # Refused before anything starts: the error names the missing file.
    with pytest.raises(ConfigError, match=r"no file '.*gone\.py'"):
        mcp_command(["add", "gone", "--", sys.executable, missing])
    assert "gone" not in KERNEL_SERVERS


# -- issue 19 item 6: credentials in listings and errors --------------------------------


def test_repr_and_mcp_list_redact_flag_values_and_key_shaped_arguments():
    server = raw("--token=hunter2-very-secret", "--api-key", "plain-secret-value", KEY, name="cred")
    try:
        add_server(server)
        for shown in (repr(server), mcp_command(["list"])):
            assert "hunter2" not in shown and "plain-secret-value" not in shown
            assert KEY not in shown and KEY[:16] not in shown
            assert "--token=[redacted]" in shown and "--api-key [redacted]" in shown
            assert "raw_mcp.py" in shown  # the rest stays readable
    finally:
        if "cred" in KERNEL_SERVERS:
            mcp_command(["remove", "cred"])


def test_url_query_parameters_and_passwords_named_like_secrets_are_redacted():
    url = "http://user:pa55word-xyz@127.0.0.1:9/mcp?api_key=abcdef123456&region=eu"
    url += "&access_token=t0k3n-zzz"
    headers = {"Authorization": "Bearer header-secret-1"}
    server = MCPServer.http(url, headers=headers, start_timeout=5)
    shown = repr(server)
    assert "pa55word" not in shown and "abcdef123456" not in shown and "t0k3n" not in shown
    assert "region=eu" in shown and "api_key=[redacted]" in shown
    with pytest.raises(MCPError) as caught:
        server.get_tools()  # nothing listens on port 9
    message = str(caught.value)
    for secret in ("pa55word-xyz", "abcdef123456", "t0k3n-zzz", "header-secret-1"):
        assert secret not in message


def test_the_initialize_error_and_stderr_lines_redact_the_command_lines_secrets():
    server = MCPServer.stdio(
        sys.executable, [DEMO, "--silent-start", "--token", "tok-1234567890abc", KEY],
        start_timeout=1.5,
    )  # fmt: skip
    with pytest.raises(MCPError, match="did not answer initialize") as caught:
        server.get_tools()
    assert "tok-1234567890abc" not in str(caught.value) and KEY not in str(caught.value)
    assert "--token [redacted]" in str(caught.value)

    echoing = raw("--secret-echo", "--password=opensesame-42")
    try:
        with pytest.raises(MCPError) as caught:
            call_now(echoing, "fail", unit="x")
        assert "opensesame-42" not in str(caught.value)
    finally:
        echoing.close()


# -- issue 19 item 14: mcpServers fields of the wrong type ------------------------------


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"command": "x", "env": "PATH=/evil"}, "'env' must be an object of strings"),
        ({"command": "x", "env": {"A": 1}}, "'env' must be an object of strings"),
        ({"command": "x", "args": "--flag"}, "'args' must be a list of strings"),
        ({"command": ["x"]}, "'command' must be a string"),
        ({"command": "x", "cwd": 3}, "'cwd' must be a string"),
        ({"url": "http://h/mcp", "headers": ["A: b"]}, "'headers' must be an object of strings"),
    ],
)
def test_mcp_servers_fields_of_the_wrong_type_are_config_errors(tmp_path, entry, field):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"evil": entry}}))
    with pytest.raises(ConfigError, match=f"server 'evil': {field}"):
        servers_from_config(path)
    with pytest.raises(ConfigError, match="env must map names to strings"):
        MCPServer.stdio("x", env="PATH=/evil")  # type: ignore[arg-type]


# -- the same in a real kernel: the cell shows the cause in the panel, never raw stderr ---


@pytest.mark.kernel
def test_in_a_kernel_the_panel_shows_the_cause_and_the_cell_no_stderr(shared_kernel, tmp_path):
    from tests.support.kernel import last_html, printed

    shared_kernel.run(
        "%load_ext nbagent\nimport nbagent\nfrom nbagent.magic import use\n"
        "from nbagent.testing import ScriptedModel, call, reply\nnbagent.REGISTRY.clear()\n"
        "def script(request):\n"
        "    if not request.tool_results:\n"
        "        return reply(calls=[call('fail', unit='miles')])\n"
        "    return reply('the tool said: ' + request.tool_results[0].content[-60:])\n"
        "use(nbagent.Agent(ScriptedModel(script), store=None))"
    )
    try:
        shared_kernel.run(f"%agent mcp add raw -- {sys.executable} {RAW}")
        _reply, messages = shared_kernel.execute("%%agent\nconvert 10 km to miles")
        streams = printed(messages)
        assert "Traceback" not in streams and "unknown unit" not in streams
        panel = last_html(messages)
        assert "unknown unit" in panel and "miles" in panel

        # A missing script: the error says why, as a one-line usage error.
        missing = tmp_path / "gone_server.py"
        add = f"%agent mcp add gone -- {sys.executable} {missing}"
        reply, messages = shared_kernel.execute(add)
        # IPython's own UsageError: one line on stderr, no red traceback.
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "UsageError"
        assert [m for m in messages if m["msg_type"] == "error"] == []
        line = printed(messages)
        assert line.startswith("UsageError: ") and "gone_server.py" in line
        assert "Traceback" not in line
    finally:
        shared_kernel.run("%agent mcp remove raw\nnbagent.REGISTRY.clear()")


def test_stdout_garbage_is_one_log_line_not_a_traceback_on_stderr(capfd, caplog):
    server = raw("--bad-utf8")
    try:
        with caplog.at_level("INFO", logger="nbagent"):
            assert call_now(server, "echo", text="ECHO:x") == "ECHO:\ufffdx"
    finally:
        server.close()
    assert "Traceback" not in capfd.readouterr().err
    assert any("wrote what is not JSON-RPC" in r.getMessage() for r in caplog.records)
