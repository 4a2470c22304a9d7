"""MCP client: real servers written with the mcp SDK, over stdio child processes and
streamable HTTP on loopback, driven through real agent runs."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nbagent import ConfigError
from nbagent._internal.images import Image, image_size
from nbagent.mcp import MCPError, MCPServer, servers_from_config
from nbagent.testing import call, reply
from tests.ecosystem.servers.demo_mcp import PNG, striped_png
from tests.support.agents import http_agent, scripted_agent
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import Anthropic, Reply, WireServer

DEMO = str(Path(__file__).parent / "servers" / "demo_mcp.py")


def demo(*extra: str, **options) -> MCPServer:
    return MCPServer.stdio(sys.executable, [DEMO, *extra], **options)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) is not running either.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def server():
    server = demo(timeout=20)
    yield server
    server.close()


def run_calls(server, *calls, **options):
    """One agent run whose scripted model makes ``calls`` in one round, then answers."""

    def script(request):
        if not request.tool_results:
            return reply(calls=list(calls))
        return reply("done")

    agent = scripted_agent(script, tools=[server], store=None, **options)
    return agent, agent.run_sync("go")


def test_tools_become_ordinary_tools_with_their_schemas(server):
    tools = {t.name: t for t in server.get_tools()}
    assert {"add", "describe", "red_pixel", "fail", "slow", "crash", "pid"} <= set(tools)
    describe = tools["describe"]
    assert describe.server == server.name and describe.description
    assert describe.parameters["required"] == ["name", "scores"]
    assert describe.parameters["properties"]["scores"]["type"] == "array"


def test_calls_with_several_argument_types_appear_in_rounds(server):
    agent, result = run_calls(
        server,
        call("add", a=2, b=40),
        call("describe", name="rod", scores=[1.5, 2.5], tags={"k": "v"}, active=False),
    )
    assert result.stop_reason == "complete"
    first, second = result.rounds[0].results
    assert first.ok and first.content == "42"
    assert second.ok and second.content == "rod: mean 2 cm, active=False, tags=[('k', 'v')]"
    # The same schemas reach the model that @tool functions' schemas reach.
    spec = {s.name: s for s in agent.provider.requests[0].tool_specs}["describe"]
    assert spec.parameters["properties"]["tags"]["anyOf"][1] == {"type": "null"}


def test_image_results_keep_the_image_and_attach_it_for_the_model(server):
    _agent, result = run_calls(server, call("red_pixel"))
    tool_result = result.rounds[0].results[0]
    assert tool_result.ok
    assert tool_result.content == "[image 1: 1×1 PNG, attached]"
    assert tool_result.images == [Image(PNG, "image/png", 1, 1)]
    ((mime, data),) = tool_result.value.images  # the server's bytes stay on the value
    assert mime == "image/png" and data == PNG


def test_text_parts_stay_the_text_and_large_images_are_downscaled(server):
    _agent, result = run_calls(server, call("captioned_chart"), call("embedded_picture"))
    chart, embedded = result.rounds[0].results
    assert chart.content == (
        "Stripes, red and blue.\nDrawn by the demo server.\n[image 1: 1024×256 PNG, attached]"
    )
    ((mime, data),) = chart.value.images
    assert image_size(data) == (2048, 512)  # what the server sent
    (image,) = chart.images
    assert (image.width, image.height, image.media_type) == (1024, 256, "image/png")
    assert image_size(image.data) == (1024, 256)  # what the model gets
    # An embedded resource whose MIME type is an image goes as an image too.
    assert embedded.content == (
        "[resource demo://pixel.png: image/png]\n[image 1: 1×1 PNG, attached]"
    )
    assert embedded.images == [Image(PNG, "image/png", 1, 1)]


def test_other_image_formats_are_converted_or_named_as_not_sent(server):
    _agent, result = run_calls(server, call("odd_images"))
    (odd,) = result.rounds[0].results
    assert odd.content == (
        "[image 1: 1×1 PNG, attached]\n[image not sent: bytes that are not a PNG or JPEG image]"
    )
    ((gif_as_png),) = odd.images
    assert gif_as_png.media_type == "image/png" and image_size(gif_as_png.data) == (1, 1)
    assert [mime for mime, _data in odd.value.images] == ["image/gif", "image/svg+xml"]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_anthropic_gets_mcp_images_as_image_blocks_inside_the_tool_result(server):
    wire = WireServer()
    wire.add(
        Anthropic.stream(calls=[("toolu_A", "captioned_chart", '{"width": 640, "height": 64}'),
                                ("toolu_B", "embedded_picture", "{}")]),
        Anthropic.stream("Red and blue stripes."),
    )  # fmt: skip
    try:
        agent = http_agent("anthropic:claude-test", wire, tools=[server], store=None)
        result = agent.run_sync("What does the chart show?")
        assert result.output == "Red and blue stripes."
        chart = striped_png(640, 64)
        assert wire.bodies()[1]["messages"][-1] == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_A",
                    "content": [
                        {
                            "type": "text",
                            "text": "Stripes, red and blue.\nDrawn by the demo server.\n"
                            "[image 1: 640×64 PNG, attached]",
                        },
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": _b64(chart),
                            },
                        },  # fmt: skip
                    ],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_B",
                    "content": [
                        {
                            "type": "text",
                            "text": "[resource demo://pixel.png: image/png]\n"
                            "[image 1: 1×1 PNG, attached]",
                        },
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": _b64(PNG),
                            },
                        },  # fmt: skip
                    ],
                },
            ],
        }
    finally:
        wire.close()


def test_openai_gets_mcp_images_in_a_user_message_after_the_tool_messages(server):
    def script(body):
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Answer("", [("captioned_chart", {})])
        return Answer("Stripes.")

    wire = WireServer(responder=ScriptedReplies(script))
    try:
        agent = http_agent("openai:gpt-4o", wire, tools=[server], store=None)
        result = agent.run_sync("What does the chart show?")
        assert result.output == "Stripes."
        messages = wire.bodies()[1]["messages"]
        tool, user = messages[-2:]
        assert tool["role"] == "tool" and tool["content"] == (
            "Stripes, red and blue.\nDrawn by the demo server.\n[image 1: 1024×256 PNG, attached]"
        )
        assert user["role"] == "user"
        text, picture = user["content"]
        assert text == {
            "type": "text",
            "text": f"Image 1 from tool call {tool['tool_call_id']} (captioned_chart):",
        }
        url = picture["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        sent = base64.b64decode(url.split(",", 1)[1])
        assert image_size(sent) == (1024, 256)  # downscaled from the server's 2048×512
        assert sent == result.rounds[0].results[0].images[0].data
    finally:
        wire.close()


def test_a_text_only_request_gets_the_text_parts_and_a_placeholder(server):
    def script(body):
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Answer("", [("captioned_chart", {})])
        return Answer("Stripes.")

    wire = WireServer(responder=ScriptedReplies(script))
    try:
        agent = http_agent("openai:gpt-4o", wire, tools=[server], store=None, send_images=False)
        agent.run_sync("What does the chart show?")
        messages = wire.bodies()[1]["messages"]
        assert messages[-1] == {
            "role": "tool",
            "tool_call_id": messages[-1]["tool_call_id"],
            "content": "Stripes, red and blue.\nDrawn by the demo server.\n"
            "[image 1: 1024×256 PNG, attached]\n[image 1024×256 PNG shown to the user]",
        }
        assert "image_url" not in json.dumps(wire.bodies()[1])
    finally:
        wire.close()


def test_is_error_results_become_error_results(server):
    _agent, result = run_calls(server, call("fail", message="boom"))
    tool_result = result.rounds[0].results[0]
    assert not tool_result.ok
    assert tool_result.error == "MCPError: Error executing tool fail"


def test_invalid_arguments_are_refused_before_the_server_is_called(server):
    _agent, result = run_calls(server, call("add", a=1))
    tool_result = result.rounds[0].results[0]
    assert not tool_result.ok and "missing required argument(s): b" in tool_result.error


def test_a_slow_tool_times_out_per_call_and_the_server_stays_up():
    server = demo(timeout=0.5)
    try:
        _agent, result = run_calls(server, call("slow", seconds=30), call("add", a=1, b=1))
        slow, add = result.rounds[0].results
        assert not slow.ok and "timed out" in slow.error
        assert add.ok and add.content == "2"
        assert server.starts == 1
    finally:
        server.close()


def test_a_crash_mid_call_is_an_error_result_and_the_server_restarts():
    server = demo(timeout=20)
    try:
        _agent, result = run_calls(server, call("pid"))
        first_pid = int(result.rounds[0].results[0].content)
        _agent, result = run_calls(server, call("crash"))
        crashed = result.rounds[0].results[0]
        assert not crashed.ok
        assert "stopped during the call" in crashed.error and "started again" in crashed.error
        assert wait_gone(first_pid)
        _agent, result = run_calls(server, call("pid"))
        second = result.rounds[0].results[0]
        assert second.ok and int(second.content) != first_pid
        assert server.starts == 2
    finally:
        server.close()


def test_a_server_that_never_answers_initialize_is_a_clear_error():
    server = demo("--silent-start", start_timeout=1.5)
    with pytest.raises(MCPError, match=r"did not answer initialize within 1\.5 s"):
        scripted_agent(["hi"], tools=[server], store=None)


def test_malformed_json_rpc_is_a_clear_error_not_a_hang():
    server = demo("--garbage", start_timeout=3)
    began = time.monotonic()
    with pytest.raises(MCPError, match="did not answer initialize.*not JSON-RPC"):
        server.get_tools()
    assert time.monotonic() - began < 30


def test_two_hundred_tools_on_one_server():
    server = demo("--many", "200", prefix="big", allow=None)
    try:
        tools = server.get_tools()
        names = [t.name for t in tools]
        assert len(names) == 210 and len(set(names)) == 210
        assert "big_tool_199" in names and all(n.startswith("big_") for n in names)
        _agent, result = run_calls(server, call("big_tool_150", x=1))
        assert result.rounds[0].results[0].content == "151"
    finally:
        server.close()


def test_prefix_allow_list_and_approval_options():
    server = demo(prefix="m", allow=["add", "fail"], requires_approval=["fail"], timeout=7)
    try:
        tools = {t.name: t for t in server.get_tools()}
        assert set(tools) == {"m_add", "m_fail"}
        assert tools["m_fail"].requires_approval and not tools["m_add"].requires_approval
        assert tools["m_add"].timeout == 7
        # Headless runs follow NBAGENT_APPROVAL, which denies by default.
        _agent, result = run_calls(server, call("m_fail", message="x"), call("m_add", a=1, b=2))
        denied, added = result.rounds[0].results
        assert not denied.ok and "denied" in denied.error
        assert added.ok and added.content == "3"
    finally:
        server.close()
    with pytest.raises(ConfigError, match="no tool named nope"):
        demo(allow=["nope"]).get_tools()


BAD_SCHEMA_SERVER = """
import json, sys
import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp import types

SCHEMA = json.loads(sys.argv[1])

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name="fine", description="ok", input_schema={"type": "object"}),
        types.Tool(name="listy", description="x", input_schema=SCHEMA),
    ])

server = Server("bad", on_list_tools=list_tools)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""

BAD_SCHEMAS = [
    (
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}},
        r"refers to '#/\$defs/Missing', which it does not define",
    ),
    (
        {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/s.json"}}},
        r"refers to 'https://example.invalid/s.json', which it does not define",
    ),
    (
        {"type": "object", "properties": {"x": {"type": "array", "items": {"type": "int"}}}},
        "'properties.x.items' has type \"int\", which is no JSON schema type",
    ),
    (
        {"type": "object", "properties": {"x": {"type": "object", "properties": {"y": 5}}}},
        r"'properties.x.properties.y' is 5, not a schema object \(providers refuse such",
    ),
    (
        {"type": "object", "properties": {"x": {"anyOf": [{"type": "null"}], "required": "y"}}},
        "'required' of 'properties.x' is not a list of names",
    ),
]


@pytest.mark.parametrize(
    ("schema", "reason"), BAD_SCHEMAS, ids=["ref", "remote", "type", "nested", "required"]
)
def test_a_schema_no_provider_accepts_is_refused_before_any_request(tmp_path, schema, reason):
    script = tmp_path / "bad_schema.py"
    script.write_text(BAD_SCHEMA_SERVER)
    server = MCPServer.stdio(sys.executable, [str(script), json.dumps(schema)], name="bad")
    wire = WireServer()
    try:
        # Given to the agent: refused when the agent is made, naming the tool and the reason.
        with pytest.raises(ConfigError, match=rf"MCP tool 'listy' of server 'bad'.*{reason}"):
            http_agent("openai:gpt-test", wire, tools=[server], store=None)
        # Given to one run: refused before that run's first request.
        agent = http_agent("openai:gpt-test", wire, tools=[], store=None)
        with pytest.raises(ConfigError, match=rf"MCP tool 'listy' of server 'bad'.*{reason}"):
            agent.run_sync("hi", tools=[server])
        assert wire.bodies() == []  # nothing was sent
    finally:
        wire.close()
        server.close()


def test_close_leaves_no_process_and_the_agent_can_run_again():
    server = demo()
    agent = scripted_agent(
        lambda request: reply("ok") if request.tool_results else reply(calls=[call("pid")]),
        tools=[server],
        store=None,
    )
    pid = int(agent.run_sync("go").rounds[0].results[0].content)
    agent.close()
    assert wait_gone(pid) and not server.running
    again = int(agent.run_sync("go").rounds[0].results[0].content)
    assert again != pid
    agent.close()
    assert wait_gone(again)


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_no_orphan_after_the_interpreter_exits_or_is_killed(how, tmp_path):
    # A kernel restart kills the kernel process; a normal exit runs atexit.
    code = textwrap.dedent(
        f"""
        import sys, time
        from nbagent.mcp import MCPServer
        from nbagent._internal.threads import run_in_background
        server = MCPServer.stdio(sys.executable, [{DEMO!r}])
        print(run_in_background(lambda: server.call("pid", {{}})), flush=True)
        if {how!r} == "kill":
            time.sleep(60)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    try:
        child = int(process.stdout.readline())
        assert alive(child)
        if how == "kill":
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert wait_gone(child), "the MCP server outlived its parent"
    finally:
        process.kill()
        process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_server():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, DEMO, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=10)


def test_streamable_http_server_over_a_real_provider_adapter(http_server):
    server = MCPServer.http(http_server, headers={"X-Test": "1"}, name="remote", timeout=20)

    def script(body):
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Answer("", [("add", {"a": 20, "b": 22}), ("red_pixel", {})])
        return Answer("The answer is 42.")

    wire = WireServer(responder=ScriptedReplies(script))
    try:
        agent = http_agent("openai:gpt-test", wire, tools=[server], store=None)
        result = agent.run_sync("add")
        assert result.output == "The answer is 42."
        add, image = result.rounds[0].results
        assert add.content == "42" and image.content == "[image 1: 1×1 PNG, attached]"
        declared = {t["function"]["name"]: t for t in wire.bodies()[0]["tools"]}
        assert declared["add"]["function"]["parameters"]["required"] == ["a", "b"]
        tool_messages = [m for m in wire.bodies()[1]["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in tool_messages][0] == "42"
        # The image the server sent over HTTP reaches the model as an image.
        image_part = wire.bodies()[1]["messages"][-1]["content"][1]
        assert image_part["image_url"]["url"] == "data:image/png;base64," + _b64(PNG)
        agent.close()
        assert not server.running
    finally:
        wire.close()
        server.close()


def test_mcp_servers_json_format(tmp_path):
    config = {
        "mcpServers": {
            "local": {"command": sys.executable, "args": [DEMO], "env": {"A": "1"}},
            "remote": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "x"}},
        }
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    local, remote = servers_from_config(path)
    assert local.name == "local" and "demo_mcp.py" in repr(local)
    assert remote.name == "remote" and "127.0.0.1:1/mcp" in repr(remote)
    path.write_text(json.dumps({"mcpServers": {"x": {"args": []}}}))
    with pytest.raises(ConfigError, match="'x' needs a 'command' or a 'url'"):
        servers_from_config(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        servers_from_config(path)


def test_gemini_gets_the_mcp_schemas_in_its_subset(server):
    from tests.support.servers import Gemini

    wire = WireServer().add(
        Reply.sse(
            [
                Gemini.chunk(
                    {"functionCall": {"name": "describe", "args": {"name": "r", "scores": [1.0]}}},
                    finish="STOP",
                    usage=(5, 2),
                )
            ]
        ),  # fmt: skip
        Gemini.text_stream("Described."),
    )
    try:
        agent = http_agent("gemini:gemini-test", wire, tools=[server], store=None)
        result = agent.run_sync("describe r")
        assert result.rounds[0].results[0].content.startswith("r: mean 1 cm")
        declarations = {d["name"]: d for d in wire.bodies()[0]["tools"][0]["functionDeclarations"]}
        parameters = declarations["describe"]["parameters"]
        assert parameters["type"] == "OBJECT"
        assert parameters["properties"]["scores"]["items"]["type"] == "NUMBER"
        assert parameters["properties"]["tags"]["nullable"] is True
    finally:
        wire.close()


def test_runs_on_another_event_loop_hand_calls_to_the_servers_loop(server):
    # ``await agent.run(...)`` in Jupyter runs on the kernel's loop, not nbagent's.
    import asyncio

    def script(request):
        if not request.tool_results:
            return reply(calls=[call("add", a=1, b=2)])
        return reply("done")

    agent = scripted_agent(script, tools=[server], store=None)
    result = asyncio.run(agent.run("go"))
    assert result.rounds[0].results[0].content == "3"


def test_a_server_given_for_one_run_only(server):
    def script(request):
        if not request.tool_results:
            return reply(calls=[call("add", a=1, b=2)])
        return reply("done")

    agent = scripted_agent(script, tools=[], store=None)
    result = agent.run_sync("go", tools=[server])
    assert result.rounds[0].results[0].content == "3"
